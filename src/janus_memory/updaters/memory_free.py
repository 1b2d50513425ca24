"""Memory-free baseline: the plain task prompt, no memory (docs/research-notes.md §9).

The solving prompt is one user message holding ``family.prompt(task)``; ``memory_text()`` is "" (so a memory
embedding is the zero vector and Janus never triggers); ``solve_with_memory`` ignores the memory text.
"""

from __future__ import annotations

from janus_memory.updaters.base import LLMCall, StepOutcome, Updater, register_updater
from janus_memory.values import Task


@register_updater("memory_free")
class MemoryFree(Updater):
    """The underlying LLM alone."""

    supports_janus, is_baseline, table_rank, display_name = False, True, 0, "Memory-free"  # no memory to judge

    @classmethod
    def llm_calls_per_step(cls, config: dict) -> tuple[float, float]:
        return 1, 1  # the solver

    def memory_text(self) -> str:
        return ""

    def solving_messages(self, memory_text: str, task: Task) -> list[dict]:
        return [{"role": "user", "content": self.family.prompt(task)}]

    def step(self, task: Task) -> StepOutcome:
        calls: list[LLMCall] = []
        out = self._chat(self.solving_messages("", task), role="solver", calls=calls, params=self.solver_params())
        score = self.score(task, out)
        self.stats["steps"] += 1
        return StepOutcome(out, score, "", "", None, calls, {})

    def get_state(self) -> dict:
        return {}

    def set_state(self, state: dict) -> None:
        return None
