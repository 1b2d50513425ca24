"""ExpRAG: retrieval of past experience records (Wei et al. 2025, as the Janus paper's baseline; docs/research-notes.md §9).

Every stream task leaves one record "Q: <task prompt>\\nA: <model output>\\nFeedback: success|failure" in the bank.
Solving a task puts the top-k (default 3) records most similar to its question (cosine of question embeddings,
best first) in the prompt, with an instruction to use them as reference but to solve the current problem on its own.

Memory text: the whole bank rendered in stream order (the same record format), "(empty)" when the bank is empty.
Janus is not applied to ExpRAG by default (the paper's baseline). ``janus_replay: whole_bank`` (ours) lets
it wrap ExpRAG: a replay solves a task with the memory's whole bank where the stream shows the top-k records
(``solve_with_memory(text)`` puts ``text`` where the retrieved records go) minus the task's own record (the one whose
question is the task's prompt: the stream's solve of a task never saw its own answer, and a replay that did would
copy it), and a rollback restores the bank (the bank IS this method's memory). The replay sees the same records as
the stream when ``top_k`` is at least the bank's size (the demo's setting); with a smaller ``top_k`` it judges the
memory on more records than one stream solve reads.
Why: on memory that carries facts (the generated ``rules`` tickets) ExpRAG is the updater whose memory keeps them,
raw; DC's and ACE's curators write general lessons without the numbers (docs/measurements.md, "The rules family").
"""

from __future__ import annotations

import re
from typing import Sequence

from janus_memory.types import ChatResult, Score, Task
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


@register_updater("exprag")
class ExpRAG(Updater):
    """ExpRAG (see module docstring)."""

    # baseline without Janus: its "memory" is the whole experience bank, and its solving prompt retrieves top-k records,
    # so replaying it with the whole bank would judge a different thing (docs/research-notes.md §9)
    supports_janus, is_baseline, table_rank, display_name = False, True, 1, "ExpRAG"
    prompt_prefixes = ("exprag_",)

    DEFAULTS = {"janus_replay": "off"}  # "off" (the paper: no Janus) | "whole_bank" (module docstring)
    _CHOICES = {"janus_replay": ("off", "whole_bank")}
    janus_hint = " (or updater_config janus_replay: whole_bank, our option: replays show the whole bank)"

    @classmethod
    def janus_supported(cls, config: dict) -> bool:
        return config.get("janus_replay") == "whole_bank"

    @classmethod
    def llm_calls_per_step(cls, config: dict) -> tuple[float, float]:
        return 1, 1  # the solver (retrieval is the encoder's)

    def __init__(self, **kw):
        super().__init__(**kw)
        if self.config["janus_replay"] not in ("off", "whole_bank"):
            raise ValueError(f"config 'janus_replay' must be 'off' or 'whole_bank', got {self.config['janus_replay']!r}")
        self.bank = RetrievalBank()

    def _record_text(self, n: int, rec: dict) -> str:
        out = truncate(rec["output"], self.config["retrieved_output_chars"])
        return f"[Experience {n}]\nQ: {rec['input']}\nA: {out}\nFeedback: {rec['feedback']}"

    def _render(self, indices: list[int]) -> str:
        if not indices:
            return EMPTY_MEMORY
        return "\n\n".join(self._record_text(n, self.bank.records[i]) for n, i in enumerate(indices, start=1))

    def memory_text(self) -> str:
        return self._render(list(range(len(self.bank))))

    def without_own_record(self, memory_text: str, task: Task) -> str:
        """``memory_text`` without the record of ``task`` itself (its question is the task's prompt), renumbered;
        the text unchanged when it holds no such record."""
        blocks = re.split(r"\n\n(?=\[Experience \d+\]\n)", memory_text)
        own = f"\nQ: {self.family.prompt(task)}\nA: "
        kept = [b for b in blocks if own not in b]
        if len(kept) == len(blocks):
            return memory_text
        if not kept:
            return EMPTY_MEMORY
        return "\n\n".join(re.sub(r"^\[Experience \d+\]", f"[Experience {n}]", b, count=1)
                             for n, b in enumerate(kept, start=1))

    def solve_with_memory(self, memory_text: str, tasks: Sequence[Task], *, role: str = "janus",
                          sample: int = 0) -> list[tuple[ChatResult, Score]]:
        """Janus replay (``janus_replay: whole_bank``): the memory's records without the task's own."""
        msgs = [self.solving_messages(self.without_own_record(memory_text, t), t) for t in tasks]
        return self._solve_batch(msgs, tasks, role, sample=sample)

    def solve_replays(self, items, *, role: str = "janus"):
        return super().solve_replays([(self.without_own_record(m, t), t, s) for m, t, s in items], role=role)

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
        return {"bank": self.bank.state()}

    def set_state(self, state: dict) -> None:
        self.bank.set_state(state["bank"])

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
