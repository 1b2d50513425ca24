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


def boundary_first(**kw):
    """RECOMMENDED_HYBRID_BOUNDARY_FIRST (the paper's hybrid set read boundary first, the full gate) with ``kw``
    over it: the machinery the recommended-controller tests pin; ``recommended()`` itself reads a stable panel
    (tests/controller/test_recommended_panel.py)."""
    from janus_memory.controller import JanusConfig
    from janus_memory.controller.config import RECOMMENDED_HYBRID_BOUNDARY_FIRST

    return JanusConfig(**{**RECOMMENDED_HYBRID_BOUNDARY_FIRST, **kw})


def fixed(results: dict[str, list]):
    """An evaluator answering results[memory][task index] and recording its calls (``ev.calls``)."""
    calls = []

    def ev(text, tasks):
        calls.append((text, [t["i"] for t in tasks]))
        return [results[text][t["i"]] for t in tasks]

    ev.calls = calls
    return ev


def tasks(n):
    """n plain task dicts t0..t(n-1), each with its index ``i``."""
    return [{"id": f"t{i}", "i": i} for i in range(n)]
