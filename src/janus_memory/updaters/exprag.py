"""ExpRAG: retrieval of past experience records (Wei et al. 2025, as the Janus paper's baseline; docs/research-notes.md §9).

Every stream task leaves one record "Q: <task prompt>\\nA: <model output>\\nFeedback: success|failure" in the bank.
Solving a task puts the top-k (default 3) records most similar to its question (cosine of question embeddings,
best first) in the prompt, with an instruction to use them as reference but to solve the current problem on its own.

Memory text: the whole bank rendered in stream order (the same record format), "(empty)" when the bank is empty.
Janus is not applied to ExpRAG by default (the paper's baseline). ``janus_replay`` (ours) lets it wrap ExpRAG; a
rollback restores the bank (the bank IS this method's memory). Two replays:

* ``whole_bank``: a replay solves a task with the memory's whole bank where the stream shows the top-k records
  (``solve_with_memory(text)`` puts ``text`` where the retrieved records go). The replay sees the same records as the
  stream when ``top_k`` is at least the bank's size (the demo's setting); with a smaller ``top_k`` it judges the memory
  on more records than one stream solve reads, and its prompt grows with the bank (a 30-ticket bank: 4-10k tokens).
* ``top_k``: a replay shows the ``top_k`` records of the memory most similar to the task, retrieved as the stream
  retrieves (cosine of question embeddings, best first, ties in bank order), so a memory is judged on the prompt a
  stream solve or the held-out test would build from it, at the stream's prompt length. Each record of the memory
  text is matched to the embedding the bank holds for it (every bank this updater held in this process or restored
  from a snapshot); a record no bank held (a memory text made elsewhere) is embedded from its question line.

Either way the task's own record (the one whose question is the task's prompt) is left out first: the stream's solve
of a task never saw its own answer, and a replay that did would copy it.
Why: on memory that carries facts (the generated ``rules`` tickets) ExpRAG is the updater whose memory keeps them,
raw; DC's and ACE's curators write general lessons without the numbers (docs/measurements.md, "The rules family").
"""

from __future__ import annotations

import base64
import copy
import re
from collections import OrderedDict
from typing import Sequence

import numpy as np

from janus_memory.updaters.base import (
    EMPTY_MEMORY,
    LLMCall,
    RetrievalBank,
    StepOutcome,
    Updater,
    fill,
    load_prompt,
    register_updater,
    truncate,
    visible_text,
)
from janus_memory.values import ChatResult, Score, Task


@register_updater("exprag")
class ExpRAG(Updater):
    """ExpRAG (see module docstring)."""

    # baseline without Janus: its "memory" is the whole experience bank, and its solving prompt retrieves top-k records,
    # so replaying it with the whole bank would judge a different thing (docs/research-notes.md §9)
    supports_janus, is_baseline, table_rank, display_name = False, True, 1, "ExpRAG"
    prompt_prefixes = ("exprag_",)

    DEFAULTS = {"janus_replay": "off"}  # "off" (the paper: no Janus) | "whole_bank" | "top_k" (module docstring)
    REPLAYS = ("off", "whole_bank", "top_k")
    _CHOICES = {"janus_replay": REPLAYS}
    janus_hint = (" (or updater_config janus_replay: top_k or whole_bank, our options: a replay shows the memory's top-k"
                  " records or its whole bank)")

    @classmethod
    def janus_supported(cls, config: dict) -> bool:
        return config.get("janus_replay") in ("whole_bank", "top_k")

    @classmethod
    def llm_calls_per_step(cls, config: dict) -> tuple[float, float]:
        return 1, 1  # the solver (retrieval is the encoder's)

    def __init__(self, **kw):
        super().__init__(**kw)
        if self.config["janus_replay"] not in self.REPLAYS:
            raise ValueError(f"config 'janus_replay' must be one of {', '.join(self.REPLAYS)}, "
                             f"got {self.config['janus_replay']!r}")
        self.bank = RetrievalBank()
        self._embedding_of: dict[str, np.ndarray] = {}  # a record's rendered body -> its question embedding (top_k)
        self._bodies_of: OrderedDict[str, list[str]] = OrderedDict()  # the 8 texts memory_text() rendered last
        self._known: dict[str, tuple[dict, np.ndarray]] = {}  # body -> (record, embedding) of every record held
        self._keep_held = False  # memory_units() was asked: the state also keeps the records rolled back

    def _body(self, rec: dict) -> str:
        out = truncate(rec["output"], self.config["retrieved_output_chars"])
        return f"Q: {rec['input']}\nA: {out}\nFeedback: {rec['feedback']}"

    def _render(self, indices: list[int]) -> str:
        return self._numbered([self._body(self.bank.records[i]) for i in indices])

    def memory_text(self) -> str:
        return self._rendered([self._body(r) for r in self.bank.records])

    def _rendered(self, bodies: list[str]) -> str:
        text = self._numbered(bodies)
        self._bodies_of[text] = list(bodies)  # the records of a text this updater rendered, kept for its replays
        self._bodies_of.move_to_end(text)
        while len(self._bodies_of) > 8:
            self._bodies_of.popitem(last=False)
        return text

    # ---- re-offers (JanusConfig.seq_reoffer): the unit is a record, not a line ----
    def memory_units(self) -> _Records:
        """The controller offers again a rolled-back record whole (controller/reoffer.py); from now on the state
        also keeps the records rolled back, so that a resumed run can still load an offer of them."""
        self._keep_held = True
        return _Records(self)

    def _note(self, records: list[dict], emb: np.ndarray | None) -> None:
        for r, e in zip(records, emb if emb is not None else [], strict=True):
            self._known.setdefault(self._body(r), (r, np.array(e, dtype=np.float32)))

    def load_memory_text(self, text: str) -> None:
        """Make ``text`` (``memory_text()``'s format) the bank: a re-offer the controller deployed. Every record of
        it must be one this updater held, in the bank or rolled back (its record and question embedding come back
        as they were); otherwise ValueError, nothing changed."""
        bodies = self._blocks(text)
        if self._numbered(bodies) != text:
            raise ValueError("not a memory text of this bank (its records renumbered from [Experience 1], or "
                             f"{EMPTY_MEMORY})")
        held = self._known  # every record this updater held: step, set_state and inject_harm note each
        missing = [b for b in bodies if b not in held]
        if missing:
            raise ValueError(f"{len(missing)} of the text's {len(bodies)} records were never in this bank")
        bank = RetrievalBank()
        for b in bodies:
            bank.add(*held[b])
        self.bank = bank

    def _blocks(self, memory_text: str) -> list[str]:
        """The record bodies of a memory text (each without its ``[Experience n]`` line), in order: as rendered, for a
        text this updater rendered lately (a model's answer that writes "[Experience 3]" on a line of its own is one
        record's answer, not a record); else read from the text."""
        known = self._bodies_of.get(memory_text)
        if known is not None:
            return list(known)
        if memory_text.strip() in ("", EMPTY_MEMORY):
            return []
        blocks = re.split(r"\n\n(?=\[Experience \d+\]\n)", memory_text)
        return [re.sub(r"^\[Experience \d+\]\n", "", b, count=1) for b in blocks]

    @staticmethod
    def _numbered(bodies: list[str]) -> str:
        if not bodies:
            return EMPTY_MEMORY
        return "\n\n".join(f"[Experience {n}]\n{b}" for n, b in enumerate(bodies, start=1))

    def _others(self, memory_text: str, task: Task) -> tuple[list[str], bool]:
        """The record bodies of ``memory_text`` without the task's own record, and whether it held one."""
        bodies = self._blocks(memory_text)
        own = f"Q: {self.family.prompt(task)}\nA: "
        kept = [b for b in bodies if not b.startswith(own)]
        return kept, len(kept) != len(bodies)

    def without_own_record(self, memory_text: str, task: Task) -> str:
        """``memory_text`` without the record of ``task`` itself (its question is the task's prompt), renumbered;
        the text unchanged when it holds no such record."""
        kept, had_own = self._others(memory_text, task)
        return self._numbered(kept) if had_own else memory_text

    def _remember_bank(self) -> None:
        """Record the embedding of every record the bank holds now, keyed by its rendered body."""
        emb = self.bank.matrix()
        for rec, e in zip(self.bank.records, emb if emb is not None else [], strict=True):
            body = self._body(rec)
            self._embedding_of.setdefault(body, np.array(e, dtype=np.float32))

    def _embeddings(self, bodies: list[str]) -> np.ndarray:
        """One question embedding per record body: the bank's (or, rolled back, the one it had), or (a record no bank
        held) its question line's."""
        missing = [b for b in dict.fromkeys(bodies) if b not in self._embedding_of]
        if missing:
            self._remember_bank()
            for b in missing:
                if b not in self._embedding_of and b in self._known:  # held before a resume: its kept embedding
                    self._embedding_of[b] = self._known[b][1]
            missing = [b for b in missing if b not in self._embedding_of]
        if missing:
            questions = [b[3:].split("\nA: ", 1)[0] if b.startswith("Q: ") else b for b in missing]
            for b, e in zip(missing, self.embed(questions), strict=True):
                self._embedding_of[b] = e
        return np.stack([self._embedding_of[b] for b in bodies])

    def replay_memory(self, memory_text: str, task: Task, query: np.ndarray | None = None) -> str:
        """What a Janus replay of ``task`` shows of ``memory_text`` (module docstring): the other records, all of
        them (``whole_bank``) or the ``top_k`` most similar (``top_k``; ``query``: the task's question embedding)."""
        if self.config["janus_replay"] != "top_k":
            return self.without_own_record(memory_text, task)
        bodies, _ = self._others(memory_text, task)
        k = int(self.config["top_k"])
        if not bodies or k <= 0:
            return EMPTY_MEMORY
        q = self.embed([task.question])[0] if query is None else query
        sims = self._embeddings(bodies) @ np.asarray(q, dtype=np.float32).reshape(-1)
        order = np.argsort(-sims, kind="stable")[:k]
        return self._numbered([bodies[int(i)] for i in order])

    def _replay_memories(self, items: list[tuple[str, Task]]) -> list[str]:
        queries: list[np.ndarray | None] = [None] * len(items)
        if self.config["janus_replay"] == "top_k" and items:
            queries = list(self.embed([t.question for _, t in items]))
        return [self.replay_memory(m, t, q) for (m, t), q in zip(items, queries, strict=True)]

    def solve_with_memory(self, memory_text: str, tasks: Sequence[Task], *, role: str = "janus",
                          sample: int = 0) -> list[tuple[ChatResult, Score]]:
        """Janus replay: the memory as ``janus_replay`` shows it for each task (module docstring)."""
        tasks = list(tasks)
        shown = self._replay_memories([(memory_text, t) for t in tasks])
        msgs = [self.solving_messages(m, t) for m, t in zip(shown, tasks, strict=True)]
        return self._solve_batch(msgs, tasks, role, sample=sample)

    def solve_replays(self, items, *, role: str = "janus"):
        items = list(items)
        shown = self._replay_memories([(m, t) for m, t, _ in items])
        return super().solve_replays([(m, t, s) for m, (_, t, s) in zip(shown, items, strict=True)], role=role)

    def solving_messages(self, memory_text: str, task: Task) -> list[dict]:
        user = fill(load_prompt("exprag_user"), EXPERIENCE=memory_text, TASK=self.family.prompt(task))
        return [{"role": "system", "content": load_prompt("exprag_system")}, {"role": "user", "content": user}]

    def step(self, task: Task) -> StepOutcome:
        calls: list[LLMCall] = []
        old = self.memory_text()
        q_emb = self.embed([task.question])[0]
        hits = self.bank.top_k(q_emb, self.config["top_k"])
        info = {"retrieved": [{"id": self.bank.records[i]["id"], "similarity": round(s, 6)} for i, s in hits]}
        msgs = self.solving_messages(self._render([i for i, _ in hits]), task)
        out = self._chat(msgs, role="solver", calls=calls, params=self.solver_params())
        score = self.score(task, out)
        self.bank.add(
            {
                "id": task.id,
                "question": task.question,
                "input": self.family.prompt(task),
                "output": visible_text(out),
                "feedback": "success" if score.correct else "failure",
            },
            q_emb,
        )
        self._known.setdefault(self._body(self.bank.records[-1]), (self.bank.records[-1], q_emb))
        self.stats["steps"] += 1
        return StepOutcome(out, score, old, self.memory_text(), None, calls, info)

    def solve_frozen(self, tasks: Sequence[Task], *, role: str = "test") -> list[tuple[ChatResult, Score]]:
        """Top-k records of the stream bank for each test task (the bank is frozen)."""
        tasks = list(tasks)
        if not tasks:
            return []
        embs = self.embed([t.question for t in tasks])
        msgs = [
            self.solving_messages(self._render([i for i, _ in self.bank.top_k(e, self.config["top_k"])]), t)
            for t, e in zip(tasks, embs, strict=True)
        ]
        return self._solve_batch(msgs, tasks, role)

    def state_hints(self) -> dict:
        return {("bank",) + p: h for p, h in self.bank.state_hints().items()}

    def get_state(self) -> dict:
        state: dict = {"bank": self.bank.state()}
        if self._keep_held:  # memory_units: the records rolled back, which a re-offer may bring back
            in_bank = {self._body(r) for r in self.bank.records}
            held = sorted(((b, r, e) for b, (r, e) in self._known.items() if b not in in_bank),
                          key=lambda x: (str(x[1].get("id")), x[0]))
            if held:
                state["held"] = [{"record": copy.deepcopy(r), "emb_b64": base64.b64encode(
                    np.ascontiguousarray(e, dtype="<f4").tobytes()).decode("ascii")} for _, r, e in held]
        return state

    def set_state(self, state: dict) -> None:
        held = self._read_held(state.get("held", []), int(state["bank"].get("dim") or 0))
        self.bank.set_state(state["bank"])
        self._note(self.bank.records, self.bank.matrix())
        for rec, e in held:
            self._known.setdefault(self._body(rec), (rec, e))

    _FIELDS = ("id", "question", "input", "output", "feedback")

    def _read_held(self, held: object, dim: int) -> list[tuple[dict, np.ndarray]]:
        """The state's ``held`` records, checked before anything changes (ValueError naming ``held``): each a record
        with its five text fields and a whole float32 embedding of the bank's width."""
        if not isinstance(held, list):
            raise ValueError("state 'held' must be a list of records with their embeddings")
        out: list[tuple[dict, np.ndarray]] = []
        for n, h in enumerate(held):
            rec = h.get("record") if isinstance(h, dict) else None
            if not isinstance(rec, dict) or not all(isinstance(rec.get(k), str) for k in self._FIELDS):
                raise ValueError(f"state 'held' entry {n}: a record needs the text fields {', '.join(self._FIELDS)}")
            try:
                raw = base64.b64decode(h.get("emb_b64", ""), validate=True)
            except (TypeError, ValueError):
                raw = b"?"
            width = dim or (len(out[0][1]) if out else len(raw) // 4)
            if len(raw) != 4 * width or not width:
                raise ValueError(f"state 'held' entry {n}: its embedding is not {width or 'a whole number of'} float32 "
                                 "values")
            out.append((copy.deepcopy(rec), np.frombuffer(raw, dtype="<f4").astype(np.float32)))
        return out

    # ---- hook: an injected harmful candidate (`--inject`; janus_memory.inject builds the records) ----
    supports_injection = True  # built as records; a record whose question is new is embedded (inject_harm)

    @classmethod
    def harmful_text(cls, harm, memory: str, *, examples: str = "", answer: str = "") -> str:
        raise ValueError(f"updater {cls.name!r}: its candidate depends on its state (ids, counters, embeddings); "
                         "build it with inject_candidate")

    def inject_harm(self, harm, outcome: StepOutcome, before: dict) -> None:
        """The harmful bank built from the records of M_{t-1} (``dump``: the record this step added). A record
        whose question is in the bank after the step (M_{t-1}'s records and the step's own) keeps that embedding;
        any other question is embedded with the run's encoder."""
        old = before["state"]["bank"]["records"]
        new_record = self.bank.records[-1] if len(self.bank) > len(old) else None
        records = harm.experience(old, new_record=new_record)
        known: dict = {}
        emb = self.bank.matrix()
        for r, e in zip(self.bank.records, emb if emb is not None else []):
            known.setdefault(r["question"], e)
        fresh = [r["question"] for r in records if r["question"] not in known]
        if fresh:
            for q, e in zip(fresh, self.embed(fresh)):
                known[q] = e
        bank = RetrievalBank()
        for r in records:
            bank.add(r, known[r["question"]])
        self.bank = bank
        self._note(bank.records, bank.matrix())


class _Records:
    """ExpRAG's units of re-offer (:meth:`ExpRAG.memory_units`): a memory text's records, each its body (question,
    answer, feedback) without its ``[Experience n]`` line; joined after a text's records, renumbered."""

    name = "exprag records"

    def __init__(self, updater: ExpRAG):
        self._u = updater

    def split(self, text: str) -> list[str]:
        return self._u._blocks(text)

    def join(self, text: str, units: list[str]) -> str:
        return self._u._rendered(self._u._blocks(text) + list(units))
