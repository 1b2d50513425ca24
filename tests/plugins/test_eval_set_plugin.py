"""The evaluation-set seam from outside the package: a strategy in one file (tests/plugin_example/janus_last_seen.py,
"the last N seen tasks") registers, runs through the controller (plan, state round trip, description, estimate) and
through a fake-backend `janus run` + `janus report`, with no edit to janus_memory."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from controller_fakes import Ev, mk_task
from janus_memory import registry
from janus_memory.cli import main
from janus_memory.controller import EVAL_SETS, Janus, JanusConfig, StepInput, eval_set_for, register_eval_set
from janus_memory.controller.describe import describe
from janus_memory.run.estimate import eval_size, janus_calls

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "plugin_example"


@pytest.fixture(autouse=True)
def _plugin(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.setenv("PYTHONPATH", f"{PLUGIN_DIR}:{Path(__file__).resolve().parents[2] / 'src'}")
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    # set, then removed: the CLI's --plugin writes the variable for worker processes, and the undo at teardown must
    # remove it again (a delenv of an absent variable records nothing to undo, so it leaked into later tests)
    monkeypatch.setenv(registry.PLUGINS_ENV, "")
    monkeypatch.delenv(registry.PLUGINS_ENV)
    import janus_last_seen  # noqa: F401  (registers "last")

    yield
    EVAL_SETS.pop("last", None)
    registry._LOADED.discard("janus_last_seen")
    sys.modules.pop("janus_last_seen", None)


def _stream(j: Janus, n: int, accept_lines: bool = True) -> list:
    """``n`` steps with a fresh candidate each (one more line); task embeddings in 3 dimensions."""
    out, mem = [], "m"
    for i in range(n):
        new = mem + f"\nrule {i}"
        v = np.array([1.0, float(i % 3), float(i % 5)])
        d = j.decide(StepInput(mk_task(i), v, mem, new, v, v + 1.0))
        out.append(d)
        mem = new if d.accept else mem
    return out


def test_the_strategy_registers_and_checks_its_argument():
    assert "last" in EVAL_SETS and EVAL_SETS["last"].name == "last"
    assert eval_set_for(JanusConfig(eval_set="last:3")).n == 3
    assert eval_set_for(JanusConfig(eval_set="last")).n == 5
    with pytest.raises(ValueError, match=r"eval_set last:N takes a whole number N >= 1, got last:x"):
        JanusConfig(eval_set="last:x")
    with pytest.raises(ValueError, match=r"got last:0"):
        JanusConfig(eval_set="last:0")
    for odd in ("²", "٣", "3.0", "-1", " 3"):  # digits Python's int() reads differently, or not at all
        with pytest.raises(ValueError, match="eval_set last:N takes a whole number N >= 1"):
            JanusConfig(eval_set=f"last:{odd}")
    with pytest.raises(ValueError, match=r"eval_set must be one of \('hybrid', 'last', 'panel'\), got 'lst:3' "
                                         r"\(did you mean last\?\)"):
        JanusConfig(eval_set="lst:3")
    # a name nothing is close to (a plugin's, when the plugin is not loaded): the error says how plugins load
    with pytest.raises(ValueError, match=r"got 'stride:3' \(an evaluation set from a plugin is registered when its "
                                         r"module is loaded: janus --plugin MODULE or \$JANUS_PLUGINS\)"):
        JanusConfig(eval_set="stride:3")
    with pytest.raises(ValueError, match="eval_set 'panel' takes no argument, got panel:4"):
        JanusConfig(eval_set="panel:4")
    with pytest.raises(TypeError, match="expects an EvalSetStrategy subclass"):
        register_eval_set("bad")(dict)
    with pytest.raises(ValueError, match="without ':'"):
        register_eval_set("a:b")


def test_the_controller_compares_on_the_last_seen_tasks_and_restores_its_state():
    cfg = JanusConfig(eval_set="last:3", trigger="always", warmup=2)
    ev = Ev(lambda mem, tid: int(tid[1:]) % 2 == mem.count("\n") % 2)
    j = Janus(cfg, ev)
    ds = _stream(j, 6)
    assert [d.eval_ids for d in ds] == [[], [], ["t0", "t1"], ["t0", "t1", "t2"], ["t1", "t2", "t3"],
                                        ["t2", "t3", "t4"]]
    assert all((d.coverage, d.boundary, d.fresh) == ([], [], []) for d in ds)  # no roles of the paper's set
    assert [d.evaluator_calls_full for d in ds] == [0, 0, 4, 6, 6, 6]
    state = j.state_dict()
    assert state["last_seen"] == {"planned": 4} and "panel" not in state and "coverage" not in state
    # the state round trip: a restored controller makes the same decisions as the original
    twin = Janus.from_state_dict(json.loads(json.dumps(state)), Ev(ev.fn))
    assert json.dumps(twin.state_dict(), sort_keys=True) == json.dumps(state, sort_keys=True)
    v = np.array([1.0, 2.0, 3.0])
    a = j.decide(StepInput(mk_task(6), v, "m", "m\nx", v, v + 1.0))
    b = twin.decide(StepInput(mk_task(6), v, "m", "m\nx", v, v + 1.0))
    assert (a.eval_ids, a.accept, a.reason) == (b.eval_ids, b.accept, b.reason) == (["t3", "t4", "t5"], a.accept,
                                                                                     a.reason)
    bad = {**state, "last_seen": {"planned": 9}}
    with pytest.raises(ValueError, match=r"state last_seen.planned must be a whole number in \[0, 4\], got 9"):
        Janus.from_state_dict(bad, ev)


def test_description_and_estimate_size_it_from_the_strategy():
    cfg = JanusConfig(eval_set="last:3", trigger="always", warmup=2)
    d = describe(cfg)
    assert (d.evaluation, d.reads_cell, d.configured, d.sizes, d.paper_set) == (
        "the last 3 seen tasks", "last 3", 3, {"last": 3}, False)
    # sizes are compared with the paper's only for the paper's set; the warm-up and the trigger for every set
    assert d.paper_differences == ("warm-up 2 (paper 20)", "trigger always (paper mmt)")
    assert eval_size(cfg) == 3 and janus_calls(cfg, 1, 6) == 4 * 2 * 3  # steps 3-6, both memories x 3 tasks
    assert describe(cfg.to_dict()).configured == 3  # a stored config (config.json's janus section) reads the same


def test_a_fake_backend_run_and_its_report_use_the_plugin_strategy(tmp_path, capsys):
    conf = tmp_path / "last.yaml"
    conf.write_text("janus:\n  eval_set: last:3\n")
    out = tmp_path / "run"
    rc = main(["--plugin", "janus_last_seen", "run", "--backend", "fake", "--encoder", "hashing", "--dataset", "gsm8k",
               "--stream-size", "6", "--test-size", "2", "--updater", "dc_rs", "--controller", "janus", "--warmup",
               "2", "--trigger", "always", "--coverage-size", "4", "--config", str(conf), "--out", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert ("Janus: warm-up 2; trigger always (a comparison at every step after the warm-up); evaluation set: the last "
            "3 seen tasks; decision: ") in printed
    assert ("warning: --coverage-size has no effect with eval_set last:3 (Janus compares on the last 3 seen tasks; "
            "docs/controller.md)") in printed
    trig = [ln for ln in printed.splitlines() if " trigger at step " in ln]
    assert [ln.split(" |E|=")[1].split(" -> ")[0].split(" old ")[0] for ln in trig] == [
        "2 (the last 3 seen tasks)", "3 (the last 3 seen tasks)", "3 (the last 3 seen tasks)",
        "3 (the last 3 seen tasks)"]
    rows = [json.loads(x)["decision"] for x in (out / "dc_rs+janus" / "decisions.jsonl").read_text().splitlines()]
    ids = [r["task_id"] for r in rows]
    assert [r["eval_ids"] for r in rows] == [[], [], ids[0:2], ids[0:3], ids[1:4], ids[2:5]]
    assert json.loads((out / "config.json").read_text())["janus"]["eval_set"] == "last:3"
    # the report sizes its comparisons from the strategy: 3 tasks, not the paper's 25
    rc = main(["--plugin", "janus_last_seen", "report", str(out), "--out", str(tmp_path / "rep")])
    assert rc == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    row = next(ln for ln in md.splitlines() if ln.startswith("| ") and "last 3" in ln)
    # set built at the 4 comparisons: 2, 3, 3, 3 tasks (mean 2.75 of 3); 22 = 2 memories x 11 tasks, all paid
    assert row == ("| always (custom: paper with eval_set=last:3) | 100.0 | 4 | — | 100.0% | last 3 | 2.8 / 3 | 2.8 | "
                   "22 | 22 | 2/2 |")
