"""One sandbox's processes never change another sandbox's verdict (one process limit per sandbox).

Bounded on purpose: a 12-process limit, bombs that stop by themselves after 1-1.5 s (or a 1.5 s wall clock) and sleep
between failed forks.
"""
from __future__ import annotations

import shutil

import pytest

from janus_memory.tasks import load_split
from janus_memory.tasks import sandbox as sb
from janus_memory.tasks.humaneval import HumanEvalFamily
from janus_memory.tasks.sandbox import SandboxLimits, run_python, uid_isolation, uid_processes

BACKENDS = [pytest.param("bwrap", marks=pytest.mark.skipif(not shutil.which("bwrap"), reason="bwrap missing")),
            pytest.param("unshare", marks=pytest.mark.skipif(not shutil.which("unshare"), reason="unshare missing"))]
ISOLATED = pytest.mark.skipif(uid_isolation() != "per-sandbox-uid", reason="needs root and setpriv (uid per sandbox)")
LIM = SandboxLimits(wall_s=8.0, cpu_s=8, nproc=12)  # no job of the batch needs the wall clock: load cannot flip them

RIGHT = "```python\ndef truncate_number(number: float) -> float:\n    return number % 1.0\n```"
# a real fork bomb (every child forks too) for 1.5 s, sleeping between failed forks; then every copy but the
# first exits and the first answers wrongly: ends as an assertion
DEADLINE_BOMB = ("```python\nimport os, time\nme = os.getpid()\nend = time.time() + 1.5\nwhile time.time() < end:\n"
                 "    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.02)\n"
                 "if os.getpid() != me:\n    os._exit(0)\ndef truncate_number(number):\n    return 0.25\n```")
# a real fork bomb (every child forks too), sleeping between failed forks: ends as a timeout
BOMB = ("```python\nimport os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
        "        time.sleep(0.02)\n```")
# forks until the limit refuses, keeps the children alive for a while, then answers wrongly: ends as an assertion
HOLD = ("```python\nimport os, time\nfor _ in range(200):\n    try:\n        if os.fork() == 0:\n"
        "            time.sleep(1.5)\n            os._exit(0)\n    except OSError:\n        break\ntime.sleep(1.0)\n"
        "def truncate_number(number):\n    return 0.25\n```")


@ISOLATED
@pytest.mark.parametrize("backend", BACKENDS)
def test_fork_bombs_beside_correct_solutions_in_one_batch(backend):
    task = next(t for t in load_split("humaneval", "all").tasks if t.id == "HumanEval/2")
    fam = HumanEvalFamily(limits=LIM, backend=backend, allow_weak_sandbox=True)
    outs = [DEADLINE_BOMB, RIGHT, RIGHT, HOLD, RIGHT, RIGHT, RIGHT]
    scores = fam.score_many([task] * len(outs), outs, workers=2)
    verdicts = [(s.correct, s.status, s.detail["reason"]) for s in scores]
    assert verdicts == [(False, "ok", "assertion"), *[(True, "ok", "passed")] * 2, (False, "ok", "assertion"),
                        *[(True, "ok", "passed")] * 3], verdicts
    # every sandbox ran under a pool uid of its own, and nothing of any of them is left (other runs on the machine may
    # use other uids of the pool meanwhile, so only this batch's uids are checked)
    uids = [s.detail["uid"] for s in scores]
    assert all(sb.UID_BASE <= u < sb.UID_BASE + sb.UID_SLOTS for u in uids), uids
    assert {u: uid_processes(u) for u in uids if uid_processes(u)} == {}


@ISOLATED
@pytest.mark.parametrize("backend", BACKENDS)
def test_each_sandbox_runs_under_its_own_uid_and_leaves_nothing(backend):
    import threading
    got = {}

    def job(i):
        got[i] = run_python("import os, time\nprint(os.getuid())\ntime.sleep(0.3)", backend=backend, limits=LIM)

    ts = [threading.Thread(target=job, args=(i,)) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    uids = [int(got[i].stdout.strip()) for i in range(3)]
    assert len(set(uids)) == 3 and all(sb.UID_BASE <= u < sb.UID_BASE + sb.UID_SLOTS for u in uids), uids
    assert [got[i].detail["uid"] for i in range(3)] == uids
    assert all(uid_processes(u) == [] for u in uids)


@ISOLATED
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_fork_bomb_leaves_no_process_when_run_python_returns(backend):
    r = run_python(BOMB.strip("`").removeprefix("python\n"), backend=backend,
                   limits=SandboxLimits(wall_s=1.5, cpu_s=2, nproc=12))
    assert (r.status, r.reason) == ("timeout", "timeout")
    assert uid_processes(r.detail["uid"]) == []  # checked at once: the release waited for the teardown


@ISOLATED
def test_a_busy_slot_is_skipped(tmp_path, monkeypatch):
    # a slot whose uid still owns a process is not leased; here uid_processes reports the first slot as busy
    monkeypatch.setattr(sb, "_lease_dir", lambda: tmp_path)  # private locks: other runs on the machine cannot interfere
    monkeypatch.setattr(sb, "_next_slot", 0)
    busy = sb.UID_BASE
    monkeypatch.setattr(sb, "uid_processes", lambda uid: [1] if uid == busy else [])
    lease = sb._lease_uid()
    try:
        assert lease is not None and lease[0] == busy + 1
    finally:
        if lease:
            sb._release_uid(*lease)


def test_shared_uid_is_announced_once(monkeypatch, caplog):
    monkeypatch.setattr(sb, "uid_isolation", lambda: "shared-uid")
    monkeypatch.setattr(sb, "_SHARED_WARNED", False)
    with caplog.at_level("WARNING", logger="janus_memory.tasks.sandbox"):
        assert sb._lease_uid() is None
        assert sb._lease_uid() is None
    assert sum("share one uid" in r.getMessage() for r in caplog.records) == 1
