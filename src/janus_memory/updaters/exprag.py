"""ExpRAG: retrieval of past experience records (Wei et al. 2025, as the Janus paper's baseline; docs/research-notes.md §9).

Every stream task leaves one record "Q: <task prompt>\\nA: <model output>\\nFeedback: success|failure" in the bank.
Solving a task puts the top-k (default 3) records most similar to its question (cosine of question embeddings,
best first) in the prompt, with an instruction to use them as reference but to solve the current problem on its own.

Memory text: the whole bank rendered in stream order (the same record format), "(empty)" when the bank is empty.
Janus is not applied to ExpRAG by default; if it is, ``solve_with_memory(text)`` puts ``text`` where the retrieved
records go, and a rollback restores the bank (the bank IS this method's memory).
"""

from __future__ import annotations

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

    @classmethod
    def llm_calls_per_step(cls, config: dict) -> tuple[float, float]:
        return 1, 1  # the solver (retrieval is the encoder's)

    def __init__(self, **kw):
        super().__init__(**kw)
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
