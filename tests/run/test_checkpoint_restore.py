"""Fig. 4 checkpoint restore: ``checkpoint_restore: paper`` (the paper preset) tests each
checkpoint memory as the authors' make_memory_checkpoints.py rebuilds it: the DC-RS retrieval pool from the
successful records only, ExpeL's rules with count 2; ``exact`` tests the stream's exact snapshot."""
from __future__ import annotations

import json

import numpy as np

from janus_memory.cli import main
from janus_memory.settings.config import RunConfig
from janus_memory.tasks import get_family
from janus_memory.updaters import make_updater


def test_dc_rs_pool_keeps_the_successes_only():
    upd = make_updater("dc_rs", llm=None, family=get_family("gsm8k"), encoder=None, config={})
    for i, fb in enumerate(["success", "failure", "success", "failure"]):
        upd.bank.add({"id": f"t{i}", "feedback": fb}, np.eye(4, dtype=np.float32)[i])
    upd.cheatsheet = "SHEET"
    upd.restore_as_logged()
    assert [r["id"] for r in upd.bank.records] == ["t0", "t2"] and upd.cheatsheet == "SHEET"
    assert [i for i, _ in upd.bank.top_k(np.eye(4, dtype=np.float32)[2], 1)] == [1]  # t2's row came along
    upd.restore_as_logged()
    assert len(upd.bank) == 2


def test_expel_counts_become_two():
    upd = make_updater("expel", llm=None, family=get_family("gsm8k"), encoder=None, config={})
    upd.rules = [["A.", 5], ["B.", 1]]
    text = upd.memory_text()
    upd.restore_as_logged()
    assert upd.rules == [["A.", 2], ["B.", 2]] and upd.memory_text() == text


def test_presets_and_a_run_with_checkpoints(tmp_path, monkeypatch):
    assert RunConfig().checkpoint_restore_mode() == "paper"
    assert RunConfig(preset="small").checkpoint_restore_mode() == "exact"
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    got = {}
    for mode in ("paper", "exact"):
        assert main(["run", "--backend", "fake", "--encoder", "hashing", "--quiet", "--stream-size", "8",
                     "--test-size", "4", "--dataset", "gsm8k", "--updater", "dc_rs", "--controller", "none",
                     "--checkpoints", "0.5", "--checkpoint-restore", mode, "--out", str(tmp_path / mode)]) == 0
        s = json.loads((tmp_path / mode / "summary.json").read_text())["methods"]["dc_rs"]
        got[mode] = [(c["fraction"], c["step"]) for c in s["checkpoints"]]
        assert all(c["test_accuracy"] is not None for c in s["checkpoints"])
    assert got["paper"] == got["exact"] == [(0.5, 4), (1.0, 8)]
