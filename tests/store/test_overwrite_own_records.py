"""--overwrite moves away only what the old run's own records list (its stored config's methods and the methods with
rows in its database): a user's folder that looks like a method folder (a ``dc_rs.backup/`` copy holding
``decisions.jsonl`` and ``memories/``, a ``my_notes/`` with a ``decisions.jsonl``) stays, and the run says so once."""
from __future__ import annotations

import shutil

from janus_memory.run.experiment import run_experiment
from janus_memory.settings.config import RunConfig
from janus_memory.store.store import RunStore


def _cfg(out, **kw):
    base = dict(backend="fake", dataset="gsm8k", stream_size=3, test_size=1, encoder="hashing", out=str(out),
                janus={"warmup": 1, "coverage_size": 1, "boundary_size": 1, "fresh_size": 1})
    base.update(kw)
    return RunConfig(**base)


def test_overwrite_keeps_user_folders_that_look_like_method_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r"
    run_experiment(_cfg(out), log=lambda m: None)
    assert (out / "COMPLETE").exists() and (out / "dc_rs").is_dir()
    shutil.copytree(out / "dc_rs", out / "dc_rs.backup")
    notes = out / "my_notes"
    notes.mkdir()
    (notes / "decisions.jsonl").write_text('{"mine": 1}\n')
    (notes / "analysis.txt").write_text("my analysis")
    backup_files = sorted(p.relative_to(out).as_posix() for p in (out / "dc_rs.backup").rglob("*"))
    lines: list[str] = []
    run_experiment(_cfg(out, controller="janus"), log=lines.append, overwrite=True)
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
    run_experiment(_cfg(out), log=lambda m: None)
    (out / "lookalike" / "memories").mkdir(parents=True)
    assert RunStore.recorded_methods(out) == {"dc_rs", "dc_rs+janus"}
    # config.json alone (the database gone) still names them; a damaged config.json adds nothing
    (out / "run.sqlite").unlink()
    assert RunStore.recorded_methods(out) == {"dc_rs", "dc_rs+janus"}
    (out / "config.json").write_text('{"updater": "../etc", "controller": "none"}')
    assert RunStore.recorded_methods(out) == set()
    (out / "config.json").write_text("{not json")
    assert RunStore.recorded_methods(out) == set()
