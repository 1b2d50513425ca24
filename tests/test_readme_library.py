"""The README's library examples run as written (with a small stream, the hashing encoder and a toy scorer), and an
updater whose ``step`` returns the wrong thing gets one clear TypeError (issue 18: it was an AttributeError deep in
controller/adapter.py)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from janus_memory import GuardedUpdate, Janus, JanusConfig
from janus_memory.types import Task

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_guarded_update_example_runs_as_written(capsys):
    block = next(b for b in _python_blocks() if "class MyUpdater" in b)
    stream = [Task(f"t{i}", "toy", f"question number {i}", str(i)) for i in range(25)]
    # a toy evaluator: shorter memories solve everything, so every post-warm-up candidate is rolled back
    janus = Janus(JanusConfig(trigger="always", warmup=20), evaluator=lambda m, ts: [m.count("\n") <= 20] * len(ts))
    from janus_memory.encoders import get_encoder
    ns = {"janus": janus, "stream": stream, "enc": get_encoder("hashing:64")}
    exec(compile(block, "README.md", "exec"), ns)  # our own README text, not model output
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "1 False True warmup"
    assert lines[20:] == ["21 True False old_better", "22 True False old_better", "23 True False old_better",
                          "24 True False old_better", "25 True False old_better"]
    assert ns["guard"].updater.memory.count("\n") == 20  # the 5 rejected notes were rolled back


def test_an_updater_returning_a_bare_string_gets_one_clear_type_error():
    class Bad:
        memory = ""

        def snapshot(self):
            return self.memory

        def rollback(self, snap):
            self.memory = snap

        def step(self, task):
            self.memory += "x"
            return self.memory

    g = GuardedUpdate(Janus(JanusConfig(), evaluator=lambda m, ts: [True] * len(ts)), Bad(),
                      lambda texts: np.ones((len(texts), 4)))
    with pytest.raises(TypeError) as e:
        g.step(Task("t1", "toy", "q", "a"))
    assert str(e.value) == ("Bad.step(task) must return an object whose .old_memory and .candidate_memory are the "
                            "memory texts before and after the update (str); got str without str .old_memory, "
                            ".candidate_memory (janus_memory.updaters.base.StepOutcome is one such type)")
