"""Math scoring: C07 strictness, C08 golds verify against themselves, C09 worker threads and our own timeout."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from janus_memory.tasks import get_family, load_split
from janus_memory.tasks.extract_math import extract_math_answer
from janus_memory.tasks.verify_math import MathVerifier, check_math, paper_equal, verify_answer
from janus_memory.values import Task
from shipped_data import shipped_lines


def ok(gold, text):
    return check_math(gold, extract_math_answer(text).answer)


@pytest.mark.parametrize("gold,text,expected", [
    # C07
    ("1331, 1728", r"\boxed{1728}", False),
    ("1331, 1728", r"\boxed{1728, 1331}", True),
    ("1331, 1728", r"\boxed{1331, 1728, 5}", False),
    (r"1 \pm \sqrt{19}", r"\boxed{1 + \sqrt{19}}", False),
    (r"1 \pm \sqrt{19}", r"\boxed{1 \pm \sqrt{19}}", True),
    (r"\frac{1}{2^{99}}", r"\boxed{\frac{1}{2^{98}}}", False),
    (r"\frac{1}{2^{99}}", r"\boxed{2^{-99}}", True),
    # decision: a rounded decimal for an exact fraction does NOT count; an exactly equal decimal does
    (r"\frac{3}{56}", r"\boxed{0.0535714}", False),
    (r"\frac{14}{3}", r"\boxed{4.6667}", False),
    (r"\frac{\pi}{2}", r"\boxed{1.5708}", False),
    # C08
    (r"\dfrac{17}{50}", r"\boxed{\frac{17}{50}}", True),
    (r"\dfrac{17}{50}", r"\boxed{0.34}", True),
    (r"\left( 3, \frac{\pi}{2} \right)", r"\boxed{(3, \frac{\pi}{2})}", True),
    (r"\text{Evelyn}", r"\boxed{\text{Evelyn}}", True),
    (r"\text{Evelyn}", "The answer is Evelyn.", True),
    (r"\text{(C)}", r"\boxed{C}", True),
    (r"\frac{270}7\text{ degrees}", r"\boxed{\frac{270}{7}}", True),
    (r"5.4 \text{ cents}", r"\boxed{5.4}", True),
    (r"\text{13}", r"\boxed{13}", True),
    (r"28\%", r"\boxed{28}", True),
    (r"90^\circ", r"\boxed{90}", True),
    (r"3\sqrt{13}", r"\boxed{\sqrt{117}}", True),
    ("-q+p", r"\boxed{p-q}", True),
    ("18", r"\boxed{19}", False),
])
def test_cases(gold, text, expected):
    assert ok(gold, text) == (expected, "ok")


def test_verify_in_worker_thread():
    """C09-A: works inside a ThreadPoolExecutor worker, no signal error."""
    with ThreadPoolExecutor(2) as ex:
        fut = ex.submit(lambda: check_math(r"7.41\%", extract_math_answer(r"The rate is \boxed{7.41\%}").answer))
        assert fut.result() == (True, "ok")
        # the in-process function is also thread-safe (its own timeouts are disabled)
        assert ex.submit(verify_answer, r"\frac{1}{2}", "0.5").result() is True


def _slow_comparator(gold, pred):
    if pred == "HANG":
        time.sleep(60)
    return gold == pred


def test_timeout_status_and_pool_survives():
    """C09-B: a hanging comparison -> (False, 'timeout'); the pool stays usable and the next item verifies."""
    with MathVerifier(workers=1, timeout_s=1.0, comparator=_slow_comparator) as v:
        assert v.check("7", "HANG") == (False, "timeout")
        assert v.check("7", "7") == (True, "ok")
        with ThreadPoolExecutor(2) as ex:
            assert list(ex.map(lambda p: v.check("7", p), ["7", "HANG", "8"])) == [(True, "ok"), (False, "timeout"),
                                                                                 (False, "ok")]


def _raising(gold, pred):
    raise RuntimeError("boom")


def test_checker_error_status():
    with MathVerifier(workers=1, comparator=_raising) as v:
        assert v.check("1", "1") == (False, "error")
    with pytest.raises(ValueError):
        MathVerifier(workers=0)


def test_family_timeout_maps_to_score_status(monkeypatch):
    import janus_memory.tasks.math_family as m
    v = MathVerifier(workers=1, timeout_s=1.0, comparator=_slow_comparator)
    monkeypatch.setattr(m, "get_verifier", lambda: v)
    try:
        fam = m.MathFamily()
        s = fam.score(Task("t", "math500", "q", "7"), r"\boxed{HANG}")
        assert (s.correct, s.status, s.extracted) == (False, "timeout", "HANG")
    finally:
        v.close()


def test_all_math500_golds_verify_against_own_solution():
    """C08: 500/500 against the last box of the gold solution and against \\boxed{gold} (family score_many path)."""
    recs = [json.loads(line) for line in shipped_lines("math500/test.jsonl")]
    split = load_split("math500", "test")
    fam = get_family("math500")
    s1 = fam.score_many(split.tasks, [r["solution"] for r in recs], workers=2)
    s2 = fam.score_many(split.tasks, [f"\\boxed{{{r['answer']}}}" for r in recs], workers=2)
    assert sum(s.correct for s in s1) == 500
    assert sum(s.correct for s in s2) == 500
    # a wrong answer is still wrong through the same path
    assert not fam.score(split.tasks[0], r"\boxed{(3, \pi)}").correct


def test_gsm8k_and_aime_golds_verify():
    for name in ("gsm8k", "aime"):
        sp = load_split(name, "all")
        scores = get_family(name).score_many(sp.tasks, [f"The answer is {t.gold}." for t in sp.tasks])
        assert all(s.correct for s in scores), name


def test_faithful_equal():
    assert paper_equal(r"\dfrac{1}{2}", r"\frac{1}{2}")
    assert not paper_equal("2", None)
    assert not paper_equal(r"\frac{1}{2}", "0.5")


_PARENT = r"""
import sys, time, threading
from concurrent.futures import ThreadPoolExecutor
from janus_memory.tasks.verify_math import MathVerifier
v = MathVerifier(workers=2)
if sys.argv[1] == "main":
    v.check("1", "1")  # a worker forked from the main thread
else:
    with ThreadPoolExecutor(2) as ex:  # workers forked from pool threads that have since exited
        list(ex.map(lambda g: v.check(g, g), ["1", "2", "3", "4"]))
print(" ".join(map(str, v.worker_pids())), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("where", ["main", "pool"])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_their_parent(where, sig):
    """Killing the parent (SIGKILL included) leaves no math-verify worker behind."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, where], stdout=subprocess.PIPE, text=True, env=env)
    try:
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) >= 1 and all(_alive(p) for p in pids)
    finally:
        parent.send_signal(sig)
        parent.wait(30)
        parent.stdout.close()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in pids if _alive(p)] == []
