"""--overwrite moves away only what the old run's own records list (its stored config's methods and the methods with
rows in its database): a user's folder that looks like a method folder (a ``dc_rs.backup/`` copy holding
``decisions.jsonl`` and ``memories/``, a ``my_notes/`` with a ``decisions.jsonl``) stays, and the run says so once."""
from __future__ import annotations

import shutil

import pytest

from janus_memory.run.experiment import run_experiment
from janus_memory.store.store import RunStore
from store_fakes import tiny_run_config


def test_overwrite_keeps_user_folders_that_look_like_method_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r"
    run_experiment(tiny_run_config(out), log=lambda m: None)
    assert (out / "COMPLETE").exists() and (out / "dc_rs").is_dir()
    shutil.copytree(out / "dc_rs", out / "dc_rs.backup")
    notes = out / "my_notes"
    notes.mkdir()
    (notes / "decisions.jsonl").write_text('{"mine": 1}\n')
    (notes / "analysis.txt").write_text("my analysis")
    backup_files = sorted(p.relative_to(out).as_posix() for p in (out / "dc_rs.backup").rglob("*"))
    lines: list[str] = []
    run_experiment(tiny_run_config(out, controller="janus"), log=lines.append, overwrite=True)
    assert not (out / "dc_rs").exists()  # the old run's own method folder is gone
    assert (out / "dc_rs+janus" / "decisions.jsonl").exists()
    assert sorted(p.relative_to(out).as_posix() for p in (out / "dc_rs.backup").rglob("*")) == backup_files
    assert (notes / "decisions.jsonl").read_text() == '{"mine": 1}\n'
    assert (notes / "analysis.txt").read_text() == "my analysis"
    assert [m for m in lines if m.startswith("--overwrite")] == [
        f"--overwrite: kept 'dc_rs.backup', 'my_notes' in {out} (not written by the old run)"]


def test_recorded_methods_come_from_the_records_only(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r"
    run_experiment(tiny_run_config(out), log=lambda m: None)
    (out / "lookalike" / "memories").mkdir(parents=True)
    assert RunStore.recorded_methods(out) == {"dc_rs", "dc_rs+janus"}
    # config.json alone (the database gone) still names them; a damaged config.json adds nothing
    (out / "run.sqlite").unlink()
    assert RunStore.recorded_methods(out) == {"dc_rs", "dc_rs+janus"}
    (out / "config.json").write_text('{"updater": "../etc", "controller": "none"}')
    assert RunStore.recorded_methods(out) == set()
    (out / "config.json").write_text("{not json")
    assert RunStore.recorded_methods(out) == set()


def test_overwrite_never_writes_into_a_folder_the_old_run_does_not_name(tmp_path, monkeypatch):
    """The old run ran dc_rs only; a user's ``dc_rs+janus/`` (or a symlink by that name) is not its folder: a new run
    that would write its dc_rs+janus files there is refused in one line, before anything is moved or written."""
    from janus_memory.errors import OutputError

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r"
    run_experiment(tiny_run_config(out, controller="none"), log=lambda m: None)
    mine = out / "dc_rs+janus"
    mine.mkdir()
    (mine / "decisions.jsonl").write_text("mine\n")
    def listing():  # (a read of the old run's database may leave its -wal/-shm files)
        return sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if not p.name.startswith("run.sqlite-"))

    before = listing()
    want = (f"--overwrite: {mine} is a folder the old run's records do not name as its own, and the new run would "
            "write the method dc_rs+janus's files into it; move or rename it, or choose another --out")
    with pytest.raises(OutputError) as e:
        run_experiment(tiny_run_config(out, controller="both"), log=lambda m: None, overwrite=True)
    assert str(e.value) == want
    with pytest.raises(OutputError) as e:
        RunStore.check_new_uncreated(out, overwrite=True, methods=["dc_rs", "dc_rs+janus"])
    assert str(e.value) == want
    assert listing() == before
    assert (mine / "decisions.jsonl").read_text() == "mine\n"
    shutil.rmtree(mine)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mine.symlink_to(elsewhere)
    with pytest.raises(OutputError, match="is a symlink, and the new run would write"):
        run_experiment(tiny_run_config(out, controller="both"), log=lambda m: None, overwrite=True)
    assert list(elsewhere.iterdir()) == []
    mine.unlink()
    run_experiment(tiny_run_config(out, controller="both"), log=lambda m: None, overwrite=True)  # the folder gone: it runs
    assert (out / "dc_rs+janus" / "decisions.jsonl").exists()


def test_overwrite_keeps_user_files_inside_the_old_runs_folders(tmp_path, monkeypatch, capsys):
    """Files the old run did not write, inside its method folder, its memories/ and the report/ that `janus report`
    wrote, stay where they are, named in the one kept line; the run's own files there are gone. A file of the user's
    where the new run keeps nothing else (prompts/, a memories/ name like a version) is refused, not removed."""
    from janus_memory.cli.app import main
    from janus_memory.errors import OutputError

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r"
    run_experiment(tiny_run_config(out, controller="none"), log=lambda m: None)
    assert main(["report", "-q", str(out)]) == 0
    old_versions = sorted(p.name for p in (out / "dc_rs" / "memories").iterdir())
    assert old_versions
    (out / "dc_rs" / "notes.txt").write_text("n")
    (out / "dc_rs" / "memories" / "my_memory.txt").write_text("m")
    (out / "report" / "my_summary.md").write_text("s")
    # where the new run keeps nothing else, a file of the user's is refused, not removed
    for path in (out / "prompts" / "my_prompt.txt", out / "dc_rs" / "memories" / "00001_0123456789ab.txt"):
        path.write_text("mine")
        with pytest.raises(OutputError) as e:
            run_experiment(tiny_run_config(out, controller="both"), log=lambda m: None, overwrite=True)
        assert str(e.value) == (f"--overwrite: {path} was not written by the old run, and the new run keeps no other "
                                f"file in {path.parent.name}/; move it out of the folder, or choose another --out")
        path.unlink()
    assert (out / "dc_rs" / "memories" / old_versions[0]).exists()  # nothing moved
    lines: list[str] = []
    run_experiment(tiny_run_config(out, controller="janus"), log=lines.append, overwrite=True)
    assert (out / "dc_rs" / "notes.txt").read_text() == "n"
    assert (out / "dc_rs" / "memories" / "my_memory.txt").read_text() == "m"
    assert (out / "report" / "my_summary.md").read_text() == "s"
    assert sorted(p.name for p in (out / "dc_rs").iterdir()) == ["memories", "notes.txt"]
    assert sorted(p.name for p in (out / "dc_rs" / "memories").iterdir()) == ["my_memory.txt"]
    assert sorted(p.name for p in (out / "report").iterdir()) == ["my_summary.md"]  # report.md, plots, manifest gone
    assert [m for m in lines if m.startswith("--overwrite")] == [
        f"--overwrite: kept 'dc_rs/memories/my_memory.txt', 'dc_rs/notes.txt', 'report/my_summary.md' in {out} "
        "(not written by the old run)"]
    assert not (out / ".janus-overwritten").exists()


def test_overwrite_removes_a_report_janus_wrote_and_the_folders_left_empty(tmp_path, monkeypatch):
    from janus_memory.cli.app import main

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r"
    run_experiment(tiny_run_config(out), log=lambda m: None)
    assert main(["report", "-q", str(out)]) == 0
    assert main(["report", "-q", str(out)]) == 0  # a second report keeps the manifest whole
    lines: list[str] = []
    run_experiment(tiny_run_config(out, controller="none"), log=lines.append, overwrite=True)
    assert sorted(p.name for p in out.iterdir() if p.name != ".janus.lock") == [
        "COMPLETE", "config.json", "config.yaml", "dc_rs", "environment.json", "prompts", "run.sqlite", "splits.json",
        "summary.json"]
    assert not [m for m in lines if m.startswith("--overwrite")]


def test_an_overwrite_stopped_after_the_move_reads_the_records_it_moved_aside(tmp_path, monkeypatch):
    """Killed after the old run's files were moved into .janus-overwritten/ (the database with them): the same
    command again still knows the old run's method folders from the records there, so a dc_rs/ that holds a file of
    yours is the old run's folder (written into, the file kept), not a folder of yours."""
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r"
    run_experiment(tiny_run_config(out, controller="none"), log=lambda m: None)
    (out / "dc_rs" / "notes.txt").write_text("n")
    assert RunStore._move_aside(out) == ["dc_rs/notes.txt"]  # what a kill at overwrite_moved_aside leaves
    assert not (out / "run.sqlite").exists() and (out / ".janus-overwritten" / "run.sqlite").exists()
    assert RunStore.recorded_methods(out) == {"dc_rs"}
    lines: list[str] = []
    run_experiment(tiny_run_config(out, controller="both"), log=lines.append, overwrite=True)
    assert (out / "dc_rs" / "notes.txt").read_text() == "n"
    assert (out / "dc_rs" / "decisions.jsonl").exists() and (out / "dc_rs+janus" / "decisions.jsonl").exists()
    assert not (out / ".janus-overwritten").exists()
