"""Every message about a damaged run folder names a fix that works: one table of (damage, the exact line `janus
report` prints). For each row the damage is done to a copy of a finished run, the report's line is checked word for
word, `janus run --resume` gives the same reason when it refuses (and changes nothing then), and the fix the line
names is applied as the line says it (read from the line itself: a line naming no known fix fails the test) until
the report passes, with the numbers of the intact run.

Files checked against the database and the fix each takes: docs/run-folder.md, store/records.py."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from janus_memory import cli

ARGS = ["--backend", "fake", "--dataset", "gsm8k", "--stream-size", "3", "--test-size", "2", "--encoder", "hashing",
        "--controller", "both", "-q"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("fixes")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JANUS_CACHE_DIR", str(root / "cache"))
        assert cli.main(["run", *ARGS, "--out", str(root / "run")]) == 0
        assert cli.main(["run", *ARGS, "--seed", "1", "--out", str(root / "other")]) == 0
    return root


def _sql(run: Path, sql: str) -> None:
    con = sqlite3.connect(run / "run.sqlite")
    with con:
        con.execute(sql)
    con.close()


def _edit_json(path: Path, fn) -> None:
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def _state(run: Path) -> dict:
    """Every file of the folder, its bytes (what a refused resume must leave as it was)."""
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()
            and not p.name.startswith("run.sqlite-")}


def _numbers(run: Path) -> dict:
    return {m: (r["test_accuracy"], r["final_memory_sha256"])
            for m, r in json.loads((run / "summary.json").read_text())["methods"].items()}


FIX_RESUME = "rebuild it with `janus run --resume {run}`"
RESTORE = "the files cannot be rebuilt from it: restore run.sqlite from a copy or start a new run"
CONFIG_EDIT = ("{run}/config.json was edited after the run started (janus.tau: 0.0 -> 0.5); the run's config is the one "
               "stored in run.sqlite: delete config.json and run `janus run --resume {run}` (it writes the file back "
               "from run.sqlite), or start a new run with --config")

MISPLACED = ("{path} is {kind}, not the {what} the run writes there: move it out of the folder, then run `janus run "
             "--resume {{run}}` (it writes the {what} again)")

CASES = {  # name: (damage, the report's line after "error: ")
    "splits.json edited": (lambda r, o: _edit_json(r / "splits.json", lambda d: d["stream"].update(ids=[])),
                           "{run} is marked complete but is not: splits.json differs from the database; " + FIX_RESUME),
    "splits.json deleted": (lambda r, o: (r / "splits.json").unlink(),
                            "{run} is marked complete but is not: splits.json is missing; " + FIX_RESUME),
    "environment.json edited": (lambda r, o: _edit_json(r / "environment.json", lambda d: d.update(python="2.7")),
                                "{run} is marked complete but is not: environment.json differs from the database; "
                                + FIX_RESUME),
    "environment.json deleted": (lambda r, o: (r / "environment.json").unlink(),
                                 "{run} is marked complete but is not: environment.json is missing; " + FIX_RESUME),
    "config.yaml edited": (lambda r, o: (r / "config.yaml").write_text(
        (r / "config.yaml").read_text().replace("seed: 0", "seed: 5")),
        "{run} is marked complete but is not: config.yaml differs from the database; " + FIX_RESUME),
    "config.yaml deleted": (lambda r, o: (r / "config.yaml").unlink(),
                            "{run} is marked complete but is not: config.yaml is missing; " + FIX_RESUME),
    "a prompt edited": (lambda r, o: (r / "prompts" / "task_math.txt").write_text("Answer 42.\n"),
                        "{run} is marked complete but is not: prompts/task_math.txt differs from the database; "
                        + FIX_RESUME),
    "a prompt deleted": (lambda r, o: (r / "prompts" / "task_math.txt").unlink(),
                         "{run} is marked complete but is not: prompts/task_math.txt is missing; " + FIX_RESUME),
    "a file added to prompts/": (lambda r, o: (r / "prompts" / "mine.txt").write_text("x"),
                                 "{run} is marked complete but is not: prompts/mine.txt is not one of the run's "
                                 "prompts; " + FIX_RESUME),
    "a memory version added": (lambda r, o: shutil.copy(next((r / "dc_rs" / "memories").iterdir()),
                                                        r / "dc_rs" / "memories" / "00002_0123456789ab.txt"),
                               "{run} is marked complete but is not: dc_rs/memories/00002_0123456789ab.txt is not a "
                               "memory version of the database; " + FIX_RESUME),
    "final_memory.txt with CRLF": (lambda r, o: (r / "dc_rs" / "final_memory.txt").write_bytes(
        (r / "dc_rs" / "final_memory.txt").read_bytes().replace(b"\n", b"\r\n")),
        "{run} is marked complete but is not: dc_rs/final_memory.txt does not match the result's sha256; "
        + FIX_RESUME),
    "decisions.jsonl edited": (lambda r, o: (r / "dc_rs" / "decisions.jsonl").write_text("{}\n"),
                               "{run} is marked complete but is not: dc_rs/decisions.jsonl differs from the database; "
                               + FIX_RESUME),
    "summary.json edited": (lambda r, o: _edit_json(r / "summary.json",
                                                    lambda d: d["methods"]["dc_rs"].update(test_accuracy=0.123)),
                            "{run} is marked complete but is not: summary.json differs from the database; "
                            + FIX_RESUME),
    "summary.json deleted": (lambda r, o: (r / "summary.json").unlink(),
                             "{run} is marked complete but is not: summary.json is missing; " + FIX_RESUME),
    "config.json edited": (lambda r, o: _edit_json(r / "config.json", lambda d: d["janus"].update(tau=0.5)),
                           "{run} is marked complete but is not: " + CONFIG_EDIT),
    "config.json deleted": (lambda r, o: (r / "config.json").unlink(),
                            "{run} is marked complete but is not: config.json is missing; " + FIX_RESUME),
    "COMPLETE deleted": (lambda r, o: (r / "COMPLETE").unlink(),
                         "no finished run under {run}: {run} (dc_rs: 3/3 steps, tested; dc_rs+janus: 3/3 steps, "
                         "tested) is unfinished; continue it with: janus run --resume {run}"),
    "config.json edited in an unfinished run": (
        lambda r, o: ((r / "COMPLETE").unlink(), _edit_json(r / "config.json", lambda d: d["janus"].update(tau=0.5))),
        "no finished run under {run}: {run} (dc_rs: 3/3 steps, tested; dc_rs+janus: 3/3 steps, tested) is unfinished "
        "and cannot be continued: " + CONFIG_EDIT),
    "summary.json a folder": (lambda r, o: ((r / "summary.json").unlink(), (r / "summary.json").mkdir()),
                              "{run} is marked complete but is not: " + MISPLACED.format(path="{run}/summary.json",
                                                                                          kind="a folder",
                                                                                          what="file")),
    "splits.json a FIFO": (lambda r, o: ((r / "splits.json").unlink(), os.mkfifo(r / "splits.json")),
                           "{run} is marked complete but is not: " + MISPLACED.format(path="{run}/splits.json",
                                                                                       kind="a FIFO", what="file")),
    "memories/ a file": (lambda r, o: (shutil.rmtree(r / "dc_rs" / "memories"),
                                       (r / "dc_rs" / "memories").write_text("x")),
                         "{run} is marked complete but is not: " + MISPLACED.format(path="{run}/dc_rs/memories",
                                                                                     kind="a file", what="folder")),
    "a step row edited": (lambda r, o: _sql(r, "UPDATE steps SET record=replace(record, '\"step\": 2', "
                                               "'\"step\": 2, \"x\": 1') WHERE method='dc_rs' AND step=2"),
                          "{run} is marked complete but is not: the database itself is damaged: the step row(s) 2 of "
                          "dc_rs were changed after they were committed (their hash chain does not match) (+1 more); "
                          + RESTORE),
    "the stored summary deleted, summary.json forged": (
        lambda r, o: (_sql(r, "DELETE FROM meta WHERE key='summary'"),
                      _edit_json(r / "summary.json", lambda d: d["methods"]["dc_rs"].update(test_accuracy=0.123))),
        "{run} is marked complete but is not: summary.json differs from the database (its numbers of dc_rs are not "
        "the stored result's); " + FIX_RESUME),
    "run.sqlite deleted": (lambda r, o: [p.unlink() for p in r.glob("run.sqlite*")],
                           "{run} has no run.sqlite: its numbers cannot be checked (summary.json and the other files "
                           "are exports of the run's database, and an edited one would be reported as it is); copy "
                           "the run's run.sqlite back into it"),
    "another run's run.sqlite": (lambda r, o: shutil.copy(o / "run.sqlite", r / "run.sqlite"),
                                 "{run} is marked complete but is not: {run}/config.json was edited after the run "
                                 "started (out: '{other}' -> '{orig}'; seed: 1 -> 0); the run's config is the one "
                                 "stored in run.sqlite: delete "
                                 "config.json and run `janus run --resume {run}` (it writes the file back from "
                                 "run.sqlite), or start a new run with --config"),
}


def _apply_fix(line: str, run: Path, original: Path) -> None:
    """Do what the line says (the fix is read from the line, not from the table)."""
    if f"move it out of the folder, then run `janus run --resume {run}`" in line:
        path = Path(line.split(" is marked complete but is not: ")[-1].split(" is ", 1)[0])
        os.rename(path, run.parent / "moved-away")
        assert cli.main(["run", "--resume", str(run), "-q"]) == 0
    elif f"delete config.json and run `janus run --resume {run}`" in line:
        (run / "config.json").unlink()
        assert cli.main(["run", "--resume", str(run), "-q"]) == 0
    elif line.endswith(f"rebuild it with `janus run --resume {run}`") or \
            line.endswith(f"continue it with: janus run --resume {run}"):
        assert cli.main(["run", "--resume", str(run), "-q"]) == 0
    elif line.endswith("restore run.sqlite from a copy or start a new run") or \
            line.endswith("copy the run's run.sqlite back into it"):
        for p in run.glob("run.sqlite*"):
            p.unlink()
        shutil.copy(original / "run.sqlite", run / "run.sqlite")
    else:
        pytest.fail(f"the line names no fix this test knows: {line}")


def _report(run: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = cli.main(["report", "-q", str(run), "--out", str(run.parent / "rep")])
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("name", list(CASES))
def test_each_messages_fix_works(finished, tmp_path, capsys, monkeypatch, name):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(finished / "cache"))
    damage, says = CASES[name]
    run = tmp_path / "run"
    shutil.copytree(finished / "run", run)
    want = _numbers(run)
    damage(run, finished / "other")
    rc, err = _report(run, capsys)
    line = says.format(run=run, other=finished / "other", orig=finished / "run")
    assert (rc, err) == (2, f"error: {line}\n")
    if "janus run --resume" not in line.split(";")[-1] or "delete config.json" in line:
        # the fix is not the resume: the resume refuses with the same reason, and changes nothing
        before = _state(run)
        assert cli.main(["run", "--resume", str(run), "-q"]) == 2
        err = capsys.readouterr().err
        reason = line.split(" is marked complete but is not: ", 1)[-1].split("; the files cannot be rebuilt", 1)[0]
        reason = reason.split(" is unfinished and cannot be continued: ", 1)[-1]
        if "has no run.sqlite" in line:
            assert err == f"error: {run} is not a run folder (no run.sqlite); nothing to resume\n"
        elif "the database itself is damaged" in line:
            first = reason.split(": ", 1)[1].split(" (+")[0]  # (the report counts the differing files too)
            assert err.startswith(f"error: {run}: the database itself is damaged: {first}")
            assert err.endswith("it cannot be continued or repaired: restore run.sqlite from a copy or start a new run\n")
        else:
            assert err == f"error: {reason}\n"
        assert _state(run) == before  # COMPLETE included
    for _ in range(3):  # a fix may reveal the next problem (config.json deleted: then it is missing): each fix works
        _apply_fix(line, run, finished / "run")
        rc, err = _report(run, capsys)
        if rc == 0:
            break
        line = err.removeprefix("error: ").rstrip("\n")
    assert (rc, err) == (0, ""), name
    expect = _numbers(finished / "other") if "another run" in name else want
    assert _numbers(run) == expect


def test_a_refused_resume_keeps_complete_and_every_file(finished, tmp_path, capsys, monkeypatch):
    """The issue's case: janus.tau edited in config.json of a finished run. Before, the resume refused after it had
    removed COMPLETE, and the report then sent the user back to the same refusal."""
    monkeypatch.setenv("JANUS_CACHE_DIR", str(finished / "cache"))
    run = tmp_path / "run"
    shutil.copytree(finished / "run", run)
    _edit_json(run / "config.json", lambda d: d["janus"].update(tau=0.5))
    before = _state(run)
    for _ in range(2):
        assert cli.main(["run", "--resume", str(run), "-q"]) == 2
        assert capsys.readouterr().err == f"error: {CONFIG_EDIT.format(run=run)}\n"
    assert _state(run) == before and (run / "COMPLETE").exists()
    assert os.listdir(run).count("COMPLETE") == 1


def test_a_run_of_another_version_is_refused_by_report_and_resume_alike(finished, tmp_path, capsys, monkeypatch):
    """A folder written by another janus-memory version whose files need a repair: the report does not send the user
    to a resume that would refuse; both name the version to use."""
    import janus_memory

    monkeypatch.setenv("JANUS_CACHE_DIR", str(finished / "cache"))
    run = tmp_path / "run"
    shutil.copytree(finished / "run", run)
    (run / "splits.json").unlink()
    monkeypatch.setattr(janus_memory, "__version__", "9.9.9")
    why = ("the run was made by janus-memory 0.1.0, this is 9.9.9; continue or repair it with janus-memory 0.1.0")
    assert _report(run, capsys) == (2, f"error: {run} is marked complete but is not: {why}\n")
    before = _state(run)
    assert cli.main(["run", "--resume", str(run), "-q"]) == 2
    assert capsys.readouterr().err == f"error: {run}: {why}\n"
    assert _state(run) == before
    monkeypatch.setattr(janus_memory, "__version__", "0.1.0")  # the fix: the version that wrote it
    assert cli.main(["run", "--resume", str(run), "-q"]) == 0
    assert _report(run, capsys) == (0, "")
