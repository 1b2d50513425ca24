"""Messages that named the wrong cause, each with its fix applied: `--out .` (the run locked its own lock file twice and
called itself "another process"), `--out ""`, `--resume R --updater expel` (an unrelated updater_config key was
named), the limits of the server calls on `--resume` (they change no result: allowed), a refused new run in a folder
of yours (its lock file was left behind)."""
from __future__ import annotations

import os

import pytest

from janus_memory import cli

SMALL = ["--backend", "fake", "--stream-size", "2", "--test-size", "1", "--encoder", "hashing", "-q"]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


def test_out_dot_runs_in_the_current_folder(tmp_path, capsys, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert cli.main(["run", *SMALL, "--out", "."]) == 0, capsys.readouterr().err
    assert (here / "COMPLETE").exists()
    capsys.readouterr()
    assert cli.main(["report", "-q", "."]) == 0


def test_out_dot_in_a_folder_of_yours_is_refused_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    here = tmp_path / "mine"
    here.mkdir()
    (here / "notes.txt").write_text("x")
    monkeypatch.chdir(here)
    assert cli.main(["run", *SMALL, "--out", "."]) == 2
    assert capsys.readouterr().err == ("error: output folder . is not empty and holds no janus run ('notes.txt'); a run "
                                       "needs a new or empty folder: choose another --out\n")
    assert os.listdir(here) == ["notes.txt"]
    from janus_memory.errors import OutputError
    from janus_memory.run.experiment import run_experiment
    from janus_memory.settings.config import RunConfig

    with pytest.raises(OutputError):  # from Python (no CLI check first): the lock file it made is taken away
        run_experiment(RunConfig(backend="fake", stream_size=2, test_size=1, encoder="hashing", out="."),
                       log=lambda m: None)
    assert os.listdir(here) == ["notes.txt"]


def test_an_empty_path_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        cli.main(["run", *SMALL, "--out", ""])
    assert e.value.code == 2
    assert capsys.readouterr().err == ("error: argument --out: expected a path, got an empty text; see `janus run "
                                       "--help`\n")
    (tmp_path / "c.yaml").write_text("backend: fake\nout: ''\n")
    assert cli.main(["run", "--config", "c.yaml"]) == 2
    assert capsys.readouterr().err == ("error: invalid value for 'out': expected a path, got an empty text (got '') "
                                       "(line 2 of c.yaml)\n")
    assert sorted(os.listdir(tmp_path)) == ["c.yaml"]  # no run folder, no lock file


@pytest.fixture
def unfinished(tmp_path, capsys):
    out = tmp_path / "r"
    assert cli.main(["run", *SMALL, "--out", str(out)]) == 0
    (out / "COMPLETE").unlink()  # as a kill after the last step would leave it
    capsys.readouterr()
    return out


def test_resume_with_another_updater_names_the_updater(unfinished, capsys):
    assert cli.main(["run", "--resume", str(unfinished), "--updater", "expel", "-q"]) == 2
    assert capsys.readouterr().err == ("error: cannot resume: the config differs from the stored run: updater: 'dc_rs' "
                                       "-> 'expel' (a resumed run keeps its stored settings: leave those options "
                                       "out)\n")
    assert cli.main(["run", "--resume", str(unfinished), "--tau", "0.3", "--temperature", "0.1", "-q"]) == 2
    assert capsys.readouterr().err == ("error: cannot resume: the config differs from the stored run: llm.temperature: "
                                       "0.7 -> 0.1; janus.tau: 0.0 -> 0.3 (a resumed run keeps its stored settings: "
                                       "leave those options out)\n")
    assert cli.main(["run", "--resume", str(unfinished), "-q"]) == 0  # the fix: leave them out
    assert (unfinished / "COMPLETE").exists()


def test_resume_may_change_how_the_server_is_called(unfinished, capsys):
    assert cli.main(["run", "--resume", str(unfinished), "--request-timeout", "30", "--max-retries", "2",
                     "--request-deadline", "90", "--concurrency", "2", "-q"]) == 0, capsys.readouterr().err
    assert (unfinished / "COMPLETE").exists()
    capsys.readouterr()
    assert cli.main(["report", "-q", str(unfinished)]) == 0  # the stored settings (and config.json) unchanged
