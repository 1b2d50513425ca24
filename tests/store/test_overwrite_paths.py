"""--overwrite never writes or deletes through a symlink below the run folder (``dc_rs/memories`` or ``report``
pointing at a user's folder), and a ``.janus-overwritten`` that janus did not leave (a symlink, a file, a folder of
the user's) is refused in one line: nothing moved, nothing deleted, no ``.run.sqlite.setup`` left behind."""
from __future__ import annotations

import os
import shutil

import pytest

from janus_memory.errors import OutputError
from janus_memory.run.experiment import run_experiment
from janus_memory.store.store import RunStore
from store_fakes import tiny_run_config


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    base = tmp_path_factory.mktemp("base")
    mp = pytest.MonkeyPatch()
    mp.setenv("JANUS_CACHE_DIR", str(base / "cache"))
    try:
        run_experiment(tiny_run_config(base / "run"), log=lambda m: None)
    finally:
        mp.undo()
    return base / "run"


def _copy(finished, tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r"
    shutil.copytree(finished, out, symlinks=True)
    return out


def _tree(path):
    return sorted((p.relative_to(path).as_posix(), p.read_bytes() if p.is_file() and not p.is_symlink() else None)
                  for p in path.rglob("*") if not p.name.startswith(("run.sqlite-", ".janus.lock")))


def _refused(out, want, *, methods=("dc_rs", "dc_rs+janus")):
    with pytest.raises(OutputError) as e:
        RunStore.check_new_uncreated(out, overwrite=True, methods=list(methods))
    assert str(e.value) == want
    with pytest.raises(OutputError) as e:
        run_experiment(tiny_run_config(out), log=lambda m: None, overwrite=True)
    assert str(e.value) == want
    assert not (out / ".run.sqlite.setup").exists()


def test_a_symlinked_memories_folder_is_refused_and_the_users_folder_untouched(finished, tmp_path, monkeypatch):
    out = _copy(finished, tmp_path, monkeypatch)
    user = tmp_path / "user"
    shutil.copytree(out / "dc_rs" / "memories", user)
    (user / "00009_aaaaaaaaaaaa.txt").write_text("mine")
    (user / "precious.txt").write_text("user data")
    shutil.rmtree(out / "dc_rs" / "memories")
    (out / "dc_rs" / "memories").symlink_to(user)
    before, before_user = _tree(out), _tree(user)
    _refused(out, f"--overwrite: {out / 'dc_rs' / 'memories'} is a symlink (to {user}), and the run writes and "
                  "deletes files in it only inside its own folder; replace it with a folder of its own, or choose "
                  "another --out")
    assert _tree(out) == before and _tree(user) == before_user


def test_a_symlinked_report_folder_or_old_method_memories_is_refused(finished, tmp_path, monkeypatch):
    out = _copy(finished, tmp_path, monkeypatch)
    user = tmp_path / "user"
    user.mkdir()
    (user / "report.md").write_text("my report")
    (user / ".janus-report.json").write_text('{"files": ["report.md"]}')
    (out / "report").symlink_to(user)
    _refused(out, f"--overwrite: {out / 'report'} is a symlink (to {user}), and the run writes and deletes files in "
                  "it only inside its own folder; replace it with a folder of its own, or choose another --out")
    assert (user / "report.md").read_text() == "my report"
    (out / "report").unlink()
    # a method of the old run that the new run does not run: its memories are moved aside and deleted all the same
    shutil.rmtree(out / "dc_rs+janus" / "memories")
    (out / "dc_rs+janus" / "memories").symlink_to(user)
    _refused(out, f"--overwrite: {out / 'dc_rs+janus' / 'memories'} is a symlink (to {user}), and the run writes "
                  "and deletes files in it only inside its own folder; replace it with a folder of its own, or "
                  "choose another --out", methods=["dc_rs"])
    assert sorted(p.name for p in user.iterdir()) == [".janus-report.json", "report.md"]


@pytest.mark.parametrize("kind", ["symlink", "file", "folder", "nested folder", "symlink inside"])
def test_a_janus_overwritten_that_janus_did_not_leave_is_refused(finished, tmp_path, monkeypatch, kind):
    out = _copy(finished, tmp_path, monkeypatch)
    aside = out / ".janus-overwritten"
    user = tmp_path / "user"
    user.mkdir()
    (user / "precious.txt").write_text("user data")
    what = {"symlink": "a symlink", "file": "a file", "folder": "a folder holding 'x.txt', which no run writes",
            "nested folder": "a folder holding 'dc_rs/notes', which no run writes",
            "symlink inside": "a folder holding 'prompts', which no run writes"}[kind]
    if kind == "symlink":
        aside.symlink_to(user)
    elif kind == "file":
        aside.write_text("mine")
    elif kind == "folder":
        aside.mkdir()
        (aside / "x.txt").write_text("mine")
    elif kind == "nested folder":
        (aside / "dc_rs" / "notes").mkdir(parents=True)
        (aside / "dc_rs" / "notes" / "a.txt").write_text("mine")
    else:
        aside.mkdir()
        (aside / "prompts").symlink_to(user)
    before = _tree(out)
    _refused(out, f"{aside} is not the folder where janus moves an overwritten run (and then deletes): it is {what}; "
                  "move or rename it, then run again")
    assert _tree(out) == before and (user / "precious.txt").read_text() == "user data"
    # where no run is left beside it (a folder holding only janus's own files counts as new), the same refusal
    for p in list(out.iterdir()):
        if p.name != ".janus-overwritten":
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    with pytest.raises(OutputError) as e:
        run_experiment(tiny_run_config(out), log=lambda m: None)
    assert str(e.value).startswith(f"{aside} is not the folder where janus moves an overwritten run")
    assert (user / "precious.txt").read_text() == "user data" and os.path.lexists(aside)


def test_an_aside_left_by_a_stopped_overwrite_is_still_cleared(finished, tmp_path, monkeypatch):
    out = _copy(finished, tmp_path, monkeypatch)
    RunStore._move_aside(out)  # what a kill at overwrite_moved_aside leaves
    assert (out / ".janus-overwritten" / "dc_rs" / "memories").is_dir()
    RunStore.check_aside(out)
    run_experiment(tiny_run_config(out, controller="none"), log=lambda m: None, overwrite=True)
    assert not (out / ".janus-overwritten").exists() and (out / "COMPLETE").exists()


def test_exports_never_delete_through_a_symlinked_memories_folder(finished, tmp_path, monkeypatch):
    """Below --overwrite's refusal, the exports' clean-up of stray version-named files skips a memories folder that
    is a symlink (a resume of such a folder): nothing outside the run folder is deleted."""
    out = _copy(finished, tmp_path, monkeypatch)
    user = tmp_path / "user"
    shutil.copytree(out / "dc_rs" / "memories", user)
    (user / "00009_aaaaaaaaaaaa.txt").write_text("mine")
    shutil.rmtree(out / "dc_rs" / "memories")
    (out / "dc_rs" / "memories").symlink_to(user)
    store = RunStore(out)
    try:
        store.export_method("dc_rs", (out / "dc_rs" / "final_memory.txt").read_text())
    finally:
        store.close()
    assert (user / "00009_aaaaaaaaaaaa.txt").read_text() == "mine"
