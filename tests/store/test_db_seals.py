"""Store format 5: the memory/candidate texts and each method's checkpoint rows are sealed
(runner/chain.py state seals), so an edited, deleted or added row in those tables is named by `janus report` and
refused by `janus run --resume` before anything is rewritten; the chain and seals are required (a folder whose chain
and seal rows are both deleted is damaged, not old); an older folder still reads as it did and is sealed when it is
resumed. Also: `janus report` and `janus run --resume` say the same thing of an unfinished run whose last steps were
deleted, and a kill before run.sqlite is in place is named as a set-up stopped early."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from janus_memory import cli

SRC = str(Path(__file__).resolve().parents[2] / "src")
ARGS = ["--backend", "fake", "--dataset", "mmlu_pro_eng", "--stream-size", "3", "--test-size", "2", "--updater",
        "dc_rs", "--controller", "both", "--encoder", "hashing", "--warmup", "1", "-q"]
RESTORE = "restore run.sqlite from a copy or start a new run"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("seals")
    out = root / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JANUS_CACHE_DIR", str(root / "cache"))
        assert cli.main(["run", *ARGS, "--out", str(out)]) == 0
    return out


@pytest.fixture
def run(finished, tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(finished.parent / "cache"))
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    return out


def _sql(run: Path, *sql: str) -> None:
    con = sqlite3.connect(run / "run.sqlite")
    with con:
        for s in sql:
            con.execute(s)
    con.close()


def _one(run: Path, sql: str):
    con = sqlite3.connect(run / "run.sqlite")
    try:
        return con.execute(sql).fetchone()
    finally:
        con.close()


def _files(run: Path) -> dict:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*"))
            if p.is_file() and p.name != "run.sqlite" and not p.name.startswith(("run.sqlite-", ".janus"))}


def _report(run: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = cli.main(["report", "-q", str(run), "--out", str(run.parent / "rep")])
    return rc, capsys.readouterr().err


def _resume(run: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = cli.main(["run", "--resume", str(run), "-q"])
    return rc, capsys.readouterr().err


def test_a_new_run_is_store_format_5_with_every_seal(finished):
    from janus_memory.store.chain import checkpoint_acc, stored_acc, texts_acc

    assert _one(finished, "SELECT value FROM meta WHERE key='store_format'") == ("5",)
    con = sqlite3.connect(finished / "run.sqlite")
    q = lambda sql, args=(): con.execute(sql, args).fetchall()  # noqa: E731
    try:
        names = sorted(n for (n,) in q("SELECT name FROM state_seals"))
        assert names == ["checkpoint:dc_rs", "checkpoint:dc_rs+janus", "texts"]
        assert stored_acc(q, "texts") == (True, texts_acc(q))
        for m in ("dc_rs", "dc_rs+janus"):
            assert stored_acc(q, f"checkpoint:{m}") == (True, checkpoint_acc(q, m))
        assert q("SELECT COUNT(*) FROM checkpoint_rows WHERE method='dc_rs+janus'")[0][0] > 0  # embeddings as rows
        seal = json.loads(q("SELECT value FROM meta WHERE key='seal:setup'")[0][0])
        assert sorted(seal) == ["config", "environment", "prompts", "splits", "store_format"]
    finally:
        con.close()


TEXT = ("the memory and candidate texts (tables memories, candidates, texts, text_chunks) were changed, "
        "deleted or added after they were committed")
CKPT = ("the saved state (checkpoint rows) of {m} was changed, deleted or added after it was committed (its seal does "
        "not match)")


@pytest.mark.parametrize("sql,says", [
    # a delta's new middle edited (the text still rebuilds, to a text whose sha256 differs)
    ("UPDATE texts SET middle = middle || 'x' WHERE rowid = (SELECT MIN(rowid) FROM texts WHERE middle IS NOT NULL "
     "AND middle <> '')", None),
    ("UPDATE text_chunks SET text = text || 'x' WHERE id = (SELECT MIN(id) FROM text_chunks)", None),
    ("DELETE FROM texts WHERE rowid = (SELECT MAX(rowid) FROM texts)", None),
    ("INSERT INTO text_chunks(sha256, text) VALUES ('0', 'added')", TEXT),
    # the rows that name a text: a parent, a rejection reason, an inline text that does not match its sha256
    ("UPDATE memories SET parent = NULL WHERE method='dc_rs' AND step = (SELECT MAX(step) FROM memories "
     "WHERE method='dc_rs')", TEXT),
    ("UPDATE candidates SET rejected = 'edited' WHERE method='dc_rs+janus' AND step = 2", TEXT),
    ("UPDATE memories SET text = 'edited' WHERE method='dc_rs' AND step = 0", None),
    ("DELETE FROM candidates WHERE method='dc_rs' AND step = 3",  # its sha256 is in the step's chain link too
     "the step row(s) 3 of dc_rs were changed after they were committed (their hash chain does not match)"),
    ("UPDATE checkpoint_ops SET op = replace(op, '1', '2') WHERE method='dc_rs' AND rowid = "
     "(SELECT MAX(rowid) FROM checkpoint_ops WHERE method='dc_rs' AND op LIKE '%1%')", CKPT.format(m="dc_rs")),
    ("DELETE FROM checkpoint_ops WHERE method='dc_rs' AND rowid = (SELECT MAX(rowid) FROM checkpoint_ops "
     "WHERE method='dc_rs')", CKPT.format(m="dc_rs")),
    ("UPDATE checkpoints SET state = state || ' ' WHERE method='dc_rs'", CKPT.format(m="dc_rs")),
    ("UPDATE checkpoint_head SET step = 2 WHERE method='dc_rs'", CKPT.format(m="dc_rs")),
    ("DELETE FROM checkpoint_rows WHERE method='dc_rs+janus' AND idx = 0", CKPT.format(m="dc_rs+janus")),
    ("UPDATE checkpoint_rows SET data = zeroblob(length(data)) WHERE method='dc_rs+janus' AND idx = 1",
     CKPT.format(m="dc_rs+janus")),
    ("DELETE FROM state_seals WHERE name='texts'",
     "the seal of the memory and candidate texts was deleted after they were committed (not sealed)"),
    ("DELETE FROM state_seals WHERE name='checkpoint:dc_rs'",
     "the seal of the saved state (checkpoint rows) of dc_rs was deleted after it was committed (not sealed)"),
    ("UPDATE state_seals SET acc = 'x' WHERE name='checkpoint:dc_rs'", CKPT.format(m="dc_rs")),
])
def test_an_edited_text_or_checkpoint_row_is_named_and_never_repaired_from(run, capsys, sql, says):
    files = _files(run)
    _sql(run, sql)
    rc, err = _report(run, capsys)
    head = f"error: {run} is marked complete but is not: the database itself is damaged: "
    assert rc == 2 and err.count("\n") == 1 and err.startswith(head), err
    assert err.endswith(f"; the files cannot be rebuilt from it: {RESTORE}\n")
    said = err[len(head):].split("; the files cannot")[0].split(" (+")[0]
    if says is None:  # an edited or deleted text is found, and the row that does not read back is named
        assert said.startswith(TEXT + ": the ")
        assert " text of dc_rs" in said and (" does not read back (" in said or said.endswith(" is not stored"))
    else:
        assert said == says
    rc, err = _resume(run, capsys)
    assert rc == 2 and err.count("\n") == 1
    assert err.startswith(f"error: {run}: the database itself is damaged: {said}")
    assert err.endswith(f"; it cannot be continued or repaired: {RESTORE}\n")
    assert _files(run) == files  # nothing rewritten, COMPLETE kept


def test_the_named_text_row_is_the_edited_one(run, capsys):
    row = _one(run, "SELECT t.sha256 FROM texts t JOIN memories m ON m.sha256 = t.sha256 WHERE m.method='dc_rs' "
                    "AND m.step > 0 AND t.middle IS NOT NULL AND t.middle <> '' ORDER BY m.step LIMIT 1")
    step = _one(run, f"SELECT MIN(step) FROM memories WHERE method='dc_rs' AND sha256='{row[0]}'")[0]
    _sql(run, f"UPDATE texts SET middle = middle || 'x' WHERE sha256='{row[0]}'")
    rc, err = _report(run, capsys)
    assert rc == 2
    assert (f"{TEXT}: the memory text of dc_rs at step {step} does not read back (the rebuilt text does not match "
            f"its sha256 {row[0][:12]})") in err


def test_a_folder_whose_chain_and_seals_are_both_deleted_is_damaged_not_old(run, capsys):
    _sql(run, "DELETE FROM chain WHERE method='dc_rs'", "DELETE FROM seals WHERE method='dc_rs'")
    rc, err = _report(run, capsys)
    assert (rc, err) == (2, f"error: {run} is marked complete but is not: the database itself is damaged: the hash "
                            "chain and the seals of dc_rs were deleted (this folder's store format writes them with "
                            f"every step, test and result); the files cannot be rebuilt from it: {RESTORE}\n")
    assert _resume(run, capsys)[0] == 2
    # the store format too: the setup seal names it
    _sql(run, "DELETE FROM meta WHERE key='store_format'")
    rc, err = _report(run, capsys)
    assert rc == 2 and "the stored store_format (in run.sqlite) was changed or deleted after the run was set up" in err


def _as_format_4(run: Path) -> None:
    """What janus-memory wrote before format 5: no state seals, no store_format in the setup seal."""
    con = sqlite3.connect(run / "run.sqlite")
    with con:
        seal = json.loads(con.execute("SELECT value FROM meta WHERE key='seal:setup'").fetchone()[0])
        seal.pop("store_format")
        con.execute("UPDATE meta SET value=? WHERE key='seal:setup'", (json.dumps(seal, sort_keys=True),))
        con.execute("UPDATE meta SET value='4' WHERE key='store_format'")
        con.execute("DROP TABLE state_seals")
    con.close()


def test_a_format_4_folder_reads_as_before_and_is_sealed_when_resumed(run, capsys):
    _as_format_4(run)
    assert _report(run, capsys) == (0, "")
    capsys.readouterr()
    assert cli.main(["report", str(run), "--out", str(run.parent / "rep")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.count(f"note: {run} was written before run databases sealed their memory texts and checkpoint rows "
                     "(store format 4): edited or deleted rows of those are not detected (not checked)") == 1
    # format 4 does not check its texts or checkpoint rows (said in docs/run-folder.md): an edit passes the report
    edited = run.parent / "edited"
    shutil.copytree(run, edited)
    _sql(edited, "UPDATE checkpoint_head SET step = 2 WHERE method='dc_rs'")
    assert _report(edited, capsys) == (0, "")
    # a repair resume of the intact one seals it as it stands: format 5, every seal, then an edit is found
    (run / "dc_rs" / "steps.jsonl").unlink()
    rc, err = _resume(run, capsys)
    assert rc == 0, err
    assert _one(run, "SELECT value FROM meta WHERE key='store_format'") == ("5",)
    assert _report(run, capsys) == (0, "")
    _sql(run, "UPDATE checkpoint_head SET step = 2 WHERE method='dc_rs'")
    rc, err = _report(run, capsys)
    assert rc == 2 and CKPT.format(m="dc_rs") in err


def test_a_chain_deleted_from_a_format_4_folder_still_reads_not_checked(run, capsys):
    _as_format_4(run)
    _sql(run, "DELETE FROM chain", "DELETE FROM seals")
    capsys.readouterr()
    assert cli.main(["report", str(run), "--out", str(run.parent / "rep")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.count(f"note: {run} was written before run databases carried a hash chain (store format < 4): edited "
                     "or deleted rows of dc_rs, dc_rs+janus are not detected (not checked)") == 1


# ------------------------------------------------------------------ an unfinished run: report and resume agree
def _killed_run(tmp: Path, at: str) -> Path:
    out = tmp / "killed"
    env = {**os.environ, "PYTHONPATH": SRC, "JANUS_TEST_KILL_AT": at}
    r = subprocess.run([sys.executable, "-m", "janus_memory.cli", "run", *ARGS, "--out", str(out)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == -9, r.stderr
    return out


@pytest.fixture(scope="module")
def unfinished(finished, tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JANUS_CACHE_DIR", str(finished.parent / "cache"))
        return _killed_run(tmp_path_factory.mktemp("unfinished"), "step_committed:3")


@pytest.mark.parametrize("sql,says", [
    (["DELETE FROM steps WHERE method='dc_rs' AND step>=2"],
     "the database itself is damaged: it lacks step(s) 2-3 of dc_rs: deleted after they were committed; it "
     f"cannot be continued or repaired: {RESTORE}"),
    (["DELETE FROM steps WHERE method='dc_rs' AND step>=2", "DELETE FROM chain WHERE method='dc_rs' "
      "AND step>=2"],
     "the database lacks step(s) 2-3 of dc_rs (rows deleted?); this run cannot be completed from it: "
     f"{RESTORE}"),
])
def test_report_and_resume_say_the_same_of_an_unfinished_run_whose_last_steps_were_deleted(unfinished, tmp_path,
                                                                                           capsys, sql, says,
                                                                                           monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "run"
    shutil.copytree(unfinished, run)
    assert not (run / "COMPLETE").exists()
    assert _one(run, "SELECT step FROM checkpoint_head WHERE method='dc_rs'") == (3,)
    _sql(run, *sql)
    files = _files(run)
    rc, err = _report(run, capsys)
    assert (rc, err) == (2, f"error: no finished run under {run}: {run} (dc_rs: 1/3 steps; dc_rs+janus: 0/3 steps) "
                            f"is unfinished and cannot be continued: {says}\n")
    rc, err = _resume(run, capsys)
    assert (rc, err) == (2, f"error: {run}: {says}\n")
    assert _files(run) == files


def test_an_intact_unfinished_run_is_continued_by_the_command_the_report_names(unfinished, tmp_path, capsys,
                                                                            monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "run"
    shutil.copytree(unfinished, run)
    rc, err = _report(run, capsys)
    assert (rc, err) == (2, f"error: no finished run under {run}: {run} (dc_rs: 3/3 steps; dc_rs+janus: 0/3 steps) "
                            f"is unfinished; continue it with: janus run --resume {run}\n")
    assert _resume(run, capsys)[0] == 0
    assert _report(run, capsys) == (0, "")


def test_report_and_resume_say_the_same_of_a_finished_run_whose_last_step_and_its_link_were_deleted(run, capsys):
    _sql(run, "DELETE FROM steps WHERE method='dc_rs' AND step=3", "DELETE FROM chain WHERE method='dc_rs' AND step=3")
    files = _files(run)
    says = f"the database lacks step(s) 3 of dc_rs (rows deleted?); this run cannot be completed from it: {RESTORE}"
    assert _report(run, capsys) == (2, f"error: {run} is marked complete but is not: {run}: {says} (+2 more)\n")
    assert _resume(run, capsys) == (2, f"error: {run}: {says}\n")
    assert _files(run) == files


# ------------------------------------------------------------------ a kill before run.sqlite is in place
def test_a_kill_while_the_run_is_set_up_is_named_with_its_command(finished, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(finished.parent / "cache"))
    out = _killed_run(tmp_path, "run_started")
    assert sorted(p.name for p in out.iterdir()) == [".janus.lock"]
    rc, err = _resume(out, capsys)
    assert (rc, err) == (2, f"error: {out} holds no run: it was stopped while its run was being set up (before "
                            "run.sqlite was in place); nothing to resume: start it again with the same command\n")
    rc, err = _report(out, capsys)
    assert (rc, err) == (2, f"error: {out} holds no run: it was stopped while its run was being set up (before "
                            "run.sqlite was in place); start it again with the command that made it (without "
                            "--resume)\n")
    assert cli.main(["run", *ARGS, "--out", str(out)]) == 0
    # a folder that holds nothing of janus's is not a run folder
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, err = _resume(empty, capsys)
    assert (rc, err) == (2, f"error: {empty} is not a run folder (no run.sqlite); nothing to resume\n")


def test_an_edited_stored_config_is_named_as_damage_by_resume_as_by_report(unfinished, tmp_path, capsys,
                                                                            monkeypatch):
    """The adversary edited the stored dataset name: the report said the database was damaged, the resume
    said `unknown dataset ...` (it read the config before checking its seal)."""
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "run"
    shutil.copytree(unfinished, run)
    _sql(run, "UPDATE meta SET value=replace(value, '\"mmlu_pro_eng\"', '\"mmlu_pro_enG\"') WHERE key='config'")
    files = _files(run)
    rc, err = _report(run, capsys)
    assert rc == 2 and "is unfinished and cannot be continued: " in err
    says = err.split("is unfinished and cannot be continued: ", 1)[1].strip()
    assert "stored config" in says and "restore run.sqlite from a copy or start a new run" in says
    rc, err = _resume(run, capsys)
    assert (rc, err) == (2, f"error: {run}: {says}\n")
    assert _files(run) == files
