"""The estimate line a run prints at its start (runner/estimate.py) and the measured-speed record it reads
(runner/timing.py): exact call counts from the config, exact lines, a planted record, corrupt and unreadable record
files (ignored, no traceback), concurrent writers (no lost record), and a run on the scripted fake backend standing
in for the embedded one (no real model)."""
from __future__ import annotations

import json
import multiprocessing as mp
import platform

import pytest

from janus_memory.registry import BACKENDS
from janus_memory.run.build import resolve_config
from janus_memory.run.estimate import CallCount, count_calls, estimate_line
from janus_memory.run.experiment import run_experiment
from janus_memory.run.timing import Measurement, machine_key, read_measurement, record_run
from janus_memory.settings.config import RunConfig

JANUS = {"warmup": 4, "coverage_size": 2, "boundary_size": 1, "fresh_size": 2}
IDENT = "local:tiny.gguf:123:abcdef"
BOUND = ("upper bound: 2 memories x 5 tasks at each step the controller may compare; evaluation set: the paper's hybrid "
         "set of coverage 2 + boundary 1 + fresh 2 = 5 tasks")
SMALL = f"({BOUND}; usually fewer: early stopping)"  # the small preset's controller (JanusConfig.fast)


def _cfg(**kw) -> RunConfig:
    base = dict(dataset="gsm8k", updater="dc_rs", controller="both", backend="openai", base_url="http://h/v1",
                model="m", preset="paper", janus=dict(JANUS))
    janus = kw.pop("janus", {})
    base.update(kw)
    base["janus"] = {**base["janus"], **janus}
    return resolve_config(RunConfig(**base))


@pytest.mark.parametrize("kw, done, want", [
    # DC-RS paper preset: curator + solver (+ 1 code-execution follow-up); MMT from warm-up + 2 = step 6: 7 x |E| 5 x 2
    ({}, None, CallCount(48, 72, 70, 6, 5)),
    ({"checkpoints": [0.5]}, None, CallCount(48, 72, 70, 12, 5)),
    ({"janus": {"trigger": "never"}}, None, CallCount(48, 72, 0, 6, 5)),
    ({"janus": {"trigger": "always"}}, None, CallCount(48, 72, 80, 6, 5)),
    ({"janus": {"trigger": "periodic", "trigger_period": 3}}, None, CallCount(48, 72, 30, 6, 5)),  # 5, 8, 11
    ({"janus": {"trigger": "random", "trigger_rate": 0.5}}, None, CallCount(48, 72, 30, 6, 5)),  # 5, 6, 9
    ({"janus": {"trigger": "selective"}}, None, CallCount(48, 72, 100, 6, 5)),  # warm-up 2+4+6+8, then 8 x 10
    ({"janus": {"trigger": "selective", "arm_warmup": False}}, None, CallCount(48, 72, 80, 6, 5)),
    ({"janus": {"replay_limit": 3}}, None, CallCount(48, 72, 42, 6, 3)),
    ({"janus": {"use_coverage": False}}, None, CallCount(48, 72, 42, 6, 3)),
    ({"controller": "none"}, None, CallCount(24, 36, 0, 3, 5)),
    ({"preset": "small"}, None, CallCount(48, 48, 70, 6, 5)),  # no code execution in the small preset
    ({"updater": "expel"}, None, CallCount(24, 172, 70, 6, 5)),  # 1 .. 3 + 2 + 2 + 1/8 per step
    ({"updater": "ace"}, None, CallCount(96, 216, 70, 6, 5)),  # 2 + 1 + 1 .. 1 + 6 + 1 + 1 per step
    ({"updater": "ace", "updater_config": {"refine": "merge"}}, None, CallCount(96, None, 70, 6, 5)),
    ({"updater": "reasoning_bank"}, None, CallCount(48, 72, 70, 6, 5)),
    ({"updater": "dc_cu"}, None, CallCount(48, 48, 70, 6, 5)),
    ({"updater": "exprag", "controller": "none"}, None, CallCount(12, 12, 0, 3, 5)),
    # the recommended controller: a panel of 19 (of the tasks seen) read 5, up to 12 while close: 2 x 12 per step
    # after the warm-up (trigger always: steps 5..12), and its text gate may compare in the warm-up on the tasks seen
    # so far (at most K + K_F = 5): 2 x (1 + 2 + 3 + 4); never 25 tasks x 2
    ({"janus_preset": "recommended"}, None, CallCount(48, 72, 20 + 8 * 24, 6, 12)),
    ({"janus_preset": "recommended", "janus": {"panel_size": 6}}, None, CallCount(48, 72, 20 + 8 * 12, 6, 6)),
    ({"janus_preset": "recommended", "janus": {"seq_extend_pairs": 0, "seq_max_pairs": 3}}, None,
     CallCount(48, 72, 2 * (1 + 2 + 3 + 3) + 8 * 6, 6, 3)),  # the cap (3) also cuts the warm-up comparisons
    ({"janus_preset": "recommended", "janus": {"trigger": "mmt", "gate_compare": False}}, None,
     CallCount(48, 72, 7 * 24, 6, 12)),  # no gate: MMT's steps 6..12 only
    ({"janus_preset": "recommended", "janus": {"trigger": "never"}}, None,
     CallCount(48, 72, 20 + 8 * 24, 6, 12)),  # the gate still compares at any step
    # resumed: the base method is finished, +janus continues after step 7 (steps 8..12 left, all MMT-eligible)
    ({}, {"dc_rs": None, "dc_rs+janus": 7}, CallCount(10, 15, 50, 3, 5)),
    ({}, {"dc_rs": None, "dc_rs+janus": None}, CallCount(0, 0, 0, 0, 5)),
])
def test_call_counts_are_exact(kw, done, want):
    assert count_calls(_cfg(**kw), 12, 3, done) == want


def test_lines_per_backend_and_measurement():
    count = CallCount(48, 72, 70, 12, 5)
    parts = f"calls = stream 48-72 + Janus evaluation 70 ({BOUND}) + test 12"
    assert estimate_line(_cfg(backend="fake"), count) == (
        f"estimate: at most 154 LLM calls (scripted replies, nothing paid; a model backend makes the same calls); {parts}")
    assert estimate_line(_cfg(), count) == f"estimate: at most 154 LLM calls; {parts}"
    local = _cfg(backend="local", base_url=None, model=None)
    assert estimate_line(local, count) == ("estimate: at most 154 LLM calls (no measurement yet of this model on this "
                                           f"machine: each finished run records one); {parts}")
    m = Measurement(s_per_call=27.0, tokens_per_s=11.25, runs=3, calls=120)
    assert estimate_line(local, count, m) == ("estimate: at most 154 LLM calls x ~27.0 s per call measured on this "
                                              f"machine (11.2 tokens/s, last 3 runs) = at most ~69 min; {parts}")
    assert estimate_line(local, CallCount(10, None, 0, 2, 5), Measurement(3.0, 5.0, 1, 9)) == (
        "estimate: at least 12 LLM calls x ~3.0 s per call measured on this machine (5.0 tokens/s, last 1 run) = "
        f"at least ~40 s; calls = stream 10 or more + Janus evaluation 0 ({BOUND}) + test 2")
    assert estimate_line(local, CallCount(0, 0, 0, 0, 5), m) is None  # nothing left to run
    rec = _cfg(janus_preset="recommended")
    assert estimate_line(rec, count_calls(rec, 12, 3)) == (
        "estimate: at most 290 LLM calls; calls = stream 48-72 + Janus evaluation 212 (upper bound: 2 memories x 12 "
        "tasks at each step the controller may compare; evaluation set: a panel of 19 seen tasks, those the changed "
        "lines touch first (read 5, up to 12 while the candidate leads by exactly 1 task); usually fewer: the "
        "sequential test stops early and the deployed memory's outcomes are reused) "
        "+ test 6")
    assert estimate_line(_cfg(controller="none"), CallCount(24, 24, 0, 6, 5)) == (
        "estimate: at most 30 LLM calls; calls = stream 24 + test 6")


def test_updater_without_declaration_gets_a_plain_line(monkeypatch):
    from janus_memory.registry import UPDATERS
    from janus_memory.updaters.dc import DCRetrievalSynthesis

    class Quiet(DCRetrievalSynthesis):
        llm_calls_per_step = classmethod(lambda cls, config: None)

    monkeypatch.setitem(UPDATERS, "quiet_test", Quiet)
    cfg = _cfg(updater="quiet_test")
    assert count_calls(cfg, 12, 3) is None
    assert estimate_line(cfg, None) == ("estimate: none (updater 'quiet_test' does not declare its LLM calls per "
                                        "step: Quiet.llm_calls_per_step)")


# ---------------------------------------------------------------------------------------------- the record file
def _plant(path, runs, key=None, fmt=2):
    path.write_text(json.dumps({"format": fmt, "models": {key or machine_key(IDENT, 1): runs}}))


def test_planted_record_is_the_mean_of_its_runs(tmp_path):
    rec = tmp_path / "timings.json"
    _plant(rec, [{"calls": 10, "busy_s": 200.0, "completion_tokens": 1000},
                 {"calls": 30, "busy_s": 600.0, "completion_tokens": 5000}])
    assert read_measurement(IDENT, 1, rec) == Measurement(s_per_call=20.0, tokens_per_s=7.5, runs=2, calls=40)
    assert read_measurement(IDENT, 2, rec) is None  # another slot count: not measured
    assert read_measurement("local:other.gguf:1:0", 1, rec) is None
    assert machine_key(IDENT, 1) == f"{IDENT}|n_parallel=1|host={platform.node()}"


@pytest.mark.parametrize("content", [
    b"\xff\xfe not text", b"{ not json", b"[]", b'{"format": 3, "models": {}}', b'{"format": 2, "models": []}',
    b"",
])
def test_corrupt_record_is_ignored_and_replaced(tmp_path, content):
    rec = tmp_path / "timings.json"
    rec.write_bytes(content)
    assert read_measurement(IDENT, 1, rec) is None
    assert record_run(IDENT, 1, calls=40, busy_s=80.0, completion_tokens=400, path=rec) is True
    assert read_measurement(IDENT, 1, rec) == Measurement(2.0, 5.0, 1, 40)


def test_invalid_entries_are_skipped(tmp_path):
    rec = tmp_path / "timings.json"
    _plant(rec, [{"calls": "10", "busy_s": 1.0, "completion_tokens": 1}, {"calls": 0, "busy_s": 1.0,
               "completion_tokens": 1}, {"calls": 20, "busy_s": -1, "completion_tokens": 1}, {"calls": True,
               "busy_s": 1.0, "completion_tokens": 1}, "junk", {"calls": 20, "wall_s": 40.0, "completion_tokens": 6},
               {"calls": 20, "busy_s": 40.0, "completion_tokens": 60}])
    assert read_measurement(IDENT, 1, rec) == Measurement(2.0, 1.5, 1, 20)


def test_the_old_wall_time_record_and_runs_with_few_calls_are_ignored(tmp_path):
    """The record an interrupted-then-resumed run left: 3 uncached calls over 2311.8 s of wall time gave
    ~770 s per call. Format 1 (wall time) is not read; a run with fewer than MIN_CALLS calls is neither read nor
    written."""
    from janus_memory.run.timing import MIN_CALLS

    rec = tmp_path / "timings.json"
    _plant(rec, [{"calls": 3, "completion_tokens": 813, "wall_s": 2311.8}], fmt=1)
    assert read_measurement(IDENT, 1, rec) is None
    _plant(rec, [{"calls": 3, "completion_tokens": 813, "busy_s": 90.0}])
    assert read_measurement(IDENT, 1, rec) is None
    assert MIN_CALLS == 10
    assert record_run(IDENT, 1, calls=9, busy_s=270.0, completion_tokens=900, path=rec) is False
    assert record_run(IDENT, 1, calls=10, busy_s=300.0, completion_tokens=1000, path=rec) is True
    assert read_measurement(IDENT, 1, rec) == Measurement(30.0, 1000 / 300.0, 1, 10)
    assert [r["calls"] for r in json.loads(rec.read_text())["models"][machine_key(IDENT, 1)]] == [10]


def test_unreadable_or_unwritable_record_gives_no_error(tmp_path):
    rec = tmp_path / "timings.json"
    rec.mkdir()  # a folder where the file should be: reading and writing both fail
    assert read_measurement(IDENT, 1, rec) is None
    assert record_run(IDENT, 1, calls=40, busy_s=80.0, completion_tokens=40, path=rec) is False
    blocked = tmp_path / "file" / "timings.json"
    (tmp_path / "file").write_text("a file, not a folder")
    assert record_run(IDENT, 1, calls=40, busy_s=80.0, completion_tokens=40, path=blocked) is False


def test_runs_without_calls_are_not_recorded(tmp_path):
    rec = tmp_path / "timings.json"
    assert record_run(IDENT, 1, calls=0, busy_s=0.5, completion_tokens=0, path=rec) is False  # all from the cache
    assert not rec.exists()


def test_only_the_last_runs_are_kept(tmp_path):
    rec = tmp_path / "timings.json"
    for i in range(11, 18):
        assert record_run(IDENT, 1, calls=i, busy_s=float(i), completion_tokens=i, path=rec)
    runs = json.loads(rec.read_text())["models"][machine_key(IDENT, 1)]
    assert [r["calls"] for r in runs] == [13, 14, 15, 16, 17]


def _writer(path: str, ident: str, n: int) -> None:
    from pathlib import Path

    for i in range(1, n + 1):
        assert record_run(ident, 1, calls=10 + i, busy_s=float(i), completion_tokens=i, path=Path(path))


def test_concurrent_writers_lose_no_record(tmp_path):
    rec = tmp_path / "timings.json"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(rec), f"local:m{k}.gguf:1:0", 12)) for k in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    models = json.loads(rec.read_text())["models"]
    assert {k: [r["calls"] for r in v] for k, v in models.items()} == {
        machine_key(f"local:m{k}.gguf:1:0", 1): [18, 19, 20, 21, 22] for k in range(4)}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["timings.json", "timings.json.lock"]  # no temp file left


# ---------------------------------------------------------------------------------------------- in a run
class _Clock:
    """A fake perf_counter for the LLM client: it moves only inside backend calls, 30 s per call."""

    def __init__(self):
        self.t = 1000.0

    def perf_counter(self) -> float:
        return self.t


def _clocked_local(monkeypatch, tmp_path, per_call: float = 30.0):
    """The scripted fake registered as the embedded backend ("local"), each call taking ``per_call`` seconds on a
    fake clock (so the recorded busy time is exact); a fresh JANUS_CACHE_DIR."""
    import types

    from janus_memory.llm import client as client_mod
    from janus_memory.run import backends  # noqa: F401  (registers the built-in "local" first)
    from janus_memory.run.fake_llm import scripted_backend

    clock = _Clock()
    fake_time = types.SimpleNamespace(perf_counter=clock.perf_counter, monotonic=clock.perf_counter)
    monkeypatch.setattr(client_mod, "time", fake_time)

    def fake_local(cfg, tasks):
        b = scripted_backend(tasks)
        b.identity = IDENT
        inner = b.acomplete

        async def acomplete(req):
            res = await inner(req)  # the scripted backend never waits: calls run one after the other
            clock.t += per_call
            return res

        b.acomplete = acomplete
        return b

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setitem(BACKENDS, "local", fake_local)
    return clock


def _local_cfg(tmp_path, out="run1", **kw) -> RunConfig:
    return RunConfig(**{**dict(dataset="gsm8k", updater="dc_rs", controller="both", backend="local", preset="small",
                               stream_size=8, test_size=2, encoder="hashing", no_cache=True, janus=dict(JANUS),
                               out=str(tmp_path / out)), **kw})


PARTS = f"calls = stream 32 + Janus evaluation 30 {SMALL} + test 4"


def test_a_local_run_prints_the_estimate_and_records_its_speed(tmp_path, monkeypatch):
    """The first run has no measurement and records one at its end: its backend calls, the model's busy time over
    them (30 s each on the fake clock; not the run's wall time) and their tokens; the next run prints the time."""
    _clocked_local(monkeypatch, tmp_path)
    lines: list[str] = []
    summary = run_experiment(_local_cfg(tmp_path), log=lines.append)
    assert [x for x in lines if x.startswith("estimate")] == [
        f"estimate: at most 66 LLM calls (no measurement yet of this model on this machine: each finished run "
        f"records one); {PARTS}"]
    used = summary["usage_total"]
    assert used["solver"]["calls"] + used["curator"]["calls"] == 32 and used["test"]["calls"] == 4
    total = sum(r["calls"] for r in used.values())
    tokens = sum(r["completion_tokens"] for r in used.values())
    rec = json.loads((tmp_path / "cache" / "timings.json").read_text())
    assert rec["format"] == 2
    assert [{k: v for k, v in r.items() if k != "when"} for r in rec["models"][machine_key(IDENT, 1)]] == [
        {"calls": total, "busy_s": 30.0 * total, "completion_tokens": tokens}]
    assert read_measurement(IDENT, 1) == Measurement(30.0, tokens / (30.0 * total), 1, total)
    lines.clear()
    run_experiment(_local_cfg(tmp_path, "run2"), log=lines.append)
    assert [x for x in lines if x.startswith("estimate")] == [
        f"estimate: at most 66 LLM calls x ~30.0 s per call measured on this machine ({tokens / (30.0 * total):.1f} "
        f"tokens/s, last 1 run) = at most ~33 min; {PARTS}"]


def test_a_resumed_run_estimates_only_what_is_left(tmp_path, monkeypatch):
    """Stopped right after the base method's last stream step (its test not run yet): the resumed run counts the
    base method's test and the whole +janus method, and says so per method (an estimate that counted the finished
    stream again looked as if nothing had been done)."""
    from janus_memory.run.experiment import Stopped

    _clocked_local(monkeypatch, tmp_path)
    cfg = _local_cfg(tmp_path, "r")
    with pytest.raises(Stopped):
        run_experiment(cfg, log=lambda m: None, stop_after=8)
    lines: list[str] = []
    run_experiment(cfg, log=lines.append, resume=True)
    assert [x for x in lines if x.startswith("estimate")] == [
        "estimate: at most 50 LLM calls (no measurement yet of this model on this machine: each finished run records "
        f"one); calls = stream 16 + Janus evaluation 30 {SMALL} + test 4; left after resume: dc_rs test only (stream "
        "done 8/8), dc_rs+janus steps 1-8 + test"]
    with pytest.raises(Stopped):
        run_experiment(_local_cfg(tmp_path, "r2"), log=lambda m: None, stop_after=3)
    lines.clear()
    run_experiment(_local_cfg(tmp_path, "r2"), log=lines.append, resume=True)
    est = [x for x in lines if x.startswith("estimate")]
    assert len(est) == 1 and est[0].startswith("estimate: at most 60 LLM calls x ~30.0 s per call")
    assert est[0].endswith(f"calls = stream 26 + Janus evaluation 30 {SMALL} + test 4; left after resume: dc_rs steps "
                           "4-8 + test, dc_rs+janus steps 1-8 + test")


def test_busy_time_is_the_union_of_reply_intervals():
    """Overlapping calls count once; a call queued behind another adds only what runs past it (llm/usage.py)."""
    import random

    from janus_memory.llm.usage import UsageMeter

    u = UsageMeter()
    for a, b in [(0, 10), (2, 5), (8, 12), (20, 21), (21, 23), (30, 30), (15, 16), (-5, -1), (-1, 0)]:
        u.add_busy(a, b)
    assert u.busy_seconds() == 17 + 1 + 3  # [-5, 12] U [15, 16] U [20, 23]
    rng = random.Random(7)
    for _ in range(50):
        u, ivs = UsageMeter(), []
        for _ in range(30):
            a = rng.randint(0, 100)
            ivs.append((a, a + rng.randint(0, 15)))
            u.add_busy(*ivs[-1])
        covered = {t for a, b in ivs for t in range(a, b)}  # unit cells [t, t + 1)
        assert u.busy_seconds() == len(covered)


def test_hostile_timing_records_are_ignored_and_never_end_a_run(tmp_path):
    """Adversarial record files (a reviewer's findings): deep nesting, huge or absurd numbers, a bool format."""
    import json

    from janus_memory.run import timing

    p = tmp_path / "timings.json"
    key = timing.machine_key("m.gguf", 1)

    def one(**r):
        return json.dumps({"format": 2, "models": {key: [r]}})

    for text in ["[" * 100000, one(calls=10**400, busy_s=10.0, completion_tokens=5),
                 one(calls=20, busy_s=1e308, completion_tokens=5), one(calls=20, busy_s=1e-300, completion_tokens=5),
                 one(calls=20, busy_s=float("nan"), completion_tokens=5),
                 one(calls=20, busy_s=200.0, completion_tokens=-1), one(calls=20.0, busy_s=200.0, completion_tokens=5),
                 json.dumps({"format": True, "models": {key: [{"calls": 20, "busy_s": 20.0, "completion_tokens": 5}]}}),
                 json.dumps({"format": 2.0, "models": {key: [{"calls": 20, "busy_s": 20.0, "completion_tokens": 5}]}})]:
        p.write_text(text)
        assert timing.read_measurement("m.gguf", 1, path=p) is None
    p.write_text("[" * 100000)
    assert timing.record_run("m.gguf", 1, calls=20, busy_s=200.0, completion_tokens=400, path=p) is True
    m = timing.read_measurement("m.gguf", 1, path=p)
    assert (m.s_per_call, m.tokens_per_s, m.runs, m.calls) == (10.0, 2.0, 1, 20)


def test_janus_run_help_and_a_fake_run_agree_on_the_estimate_line(tmp_path, capsys, monkeypatch):
    """`janus run --help` promises an estimate line before the first step; a run on the scripted fake backend prints
    it (the count a model backend would make, said to be free) before its first step, and the run makes no more calls
    than it says."""
    from janus_memory.cli import main

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "Before the first step it prints an estimate" in " ".join(capsys.readouterr().out.split())
    out = tmp_path / "fake"
    assert main(["run", "--backend", "fake", "--dataset", "gsm8k", "--stream-size", "8", "--test-size", "2",
                 "--encoder", "hashing", "--preset", "small", "--warmup", "4", "--coverage-size", "2",
                 "--boundary-size", "1", "--fresh-size", "2", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    est = [x for x in lines if x.startswith("estimate")]
    assert est == [f"estimate: at most 66 LLM calls (scripted replies, nothing paid; a model backend makes the same "
                   f"calls); {PARTS}"]
    first_step = next(i for i, x in enumerate(lines) if " step 1/8 " in x)
    assert lines.index(est[0]) < first_step
    used = json.loads((out / "summary.json").read_text())["usage_total"]
    assert sum(r["calls"] + r.get("cache_hits", 0) for r in used.values()) <= 66
