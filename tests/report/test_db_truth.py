"""The database is the truth: `janus report` takes its numbers from run.sqlite and checks the exported
files against it; the database's hash chain (runner/chain.py) names an edited or deleted row; a repair never copies
a damaged database over intact files; a 0-byte database and a store format from the future are one line; a folder
without a chain still reads ("not checked", once). Also: --resume D --out E is refused, --overwrite removes report/."""
from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from janus_memory import cli

ARGS = ["--backend", "fake", "--dataset", "mmlu_pro_eng", "--stream-size", "3", "--test-size", "2", "--updater",
        "dc_rs", "--controller", "none", "--encoder", "hashing", "-q"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("truth")
    out = root / "run"
    # the generator wording these rows were pinned with (a wrong test answer among the two; the scripted backend's
    # verdicts hash the prompt)
    (root / "bare.yaml").write_text("updater_config:\n  letter_format: bare\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JANUS_CACHE_DIR", str(root / "cache"))
        assert cli.main(["run", *ARGS, "--config", str(root / "bare.yaml"), "--out", str(out)]) == 0
    return out


@pytest.fixture
def run(finished, tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    return out


def _sql(run, sql: str) -> None:
    con = sqlite3.connect(run / "run.sqlite")
    with con:
        con.execute(sql)
    con.close()


def _report(run, capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = cli.main(["report", "-q", str(run), "--out", str(run.parent / "rep")])
    return rc, capsys.readouterr().err


def _exports(run) -> dict:
    return {p.name: p.read_bytes() for p in sorted((run / "dc_rs").iterdir()) if p.is_file()}


def test_an_intact_run_reports_and_its_numbers_come_from_the_database(run, capsys):
    rc, err = _report(run, capsys)
    assert (rc, err) == (0, "")
    data = json.loads((run / "summary.json").read_text())
    assert data["methods"]["dc_rs"]["test_tasks"] == 2


def test_an_edited_summary_json_is_named_and_the_repair_restores_it(run, capsys):
    before = (run / "summary.json").read_text()
    data = json.loads(before)
    data["methods"]["dc_rs"]["test_accuracy"] = 1.0
    (run / "summary.json").write_text(json.dumps(data))
    rc, err = _report(run, capsys)
    assert rc == 2
    assert err == (f"error: {run} is marked complete but is not: summary.json differs from the database; rebuild it "
                   f"with `janus run --resume {run}`\n")
    assert cli.main(["run", "--resume", str(run), "-q"]) == 0
    capsys.readouterr()
    assert json.loads((run / "summary.json").read_text())["methods"]["dc_rs"]["test_accuracy"] == \
        json.loads(before)["methods"]["dc_rs"]["test_accuracy"]
    assert _report(run, capsys)[0] == 0


@pytest.mark.parametrize("sql,says", [
    ("DELETE FROM tests WHERE method='dc_rs'",
     "the database itself is damaged: the held-out test rows of dc_rs were changed, deleted or added after they were "
     "committed (0 rows now)"),
    ("UPDATE steps SET decision=replace(decision, '\"step\": 2', '\"step\": 2, \"x\": 1') WHERE method='dc_rs' AND step=2",
     "the database itself is damaged: the step row(s) 2 of dc_rs were changed after they were committed (their hash "
     "chain does not match)"),
    ("DELETE FROM steps WHERE method='dc_rs' AND step=3",
     "the database itself is damaged: it lacks step(s) 3 of dc_rs: deleted after they were committed"),
    ("UPDATE method_results SET summary=replace(summary, '\"test_correct\": ', '\"test_correct\": 1') "
     "WHERE method='dc_rs'",
     "the database itself is damaged: the stored result of dc_rs was changed or deleted after it was committed"),
])
def test_a_damaged_database_is_named_and_never_copied_over_the_files(run, capsys, sql, says):
    files = _exports(run)
    _sql(run, sql)
    rc, err = _report(run, capsys)
    assert rc == 2 and err.count("\n") == 1
    assert err.startswith(f"error: {run} is marked complete but is not: {says}")
    assert err.endswith("; the files cannot be rebuilt from it: restore run.sqlite from a copy or start a new run\n")
    assert cli.main(["run", "--resume", str(run), "-q"]) == 2  # the repair is refused before anything changes
    err = capsys.readouterr().err
    assert err.startswith(f"error: {run}: {says}") and err.count("\n") == 1
    assert "it cannot be continued or repaired: restore run.sqlite from a copy or start a new run" in err
    assert (run / "COMPLETE").exists()
    assert _exports(run) == files


def test_a_zero_byte_database_and_a_future_store_format_are_one_line(run, tmp_path, capsys):
    other = tmp_path / "other"
    shutil.copytree(run, other)
    _sql(other, "UPDATE meta SET value='99' WHERE key='store_format'")
    rc, err = _report(other, capsys)
    assert (rc, err) == (2, f"error: {other}/run.sqlite has store format 99; this janus-memory reads formats 1-5: read "
                            "it with the version that wrote it\n")
    (run / "run.sqlite").write_bytes(b"")
    rc, err = _report(run, capsys)
    assert (rc, err) == (2, f"error: {run}/run.sqlite is empty (0 bytes): the run database was truncated or "
                            "replaced; restore it from a copy or start a new run\n")


def test_a_folder_without_a_chain_reads_and_is_said_not_checked_once(run, capsys):
    """A folder from before format 4 (no chain, no seals, no state seals; the format 5 case: tests/store/test_db_seals.py)."""
    _sql(run, "DELETE FROM chain")
    _sql(run, "DELETE FROM seals")
    _sql(run, "DROP TABLE state_seals")
    _sql(run, "DELETE FROM meta WHERE key IN ('seal:setup', 'store_format')")
    capsys.readouterr()
    assert cli.main(["report", str(run), "--out", str(run.parent / "rep")]) == 0
    out = capsys.readouterr().out
    note = (f"note: {run} was written before run databases carried a hash chain (store format < 4): edited or "
            "deleted rows of dc_rs are not detected (not checked)")
    assert out.replace("\n", " ").count(note) == 1


def test_resume_with_another_out_is_refused_and_overwrite_removes_the_old_report(run, tmp_path, capsys):
    other = tmp_path / "elsewhere"
    assert cli.main(["run", "--resume", str(run), "--out", str(other), "-q"]) == 2
    assert capsys.readouterr().err == (f"error: --resume continues the run in its own folder {run}; --out {other} "
                                       "names another: leave --out out (to continue elsewhere, copy the folder and "
                                       "resume the copy)\n")
    assert not other.exists()
    assert cli.main(["report", "-q", str(run)]) == 0
    assert (run / "report" / "report.md").exists()
    (run / "notes.txt").write_text("mine")
    assert cli.main(["run", *ARGS, "--out", str(run), "--overwrite"]) == 0
    assert not (run / "report").exists()
    assert (run / "notes.txt").read_text() == "mine"
    assert not (run / ".janus-overwritten").exists()


def test_a_resumed_run_says_what_calls_paid_leaves_out(finished):
    from rich.console import Console

    from janus_memory.report.summary_table import RESUMED_NOTE, print_summary

    summary = json.loads((finished / "summary.json").read_text())
    assert "resumed" not in summary  # an uninterrupted run: no note
    for resumed, shown in ((False, False), (True, True)):
        console = Console(record=True, width=400, force_terminal=False)
        print_summary({**summary, "resumed": resumed}, console)
        text = " ".join(console.export_text().split())
        assert ("resumed run: calls an interrupted attempt paid for steps it never committed came back from the "
                "response cache and count as cache hits, not as paid (the cache hits also hold any answers the shared "
                "cache had from other runs with the same requests)" in text) is shown
    assert RESUMED_NOTE.startswith("; resumed run:")
    # without a response cache the interrupted attempt's calls came back from nowhere: said so
    console = Console(record=True, width=400, force_terminal=False)
    print_summary({**summary, "resumed": "no_cache"}, console)
    text = " ".join(console.export_text().split())
    assert ("resumed run without a response cache: what an interrupted attempt paid for steps it never committed was "
            "paid again and is not counted here") in text and "came back from the response cache" not in text




@pytest.mark.parametrize("seal_sql,forge,says", [
    ("DELETE FROM seals WHERE method='dc_rs'", True,
     "the seal of the held-out test rows of dc_rs was deleted or emptied after they were committed (2 rows now, not "
     "sealed) (+3 more)"),
    ("UPDATE seals SET tests=NULL, result=NULL WHERE method='dc_rs'", True,
     "the seal of the held-out test rows of dc_rs was deleted or emptied after they were committed (2 rows now, not "
     "sealed) (+3 more)"),
    ("UPDATE seals SET result=NULL WHERE method='dc_rs'", False,
     "the seal of the stored result of dc_rs was deleted or emptied after it was committed (not sealed) (+1 more)"),
    ("UPDATE meta SET value=replace(value, '\"test_tasks\": 2', '\"test_tasks\": 3') WHERE key='summary'", False,
     "its stored summary of dc_rs differs from the method's stored result (+1 more)"),
    ("UPDATE meta SET value=replace(value, '\"seed\": 0', '\"seed\": 1') WHERE key='config'", False,
     "the stored config (in run.sqlite) was changed or deleted after the run was set up (its seal does not match) "
     "(+2 more)"),
])
def test_a_deleted_or_emptied_seal_or_an_edited_stored_summary_or_config_is_damage(run, capsys, seal_sql, forge, says):
    """A seal deleted or set to NULL (with the test rows it sealed forged), an edited stored summary or config: the
    report says restore, the resume refuses before it writes, and no forged row reaches test.jsonl."""
    files, summary = _exports(run), (run / "summary.json").read_bytes()
    assert b'"correct": false' in files["test.jsonl"]
    _sql(run, seal_sql)
    if forge:  # every test row passed, and the result says so
        _sql(run, "UPDATE tests SET record=replace(record, '\"correct\": false', '\"correct\": true') "
                  "WHERE method='dc_rs'")
    if forge or "result=NULL" in seal_sql:
        _sql(run, "UPDATE method_results SET summary=replace(summary, '\"test_correct\": 1', '\"test_correct\": 2') "
                  "WHERE method='dc_rs'")
    rc, err = _report(run, capsys)
    head = f"error: {run} is marked complete but is not: the database itself is damaged: "
    assert (rc, err) == (2, f"{head}{says}; the files cannot be rebuilt from it: restore run.sqlite from a copy or "
                            "start a new run\n")
    assert cli.main(["run", "--resume", str(run), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {run}: the database itself is damaged: {says.split(' (+')[0]}")
    assert err.count("\n") == 1
    assert err.endswith("; it cannot be continued or repaired: restore run.sqlite from a copy or start a new run\n")
    assert (run / "COMPLETE").exists()
    assert _exports(run) == files and (run / "summary.json").read_bytes() == summary


def test_a_config_edited_without_its_seal_gives_the_full_differing_hash(run, capsys):
    """A folder without the setup seal (set up before it, or the seal deleted): the stored config is not checked;
    the resume first names config.json, which no longer holds the stored config; once it is deleted (the fix
    named), the split check names the hash that differs, in full."""
    _sql(run, "DELETE FROM meta WHERE key='seal:setup'")
    _sql(run, "UPDATE meta SET value=replace(value, '\"seed\": 0', '\"seed\": 1') WHERE key='config'")
    capsys.readouterr()
    assert cli.main(["run", "--resume", str(run), "-q"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {run}/config.json was edited after the run started "
                                              "(janus.seed: 1 -> 0; seed: 1 -> 0); the run's config is the one "
                                              "stored in run.sqlite")
    (run / "config.json").unlink()
    assert cli.main(["run", "--resume", str(run), "-q"]) == 2
    err = capsys.readouterr().err
    stored = json.loads((run / "splits.json").read_text())["stream"]["ids_sha256"]
    assert err.startswith("error: cannot resume: dataset hash mismatch for the stream split of mmlu_pro_eng "
                          f"(ids_sha256: stored {stored}, now ")
    assert err.endswith("); the split holds other task ids (the data files or the stored seed or split settings "
                        "changed since the run started)\n")
    now = err.split(", now ")[1].split(")")[0]
    assert len(now) == 64 and now != stored
