"""What a run folder says is what happened: a healthy run whose model writes CRLF line endings is not called damaged
(exports are checked as bytes); a resume of a folder that another process is still running says so and reads
nothing (the lock is taken before any check); a text with U+2028 inside a record does not split its JSONL line."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from janus_memory import cli

SRC = str(Path(__file__).resolve().parents[2] / "src")
TESTS = str(Path(__file__).resolve().parents[1])


def _scripted(stream: int, test: int):
    from janus_memory.run.fake_llm import scripted_backend
    from janus_memory.tasks import load_split

    tasks = load_split("gsm8k", "stream", limit=stream).tasks + load_split("gsm8k", "test", limit=test).tasks
    return scripted_backend(tasks)


def test_a_model_writing_crlf_gives_a_healthy_run(tmp_path, capsys, monkeypatch):
    from janus_memory.testing.openai_stub import OpenAITestServer

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    fake = _scripted(3, 2)
    out = tmp_path / "r"
    with OpenAITestServer(responder=lambda m: fake.reply(m).replace("\n", "\r\n") + "\u2028end\x1c") as srv:
        rc = cli.main(["run", "--backend", "openai", "--base-url", srv.base_url, "--model", "m", "--stream-size", "3",
                       "--test-size", "2", "--encoder", "hashing", "--out", str(out), "-q"])
    assert rc == 0, capsys.readouterr().err
    assert b"\r\n" in (out / "dc_rs" / "final_memory.txt").read_bytes()  # the model's bytes, kept as written
    capsys.readouterr()
    assert cli.main(["report", "-q", str(out)]) == 0
    assert capsys.readouterr().err == ""
    assert cli.main(["view", str(out)]) == 0
    capsys.readouterr()
    from janus_memory.store.reader import RunReader

    lines = (out / "dc_rs" / "steps.jsonl").read_text(encoding="utf-8").split("\n")[:-1]
    (out / "run.sqlite").rename(out / "db")  # the files alone: each record is one line, U+2028 and \x1c inside it
    assert len(RunReader(out).jsonl("dc_rs/steps.jsonl")) == len(lines) == 3
    assert "\u2028" in lines[0]


def _wait_for_step(out: Path, proc: subprocess.Popen, limit: float = 120) -> None:
    import sqlite3

    end = time.time() + limit
    while time.time() < end and proc.poll() is None:
        try:
            con = sqlite3.connect(f"file:{out / 'run.sqlite'}?mode=ro", uri=True, timeout=1)
            n = con.execute("SELECT COUNT(*) FROM steps").fetchone()[0]
            con.close()
            if n >= 1:
                return
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    raise AssertionError("the run did not commit a step")


@pytest.mark.timeout(300)
def test_a_resume_of_a_running_folder_names_the_process_and_touches_nothing(tmp_path, capsys, monkeypatch):
    from janus_memory.testing.openai_stub import OpenAITestServer

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    fake = _scripted(8, 2)
    out = tmp_path / "r"
    env = {**os.environ, "PYTHONPATH": SRC, "JANUS_CACHE_DIR": str(tmp_path / "cache")}
    with OpenAITestServer(responder=fake.reply, latency_s=0.15) as srv:
        proc = subprocess.Popen([sys.executable, "-m", "janus_memory.cli", "run", "--backend", "openai", "--base-url",
                                 srv.base_url, "--model", "m", "--stream-size", "8", "--test-size", "2", "--encoder",
                                 "hashing", "--out", str(out), "-q"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _wait_for_step(out, proc)
            for _ in range(2):
                before = sorted(p.name for p in out.iterdir())
                assert cli.main(["run", "--resume", str(out), "-q"]) == 2
                assert capsys.readouterr().err == (f"error: run folder {out} is in use by process {proc.pid} (another "
                                                   "janus run or resume); wait for it to finish or stop it first\n")
                assert sorted(p.name for p in out.iterdir()) == before
            assert cli.main(["report", "-q", str(out)]) == 2
            assert f"is still running (pid {proc.pid})" in capsys.readouterr().err
            for extra in ([], ["--overwrite"]):  # a new run there: the same line, not "continue it with --resume"
                assert cli.main(["run", "--backend", "fake", "--stream-size", "1", "--test-size", "1", "--encoder",
                                 "hashing", "--out", str(out), "-q", *extra]) == 2
                assert capsys.readouterr().err == (f"error: run folder {out} is in use by process {proc.pid} "
                                                   "(another janus run or resume); wait for it to finish or stop it "
                                                   "first\n")
            _, err = proc.communicate(timeout=240)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
    assert proc.returncode == 0, err
    assert cli.main(["report", "-q", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text())["methods"]["dc_rs"]["stream_tasks"] == 8


def test_the_lock_is_taken_before_the_database_is_read(tmp_path, capsys, monkeypatch):
    """Deterministic form of the race: while another process holds the folder, even a database that reads as damaged
    (here: really edited) is not read: the resume names the process (before, it said "the database itself is
    damaged" from a read made before the lock was taken), and COMPLETE and every file stay."""
    import sqlite3

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r"
    assert cli.main(["run", "--backend", "fake", "--stream-size", "3", "--test-size", "1", "--encoder", "hashing",
                     "--controller", "none", "--out", str(out), "-q"]) == 0
    con = sqlite3.connect(out / "run.sqlite")
    with con:
        con.execute("UPDATE steps SET record=record || ' ' WHERE step=2")
    con.close()
    files = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != ".janus.lock"}
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from janus_memory.store.lock import RunLock; "
                               "RunLock(sys.argv[1]).acquire(); print('locked', flush=True); sys.stdin.read()",
                               str(out)], env={**os.environ, "PYTHONPATH": SRC}, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        capsys.readouterr()
        assert cli.main(["run", "--resume", str(out), "-q"]) == 2
        assert capsys.readouterr().err == (f"error: run folder {out} is in use by process {holder.pid} (another "
                                           "janus run or resume); wait for it to finish or stop it first\n")
    finally:
        holder.communicate("", timeout=30)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != ".janus.lock"} == files
    assert cli.main(["run", "--resume", str(out), "-q"]) == 2  # free again: now the damage is what it says
    assert "the database itself is damaged" in capsys.readouterr().err
