"""Ctrl-C on a real `janus run` subprocess (fake backend): stops, prints the one-line --resume hint, no traceback,
and the run resumes to completion. SIGINT goes to the whole process group, as a terminal's Ctrl-C does."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from child_signals import sigint_default  # noqa: E402

ARGS = ["--backend", "fake", "--dataset", "gsm8k", "--stream-size", "120", "--test-size", "2", "--updater", "dc_rs",
        "--controller", "none", "--encoder", "hashing"]


def _env(tmp: Path) -> dict:
    src = str(Path(__file__).resolve().parents[2] / "src")
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "JANUS_CACHE_DIR": str(tmp / "cache"), "PYTHONUNBUFFERED": "1"}


def _stop_after_step_3(tmp_path: Path, send, **popen_kw) -> tuple[Path, int, list[str], str]:
    """Start a 120-step fake run in its own session, call ``send(proc)`` once step 3 is printed, and wait for it to
    stop: (run folder, exit code, stdout lines up to step 3, stderr). A run still alive after that is killed."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "janus_memory.cli", "run", *ARGS, "--out", str(out)]
    popen_kw.setdefault("preexec_fn", sigint_default)  # Ctrl-C works also when pytest runs with SIGINT ignored
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp_path),
                         start_new_session=True, **popen_kw)
    try:
        seen = []
        for line in p.stdout:  # stdout is a pipe: one plain progress line per step
            seen.append(line)
            if line.startswith("[dc_rs] step   3/120 "):
                break
        send(p)
        rest, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return out, p.returncode, seen, err


def _resumes_to_completion(tmp_path: Path, out: Path, capsys) -> None:
    """`janus run --resume OUT` exits 0 without a traceback and the run then holds all 120 steps, once each. In this
    process (the signal went to the stopped run's process; the resume is an ordinary command), with the run's cache."""
    import pytest

    from janus_memory import cli

    assert not (out / "COMPLETE").exists()
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JANUS_CACHE_DIR", _env(tmp_path)["JANUS_CACHE_DIR"])
        code = cli.main(["run", "--resume", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "Traceback" not in err
    steps = [json.loads(x)["step"] for x in (out / "dc_rs" / "steps.jsonl").read_text().splitlines()]
    assert steps == list(range(1, 121))


def test_sigint_stops_with_resume_hint_and_resumes(tmp_path, capsys):
    out, code, seen, err = _stop_after_step_3(tmp_path, lambda p: os.killpg(p.pid, signal.SIGINT))
    assert any(s.startswith("[dc_rs] step   3/120 ") for s in seen)
    assert code == 130
    assert err == f"interrupted: every committed step is kept; continue with `janus run --resume {out}`\n"
    _resumes_to_completion(tmp_path, out, capsys)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["methods"]["dc_rs"]["stream_tasks"] == 120


def test_sigterm_to_a_background_run_that_ignores_sigint_stops_like_ctrl_c(tmp_path, capsys):
    """A job started in the background by a non-interactive shell has SIGINT ignored; `kill PID` (SIGTERM, also a batch
    scheduler's time limit) must stop it at the last committed step with the resume line, exit 143, and resume."""
    def send(p):
        os.killpg(p.pid, signal.SIGINT)  # ignored, as in a background job
        p.send_signal(signal.SIGTERM)

    out, code, _, err = _stop_after_step_3(tmp_path, send,
                                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert code == 143
    assert err == ("terminated (SIGTERM): stopping at the last committed step\n"
                   f"interrupted: every committed step is kept; continue with `janus run --resume {out}`\n")
    _resumes_to_completion(tmp_path, out, capsys)


def _children(pid: int) -> list[int]:
    """Process ids whose parent is ``pid`` (Linux /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                out.append(int(d.name))
    return out


def test_sigterm_to_the_process_group_with_a_math_verify_worker_is_one_terminated_line(tmp_path, capsys):
    """`timeout`, `kill -TERM -- -PGID` and Slurm send SIGTERM to the whole group, math-verify's scoring worker (a
    forked child) included: the worker exits silently on it (default action), so stderr has one "terminated" line, no
    traceback, exit 143, and the run resumes to completion."""
    workers = []

    def send(p):
        workers.extend(_children(p.pid))
        os.killpg(p.pid, signal.SIGTERM)

    out, code, _, err = _stop_after_step_3(tmp_path, send)
    assert len(workers) >= 1  # GSM8K answers are scored by math-verify in a worker process
    assert code == 143
    assert err == ("terminated (SIGTERM): stopping at the last committed step\n"
                   f"interrupted: every committed step is kept; continue with `janus run --resume {out}`\n")
    _resumes_to_completion(tmp_path, out, capsys)
