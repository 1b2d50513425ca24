"""A plugin OUTSIDE the janus_memory package: one new updater, one new task family and one new dataset, registered at
import time. Used by tests/plugins/test_plugins.py through ``janus --plugin janus_toy_plugin``. The updater takes injected
harmful candidates (``--inject``) through the base class's hook for a text memory: ``supports_injection`` and
``load_memory_text`` are all it adds for that."""
from __future__ import annotations

from pathlib import Path

from janus_memory.registry import DATASETS, FAMILIES
from janus_memory.tasks.base import DatasetSpec
from janus_memory.tasks.math_family import MathFamily
from janus_memory.updaters.base import LLMCall, StepOutcome, Updater, register_updater
from janus_memory.values import Task


@register_updater("notes")
class Notes(Updater):
    """Keeps the last ``keep`` solved questions with their answers as a plain-text memory."""

    DEFAULTS = {"keep": 3}
    display_name = "Notes"
    supports_injection = True  # `--inject`: the base class's hook builds a harmful sheet from memory_text()

    def __init__(self, **kw):
        super().__init__(**kw)
        self.notes: list[str] = []

    def memory_text(self) -> str:
        return "\n".join(self.notes) if self.notes else "(empty)"

    def load_memory_text(self, text: str) -> None:
        """Make ``text`` (memory_text()'s format: one note a line) the notes; an injected candidate comes this way."""
        self.notes = [] if text == "(empty)" else text.split("\n")

    def solving_messages(self, memory_text: str, task: Task) -> list[dict]:
        return [{"role": "system", "content": f"Notes from earlier problems:\n{memory_text}"},
                {"role": "user", "content": self.family.prompt(task)}]

    def step(self, task: Task) -> StepOutcome:
        calls: list[LLMCall] = []
        old = self.memory_text()
        out = self._chat(self.solving_messages(old, task), role="solver", calls=calls, params=self.solver_params())
        score = self.score(task, out)
        if score.correct:
            self.notes = (self.notes + [f"- {task.question[:60]} -> {score.extracted}"])[-int(self.config["keep"]):]
        self.stats["steps"] += 1
        return StepOutcome(out, score, old, self.memory_text(), None, calls, {})

    def get_state(self) -> dict:
        return {"notes": list(self.notes)}

    def set_state(self, state: dict) -> None:
        self.notes = list(state["notes"])


class ToyFamily(MathFamily):
    """Arithmetic questions scored like math; the scripted fake answers "The answer is N." (no box)."""

    name = "toy"
    prompt_name = "math"

    def fake_answer(self, task: Task, right: bool) -> str:
        return f"So the answer is {task.gold if right else int(task.gold) + 7}."


def load_toy(split: str, *, data_dir=None, seed: int = 0):
    """40 sums: stream = the first 30, test = the last 10 (files: this module, for the split hash)."""
    tasks = [Task(id=f"toy:{i}", dataset="toy_sums", question=f"What is {i} plus {2 * i + 1}? (item {i})",
                  gold=str(3 * i + 1)) for i in range(40)]
    part = {"stream": tasks[:30], "test": tasks[30:], "all": tasks}[split]
    return part, [Path(__file__)], f"toy sums, {split}"


FAMILIES.register("toy", ToyFamily)
DATASETS.register("toy_sums", DatasetSpec("toy_sums", "toy", load_toy, "first 30 of 40 sums", "last 10",
                                          display_name="Toy Sums"))
