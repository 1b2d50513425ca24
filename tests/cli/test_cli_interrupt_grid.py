"""Ctrl-C on real `janus sweep` and `janus grid` subprocesses (fake backend, two worker processes): SIGINT to the
process group (as a terminal's Ctrl-C) after every run has committed a step stops the command with exit code 130,
one hint line naming the same command, no traceback and no process left; the same command then resumes the
unfinished runs to completion (a run that finished before the signal is skipped)."""
from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from child_signals import sigint_default  # noqa: E402

STREAM = 60
pytestmark = pytest.mark.timeout(1200)  # two real CLI processes with worker pools each


def _env(tmp: Path) -> dict:
    src = str(Path(__file__).resolve().parents[2] / "src")
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "JANUS_CACHE_DIR": str(tmp / "cache"), "PYTHONUNBUFFERED": "1"}


def _committed(run: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{run / 'run.sqlite'}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute("SELECT COUNT(*) FROM steps").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _group_alive(pgid: int) -> list[str]:
    """Processes of the group that are not zombies (a zombie has exited already)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(d.name)
    return out


def _interrupt(cmd: list[str], env: dict, runs: list[Path]) -> tuple[int, str, str]:
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                         env=env, start_new_session=True, preexec_fn=sigint_default)
    try:
        deadline = time.monotonic() + 600
        while not all(_committed(r) >= 1 for r in runs):
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.2)
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    for _ in range(100):  # the workers have left; give the kernel a moment to reap them
        if not _group_alive(p.pid):
            break
        time.sleep(0.1)
    assert _group_alive(p.pid) == []
    return p.returncode, out, err


def _run_to_end(cmd: list[str], env: dict) -> subprocess.CompletedProcess:
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                         env=env, start_new_session=True, preexec_fn=sigint_default)
    try:
        out, err = p.communicate(timeout=900)
    finally:
        if p.poll() is None:  # leave no worker behind when the test gives up
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def _check_finished(runs: list[Path], method_of) -> None:
    for run in runs:
        method = method_of(run)
        summary = json.loads((run / "summary.json").read_text())
        assert summary["methods"][method]["stream_tasks"] == STREAM
        steps = [json.loads(x)["step"] for x in (run / method / "steps.jsonl").read_text().splitlines()]
        assert steps == list(range(1, STREAM + 1))


def _statuses(out: str) -> dict[str, str]:
    """{run folder: status} from the sweep's "[i/n] status cell seed<k> ... (folder)" lines."""
    return {re.search(r"  \((/.*?)\)(?:  |$)", line).group(1): line.split()[1] for line in out.splitlines()
            if line.startswith("[") and "/2] " in line}


def _expected(runs: list[Path], finished: set[Path]) -> dict[str, str]:
    return {str(r): "skipped" if r in finished else "resumed" for r in runs}


def test_sigint_stops_a_sweep_and_the_same_command_resumes(tmp_path):
    root = tmp_path / "sw"
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"""base:
  backend: fake
  encoder: hashing
  stream_size: {STREAM}
  test_size: 2
  janus: {{warmup: 3, coverage_size: 2, boundary_size: 1, fresh_size: 2}}
  out: {root}
grid:
  dataset: [gsm8k]
  updater: [dc_rs]
  controller: [none, janus]
""")
    runs = [root / "gsm8k" / "dc_rs" / "seed0", root / "gsm8k" / "dc_rs+janus" / "seed0"]
    cmd = [sys.executable, "-m", "janus_memory.cli", "sweep", str(grid), "--workers", "2"]
    rc, out, err = _interrupt(cmd, _env(tmp_path), runs)
    assert rc == 130
    assert err == ("interrupted: every committed step is kept; run the same command again to continue (finished "
                   f"runs are skipped, unfinished ones resume): janus sweep {grid} --workers 2\n")
    finished = {r for r in runs if (r / "COMPLETE").exists()}
    r = _run_to_end(cmd, _env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert _statuses(r.stdout) == _expected(runs, finished)
    _check_finished(runs, lambda run: run.parent.name)


def test_sigint_stops_a_grid_and_the_same_command_resumes(tmp_path):
    root = tmp_path / "grid"
    args = ["grid", "--backend", "fake", "--dataset", "gsm8k", "--stream-size", str(STREAM), "--test-size", "2",
            "--updaters", "dc_rs", "--encoder", "hashing", "--warmup", "3", "--coverage-size", "2",
            "--boundary-size", "1", "--fresh-size", "2", "--no-baselines", "--no-trigger-ablation",
            "--no-evalset-ablation", "--workers", "2", "--out", str(root)]
    runs = [root / "gsm8k" / "dc_rs" / "seed0", root / "gsm8k" / "dc_rs+janus" / "seed0"]
    cmd = [sys.executable, "-m", "janus_memory.cli", *args]
    rc, out, err = _interrupt(cmd, _env(tmp_path), runs)
    assert rc == 130
    assert err == ("interrupted: every committed step is kept; run the same command again to continue (finished "
                   "runs are skipped, unfinished ones resume): janus " + " ".join(args) + "\n")
    finished = {r for r in runs if (r / "COMPLETE").exists()}
    r = _run_to_end(cmd, _env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert _statuses(r.stdout) == _expected(runs, finished)
    _check_finished(runs, lambda run: run.parent.name)
