"""Run-folder lock: real processes on one folder; SIGKILL releases; forked children do not hold it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from janus_memory.store.lock import LOCK_NAME, RunLock, RunLocked, holder_pid

HOLDER = textwrap.dedent("""
    import os, sys
    from janus_memory.store.lock import RunLock, RunLocked
    try:
        lk = RunLock(sys.argv[1]).acquire()
    except RunLocked as e:
        print("REFUSED", e.holder_pid, str(e), flush=True)
        sys.exit(3)
    if len(sys.argv) > 2 and sys.argv[2] == "fork":
        child = os.fork()
        if child == 0:
            sys.stdin.read()          # the forked worker lives until the test closes stdin
            os._exit(0)
        print("LOCKED", os.getpid(), child, flush=True)
    else:
        print("LOCKED", os.getpid(), flush=True)
    sys.stdin.read()
    lk.release()
""")


def _env() -> dict:
    src = str(Path(__file__).resolve().parents[2] / "src")
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _start(folder: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), *extra], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=_env())


def _finish(p: subprocess.Popen) -> int:
    try:
        p.stdin.close()
    except OSError:
        pass
    rc = p.wait(timeout=30)
    p.stdout.close()
    return rc


@pytest.fixture
def procs():
    started: list[subprocess.Popen] = []
    yield started
    for p in started:  # reap whatever a failing test left
        if p.poll() is None:
            p.kill()
        _finish(p)


def test_second_process_refuses_naming_the_holder_then_succeeds_after_exit(tmp_path, procs):
    run = tmp_path / "run"
    a = _start(run)
    procs.append(a)
    first = a.stdout.readline().split()
    assert first[:2] == ["LOCKED", str(a.pid)]
    assert (run / LOCK_NAME).read_text() == f"pid {a.pid}\n"
    assert holder_pid(run) == a.pid
    b = _start(run)
    procs.append(b)
    line = b.stdout.readline()
    assert _finish(b) == 3
    assert line.startswith(f"REFUSED {a.pid} run folder {run} is in use by process {a.pid}")
    assert "\n" not in line.rstrip("\n")
    assert _finish(a) == 0
    assert holder_pid(run) is None
    c = _start(run)
    procs.append(c)
    assert c.stdout.readline().split()[:2] == ["LOCKED", str(c.pid)]
    assert _finish(c) == 0


def test_sigkilled_holder_leaves_the_folder_resumable(tmp_path, procs):
    run = tmp_path / "run"
    a = _start(run)
    procs.append(a)
    assert a.stdout.readline().startswith("LOCKED")
    a.send_signal(signal.SIGKILL)
    assert a.wait(timeout=30) == -signal.SIGKILL
    with RunLock(run) as lk:  # the kernel dropped the dead process's lock
        assert lk.held
        assert (run / LOCK_NAME).read_text() == f"pid {os.getpid()}\n"
    assert (run / LOCK_NAME).read_text() == ""


def test_forked_child_of_a_killed_run_does_not_keep_the_lock(tmp_path, procs):
    run = tmp_path / "run"
    a = _start(run, "fork")
    procs.append(a)
    _, pid, child = a.stdout.readline().split()
    assert int(pid) == a.pid
    a.send_signal(signal.SIGKILL)
    a.wait(timeout=30)
    try:
        os.kill(int(child), 0)  # the orphan is still alive ...
        with RunLock(run) as lk:  # ... yet the folder is free
            assert lk.held
    finally:
        a.stdin.close()  # the orphan reads the same stdin pipe: EOF makes it exit
        try:
            os.kill(int(child), signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_two_processes_creating_the_same_new_folder_one_wins(tmp_path, procs):
    run = tmp_path / "deep" / "new-run"
    a, b = _start(run), _start(run)
    procs.extend([a, b])
    lines = sorted([a.stdout.readline().split()[0], b.stdout.readline().split()[0]])
    assert lines == ["LOCKED", "REFUSED"]
    assert sorted([_finish(a), _finish(b)]) == [0, 3]


def test_same_process_second_lock_refused_and_release_is_idempotent(tmp_path):
    run = tmp_path / "r"
    lk = RunLock(run).acquire()
    with pytest.raises(RunLocked) as ei:
        RunLock(run).acquire()
    assert ei.value.holder_pid == os.getpid()
    assert str(ei.value) == (f"run folder {run} is in use by process {os.getpid()} (another janus run or resume); "
                             "wait for it to finish or stop it first")
    assert lk.acquire() is lk  # re-acquiring a held lock is a no-op
    lk.release()
    lk.release()
    assert not lk.held
    assert (run / LOCK_NAME).exists()  # never deleted
    with RunLock(run):
        pass


def test_holder_pid_on_a_missing_folder_creates_nothing(tmp_path):
    assert holder_pid(tmp_path / "nope") is None
    assert not (tmp_path / "nope").exists()


def test_existing_run_under_a_read_only_parent_can_still_be_locked(tmp_path, monkeypatch):
    import janus_memory.store.lock as lock_mod

    real = lock_mod._open_lock_file

    def parent_lock_denied(path):
        if path.parent == tmp_path:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(lock_mod, "_open_lock_file", parent_lock_denied)
    (tmp_path / "run").mkdir()
    with RunLock(tmp_path / "run") as lk:  # existing folder: locked without the parent lock
        assert lk.held
    with pytest.raises(PermissionError):
        RunLock(tmp_path / "new").acquire()  # a new folder would need the parent lock: the OSError surfaces
    assert not (tmp_path / "new").exists()
