"""A damaged step row or method result (fresh-user pass): `janus report` gives one line instead of a traceback, and the
fix it names (`janus run --resume DIR`) really rebuilds an incomplete method result."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC, "JANUS_CACHE_DIR": str(tmp / "cache")}
    return subprocess.run([sys.executable, "-m", "janus_memory.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=tmp)


def _run(tmp: Path, name: str) -> Path:
    r = _cli(tmp, "run", "--backend", "fake", "--stream-size", "4", "--test-size", "2", "--encoder", "hashing",
             "--out", name, "-q")
    assert r.returncode == 0, r.stderr
    return tmp / name


def _sql(run: Path, sql: str) -> None:
    con = sqlite3.connect(run / "run.sqlite")
    with con:
        con.execute(sql)
    con.close()


def test_a_step_row_that_is_not_json_is_one_line(tmp_path):
    run = _run(tmp_path, "a")
    _sql(run, "UPDATE steps SET record='{not json' WHERE method='dc_rs' AND step=2")
    r = _cli(tmp_path, "report", "-q", "a")
    assert r.returncode == 2
    assert r.stderr == ("error: a/run.sqlite: record of dc_rs at step 2 is not valid JSON (Expecting property name "
                        "enclosed in double quotes: line 1 column 2 (char 1)); the database is damaged\n")
    _sql(run, "UPDATE steps SET record='[1, 2]' WHERE method='dc_rs' AND step=2")
    r = _cli(tmp_path, "report", "-q", "a")
    assert (r.returncode, r.stderr) == (2, "error: a/run.sqlite: the row of dc_rs at step 2 is not a JSON object; the "
                                           "database is damaged\n")


def test_an_incomplete_method_result_is_rebuilt_by_the_resume_the_report_names(tmp_path):
    run = _run(tmp_path, "b")
    before = (run / "dc_rs" / "test.jsonl").read_text()
    _sql(run, "UPDATE method_results SET summary='{}' WHERE method='dc_rs'")
    r = _cli(tmp_path, "report", "-q", "b")
    assert (r.returncode, r.stderr) == (2, "error: b is marked complete but is not: dc_rs: no result (the method never "
                                           "finished); rebuild it with `janus run --resume b`\n")
    r = _cli(tmp_path, "run", "--resume", "b", "-q")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert (run / "dc_rs" / "test.jsonl").read_text() == before
    r = _cli(tmp_path, "report", "-q", "b")
    assert r.returncode == 0, r.stderr
    assert "dc_rs vs dc_rs+janus, GSM8K seed 0, run folder(s) b: n=2" in r.stdout
