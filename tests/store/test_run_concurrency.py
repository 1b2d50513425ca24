"""Real processes on one run folder: the run lock, and SIGKILL at random points (also during
resume and inside a step's commit) followed by --resume, compared byte for byte with an uninterrupted run.
Every process started here is waited for or killed and reaped; no child is left behind."""
from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")
ARGS = ["--backend", "fake", "--dataset", "gsm8k", "--stream-size", "10", "--test-size", "3", "--encoder", "hashing",
        "--warmup", "3", "--coverage-size", "1", "--boundary-size", "1", "--fresh-size", "1", "--quiet",
        "--updater", "dc_rs", "--controller", "both"]
METHODS = ("dc_rs", "dc_rs+janus")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "JANUS_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}


def _cli(*a: str) -> list[str]:
    return [sys.executable, "-m", "janus_memory.cli", *a]


def _start(env, *a: str) -> subprocess.Popen:
    return subprocess.Popen(_cli(*a), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _reap(p: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
    return p.returncode, err


def _kill_group(p: subprocess.Popen) -> None:
    """SIGKILL the run and anything it forked (its own session), then reap it."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.communicate()


def _steps(out: Path) -> int:
    try:
        return sqlite3.connect(out / "run.sqlite", timeout=1).execute("SELECT COUNT(*) FROM steps").fetchone()[0]
    except sqlite3.Error:
        return 0


def _wait_steps(p: subprocess.Popen, out: Path, n: int, limit: float = 120) -> None:
    end = time.time() + limit
    while time.time() < end and p.poll() is None and not ((out / "run.sqlite").exists() and _steps(out) >= n):
        time.sleep(0.005)


def _artifacts(out: Path) -> dict:
    res = {}
    for m in METHODS:
        for f in ("decisions.jsonl", "steps.jsonl", "test.jsonl", "final_memory.txt"):
            res[f"{m}/{f}"] = (out / m / f).read_bytes()
        for f in sorted((out / m / "memories").iterdir()):
            res[f"{m}/memories/{f.name}"] = f.read_bytes()
    return res


def _versions_ok(out: Path) -> None:
    """The memory-version table is a chain: one row per version, each parent the previous row's hash."""
    db = sqlite3.connect(out / "run.sqlite")
    for m in METHODS:
        rows = db.execute("SELECT step, sha256, parent FROM memories WHERE method=? ORDER BY step", (m,)).fetchall()
        assert rows[0][2] is None
        assert all(b[2] == a[1] for a, b in zip(rows, rows[1:])), m


@pytest.fixture(scope="module")
def reference(tmp_path_factory, env):
    """The uninterrupted run, in this process (its process is not what is tested; the runs compared with it are)."""
    from janus_memory import cli

    ref = tmp_path_factory.mktemp("ref") / "run"
    mp = pytest.MonkeyPatch()
    mp.setenv("JANUS_CACHE_DIR", env["JANUS_CACHE_DIR"])
    try:
        assert cli.main(["run", *ARGS, "--out", str(ref)]) == 0
    finally:
        mp.undo()
    return _artifacts(ref)


def test_two_processes_on_one_folder_exactly_one_proceeds(tmp_path, env, reference):
    # run + resume: the resume refuses while the run holds the folder, naming its pid
    out = tmp_path / "a"
    first = _start(env, "run", *ARGS, "--out", str(out))
    _wait_steps(first, out, 2)
    rc2, err2 = _reap(_start(env, "run", "--resume", str(out)))
    rc1, err1 = _reap(first)
    assert rc1 == 0, err1
    if rc2 != 0:  # the usual case; if the first run had already finished, the resume finds a finished run
        assert rc2 == 2 and len(err2.strip().splitlines()) == 1
        assert f"in use by process {first.pid}" in err2 or "holds a finished run" in err2, err2
    assert _artifacts(out) == reference
    _versions_ok(out)
    # two new runs at once on one folder, and two resumes at once of one interrupted run
    for kind in ("new", "resume"):
        out = tmp_path / f"b-{kind}"
        if kind == "resume":
            p = _start(env, "run", *ARGS, "--out", str(out))
            _wait_steps(p, out, 3)
            _kill_group(p)
            a = [_start(env, "run", "--resume", str(out)) for _ in range(2)]
        else:
            a = [_start(env, "run", *ARGS, "--out", str(out)) for _ in range(2)]
        results = [_reap(p) for p in a]
        ok = [r for r in results if r[0] == 0]
        assert len(ok) == 1, results
        loser = next(r for r in results if r[0] != 0)
        assert loser[0] == 2 and len(loser[1].strip().splitlines()) == 1, loser
        assert any(s in loser[1] for s in ("in use by process", "holds a finished run", "already holds")), loser
        assert _artifacts(out) == reference
        _versions_ok(out)


def test_sigkill_at_random_points_then_resume_is_byte_identical(tmp_path, env, reference):
    """Kills at random moments: mid-run (any point, including inside a commit), then again during the resume;
    each run is resumed until it finishes and must equal the uninterrupted run byte for byte."""
    rng = random.Random(12)
    total = 2 * 10
    tried = 0
    for trial in range(3):  # 3 trials x (1 kill + up to 1 killed resume + resumes): kept small, processes are slow here
        out = tmp_path / f"k{trial}"
        p = _start(env, "run", *ARGS, "--out", str(out))
        _wait_steps(p, out, rng.randint(0, total - 1))
        time.sleep(rng.random() * 0.05)  # land anywhere: between steps, inside a step, inside the commit
        _kill_group(p)
        tried += 1
        fresh = not (out / "run.sqlite").exists()
        for _ in range(10):  # resume, sometimes killed again part-way
            if (out / "COMPLETE").exists():
                break
            cmd = ["run", *ARGS, "--out", str(out)] if fresh else ["run", "--resume", str(out), "--quiet"]
            q = _start(env, *cmd)
            if tried < 5 and rng.random() < 0.5:
                _wait_steps(q, out, _steps(out) + rng.randint(1, 4))
                time.sleep(rng.random() * 0.03)
                _kill_group(q)
                tried += 1
                continue
            rc, err = _reap(q)
            fresh = rc != 0 and "has no stored config" in err  # killed before its config was stored: start again
            assert rc == 0 or fresh, err
        assert (out / "COMPLETE").exists()
        assert _artifacts(out) == reference, f"trial {trial} differs"
        _versions_ok(out)
    assert tried >= 3
