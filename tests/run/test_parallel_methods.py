"""The methods of a run side by side (run/streams.py) against one request budget: every output file equals the run made
one method after another; stopping (an error, an interrupt) and resuming; per-method usage scopes (llm/usage.py); the
client session (one event loop for every thread); speculative reads of a sequential comparison (run/eval_batch.py)."""
from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from janus_memory.controller.decision_rules import UNKNOWN, compare, planned_calls
from janus_memory.controller.sequential import SPRT
from janus_memory.interrupts import Stopping
from janus_memory.llm import FakeBackend, LLMClient, ResponseCache
from janus_memory.llm.base import FatalLLMError
from janus_memory.run import fake_llm
from janus_memory.run.experiment import Stopped, run_experiment
from janus_memory.settings.config import RunConfig
from janus_memory.values import Usage

TIMING = ("wall_s", "latency_s", "elapsed_s", "overhead_ms", "timing")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def slow_fake(monkeypatch):
    """The scripted fake backend with a latency of 0-15 ms by a hash of the request, so the two methods' calls
    interleave differently from run to run; ``peak`` records the most requests in flight at once."""
    state = {"now": 0, "peak": 0}
    lock = threading.Lock()
    orig = fake_llm._ScriptedBackend.acomplete

    async def acomplete(self, req):
        h = int(hashlib.sha256(json.dumps(list(req.messages), sort_keys=True).encode()).hexdigest()[:4], 16)
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        try:
            await asyncio.sleep((h % 16) / 1000)
            return await orig(self, req)
        finally:
            with lock:
                state["now"] -= 1

    monkeypatch.setattr(fake_llm._ScriptedBackend, "acomplete", acomplete)
    return state


def _cfg(out: Path, **kw) -> RunConfig:
    base = dict(backend="fake", dataset="gsm8k", stream_size=10, test_size=4, encoder="hashing", out=str(out),
                janus={"warmup": 3, "coverage_size": 2, "boundary_size": 1, "fresh_size": 1, "trigger": "always"},
                updater="dc_rs", controller="both", checkpoints=[0.5])
    base.update(kw)
    return RunConfig(**base)


def _strip(o):
    if isinstance(o, dict):
        # answered_by counts live and cached answers per model: one after another the twin finds the cache warm
        return {k: _strip(v) for k, v in o.items() if k not in TIMING and k not in ("out", "run_dir", "answered_by")}
    if isinstance(o, list):
        return [_strip(v) for v in o]
    return o


def _files(run: Path) -> dict:
    """Every file of the run folder: bytes, except the settings (parallel_methods and the folder name differ by
    design), summary.json without wall-clock times, and run.sqlite as its rows in key order (the row ids follow the
    order in which the two methods committed)."""
    out = {}
    for f in sorted(p for p in run.rglob("*") if p.is_file()):
        rel = str(f.relative_to(run))
        if rel in ("run.sqlite", ".janus.lock") or rel.endswith(("-wal", "-shm")):
            continue
        if rel in ("config.json", "config.yaml"):
            continue
        out[rel] = _strip(json.loads(f.read_text())) if rel == "summary.json" else f.read_bytes()
    db = sqlite3.connect(run / "run.sqlite")
    for table, key in (("steps", "method, step"), ("memories", "method, step"), ("tests", "method, idx"),
                       ("method_results", "method")):
        rows = db.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall()
        if table == "method_results":
            rows = [(m, _strip(json.loads(s))) for m, s in rows]
        out[f"run.sqlite:{table}"] = rows
    db.close()
    return out


def _artifacts(run: Path) -> dict:
    """What a resumed run must reproduce (as tests/store/test_run_concurrency.py): everything but the summary, whose usage
    leaves out what the interrupted attempt paid and which says ``resumed``."""
    return {k: v for k, v in _files(run).items() if k not in ("summary.json", "run.sqlite:method_results")}


def _cache_rows(folder: Path) -> list:
    db = sqlite3.connect(folder / "responses.sqlite")
    rows = db.execute("SELECT key, value FROM responses ORDER BY key").fetchall()
    db.close()
    return rows


@pytest.mark.parametrize("kw", [
    {"no_cache": True},  # the paper preset: base and +Janus never share an answer
    {"twin_cache": "shared"},  # they share every identical request: who pays must not depend on who asked first
])
def test_side_by_side_equals_one_after_another(tmp_path, slow_fake, kw):
    runs = {}
    for name, par in (("seq", False), ("par", True)):
        cache = tmp_path / f"cache-{name}"
        runs[name] = run_experiment(_cfg(tmp_path / name, parallel_methods=par, cache_dir=str(cache), **kw),
                                    log=lambda m: None)
        if name == "seq":
            assert slow_fake["peak"] <= 4
            slow_fake["peak"] = 0
    assert slow_fake["peak"] > 4 - 1  # side by side: requests of both methods were in flight together
    seq, par = _files(tmp_path / "seq"), _files(tmp_path / "par")
    assert seq.keys() == par.keys()
    assert [k for k in seq if seq[k] != par[k]] == []
    assert {"dc_rs/decisions.jsonl", "dc_rs+janus/steps.jsonl", "dc_rs+janus/test.jsonl", "summary.json"} <= seq.keys()
    usage = runs["par"]["methods"]
    if "twin_cache" in kw:  # one after another the +Janus twin finds the base's answers in the cache
        assert usage["dc_rs+janus"]["usage"]["solver"]["cache_hits"] > 0
        assert usage["dc_rs"]["usage"]["solver"]["cache_hits"] == 0
        assert _cache_rows(tmp_path / "cache-seq") == _cache_rows(tmp_path / "cache-par")


def test_report_is_identical(tmp_path, slow_fake):
    from janus_memory.report.report import build_report

    md = {}
    for name, par in (("seq", False), ("par", True)):
        run = tmp_path / name / "run"  # the report names the folder
        run_experiment(_cfg(run, parallel_methods=par, no_cache=True), log=lambda m: None)
        rep = build_report([str(run)], str(tmp_path / f"rep-{name}"))
        md[name] = Path(rep["report"]).read_text().replace(str(tmp_path / name), "PARENT")
    assert md["seq"] == md["par"] and "dc_rs+janus" in md["seq"]


def test_stop_in_one_method_stops_both_and_resume_completes_identically(tmp_path, slow_fake):
    ref = tmp_path / "ref"
    run_experiment(_cfg(ref, parallel_methods=False, no_cache=True), log=lambda m: None)
    out = tmp_path / "run"
    with pytest.raises(Stopped):
        run_experiment(_cfg(out, parallel_methods=True, no_cache=True), log=lambda m: None, stop_after=4)
    db = sqlite3.connect(out / "run.sqlite")
    steps = dict(db.execute("SELECT method, MAX(step) FROM steps GROUP BY method").fetchall())
    db.close()
    assert max(steps.values()) == 4 and not (out / "COMPLETE").exists()
    assert [t.name for t in threading.enumerate() if t.name.startswith(("janus-method", "janus-llm"))] == []
    run_experiment(_cfg(out, parallel_methods=True, no_cache=True), log=lambda m: None, resume=True)
    assert _artifacts(out) == _artifacts(ref)


def test_an_error_in_one_method_stops_the_other_and_is_raised(tmp_path, slow_fake, monkeypatch):
    orig = fake_llm._ScriptedBackend.acomplete
    seen = {"n": 0}

    async def failing(self, req):  # the base method's 10th request (sample 0; the twin's are never 0): not a replay,
        if req.sample == 0:  # whose failure the paper preset would score 0 and go on
            seen["n"] += 1
            if seen["n"] == 10:
                raise FatalLLMError("HTTP 400 from the server: refused", status=400)
        return await orig(self, req)

    monkeypatch.setattr(fake_llm._ScriptedBackend, "acomplete", failing)
    events = []
    with pytest.raises(FatalLLMError, match="refused"):
        run_experiment(_cfg(tmp_path / "run", parallel_methods=True, no_cache=True, stream_size=30),
                       log=lambda m: None, on_event=lambda ev: events.append(threading.current_thread().name))
    assert set(events) == {threading.current_thread().name}  # every event was delivered in the calling thread
    assert seen["n"] < 60  # the base method did not go on to its end after the error
    assert [t.name for t in threading.enumerate() if t.name.startswith(("janus-method", "janus-llm"))] == []


def test_keyboard_interrupt_in_the_calling_thread_stops_every_method(tmp_path, slow_fake):
    calls = {"n": 0}

    def on_event(ev):
        calls["n"] += 1
        if calls["n"] == 12:
            raise KeyboardInterrupt

    out = tmp_path / "run"
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_experiment(_cfg(out, parallel_methods=True, no_cache=True, stream_size=30), log=lambda m: None,
                       on_event=on_event)
    assert time.monotonic() - t0 < 30
    assert [t.name for t in threading.enumerate() if t.name.startswith(("janus-method", "janus-llm"))] == []
    run_experiment(_cfg(out, parallel_methods=True, no_cache=True, stream_size=30), log=lambda m: None, resume=True)
    ref = tmp_path / "ref"
    run_experiment(_cfg(ref, parallel_methods=False, no_cache=True, stream_size=30), log=lambda m: None)
    assert _artifacts(out) == _artifacts(ref)


def test_a_slow_request_of_one_method_does_not_stall_the_other(tmp_path, slow_fake, monkeypatch):
    """One request of the +Janus twin (its own sample indices under the paper preset) takes 1.5 s: meanwhile the base
    method's steps go on and are committed; the run's files are still those of one method after another."""
    from janus_memory.store.events import StepFinished

    orig = fake_llm._ScriptedBackend.acomplete
    window = {}

    async def stall_once(self, req):
        if req.sample and "start" not in window and len(window.setdefault("seen", [])) >= 5:
            window["start"] = time.monotonic()
            await asyncio.sleep(1.5)
            window["end"] = time.monotonic()
        elif req.sample:
            window.setdefault("seen", []).append(1)
        return await orig(self, req)

    monkeypatch.setattr(fake_llm._ScriptedBackend, "acomplete", stall_once)
    done = []
    run_experiment(_cfg(tmp_path / "par", parallel_methods=True, no_cache=True, stream_size=30), log=lambda m: None,
                   on_event=lambda ev: done.append((time.monotonic(), ev.method, ev.step))
                   if isinstance(ev, StepFinished) else None)
    during = [(m, i) for t, m, i in done if window["start"] < t < window["end"]]
    assert [m for m, _ in during].count("dc_rs") >= 5
    # progress events are posted without waiting (run/streams.py), so the +Janus step committed just before the stall
    # may be delivered inside the window; no later +Janus step is
    before = max((i for t, m, i in done if m == "dc_rs+janus" and t <= window["start"]), default=0)
    assert [i for m, i in during if m == "dc_rs+janus"] in ([], [before + 1])
    monkeypatch.setattr(fake_llm._ScriptedBackend, "acomplete", orig)
    run_experiment(_cfg(tmp_path / "seq", parallel_methods=False, no_cache=True, stream_size=30), log=lambda m: None)
    assert _files(tmp_path / "par") == _files(tmp_path / "seq")


def test_auto_runs_side_by_side_only_on_a_backend_that_serves_in_parallel(tmp_path):
    from janus_memory.run.build import serves_in_parallel

    class Server:
        parallel_requests = True

    class Engine:
        def __init__(self, n):
            self.n_parallel = n

    assert serves_in_parallel(Server(), 4) and not serves_in_parallel(Server(), 1)
    assert serves_in_parallel(Engine(2), 1) and not serves_in_parallel(Engine(1), 64)
    assert not serves_in_parallel(fake_llm.scripted_backend([]), 64)  # answers at once: nothing to overlap
    lines = []
    run_experiment(_cfg(tmp_path / "a", no_cache=True, stream_size=4), log=lines.append)
    assert not any("side by side" in x for x in lines)
    lines.clear()
    run_experiment(_cfg(tmp_path / "b", no_cache=True, stream_size=4, parallel_methods=True), log=lines.append)
    assert "methods side by side: dc_rs, dc_rs+janus (at most 4 LLM requests in flight for all of them)" in lines


def test_settings_and_options():
    from janus_memory.cli.parser import build_parser
    from janus_memory.cli.run_command import _config_from_args
    from janus_memory.errors import ConfigError

    assert [RunConfig.parse({"parallel_methods": v}).parallel_methods for v in ("auto", "on", "off", True, None)] == \
        [None, True, False, True, None]
    assert RunConfig.parse({"speculate": "off"}).speculate is False
    with pytest.raises(ConfigError) as e:
        RunConfig.parse({"speculate": "sometimes"})
    assert str(e.value) == "invalid value for 'speculate': choose auto, on or off (or true, false, null) (got 'sometimes')"
    p = build_parser()
    args = p.parse_args(["run", "--backend", "fake", "--parallel-methods", "ON", "--speculate", "off"])
    cfg = _config_from_args(args, demo=False)
    assert (cfg.parallel_methods, cfg.speculate) == (True, False)


# ------------------------------------------------------------------------------------------- usage scopes
def test_scope_counts_a_shared_response_for_the_method_listed_first():
    from janus_memory.llm.usage import UsageMeter

    meter = UsageMeter()
    u = Usage(10, 5)
    with meter.scope(1) as later:  # the later method happened to pay first ...
        meter.record_call("solver", u, key="k")
    with meter.scope(0) as first:  # ... then the first one used the same response from the cache
        meter.record_hit("curator", u, key="k")
        meter.record_hit("curator", u, key="k")  # a second use is a plain hit
    f, lt = first.snapshot(), later.snapshot()
    assert (f["curator"]["calls"], f["curator"]["prompt_tokens"], f["curator"]["cache_hits"]) == (1, 10, 1)
    assert (lt["solver"]["calls"], lt["solver"]["prompt_tokens"], lt["solver"]["cache_hits"],
            lt["solver"]["hit_prompt_tokens"]) == (0, 0, 1, 10)
    whole = meter.snapshot()
    assert (whole["curator"]["calls"], whole["curator"]["cache_hits"], whole["solver"]["calls"],
            whole["solver"]["cache_hits"]) == (1, 1, 0, 1)
    with meter.scope(2) as third:  # a later method's hit stays a hit
        meter.record_hit("solver", u, key="k")
    assert third.snapshot()["solver"]["cache_hits"] == 1 and first.snapshot()["curator"]["calls"] == 1


def test_session_one_budget_for_every_thread_and_no_thread_left():
    backend = FakeBackend(rules=[(r".*", "ok")], latency_s=0.05)
    client = LLMClient(backend, concurrency=3)
    before = {t.name for t in threading.enumerate()}
    got = {}
    with client.session():
        def work(rank):
            with client.usage.scope(rank) as mine:
                client.chat_many([[{"role": "user", "content": f"{rank} {i}"}] for i in range(5)])
                got[rank] = mine.snapshot()["solver"]["calls"]

        threads = [threading.Thread(target=work, args=(r,)) for r in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert backend.max_inflight == 3 and got == {0: 5, 1: 5, 2: 5} and client.in_flight() == 0
    assert client.usage.snapshot()["solver"]["calls"] == 15
    assert {t.name for t in threading.enumerate()} == before


def test_session_stop_cancels_waiting_calls_with_stopping():
    backend = FakeBackend(rules=[(r".*", "ok")], latency_s=5.0)
    client = LLMClient(backend, concurrency=2)
    box = {}
    with client.session():
        def work():
            try:
                client.chat([{"role": "user", "content": "slow"}])
            except BaseException as e:  # noqa: BLE001
                box["error"] = e

        t = threading.Thread(target=work)
        t.start()
        time.sleep(0.2)
        t0 = time.monotonic()
        client.stop_session()
        t.join(5)
        assert time.monotonic() - t0 < 2 and isinstance(box["error"], Stopping)
        with pytest.raises(Stopping):  # refused until the session ends
            client.chat([{"role": "user", "content": "again"}])
    assert client.chat([{"role": "user", "content": "after"}]).text == "ok"


def test_session_shares_an_identical_request_in_flight_across_threads(tmp_path):
    backend = FakeBackend(rules=[(r".*", "ok")], latency_s=0.2)
    client = LLMClient(backend, cache=ResponseCache(tmp_path), concurrency=4)
    with client.session():
        threads = [threading.Thread(target=client.chat, args=([{"role": "user", "content": "same"}],))
                   for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    snap = client.usage.snapshot()["solver"]
    assert (backend.calls, snap["calls"], snap["cache_hits"]) == (1, 1, 2)


def test_shared_budget_across_processes_and_cancelled_waits_keep_no_slot():
    from janus_memory.llm.budget import SharedBudget

    budget = SharedBudget(2)
    peak = {"now": 0, "max": 0}
    lock = threading.Lock()

    async def one():
        await budget.acquire()
        with lock:
            peak["now"] += 1
            peak["max"] = max(peak["max"], peak["now"])
        await asyncio.sleep(0.05)
        with lock:
            peak["now"] -= 1
        budget.release()

    async def many():
        await asyncio.gather(*(one() for _ in range(6)))

    threads = [threading.Thread(target=asyncio.run, args=(many(),)) for _ in range(2)]  # two event loops
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak["max"] == 2 and budget.in_flight() == 0

    async def cancelled_wait():
        await budget.acquire()
        await budget.acquire()
        waiter = asyncio.ensure_future(budget.acquire())
        await asyncio.sleep(0.1)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        budget.release()
        budget.release()

    asyncio.run(cancelled_wait())
    time.sleep(0.1)  # the helper thread of the cancelled wait ends within one step
    assert budget.in_flight() == 0 and budget._sem.acquire(False) and budget._sem.acquire(False)


# ------------------------------------------------------------------------------------------- planned calls
class _T:
    def __init__(self, i):
        self.id = f"t{i}"


@pytest.mark.parametrize("seed", range(40))
def test_a_sequential_comparison_makes_a_prefix_of_its_planned_calls(seed):
    import random

    rng = random.Random(seed)
    tasks = [_T(i) for i in range(rng.randint(1, 14))]
    known = [rng.choice([UNKNOWN, UNKNOWN, True, False]) for _ in tasks] if rng.random() < 0.5 else None
    max_pairs = rng.choice([0, 3, 5, 8])
    extend = rng.choice([0, max_pairs + 2, max_pairs + 5]) if max_pairs else 0
    kw = dict(rule="sequential", round_size=rng.choice([1, 2, 3]), max_pairs=max_pairs, known_old=known,
              extend_pairs=extend)
    made = []

    def ev(text, chunk):
        made.append((text, [t.id for t in chunk]))
        return [rng.random() < 0.5 for _ in chunk]

    compare(ev, tasks, "old", "new", sprt=SPRT(0.2, 0.2, 0.3), extend_margin=0, **kw)
    plan = [(text, [t.id for t in ts]) for text, ts in planned_calls(tasks, "old", "new", **kw)]
    assert made == plan[:len(made)]


def test_planned_calls_of_the_paper_rule():
    tasks = [_T(i) for i in range(3)]
    assert planned_calls(tasks, "a", "b") == [("a", tasks), ("b", tasks)]
    assert planned_calls(tasks, "a", "a") == [("a", tasks)]  # identical texts: evaluated once
    assert planned_calls(tasks, "a", "b", early_stop=True) is None  # the order depends on the outcomes


def test_speculation_sends_every_planned_read_at_once_with_the_same_decisions(tmp_path, monkeypatch):
    from janus_memory.llm.client import LLMClient as Client

    sent = []
    orig = Client.chat_many

    def counting(self, batch, *, role="solver", **params):
        sent.append((role, len(batch)))
        return orig(self, batch, role=role, **params)

    monkeypatch.setattr(Client, "chat_many", counting)
    res = {}
    for name, spec in (("off", False), ("on", True)):
        sent.clear()
        s = run_experiment(_cfg(tmp_path / name, janus_preset="recommended", janus={"warmup": 3}, controller="janus",
                                stream_size=14, no_cache=True, batch_eval=True, speculate=spec, checkpoints=[]),
                           log=lambda m: None)
        res[name] = (list(sent), s["methods"]["dc_rs+janus"])
    files = lambda n: {k: v for k, v in _files(tmp_path / n).items() if k != "summary.json"  # noqa: E731
                       and not k.startswith("run.sqlite:method")}
    assert files("off") == files("on")
    m_off, m_on = res["off"][1], res["on"][1]
    triggers = m_on["triggers"]
    assert triggers == m_off["triggers"] and triggers > 5
    # one batch per comparison with speculation, more without
    assert m_on["eval_batch"]["batches"] == triggers
    assert len([r for r, _ in res["on"][0] if r == "janus"]) == triggers
    assert len([r for r, _ in res["off"][0] if r == "janus"]) > triggers
    # every read sent is paid; those never read are counted. Without speculation nothing is sent that the
    # comparison does not read (the deployed memory's reused outcomes are not asked again), so the summary has no
    # eval_batch line
    assert m_on["usage"]["janus"]["calls"] == m_on["eval_batch"]["requests"]
    assert "eval_batch" not in m_off
    assert m_on["eval_batch"]["requests"] - m_on["eval_batch"]["unused"] == m_off["usage"]["janus"]["calls"]


# ------------------------------------------------------------------------------------------- the command line
def _cli_env(tmp: Path) -> dict:
    import os

    src = str(Path(__file__).resolve().parents[2] / "src")
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "JANUS_CACHE_DIR": str(tmp / "cache"), "PYTHONUNBUFFERED": "1"}


CLI_ARGS = ["--backend", "fake", "--dataset", "gsm8k", "--stream-size", "40", "--test-size", "2", "--encoder",
            "hashing", "--warmup", "3", "--coverage-size", "2", "--boundary-size", "1", "--fresh-size", "1",
            "--trigger", "always", "--updater", "dc_rs", "--controller", "both", "--no-cache"]


@pytest.mark.parametrize("how", ["SIGINT", "SIGKILL"])
def test_cli_stop_of_side_by_side_methods_then_resume(tmp_path, how):
    """Ctrl-C (SIGINT to the process group) prints the resume line and exits 130; SIGKILL leaves the last committed
    steps; either way `--resume` finishes with the files of a run made one method after another."""
    import os
    import signal
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from child_signals import sigint_default

    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "janus_memory.cli", "run", *CLI_ARGS, "--parallel-methods", "on", "--out", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_cli_env(tmp_path),
                         start_new_session=True, preexec_fn=sigint_default)
    try:
        seen = []
        for line in p.stdout:
            seen.append(line)
            if line.startswith("[dc_rs+janus] step  5/40 "):
                break
        os.killpg(p.pid, getattr(signal, how))
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert "methods side by side: dc_rs, dc_rs+janus (at most 4 LLM requests in flight for all of them)\n" in seen
    if how == "SIGINT":
        assert p.returncode == 130
        assert err == f"interrupted: every committed step is kept; continue with `janus run --resume {out}`\n"
    else:
        assert p.returncode == -signal.SIGKILL
    assert not (out / "COMPLETE").exists()
    r = subprocess.run([sys.executable, "-m", "janus_memory.cli", "run", "--resume", str(out), "--quiet"],
                       capture_output=True, text=True, env=_cli_env(tmp_path), timeout=300)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    ref = tmp_path / "ref"
    r = subprocess.run([sys.executable, "-m", "janus_memory.cli", "run", *CLI_ARGS, "--parallel-methods", "off",
                        "--out", str(ref), "--quiet"], capture_output=True, text=True, env=_cli_env(tmp_path),
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert _artifacts(out) == _artifacts(ref)


def test_sweep_workers_share_one_request_budget_per_endpoint(tmp_path):
    """Two local worker processes, each running a cell whose two methods run side by side, against one 127.0.0.1
    server: at most --concurrency requests reach it at once, and the sweep's lines say so."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from janus_memory.sweep.sweep import expand_grid, run_sweep
    from janus_memory.testing.openai_stub import OpenAITestServer

    lines = []
    with OpenAITestServer(latency_s=0.05) as srv:
        base = {"backend": "openai", "base_url": srv.base_url, "model": "stub", "dataset": "gsm8k", "stream_size": 4,
                "test_size": 8, "encoder": "hashing", "no_cache": True, "concurrency": 3, "controller": "both",
                "janus": {"warmup": 1, "coverage_size": 2, "boundary_size": 1, "fresh_size": 1, "trigger": "always"},
                "out": str(tmp_path / "sw")}
        url = srv.base_url
        cells = expand_grid(base, {"seed": [0, 1, 2]})
        results = run_sweep(cells, workers=2, log=lines.append)
    assert [r["status"] for r in results] == ["done"] * 3, results
    assert 2 <= srv.max_inflight <= 3
    assert lines[0] == f"requests in flight to {url}: at most 3, shared by 2 worker processes (each run's methods " \
                       "side by side included)"
    assert all(x.endswith(f"  [in flight now: {x.rsplit('now: ', 1)[1].split('/')[0]}/3 to {url}]")
               for x in lines[1:])
