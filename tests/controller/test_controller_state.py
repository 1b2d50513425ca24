"""State save/load: byte-identical JSON and identical decisions after a resume; config round trip."""
import json
import zlib

import numpy as np
import pytest

from janus_memory.controller import Janus, JanusConfig, StepInput
from janus_memory.values import Task


def ev(mem, tasks):
    q = 0.2 + 0.7 * (zlib.crc32(mem.encode()) / 2**32)
    return [zlib.crc32(f"{mem}|{t.id}".encode()) / 2**32 < q for t in tasks]


def inputs(n, seed=0):
    """A fixed synthetic stream; memory texts depend only on the step (the candidate is always m{i+1})."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        t = Task(id=f"t{i}", dataset="toy", question=f"q{i}", gold=str(i), meta={"k": [i, "x"]})
        out.append((t, rng.normal(size=16).astype(np.float32), rng.normal(size=8), rng.normal(size=8)))
    return out


def drive(j, stream, start, stop, mem):
    ds = []
    for i in range(start, stop):
        t, q, ov, nv = stream[i]
        d = j.decide(StepInput(t, q, mem, f"m{i + 1}", ov, nv))
        ds.append(d.to_dict())
        if d.accept:
            mem = f"m{i + 1}"
    return ds, mem


@pytest.mark.parametrize("cfg", [JanusConfig(), JanusConfig.fast(), JanusConfig(trigger="random", trigger_rate=0.5)])
def test_save_load_byte_identical_and_resume_identical(cfg):
    stream = inputs(90)
    ref = Janus(cfg, ev)
    ref_ds, _ = drive(ref, stream, 0, 90, "m0")
    a = Janus(cfg, ev)
    first, mem = drive(a, stream, 0, 50, "m0")
    assert first == ref_ds[:50]
    s1 = json.dumps(a.state_dict(), sort_keys=True)
    b = Janus.from_state_dict(json.loads(s1), ev)
    s2 = json.dumps(b.state_dict(), sort_keys=True)
    assert s1 == s2
    rest, _ = drive(b, stream, 50, 90, mem)
    assert rest == ref_ds[50:]
    assert json.dumps(b.state_dict(), sort_keys=True) == json.dumps(ref.state_dict(), sort_keys=True)
    assert b.stats == ref.stats
    assert any(d["triggered"] for d in rest)
    assert json.loads(json.dumps(ref_ds)) == ref_ds  # Decision.to_dict() is JSON-serialisable


def test_load_state_dict_in_place_and_custom_task_serialisation():
    class Obj:
        def __init__(self, id):
            self.id = id

    j = Janus(JanusConfig(trigger="never"), None, task_to_dict=lambda o: {"id": o.id},
              task_from_dict=lambda d: Obj(d["id"]))
    for i in range(25):
        j.decide(StepInput(Obj(f"o{i}"), np.ones(4) * i, "a", "b", np.zeros(2), np.ones(2)))
    state = json.loads(json.dumps(j.state_dict()))
    k = Janus(JanusConfig(), None, task_to_dict=lambda o: {"id": o.id}, task_from_dict=lambda d: Obj(d["id"]))
    k.load_state_dict(state)
    assert k.config == JanusConfig(trigger="never") and k.stats["steps"] == 25
    assert json.dumps(k.state_dict(), sort_keys=True) == json.dumps(state, sort_keys=True)
    with pytest.raises(ValueError, match="task_from_dict"):
        Janus.from_state_dict(state)
    # unknown task types without task_to_dict: clear TypeError at save time
    j2 = Janus(JanusConfig(trigger="never"))
    j2.decide(StepInput(Obj("x"), np.ones(4), "a", "b", np.zeros(2), np.ones(2)))
    with pytest.raises(TypeError, match="task_to_dict"):
        j2.state_dict()
    with pytest.raises(ValueError, match="format"):
        Janus().load_state_dict({"format": "other"})


def test_config_round_trip_and_validation():
    cfg = JanusConfig(tau=0.2, coverage_size=10, boundary_size=5, trigger="periodic", trigger_period=4)
    assert JanusConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert JanusConfig() == JanusConfig.faithful()
    d = JanusConfig().to_dict()
    assert (d["warmup"], d["coverage_size"], d["boundary_size"], d["fresh_size"], d["beta"], d["tau"], d["seed"],
            d["trigger"], d["clustering"], d["decision_rule"], d["early_stop"], d["dedup"]) == (
        20, 12, 8, 5, 0.9, 0.0, 0, "mmt", "paper", "paper", False, False)
    f = JanusConfig.fast()
    assert (f.early_stop, f.dedup, f.clustering) == (True, True, "incremental")
    k30 = JanusConfig.with_support_size(30)
    assert (k30.coverage_size, k30.boundary_size, k30.warmup, k30.support_size) == (12, 18, 30, 30)
    k10 = JanusConfig.with_support_size(10)
    assert (k10.coverage_size, k10.boundary_size, k10.warmup) == (10, 0, 10)
    with pytest.raises(ValueError, match="bogus"):
        JanusConfig.from_dict({"bogus": 1})
    bad = [dict(coverage_size=-1), dict(boundary_size=-2), dict(fresh_size=-1), dict(warmup=-1), dict(beta=1.0),
           dict(beta=-0.1), dict(tau=float("nan")), dict(trigger="sometimes"), dict(trigger_rate=1.5),
           dict(trigger_period=0), dict(clustering="magic"), dict(decision_rule="vote"), dict(alpha=0.0),
           dict(early_stop="yes"), dict(coverage_size=2.5), dict(early_stop_round=0)]
    for kw in bad:
        with pytest.raises(ValueError):
            JanusConfig(**kw)


def test_a_tampered_hybrid_set_state_is_refused_at_load():
    """Coverage and boundary entries are task indices of the stream seen so far; an index outside it, a repeated
    boundary task, a float or a non-string tag is a ValueError when the state is loaded, not a wrong comparison (a
    negative index read the current task) or an IndexError at the next trigger."""
    stream = inputs(60)
    a = Janus(JanusConfig.fast(), ev)
    drive(a, stream, 0, 40, "m0")
    good = json.loads(json.dumps(a.state_dict()))
    assert good["boundary"] and good["coverage"]  # the run compared: both roles hold tasks
    Janus.from_state_dict(json.loads(json.dumps(good)), ev)  # loads as saved
    first = good["boundary"][0]
    for field, bad in [("boundary", [[-1, "flip"]]), ("boundary", [[10**6, "flip"]]), ("boundary", [first, first]),
                       ("boundary", [[1.5, "flip"]]), ("boundary", [[first[0], 3]]), ("coverage", [-1]),
                       ("coverage", [10**6]), ("coverage", [2.0]), ("coverage", "0")]:
        with pytest.raises(ValueError, match=f"state {field} must be"):
            Janus.from_state_dict({**json.loads(json.dumps(good)), field: bad}, ev)
