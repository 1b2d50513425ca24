"""ReasoningBank (Ouyang et al. 2025, arXiv 2509.25140; code google-research/reasoning-bank), under Janus.

Memory: a bank of entries, one per stream task: the task's question (the retrieval key, embedded by the encoder),
the model's own verdict on its attempt (success / failure) and up to ``max_items`` (3) memory items, each with a
title, a one-sentence description and 1-3 sentences of content. Step t:
  1. retrieve the ``top_k`` (1, as the paper and code) entries whose questions are most similar to the task (cosine,
     ties by insertion order) and solve the task with their memory items in the prompt;
  2. the model judges its own reply WITHOUT the ground truth (``judge="self"``; "ground_truth" uses the scorer, the
     authors' ``--criteria gt``); the ground truth only scores the step for the online accuracy;
  3. a success is distilled with the success prompt, a failure with the failure prompt, into memory items;
  4. the entry is appended (no consolidation, as the paper).
The candidate M̂_t is the bank with entry t appended.

Memory text: the whole bank, each entry a header line ``<<entry {json: id, query, status}>>`` and its items in the
authors' Markdown form (``# Memory Item i`` / ``## Title`` / ``## Description`` / ``## Content``); "(empty)" when empty.
:func:`parse_bank_text` is its exact inverse, so Janus's replay ``solve_with_memory(text, tasks)`` runs the method's
own retrieval inside the bank ``text`` (``replay="retrieve"``, default); ``replay="full"`` puts the whole text in
the prompt instead (the research notes' "memory text only" reading, which judges a prompt the method never uses).

Rollback (Janus rejects M̂_t): the bank, i.e. entry t is removed (the bank IS this method's memory).
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

import numpy as np

from janus_memory.updaters.base import (
    EMPTY_MEMORY,
    Harm,
    LLMCall,
    RetrievalBank,
    StepOutcome,
    Updater,
    fill,
    load_prompt,
    register_updater,
    state_built,
    truncate,
    visible_text,
)
from janus_memory.values import ChatResult, Score, Task

_HEADER = re.compile(r"^<<entry (\{.*\})>>$")
_ITEM = re.compile(r"^\s*#\s*memory\s+item\b.*$", re.IGNORECASE | re.MULTILINE)
_FIELD = re.compile(r"^\s*##\s*(title|description|content)\b\s*:?\s*(.*)$", re.IGNORECASE)
_STATUS = re.compile(r"^\W*status\W*:\W*(success|failure|failed|fail)\b", re.IGNORECASE | re.MULTILINE)


# ------------------------------------------------------------------------------------------------- text helpers
def sanitize(body: str) -> str:
    """Stored item text never has a line that reads as an entry header, and never ends in whitespace."""
    lines = [(" " + ln) if ln.startswith("<<entry ") else ln for ln in body.splitlines()]
    return "\n".join(lines).rstrip()


def render_items(items: list[list[str]]) -> str:
    return "\n".join(f"# Memory Item {n}\n## Title {t}\n## Description {d}\n## Content {c}"
                     for n, (t, d, c) in enumerate(items, start=1))


def render_entry(rec: dict) -> str:
    head = json.dumps({"id": rec["id"], "query": rec["question"], "status": rec["status"]}, ensure_ascii=False)
    return f"<<entry {head}>>\n{rec['body']}"


def render_bank(records: list[dict]) -> str:
    """The memory text of a bank of entries ``{"id", "question", "status", "body"}`` (:meth:`memory_text`'s format)."""
    return "\n\n".join(render_entry(r) for r in records) if records else EMPTY_MEMORY


def item_blocks(body: str) -> list[str]:
    """The memory items of an entry's body, as written (text before the first ``# Memory Item`` heading is not an
    item); a body without such headings (a faithful raw reply) is one item; an empty body has none."""
    heads = list(_ITEM.finditer(body))
    if not heads:
        return [body.strip()] if body.strip() else []
    return [body[h.start(): heads[n + 1].start() if n + 1 < len(heads) else len(body)].strip()
            for n, h in enumerate(heads)]


def parse_bank_text(text: str) -> list[dict]:
    """Exact inverse of the memory text: [{"id", "question", "status", "body"}]. "(empty)" -> []."""
    if text == EMPTY_MEMORY:
        return []
    lines = text.split("\n")
    starts = [i for i, ln in enumerate(lines) if _HEADER.match(ln)]
    if not starts or starts[0] != 0:
        raise ValueError("not a ReasoningBank memory text (it must start with an <<entry ...>> line)")
    out = []
    for n, s in enumerate(starts):
        end = starts[n + 1] - 1 if n + 1 < len(starts) else len(lines)  # drop the blank separator line
        head = json.loads(_HEADER.match(lines[s]).group(1))  # type: ignore[union-attr]  # starts are header lines
        out.append({"id": head["id"], "question": head["query"], "status": head["status"],
                    "body": "\n".join(lines[s + 1:end])})
    return out


def parse_items(text: str, max_items: int, truncated: bool = False) -> tuple[list[list[str]], list[dict]]:
    """Strict reading of the extraction reply: blocks under ``# Memory Item`` headings (anything before the first is
    the model's thinking); each needs a non-empty title, description and content (multi-line fields are joined
    into one line; a blank line after a field's text ends it). Dropped blocks carry a reason: "missing field",
    "duplicate item", "over the item limit", and "cut off" for the last block of a reply that hit max_tokens (its
    content may stop mid-sentence)."""
    text = re.sub(r"^\s*```\w*\s*$", "", text or "", flags=re.MULTILINE)
    heads = list(_ITEM.finditer(text))
    items: list[list[str]] = []
    dropped: list[dict] = []
    seen: set[str] = set()
    for n, h in enumerate(heads):
        block = text[h.end(): heads[n + 1].start() if n + 1 < len(heads) else len(text)]
        fields: dict[str, list[str]] = {}
        cur = None
        for ln in block.splitlines():
            m = _FIELD.match(ln)
            if m:
                cur = m.group(1).lower()
                fields.setdefault(cur, []).append(m.group(2))
            elif cur and not ln.strip() and "".join(fields[cur]).strip():
                cur = None  # a blank line ends a field that has text (trailing commentary is not content)
            elif cur:
                fields[cur].append(ln)
        vals = [" ".join(" ".join(fields.get(k, [])).split()) for k in ("title", "description", "content")]
        key = " ".join(vals).casefold()
        reason = None
        if truncated and n == len(heads) - 1:
            reason = "cut off"
        elif not all(vals):
            reason = "missing field"
        elif key in seen:
            reason = "duplicate item"
        elif len(items) >= max_items:
            reason = "over the item limit"
        if reason:
            dropped.append({"item": block.strip()[:200], "reason": reason})
            continue
        seen.add(key)
        items.append(vals)
    return items, dropped


def parse_status(text: str, faithful: bool) -> str | None:
    """Judge reply -> "success" / "failure". Strict: the LAST ``Status:`` line decides; none -> None (unparseable).
    Faithful: success iff some line starting with "Status:" contains "success"; everything else is a failure."""
    if faithful:
        ok = any(ln.strip().lower().startswith("status:") and "success" in ln.lower() for ln in (text or "").splitlines())
        return "success" if ok else "failure"
    found = _STATUS.findall(text or "")
    if not found:
        return None
    return "success" if found[-1].lower() == "success" else "failure"


# ------------------------------------------------------------------------------------------------- the updater
@register_updater("reasoning_bank")
class ReasoningBank(Updater):
    """ReasoningBank (see module docstring). Extra config: max_items, judge, replay, extraction_temperature."""

    prompt_prefixes = ("reasoning_bank_",)
    display_name = "ReasoningBank"

    DEFAULTS = {"top_k": 1, "max_items": 3, "judge": "self", "replay": "retrieve", "extraction_temperature": None}
    NONE_DEFAULT_KINDS = {"extraction_temperature": 0.0}  # None: the solver's temperature

    @classmethod
    def llm_calls_per_step(cls, config: dict) -> tuple[float, float]:
        """Solver, the self-judgment (judge "self"), then the extraction (skipped when the judgment is unparseable)."""
        return (2, 3) if config["judge"] == "self" else (2, 2)

    def __init__(self, **kw):
        super().__init__(**kw)
        if self.config["judge"] not in ("self", "ground_truth"):
            raise ValueError(f"config 'judge' must be self or ground_truth, got {self.config['judge']!r}")
        if self.config["replay"] not in ("retrieve", "full"):
            raise ValueError(f"config 'replay' must be retrieve or full, got {self.config['replay']!r}")
        if int(self.config["max_items"]) < 1 or int(self.config["top_k"]) < 0:
            raise ValueError("config 'max_items' must be >= 1 and 'top_k' >= 0")
        self.bank = RetrievalBank()
        self._emb: dict[str, np.ndarray] = {}  # question -> embedding (not state: rebuilt from the bank)

    # ---- seam --------------------------------------------------------------------------------
    def memory_text(self) -> str:
        return render_bank(self.bank.records)

    def solving_messages(self, memory_text: str, task: Task) -> list[dict]:
        """The solving prompt with ``memory_text`` as the memory-items block (retrieval already done)."""
        user = fill(load_prompt("reasoning_bank_solver_user"), MEMORY=memory_text, TASK=self.family.prompt(task))
        return [{"role": "system", "content": load_prompt("reasoning_bank_solver_system")},
                {"role": "user", "content": user}]

    def solve_with_memory(self, memory_text: str, tasks: Sequence[Task], *, role: str = "janus", sample: int = 0
                          ) -> list[tuple[ChatResult, Score]]:
        """Janus replay with the method's retrieval inside ``memory_text``; ``sample``: the LLM client's sample index
        (the evaluator's fresh draws, as the base seam)."""
        tasks = list(tasks)
        if self.config["replay"] == "full":
            msgs = [self.solving_messages(memory_text, t) for t in tasks]
        else:
            msgs = self._retrieval_messages(parse_bank_text(memory_text), tasks)[0]
        return self._solve_batch(msgs, tasks, role, sample=sample)

    def solve_frozen(self, tasks: Sequence[Task], *, role: str = "test") -> list[tuple[ChatResult, Score]]:
        """Top-k retrieval from the frozen bank (whatever ``replay`` says)."""
        tasks = list(tasks)
        msgs = self._retrieval_messages(parse_bank_text(self.memory_text()), tasks)[0]
        return self._solve_batch(msgs, tasks, role)

    def state_hints(self) -> dict:
        return {("bank",) + p: h for p, h in self.bank.state_hints().items()}

    def get_state(self) -> dict:
        return {"bank": self.bank.state()}

    def set_state(self, state: dict) -> None:
        self.bank.set_state(state["bank"])
        self._emb = {}
        mat = self.bank.matrix()
        for i, r in enumerate(self.bank.records):
            self._emb.setdefault(r["question"], mat[i].copy())  # type: ignore[index]  # (records: a matrix)

    def memory_units(self) -> _Entries:
        """The controller offers again a rolled-back entry whole, not its lines (controller/reoffer.py)."""
        return _Entries()

    def load_memory_text(self, text: str) -> None:
        """Make ``text`` (a bank in the memory-text format) the current bank, e.g. to inject a harmful candidate;
        questions are embedded with the encoder (cached). Raises ValueError for text that is not a bank."""
        entries = parse_bank_text(text)
        embs: Any = self._embeddings([e["question"] for e in entries]) if entries else []
        self.bank = RetrievalBank()
        for e, v in zip(entries, embs):
            self.bank.add({"id": e["id"], "question": e["question"], "status": e["status"],
                           "body": sanitize(e["body"])}, v)

    # ---- hook: an injected harmful candidate -------------------------------------------------
    supports_injection = True  # built as a bank of entries, embedded again (inject_harm)

    @classmethod
    def harmful_text(cls, harm: Harm, memory: str, *, examples: str = "", answer: str = "") -> str:
        raise state_built(cls.name)

    def inject_harm(self, harm: Harm, outcome: StepOutcome, before: dict) -> None:
        """The harmful bank built from the entries of M_{t-1}, loaded with :meth:`load_memory_text` (each entry's
        question embedded with the run's encoder); ``dump`` keeps the step's answer and self-judgment."""
        entries = harm.bank(before["state"]["bank"]["records"], answer=visible_text(outcome.output),
                            status=outcome.info.get("judged"))
        self.load_memory_text(render_bank(entries))

    # ---- retrieval ---------------------------------------------------------------------------
    def _embeddings(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._emb]
        if missing:
            for t, e in zip(missing, self.embed(missing), strict=True):
                self._emb[t] = e
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        return np.stack([self._emb[t] for t in texts])

    def _retrieval_messages(self, entries: list[dict], tasks: list[Task]) -> tuple[list[list[dict]], list[list]]:
        """Per task: the top-k entries of ``entries`` by question cosine (best first, stable ties) rendered into the
        prompt. Returns (messages, hits as [(entry index, similarity)])."""
        q = self._embeddings([t.question for t in tasks])
        keys = self._embeddings([e["question"] for e in entries]) if entries else None
        k = int(self.config["top_k"])
        msgs, hits = [], []
        for n, t in enumerate(tasks):
            top: list = []
            if keys is not None and k > 0:
                sims = keys @ q[n]
                top = [(int(i), float(sims[i])) for i in np.argsort(-sims, kind="stable")[:k]]
            block = "\n\n".join(entries[i]["body"] for i, _ in top) or "(none yet)"
            msgs.append(self.solving_messages(block, t))
            hits.append(top)
        return msgs, hits

    # ---- step --------------------------------------------------------------------------------
    def step(self, task: Task) -> StepOutcome:
        calls: list[LLMCall] = []
        old = self.memory_text()
        entries = parse_bank_text(old)
        msgs, hits = self._retrieval_messages(entries, [task])
        info: dict = {"retrieved": [{"id": entries[i]["id"], "similarity": round(s, 6)} for i, s in hits[0]]}
        out = self._chat(msgs[0], role="solver", calls=calls, params=self.solver_params())
        score = self.score(task, out)
        shown = visible_text(out)
        status = self._judge(task, shown, score, calls, info)
        rejected = None
        if status is None:
            rejected = "unparseable judgment"
        else:
            body, rejected = self._extract(task, shown, status, calls, info)
            if rejected is None:
                rec = {"id": task.id, "question": task.question, "status": status, "body": body}
                self.bank.add(rec, self._embeddings([task.question])[0])
        if rejected:
            self._count("candidates_rejected", rejected)
        self.stats["steps"] += 1
        return StepOutcome(out, score, old, self.memory_text(), rejected, calls, info)

    def _judge(self, task: Task, shown: str, score: Score, calls: list[LLMCall], info: dict) -> str | None:
        if self.config["judge"] == "ground_truth":
            status = "success" if score.correct else "failure"
        else:
            prompt = fill(load_prompt("reasoning_bank_judge"), TASK=self.family.prompt(task),
                          OUTPUT=truncate(shown, self.config["retrieved_output_chars"]) or "(no reply)")
            res = self._chat([{"role": "user", "content": prompt}], role="reflection", calls=calls,
                             params=self.curator_params())
            status = parse_status(visible_text(res), bool(self.config["faithful"]))  # type: ignore[assignment]
        info["judged"] = status
        info["judge_agrees_with_ground_truth"] = None if status is None else (status == "success") == bool(score.correct)
        if status is not None:
            self._count("judged", status)
        return status

    def _extract(self, task: Task, shown: str, status: str, calls: list[LLMCall], info: dict) -> tuple[str, str | None]:
        system = fill(load_prompt(f"reasoning_bank_extract_{status}"), MAX_ITEMS=str(self.config["max_items"]))
        user = fill(load_prompt("reasoning_bank_extract_user"), TASK=self.family.prompt(task),
                    OUTPUT=truncate(shown, self.config["retrieved_output_chars"]) or "(no reply)")
        params = self.curator_params()
        if self.config["extraction_temperature"] is not None:
            params["temperature"] = float(self.config["extraction_temperature"])
        res = self._chat([{"role": "system", "content": system}, {"role": "user", "content": user}],
                         role="curator", calls=calls, params=params)
        text = visible_text(res)
        if self.config["faithful"]:  # the authors store the raw reply as the entry's memory, whatever it holds
            info["items"] = None
            return sanitize(text), None
        items, dropped = parse_items(text, int(self.config["max_items"]), truncated=res.truncated)
        info["items"] = items
        info["items_dropped"] = dropped
        for d in dropped:
            self._count("items_dropped", d["reason"])
        if not items:
            info["rejected_extraction"] = text
            return "", "no memory items"
        return render_items(items), None


class _Entries:
    """ReasoningBank's units of re-offer (:meth:`ReasoningBank.memory_units`): a memory text's entries, each its
    ``<<entry ...>>`` line and body; joined after a text's entries."""

    name = "reasoning_bank entries"

    @staticmethod
    def split(text: str) -> list[str]:
        return [render_entry(e) for e in parse_bank_text(text)]

    @staticmethod
    def join(text: str, units: list[str]) -> str:
        return render_bank(parse_bank_text(text) + [e for u in units for e in parse_bank_text(u)])
