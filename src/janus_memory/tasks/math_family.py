"""Math task family (MATH / MATH-500 / AIME / GSM8K): loaders, prompt, extraction + scoring.

Sources (shipped in tasks/shipped/, or a --data-dir / JANUS_DATA_DIR folder of the same layout): math500/test.jsonl
(MATH-500, Lightman et al.), gsm8k/test.jsonl, aime/aime24.jsonl + aime25.jsonl,
and the user-supplied Hendrycks MATH train split (docs/research-notes.md §6.2: stream = seeded shuffle, first 500).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Sequence

from janus_memory.values import ChatResult, Score, ScoreStatus, Task

from .answer_text import qualifier
from .base import TaskFamily, output_text
from .data import ENV_MATH_TRAIN, DataRecordError, find_source, read_jsonl, read_records, seeded_shuffle
from .extract_math import extract_math_answer, gsm8k_gold, last_boxed, paper_extract
from .verify_math import get_verifier, paper_equal

STREAM_SIZE = 500


def _math500_tasks(data_dir, dataset: str) -> tuple[list[Task], Path]:
    p = find_source(data_dir, "math500/test.jsonl", "MATH-500 test.jsonl")
    tasks = [Task(id=r.text("unique_id"), dataset=dataset, question=r.text("problem"), gold=r.text("answer", number_ok=True),
                  meta={"subject": r["subject"], "level": r["level"], "source": "math500"}) for r in read_records(p)]
    return tasks, p


def load_math500(split: str, *, data_dir=None, seed: int = 0):
    if split == "stream":
        raise ValueError("math500 is test-only: MATH-500 is the test split of dataset 'math', whose stream is "
                         "Hendrycks MATH train (not shipped; fetch the train/ folder of github.com/hendrycks/math, set "
                         "JANUS_MATH_TRAIN_PATH to it, then --dataset math); with the shipped data, math streams are "
                         "--dataset gsm8k or aime")
    tasks, p = _math500_tasks(data_dir, "math500")
    return tasks, [p], "all 500 of math500/test.jsonl in file order"


def _gsm8k_gold(r) -> str:
    """The gold number of a GSM8K record: its ``answer`` text must hold the ``####`` line (else the whole worked
    solution would become the gold answer, and no answer would ever match it)."""
    answer = r.text("answer")
    if "####" not in answer or not gsm8k_gold(answer):
        raise DataRecordError(f"{r.where}: the GSM8K 'answer' field has no '#### <number>' line (the gold answer "
                              f"follows '####')")
    return gsm8k_gold(answer)


def load_gsm8k(split: str, *, data_dir=None, seed: int = 0):
    p = find_source(data_dir, "gsm8k/test.jsonl", "GSM8K test.jsonl")
    tasks = [Task(id=f"gsm8k:{i}", dataset="gsm8k", question=r.text("question"), gold=_gsm8k_gold(r),
                  meta={"line": i}) for i, r in enumerate(read_records(p))]
    if split == "all":
        return tasks, [p], "all 1319 in file order"
    order = seeded_shuffle(tasks, seed)
    if split == "stream":
        return order[:STREAM_SIZE], [p], f"random.Random({seed}).shuffle of 1319 records, [0:500)"
    return order[STREAM_SIZE:2 * STREAM_SIZE], [p], f"random.Random({seed}).shuffle of 1319 records, [500:1000)"


def load_aime(split: str, *, data_dir=None, seed: int = 0):
    p24 = find_source(data_dir, "aime/aime24.jsonl", "AIME 2024 file")
    p25 = find_source(data_dir, "aime/aime25.jsonl", "AIME 2025 file")
    t24 = [Task(id=f"aime24:{r.text('id', number_ok=True)}", dataset="aime", question=r.text("problem"),
                gold=r.text("answer", number_ok=True).strip(),
                meta={"year": 2024, "url": r.get("url", "")}) for r in read_jsonl(p24)]
    t25 = [Task(id=f"aime25:{i}", dataset="aime", question=r.text("problem"), gold=r.text("answer", number_ok=True).strip(),
                meta={"year": 2025}) for i, r in enumerate(read_jsonl(p25))]
    if split == "stream":
        return t24, [p24], "AIME 2024 (30, file order)"
    if split == "test":
        return t25, [p25], "AIME 2025 (30, file order)"
    return t24 + t25, [p24, p25], "AIME 2024 then AIME 2025"


def _math_train_files(data_dir) -> tuple[Path, list[Path]]:
    env = os.environ.get(ENV_MATH_TRAIN)
    cands = []
    if data_dir is not None:
        cands += [Path(data_dir) / "MATH" / "train", Path(data_dir) / "MATH", Path(data_dir) / "math_train", Path(data_dir)]
    if env:
        cands.insert(0, Path(env))
    for c in cands:
        c = c.expanduser()
        if c.is_file():
            return c, [c]
        if c.is_dir():
            files = sorted(c.rglob("*.json")) + sorted(c.rglob("*.jsonl")) + sorted(c.rglob("train-*.parquet"))
            files = [f for f in files if "test" not in f.relative_to(c).parts and not f.name.startswith("test")]
            if files:
                return c, files
    raise FileNotFoundError(
        "Hendrycks MATH train split not found (tried "
        f"{', '.join(str(c) for c in cands) or f'nothing: {ENV_MATH_TRAIN} is unset and no --data-dir was given'}); "
        "fix: set "
        f"{ENV_MATH_TRAIN} to the MATH train folder (train/<subject>/<n>.json, e.g. from github.com/hendrycks/math; "
        "not in the shipped data), a train jsonl, or the folder of train-*.parquet files, or pass --data-dir pointing "
        "at it")


def _read_math_train(root: Path, files: list[Path]) -> list[dict]:
    recs: list[dict] = []
    for f in files:
        rel = f.relative_to(root).as_posix() if f != root else f.name
        if f.suffix == ".json":
            r = json.loads(f.read_text(encoding="utf-8"))
            recs.append({**r, "_id": rel})
        elif f.suffix == ".jsonl":
            for i, r in enumerate(read_jsonl(f)):
                recs.append({**r, "_id": f"{rel}:{i}"})
        else:
            try:
                import pyarrow.parquet as pq
            except ImportError as e:  # pragma: no cover - optional dependency
                raise ImportError("reading MATH parquet files needs pyarrow (pip install pyarrow)") from e
            for i, r in enumerate(pq.read_table(f).to_pylist()):
                recs.append({**r, "_id": f"{rel}:{i}"})
    return recs


def load_math(split: str, *, data_dir=None, seed: int = 0):
    if split == "test":
        tasks, p = _math500_tasks(None if data_dir is None or not (Path(data_dir) / "math500").exists() else data_dir, "math")
        return tasks, [p], "MATH-500 (500, file order)"
    root, files = _math_train_files(data_dir)
    recs = _read_math_train(root, files)
    tasks = []
    for r in recs:
        gold = r.get("answer") or last_boxed(r.get("solution", ""))
        if gold is None:
            continue
        tasks.append(Task(id=f"math:{r['_id']}", dataset="math", question=r["problem"], gold=gold,
                          meta={"subject": r.get("type") or r.get("subject", ""), "level": r.get("level", ""),
                                "source": "hendrycks-math-train"}))
    tasks.sort(key=lambda t: t.id)
    rule = f"sorted by id, random.Random({seed}).shuffle, [0:500)"
    order = seeded_shuffle(tasks, seed)
    if split == "stream":
        return order[:STREAM_SIZE], files, rule
    t500, p = _math500_tasks(None, "math")
    return order[:STREAM_SIZE] + t500, files + [p], "stream then MATH-500"


class MathFamily(TaskFamily):
    """Math: prompt asks for the final answer in the last \\boxed{}; scoring = extraction + math-verify (or the
    paper's normalised exact match when faithful=True)."""

    name = "math"
    prompt_name = "math"

    def prompt(self, task: Task) -> str:
        return self._template.substitute(question=task.question)

    def extract(self, text: str):
        return extract_math_answer(text)

    def _extract_for(self, output, question: str = "") -> tuple[str | None, str | None, bool, tuple]:
        text, truncated = output_text(output)
        if self.faithful:
            ans = paper_extract(text)
            return ans, "faithful", truncated and ans is None, ()
        ex = extract_math_answer(text)
        # a truncated reply only counts when it contains an explicit final answer (box/tag/labelled line) that it was
        # not re-checking or correcting when it stopped, and that does not end the reply on its digits ("Answer: 3"
        # of "Answer: 35"); a reply that ends inside an unclosed final \boxed{ or on an empty answer label is
        # truncated whatever its finish reason
        if ex.cut or (truncated and (not ex.strong or ex.revised or ex.open_end)):
            return None, ex.source, True, ()
        if ex.strong and ex.stated is not None and qualifier(ex.stated, question):
            return None, "qualified", False, ()  # "at least 18", "approximately 18", "18 or so": no exact answer
        if ex.scale is not None and re.search(rf"\b{ex.scale}s?\b", question, re.I):
            return ex.unscaled, ex.source, False, ex.parts  # "3.2 million" where the question counts in millions
        return ex.answer, ex.source, False, ex.parts

    @staticmethod
    def _verify(verifier, gold: str, ans: str, parts: tuple) -> tuple[bool, ScoreStatus]:
        """Boxes written together are one answer compared as a set with the gold; when that fails, they still count
        if every part equals the gold (the same value written two ways: ``\\boxed{15\\frac{39}{40}}`` or
        ``\\boxed{\\frac{639}{40}}``)."""
        ok, status = verifier.check(gold, ans)
        if ok or status != "ok" or len(parts) < 2:
            return ok, status
        for p in parts:
            ok_p, st_p = verifier.check(gold, p)
            if not ok_p:
                return False, st_p
        return True, "ok"

    def _finish(self, task: Task, ans, src, trunc, verdict: tuple[bool, ScoreStatus] | None) -> Score:
        if trunc:
            return Score(False, None, "truncated")
        if ans is None:
            return Score(False, None, "unparsed", {"source": src} if src == "qualified" else {})
        if self.faithful:
            return Score(paper_equal(str(task.gold), ans), ans, "ok", {"source": src})
        assert verdict is not None  # verified whenever there is an answer and the checker is not faithful
        ok, status = verdict
        if status == "ok" and src == "number":  # no final-answer marker: scored through the last number
            status = "fallback"
        return Score(ok, ans, status, {"source": src})

    def score(self, task: Task, output: ChatResult | str) -> Score:
        ans, src, trunc, parts = self._extract_for(output, task.question or "")
        verdict = None
        if not trunc and ans is not None and not self.faithful:
            verdict = self._verify(get_verifier(), str(task.gold), ans, parts)
        return self._finish(task, ans, src, trunc, verdict)

    def score_many(self, tasks: Sequence[Task], outputs: Sequence[ChatResult | str], workers: int = 2) -> list[Score]:
        if len(tasks) != len(outputs):
            raise ValueError(f"{len(tasks)} tasks but {len(outputs)} outputs")
        ex = [self._extract_for(o, t.question or "") for o, t in zip(outputs, tasks)]
        todo = [i for i, (a, _, tr, _) in enumerate(ex) if not tr and a is not None and not self.faithful]
        verdicts: dict[int, tuple[bool, ScoreStatus]] = {}
        if todo:
            v = get_verifier()
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(max_workers=max(1, min(workers, v.workers))) as pool:
                res = list(pool.map(lambda i: self._verify(v, str(tasks[i].gold), ex[i][0], ex[i][3]), todo))  # type: ignore[arg-type]  # todo: answers only
            verdicts = dict(zip(todo, res))
        return [self._finish(t, a, s, tr, verdicts.get(i)) for i, (t, (a, s, tr, _)) in enumerate(zip(tasks, ex))]
