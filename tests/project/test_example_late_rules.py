"""The late-rules example of docs/running.md (`examples/late_rules.yaml`) shows what it says: blind deployment
ends with the falsified rule and the wipe (1 of 8 held out), Janus blocks both and answers 8 of 8."""
from __future__ import annotations

import json
from pathlib import Path

from janus_memory.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "late_rules.yaml"


def test_the_late_rules_example_runs_as_the_docs_write_it(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    assert f"janus run --config examples/{EXAMPLE.name} --out runs/late" in (
        EXAMPLE.parents[1] / "docs" / "running.md").read_text(encoding="utf-8")
    out = tmp_path / "late"
    assert main(["run", "--config", str(EXAMPLE), "--quiet", "--out", str(out)]) == 0
    m = json.loads((out / "summary.json").read_text())["methods"]
    blind, janus = m["exprag"], m["exprag+janus"]
    assert (blind["test_correct"], blind["injections"]["deployed"]) == (1, 2)
    assert (janus["test_correct"], janus["test_tasks"], janus["injections"]["blocked"]) == (8, 8, 2)
