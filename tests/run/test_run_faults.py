"""Run-folder defects, each reproduced (it gave a traceback, a wrong hint or a wrong COMPLETE) and now fixed.

In-process through ``cli.main`` (fast); the real-process tests are in test_run_concurrency.py.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from janus_memory.cli import main

SMALL = ["--backend", "fake", "--dataset", "gsm8k", "--stream-size", "6", "--test-size", "2", "--encoder", "hashing",
         "--warmup", "2", "--coverage-size", "1", "--boundary-size", "1", "--fresh-size", "1", "--quiet",
         "--updater", "dc_rs", "--controller", "janus"]
M = "dc_rs+janus"
EXPORTS = ("decisions.jsonl", "steps.jsonl", "test.jsonl", "final_memory.txt")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


def _one_error(capsys, rc: int) -> str:
    """The one error line (`janus report` may first name the stage it was in: "report [   0.0 s]: reading ...")."""
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip() and not x.startswith("report [")]
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def _exports(out: Path) -> dict:
    files = {f"{M}/{f}": (out / M / f).read_bytes() for f in EXPORTS}
    for p in sorted((out / M / "memories").iterdir()):
        files[f"{M}/memories/{p.name}"] = p.read_bytes()
    return files


@pytest.fixture
def ref(tmp_path):
    out = tmp_path / "ref"
    assert main(["run", *SMALL, "--out", str(out)]) == 0
    return out


def _copy_unfinished(ref: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(ref, dst)
    (dst / "COMPLETE").unlink()
    return dst


# ------------------------------------------------------------------ item 5: one line, naming file and line
def _data(tmp_path, name: str, text: bytes) -> Path:
    d = tmp_path / name
    (d / "gsm8k").mkdir(parents=True)
    (d / "gsm8k" / "test.jsonl").write_bytes(text)
    return d


@pytest.mark.parametrize("text,expect", [
    (b'{"question": "q", "answer": "#### 1"}\n{"question": "q2"}\n', r"test.jsonl:2: the record has no 'answer' field"),
    (b'[1, 2]\n', r"test.jsonl:1: expected a JSON object per line, got list"),
    (b'{"question": \n', r"test.jsonl:1: not valid JSON"),
    (b'{"question": "\xff"}\n', r"test.jsonl: not UTF-8 text"),
    (b'', r"the stream split of gsm8k has no tasks"),
])
def test_bad_data_file_is_one_line_and_leaves_no_run(tmp_path, capsys, text, expect):
    import re

    out = tmp_path / "run"
    line = _one_error(capsys, main(["run", *SMALL, "--data-dir", str(_data(tmp_path, "d", text)), "--out", str(out)]))
    assert re.search(expect, line), line
    assert not (out / "run.sqlite").exists() and not (out / "COMPLETE").exists()


@pytest.mark.parametrize("yaml_text,extra,expect", [
    (b"updater: \"\xff\xfe\"\n", [], "is not UTF-8 text"),
    (b"updater_config:\n  exec_timeout_s: many\n", [],
     "invalid value for 'updater_config.exec_timeout_s': expected float, got 'many'"),
    (b"updater_config:\n  execute_code: 1\n", [], "invalid value for 'updater_config.execute_code': expected bool, got 1"),
    (b"updater_config:\n  no_such_key: 1\n", [], "unknown config key 'updater_config.no_such_key' for updater dc_rs"),
    (b"seed: 0\n", ["--temperature", "5"], "temperature must be in \\[0, 2\\], got 5.0"),
])
def test_bad_settings_are_one_line_and_leave_no_resumable_folder(tmp_path, capsys, yaml_text, extra, expect):
    import re

    cfg = tmp_path / "c.yaml"
    cfg.write_bytes(yaml_text)
    out = tmp_path / "run"
    line = _one_error(capsys, main(["run", *SMALL, "--config", str(cfg), *extra, "--out", str(out)]))
    assert re.search(expect, line), line
    assert "--resume" not in line
    assert not (out / "run.sqlite").exists()  # before: a folder that looked resumable but could never finish


def test_cache_dir_that_is_a_file_blames_the_cache_not_the_run(tmp_path, capsys):
    f = tmp_path / "cachefile"
    f.write_text("x")
    line = _one_error(capsys, main(["run", *SMALL, "--cache-dir", str(f), "--out", str(tmp_path / "run")]))
    assert "cache folder" in line and "--cache-dir" in line and "--out" not in line and "--resume" not in line


@pytest.mark.parametrize("damage,expect", [
    (lambda p: p.write_bytes(p.read_bytes()[:4096]), "is not a readable run database"),
    (lambda p: p.write_bytes(b"not a database at all" * 100), "is not a readable run database"),
])
def test_damaged_database_on_resume_and_memory_diff(tmp_path, capsys, ref, damage, expect):
    bad = _copy_unfinished(ref, tmp_path / "bad")
    for extra in ("-wal", "-shm"):
        (bad / f"run.sqlite{extra}").unlink(missing_ok=True)
    damage(bad / "run.sqlite")
    assert expect in _one_error(capsys, main(["run", "--resume", str(bad)]))
    assert expect in _one_error(capsys, main(["memory", "diff", str(bad), "1", "2"]))


def _edit_db(folder: Path, *sql: tuple) -> None:
    db = sqlite3.connect(folder / "run.sqlite")
    for q in sql:
        db.execute(*q)
    db.commit()
    db.close()


def test_stored_config_from_a_newer_version(tmp_path, capsys, ref):
    bad = _copy_unfinished(ref, tmp_path / "bad")
    cfg = json.loads(sqlite3.connect(bad / "run.sqlite").execute("SELECT value FROM meta WHERE key='config'").fetchone()[0])
    _edit_db(bad, ("UPDATE meta SET value=? WHERE key='config'", (json.dumps({**cfg, "future_knob": 1}),)))
    _edit_db(bad, ("DELETE FROM meta WHERE key='seal:setup'",))  # (a newer version's seal would match its config)
    line = _one_error(capsys, main(["run", "--resume", str(bad)]))
    assert "unknown config key 'future_knob'" in line and "janus-memory 0.1.0" in line


def test_garbage_checkpoint(tmp_path, capsys, ref):
    bad = _copy_unfinished(ref, tmp_path / "bad")
    _edit_db(bad, ("DELETE FROM method_results",), ("DELETE FROM checkpoint_ops",),
             ("UPDATE checkpoints SET state=?", (json.dumps({"updater": [1], "janus": "x", "counters": 3}),)))
    line = _one_error(capsys, main(["run", "--resume", str(bad)]))  # store format 5: the checkpoint's seal finds it
    assert (f"the database itself is damaged: the saved state (checkpoint rows) of {M} was changed, deleted or added "
            "after it was committed (its seal does not match)") in line
    from janus_memory.store import chain

    con = sqlite3.connect(bad / "run.sqlite")  # the seal recomputed too (a forger's edit): the resume's probe finds it
    q = lambda sql, args=(): con.execute(sql, args).fetchall()  # noqa: E731
    for (m,) in q("SELECT method FROM checkpoints"):
        con.execute("UPDATE state_seals SET acc=? WHERE name=?", (chain.acc_hex(chain.checkpoint_acc(q, m)),
                                                                  chain.ckpt_seal_name(m)))
    con.commit()
    con.close()
    line = _one_error(capsys, main(["run", "--resume", str(bad)]))
    assert f"the checkpoint of {M} at step 6 is damaged" in line


# ------------------------------------------------------------------ item 4: disk full inside a step's commit
def test_disk_full_inside_the_commit_keeps_every_committed_step(tmp_path, capsys, ref, monkeypatch):
    from janus_memory.store import store as store_mod

    real_init = store_mod.RunStore.__init__

    class FullDisk:
        """The connection, except that the 4th step's COMMIT fails the way SQLite does on a full disk: the
        transaction is already rolled back when the error arrives (a second ROLLBACK raised "no transaction")."""

        def __init__(self, db):
            self._db, self.step = db, None

        def execute(self, sql, *a):
            if sql.startswith("INSERT OR REPLACE INTO steps"):
                self.step = a[0][1]
            if sql == "COMMIT" and self.step == 4:
                self._db.execute("ROLLBACK")
                raise sqlite3.OperationalError("database or disk is full")
            return self._db.execute(sql, *a)

        def __getattr__(self, name):
            return getattr(self._db, name)

    def init(self, root):
        real_init(self, root)
        self.db = FullDisk(self.db)

    monkeypatch.setattr(store_mod.RunStore, "__init__", init)
    out = tmp_path / "full"
    line = _one_error(capsys, main(["run", *SMALL, "--out", str(out)]))
    assert "database or disk is full" in line and f"--resume {out}" in line and "Traceback" not in line
    steps = [s for (s,) in sqlite3.connect(out / "run.sqlite").execute("SELECT step FROM steps ORDER BY step")]
    assert steps == [1, 2, 3]  # the three committed steps are there; the failed one is absent
    monkeypatch.setattr(store_mod.RunStore, "__init__", real_init)
    assert main(["run", "--resume", str(out), "--quiet"]) == 0
    assert _exports(out) == _exports(ref)


# ------------------------------------------------------------------ item 8: hints
def test_full_disk_on_resume_says_resume_not_out(tmp_path, capsys, ref, monkeypatch):
    import errno

    bad = _copy_unfinished(ref, tmp_path / "bad")
    real = Path.write_text

    def write_text(self, *a, **kw):
        if self.name == ".write-probe":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *a, **kw)

    monkeypatch.setattr(Path, "write_text", write_text)
    line = _one_error(capsys, main(["run", "--resume", str(bad)]))
    assert "No space left on device" in line and f"--resume {bad}" in line and "--out" not in line


def test_interrupt_before_the_config_is_stored_does_not_say_resume(tmp_path, capsys, monkeypatch):
    from janus_memory.run import experiment

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(experiment, "build_context", interrupted)
    out = tmp_path / "run"
    assert main(["run", *SMALL, "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert "--resume" not in err and "nothing to resume" in err
    assert main(["run", *SMALL, "--out", str(out)]) == 130  # the folder is still usable as a new run's --out
    assert "already holds" not in capsys.readouterr().err


# ------------------------------------------------------------------ items 6, 7: COMPLETE means complete
def test_deleted_memories_refused_by_report_and_rebuilt_by_resume(tmp_path, capsys, ref):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(ref, bad)
    want = _exports(ref)
    shutil.rmtree(bad / M / "memories")
    (bad / M / "decisions.jsonl").write_text("")
    line = _one_error(capsys, main(["report", str(bad)]))
    assert "is marked complete but is not" in line and f"--resume {bad}" in line
    assert main(["run", "--resume", str(bad), "--quiet"]) == 0
    assert _exports(bad) == want and (bad / "COMPLETE").exists()
    assert main(["report", str(bad)]) == 0
    capsys.readouterr()
    assert _one_error(capsys, main(["run", "--resume", str(bad)])).endswith("holds a finished run; nothing to resume")


def test_resume_of_a_finished_run_is_refused_before_the_header(tmp_path, capsys, ref):
    """The run is whole and marked COMPLETE: one error line on stderr, nothing on stdout (no preset header, no
    'run folder:' line), exit 2, and the folder is left as it was."""
    capsys.readouterr()
    def files():  # SQLite's -wal/-shm side files come and go with any reader
        return sorted(p.name for p in ref.iterdir() if not p.name.endswith(("-wal", "-shm")))

    before = files()
    rc = main(["run", "--resume", str(ref)])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err == f"error: {ref} holds a finished run; nothing to resume\n"
    assert files() == before and "COMPLETE" in before


def test_deleted_step_rows_are_detected(tmp_path, capsys, ref):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(ref, bad)
    _edit_db(bad, ("DELETE FROM steps WHERE step IN (2, 3)",))
    line = _one_error(capsys, main(["report", str(bad)]))
    assert f"lacks step(s) 2-3 of {M}" in line
    (bad / "COMPLETE").unlink()
    assert f"lacks step(s) 2-3 of {M}" in _one_error(capsys, main(["run", "--resume", str(bad)]))


def test_edited_config_json_is_refused_on_resume(tmp_path, capsys, ref):
    bad = _copy_unfinished(ref, tmp_path / "bad")
    cfg = json.loads((bad / "config.json").read_text())
    (bad / "config.json").write_text(json.dumps({**cfg, "seed": 7}))
    line = _one_error(capsys, main(["run", "--resume", str(bad)]))
    assert "config.json was edited after the run started (seed: 0 -> 7)" in line
    (bad / "config.json").unlink()  # the documented way on: the stored config counts
    assert main(["run", "--resume", str(bad), "--quiet"]) == 0
    assert json.loads((bad / "config.json").read_text()) == cfg
