"""One clear stderr line, never a traceback, when the CLI cannot do its output (fake backend only):

1. stdout closed from the start (``janus run ... >&-``): as a closed pipe (exit 141, one stderr line);
2. stdout not writable (``>/dev/full``, a full disk): one line naming stdout, exit 2; a run stopped that way keeps
   its committed steps and resumes;
3. ``janus report`` whose output folder cannot be written (a file, /proc, a read-only mount): one line, exit 2,
   nothing written;
4. a run whose stored config row is not JSON (or not a JSON object): one line naming the run folder, exit 2.
"""
from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from janus_memory.cli import main

SMALL = ["--backend", "fake", "--dataset", "gsm8k", "--stream-size", "3", "--test-size", "2", "--encoder", "hashing:64",
         "--warmup", "1", "--coverage-size", "1", "--boundary-size", "1", "--fresh-size", "1", "--no-cache"]
SRC = str(Path(__file__).resolve().parents[2] / "src")
NOT_SET_UP = "before the run was set up; nothing to resume: start it again\n"
FULL = "cannot write to stdout (No space left on device)"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "run"
    old = sys.stdout
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    try:
        assert main(["run", *SMALL, "--out", str(out)]) == 0
    finally:
        sys.stdout.close()
        sys.stdout = old
    return out


def _janus(args: list[str], tmp_path: Path, stdout) -> subprocess.CompletedProcess:
    """The CLI in a child process; ``stdout``: "closed" (fd 1 closed before Python starts) or a file object."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "JANUS_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "janus_memory.cli", *args]
    if stdout == "closed":
        return subprocess.run(cmd, stderr=subprocess.PIPE, env=env, cwd=tmp_path, timeout=600,
                              preexec_fn=lambda: os.close(1))
    return subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, env=env, cwd=tmp_path, timeout=600)


def _check(res, code: int, err: str) -> None:
    text = res.stderr.decode()
    assert "Traceback" not in text and "Exception ignored" not in text, text
    assert (res.returncode, text) == (code, err)


# ------------------------------------------------------------------ 1. stdout closed at start
def test_closed_stdout_run_report_and_diff(tmp_path, finished_run):
    out = tmp_path / "r"
    _check(_janus(["run", *SMALL, "--out", str(out)], tmp_path, "closed"), 141, "stdout is closed " + NOT_SET_UP)
    assert not out.exists()
    _check(_janus(["report", str(finished_run), "--quiet", "--out", str(tmp_path / "rep")], tmp_path, "closed"),
           141, "error: stdout is closed\n")
    _check(_janus(["memory", "diff", str(finished_run), "1", "2"], tmp_path, "closed"), 141,
           "error: stdout is closed\n")


# ------------------------------------------------------------------ 2. stdout on a full disk
def test_full_stdout_run_report_and_diff(tmp_path, finished_run):
    out = tmp_path / "r"
    with open("/dev/full", "w") as full:
        _check(_janus(["run", *SMALL, "--out", str(out)], tmp_path, full), 2, f"{FULL} " + NOT_SET_UP)
        assert not out.exists()
        _check(_janus(["report", str(finished_run), "--quiet", "--out", str(tmp_path / "rep")], tmp_path, full),
               2, f"error: {FULL}\n")
        _check(_janus(["memory", "diff", str(finished_run), "1", "2"], tmp_path, full), 2, f"error: {FULL}\n")


class _FullAt:
    """A stdout that takes writes until a line containing ``marker``, then fails with ENOSPC (a disk that filled)."""

    def __init__(self, marker: str):
        self.marker, self.full = marker, False

    def write(self, s: str) -> int:
        if self.full or self.marker in s:
            self.full = True
            raise OSError(errno.ENOSPC, "No space left on device")
        return len(s)

    def flush(self) -> None:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")

    def isatty(self) -> bool:
        return False


def test_stdout_filling_up_mid_run_keeps_the_steps_and_resumes(tmp_path, capsys, monkeypatch):
    out = tmp_path / "r"
    monkeypatch.setattr(sys, "stdout", _FullAt("[dc_rs] step"))
    rc = main(["run", *SMALL, "--out", str(out)])
    monkeypatch.undo()
    assert rc == 2
    assert capsys.readouterr().err == (f"{FULL}: every committed step is kept; continue with "
                                       f"`janus run --resume {out}`\n")
    assert not (out / "COMPLETE").exists()
    assert main(["run", "--resume", str(out), "-q"]) == 0
    assert (out / "COMPLETE").exists()


# ------------------------------------------------------------------ 3. report folder not writable
def test_report_out_is_a_file(tmp_path, capsys, finished_run):
    target = tmp_path / "taken"
    target.write_text("mine", encoding="utf-8")
    assert main(["report", str(finished_run), "--quiet", "--out", str(target)]) == 2
    assert capsys.readouterr().err == f"error: cannot write the report to {target}: it is a file, not a folder\n"
    assert target.read_text(encoding="utf-8") == "mine"
    assert main(["report", str(finished_run), "--quiet", "--out", str(target / "sub")]) == 2
    assert capsys.readouterr().err == f"error: cannot write the report to {target / 'sub'}: Not a directory\n"


@pytest.mark.parametrize("place", ["/proc/janus-x", "/sys/janus-x"])
def test_report_out_in_an_unwritable_place(tmp_path, capsys, finished_run, place):
    if not Path(place).parent.is_dir():
        pytest.skip(f"no {Path(place).parent} here")
    try:
        os.mkdir(place)
    except OSError as e:
        reason = e.strerror
    else:
        os.rmdir(place)
        pytest.skip(f"{place} can be made here")
    assert main(["report", str(finished_run), "--quiet", "--out", place]) == 2
    assert capsys.readouterr().err == f"error: cannot write the report to {place}: {reason}\n"


def test_report_of_a_run_on_a_read_only_mount(tmp_path, finished_run):
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode:
        pytest.skip("no unprivileged mount namespace here")
    run = tmp_path / "ro"
    shutil.copytree(finished_run, run)
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    script = (f"mount --bind {run} {run} && mount -o remount,bind,ro {run} && "
              f"exec {sys.executable} -m janus_memory.cli report {run} --quiet")
    res = subprocess.run(["unshare", "-rm", "sh", "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         env=env, timeout=600)
    _check(res, 2, f"error: cannot write the report to {run / 'report'}: Read-only file system\n")
    assert not (run / "report").exists()


# ------------------------------------------------------------------ 4. damaged stored config
@pytest.mark.parametrize(("value", "why"), [
    ("{bad", "its row in run.sqlite is not valid JSON: Expecting property name enclosed in double quotes: "
             "line 1 column 2 (char 1)"),
    ("[1]", "its row in run.sqlite holds a JSON list, not an object"),
])
def test_damaged_stored_config(tmp_path, capsys, finished_run, value, why):
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    with sqlite3.connect(run / "run.sqlite") as db:
        db.execute("UPDATE meta SET value=? WHERE key='config'", (value,))
    db.close()
    line = f"error: {run}: the stored config is damaged ({why})\n"
    assert main(["report", str(run), "--quiet"]) == 2
    assert capsys.readouterr().err == line
    assert main(["run", "--resume", str(run)]) == 2
    assert capsys.readouterr().err == line
