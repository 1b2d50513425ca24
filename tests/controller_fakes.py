"""Shared helpers of the controller tests: toy tasks and a deterministic fake evaluator."""
from janus_memory.values import Task


def mk_task(i):
    return Task(id=f"t{i}", dataset="toy", question=f"q{i}", gold="0")


class Ev:
    """Deterministic fake evaluator: correct iff fn(memory, task_id); records every call."""

    def __init__(self, fn=lambda m, tid: True):
        self.fn = fn
        self.calls = []

    def __call__(self, mem, tasks):
        self.calls.append((mem, [t.id for t in tasks]))
        return [bool(self.fn(mem, t.id)) for t in tasks]
