"""`janus report` records the sha256 of each file it writes in report/.janus-report.json; --overwrite removes a
report file only while it still has that hash: one the user edited since is kept and named in the "kept" line. A
manifest written before hashes were recorded (names only) keeps its old meaning: its files are removed."""
from __future__ import annotations

import hashlib
import json

from janus_memory.cli.app import main
from janus_memory.run.experiment import run_experiment
from store_fakes import tiny_run_config


def test_an_edited_report_file_is_kept_and_named(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r"
    run_experiment(tiny_run_config(out), log=lambda m: None)
    assert main(["report", "-q", str(out)]) == 0
    manifest = json.loads((out / "report" / ".janus-report.json").read_text())
    assert "report.md" in manifest["files"] and set(manifest["sha256"]) == set(manifest["files"])
    assert manifest["sha256"]["report.md"] == hashlib.sha256((out / "report" / "report.md").read_bytes()).hexdigest()
    assert main(["report", "-q", str(out)]) == 0  # a second report keeps the hashes of what it rewrote
    assert set(json.loads((out / "report" / ".janus-report.json").read_text())["sha256"]) == set(manifest["files"])
    with open(out / "report" / "report.md", "a", encoding="utf-8") as f:
        f.write("MY ANALYSIS, hours of work\n")
    edited = (out / "report" / "report.md").read_bytes()
    lines: list[str] = []
    run_experiment(tiny_run_config(out, controller="none"), log=lines.append, overwrite=True)
    assert (out / "report" / "report.md").read_bytes() == edited
    assert sorted(p.name for p in (out / "report").iterdir()) == ["report.md"]  # the plots and manifest are gone
    assert [m for m in lines if m.startswith("--overwrite")] == [
        f"--overwrite: kept 'report/report.md' in {out} (not written by the old run)"]


def test_a_manifest_without_hashes_keeps_its_old_meaning(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r"
    run_experiment(tiny_run_config(out), log=lambda m: None)
    (out / "report").mkdir()
    (out / "report" / "report.md").write_text("old report, edited\n")
    (out / "report" / "mine.md").write_text("not listed\n")
    (out / "report" / ".janus-report.json").write_text('{"files": ["report.md"]}')
    lines: list[str] = []
    run_experiment(tiny_run_config(out, controller="none"), log=lines.append, overwrite=True)
    assert sorted(p.name for p in (out / "report").iterdir()) == ["mine.md"]
    assert [m for m in lines if m.startswith("--overwrite")] == [
        f"--overwrite: kept 'report/mine.md' in {out} (not written by the old run)"]
