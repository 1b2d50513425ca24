"""Multiple-choice family: GPQA (A-D, bring-your-own CSV) and MMLU-Pro Engineering / Physics (A-J).

Sources: mmlu_pro/test.jsonl of the data folder (Oct-2024 revision; gold = the ``answer`` letter, which is right even
where ``answer_index`` disagrees, e.g. question 3983) and the user's GPQA CSV files (official columns: Question,
Correct Answer, Incorrect Answer 1-3, Record ID). No GPQA text is shipped or logged by this module.
"""
from __future__ import annotations

import csv
import os
import re
from pathlib import Path

from janus_memory.values import ChatResult, Score, Task

from .base import TaskFamily, output_text
from .data import ENV_GPQA, find_source, read_records, seeded_shuffle, shuffled_slice, stable_shuffle
from .extract_mc import extract_choice

LETTERS = "ABCDEFGHIJ"
MMLU_PRO_KEY = "TIGER-Lab/MMLU-Pro"


def _load_mmlu_pro(split: str, category: str, dataset: str, data_dir, seed: int):
    p = find_source(data_dir, "mmlu_pro/test.jsonl", "MMLU-Pro test.jsonl")
    tasks = []
    for r in read_records(p):
        if r["category"] != category:
            continue
        opts = list(r["options"])
        tasks.append(Task(id=r.text("question_id", number_ok=True), dataset=dataset, question=r.text("question"),
                          gold=r.text("answer"),
                          meta={"options": opts, "labels": LETTERS[:len(opts)], "category": category, "src": r.get("src", "")}))
    if split == "all":
        return tasks, [p], f"category {category!r}, file order"
    chosen, rule = shuffled_slice(tasks, f"{MMLU_PRO_KEY}:{category}:{seed}", split, 250, 500,
                                  note=f"category {category!r}, ")
    return chosen, [p], rule


def load_mmlu_pro_eng(split: str, *, data_dir=None, seed: int = 0):
    return _load_mmlu_pro(split, "engineering", "mmlu_pro_eng", data_dir, seed)


def load_mmlu_pro_phy(split: str, *, data_dir=None, seed: int = 0):
    return _load_mmlu_pro(split, "physics", "mmlu_pro_phy", data_dir, seed)


# ----------------------------------------------------------------------------------------------------- GPQA

GPQA_FILES = {"main": "gpqa_main.csv", "diamond": "gpqa_diamond.csv"}


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", (s or "")).strip().lower()


def _gpqa_paths(data_dir) -> dict[str, Path]:
    roots = []
    env = os.environ.get(ENV_GPQA)
    if env:
        roots.append(Path(env).expanduser())
    if data_dir is not None:
        roots += [Path(data_dir) / "gpqa", Path(data_dir)]
    out: dict[str, Path] = {}
    for r in roots:
        if r.is_file():
            out.setdefault("diamond" if "diamond" in r.name else "main", r)
            continue
        for k, fn in GPQA_FILES.items():
            if (r / fn).is_file():
                out.setdefault(k, r / fn)
            elif (r / "dataset" / fn).is_file():
                out.setdefault(k, r / "dataset" / fn)
    return out


def _gpqa_fix(which: str) -> str:
    return (f"GPQA is bring-your-own-file: set {ENV_GPQA} to the folder holding {GPQA_FILES[which]} (from the "
            "official password-protected dataset.zip), or to the file itself, or pass --data-dir with a gpqa/ subfolder")


# how a GPQA question's options are ordered: "question" = by the question text alone (the authors': the same order
# for every seed), "seeded" = by record id and split seed (ours: each seed shows other positions)
OPTION_ORDERS = ("question", "seeded")


def gpqa_task(row: dict, seed: int, dataset: str = "gpqa", option_order: str = "seeded") -> Task | None:
    """One GPQA row -> Task with its options [correct, incorrect 1, 2, 3] shuffled deterministically
    (:func:`stable_shuffle`): ``option_order="question"`` keys the shuffle by the row's ``Question`` text alone, as
    the file holds it (spaces and line breaks at its ends included, as the authors' loader seeds it; the paper
    preset); ``"seeded"`` by "gpqa:<Record ID>:<seed>", so another split seed shows the options in other positions.
    The task's question (prompt, retrieval, records) is the stripped text. Returns None when the row has fewer than
    4 distinct options (skipped, as the paper's code does)."""
    if option_order not in OPTION_ORDERS:
        raise ValueError(f"option_order must be one of {OPTION_ORDERS}, got {option_order!r}")
    rid = (row.get("Record ID") or "").strip()
    correct = (row.get("Correct Answer") or "").strip()
    opts = [correct] + [(row.get(f"Incorrect Answer {i}") or "").strip() for i in (1, 2, 3)]
    if not rid or len({_norm(o) for o in opts if o}) < 4:
        return None
    raw_question = row.get("Question") or ""
    order = stable_shuffle(range(4), raw_question if option_order == "question" else f"gpqa:{rid}:{seed}")
    shuffled = [opts[i] for i in order]
    gold = LETTERS[order.index(0)]
    return Task(id=rid, dataset=dataset, question=raw_question.strip(), gold=gold,
                meta={"options": shuffled, "labels": "ABCD", "subdomain": row.get("Subdomain", "")})


def _read_csv(p: Path) -> list[dict]:
    with open(p, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    need = {"Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3", "Record ID"}
    missing = need - set(rows[0].keys() if rows else [])
    if missing:
        raise ValueError(f"{p} lacks GPQA columns: {', '.join(sorted(missing))}")
    return rows


def load_gpqa(split: str, *, data_dir=None, seed: int = 0, option_order: str = "seeded"):
    """GPQA splits (``option_order``: :func:`gpqa_task`)."""
    paths = _gpqa_paths(data_dir)
    if "diamond" not in paths:
        env = os.environ.get(ENV_GPQA)
        where = [f"{ENV_GPQA}={env}" if env else f"{ENV_GPQA} is not set",
                 f"--data-dir {data_dir} (and its gpqa/ folder)" if data_dir is not None else "no --data-dir given"]
        raise FileNotFoundError(f"gpqa_diamond.csv not found ({'; '.join(where)}); fix: {_gpqa_fix('diamond')}")
    drows = _read_csv(paths["diamond"])
    diamond = [t for t in (gpqa_task(r, seed, option_order=option_order) for r in drows) if t is not None]
    if split == "test":
        return diamond, [paths["diamond"]], "gpqa_diamond.csv (file order)"
    if "main" not in paths:
        raise FileNotFoundError(f"gpqa_main.csv not found; fix: {_gpqa_fix('main')}")
    dkeys = {(_norm(r["Question"]), _norm(r["Correct Answer"])) for r in drows}
    main = [gpqa_task(r, seed, option_order=option_order) for r in _read_csv(paths["main"])
            if (_norm(r["Question"]), _norm(r["Correct Answer"])) not in dkeys]
    stream = seeded_shuffle([t for t in main if t is not None], seed)[:1000]
    files = [paths["main"], paths["diamond"]]
    if split == "stream":
        return stream, files, f"gpqa_main minus gpqa_diamond (question+answer), random.Random({seed}).shuffle, cap 1000"
    return stream + diamond, files, "stream then diamond"


class MultipleChoiceFamily(TaskFamily):
    """Prompt lists labelled options; extraction = extract_choice; correct iff the letter equals the gold letter."""

    name = "mc"
    prompt_name = "multiple_choice"

    def fake_answer(self, task: Task, right: bool) -> str:  # scripted fake backend: "(letter)", a wrong one is the next
        gold, options = task.gold, (task.meta or {}).get("options")
        if isinstance(gold, str) and len(gold) == 1 and gold.isalpha() and gold.isupper() and options:
            letters = [chr(ord("A") + i) for i in range(len(options))]
            return f"The answer is ({gold if right else letters[(letters.index(gold) + 1) % len(letters)]})."
        return super().fake_answer(task, right)

    def prompt(self, task: Task) -> str:
        labels = task.meta.get("labels") or LETTERS[:len(task.meta["options"])]
        choices = "\n".join(f"({label}) {o}" for label, o in zip(labels, task.meta["options"]))
        return self._template.substitute(question=task.question, choices=choices,
                                         labels=", ".join(labels), first=labels[0], last=labels[-1])

    def extract(self, text: str, labels: str = "ABCD"):
        return extract_choice(text, labels)

    def score(self, task: Task, output: ChatResult | str) -> Score:
        text, truncated = output_text(output)
        labels = task.meta.get("labels") or LETTERS[:len(task.meta.get("options", [])) or 4]
        ex = extract_choice(text, labels)
        # a cut-off reply counts only with a strong answer it was not revising; one ending on "the answer is" was cut
        if ex.cut or (truncated and (not ex.strong or ex.revised)):
            return Score(False, None, "truncated")
        if ex.letter is None:
            if self.faithful:  # paper's checker: gold option text appearing in the reply counts
                gold_text = task.meta["options"][labels.index(task.gold)]
                if gold_text and gold_text in text:
                    return Score(True, task.gold, "ok", {"source": "gold_text"})
            return Score(False, None, "unparsed")
        # a letter found only by the weak fallback is scored, but recorded as "fallback" (format not followed)
        return Score(ex.letter == task.gold, ex.letter, "ok" if ex.strong else "fallback", {"source": ex.source})
