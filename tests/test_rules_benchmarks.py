"""The rules benchmarks run end to end on the scripted backend (their numbers mean nothing there; the plumbing is what
is checked): the real-model measurement (four methods from three runs, the record it writes, a rerun that reads the
finished runs back and pays nothing) and the updater probe (which rule numbers each final memory holds)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

FAST = ["--backend", "fake", "--encoder", "hashing:64"]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


def test_the_real_run_measures_four_methods_and_a_rerun_reads_them_back(tmp_path, capsys):
    import rules_real_run

    out = tmp_path / "rr"
    argv = [*FAST, "--dataset", "rules_small", "--stream", "6", "--test", "3", "--warmup", "2",
            "--inject", "falsify@3,wipe@5", "--out", str(out)]
    assert rules_real_run.main(argv) == 0
    rec = json.loads((out / "measurement.json").read_text())
    assert list(rec["methods"]) == ["blind", "paper", "recommended", "always"]
    assert rec["settings"]["updater"] == "exprag" and rec["command"].startswith("python benchmarks/rules_real_run.py")
    for name, m in rec["methods"].items():
        assert m["test_tasks"] == 3 and 0 <= m["test_correct"] <= 3
        c = m["calls"]
        assert c["total"] == c["stream"] + c["janus"] + c["test"] and c["stream"] == 6 and c["test"] == 3
        if name == "blind":
            assert c["janus"] == 0 and m["injections"]["deployed"] == [3, 5]
    assert rec["methods"]["always"]["triggers"] == 4  # every step after the warm-up of 2
    assert set(rec["paired"]) == {"paper", "recommended", "always"}
    first = capsys.readouterr().out
    assert "| method | test correct |" in first and "wall" in (out / "measurement.md").read_text()
    assert rules_real_run.main(argv) == 0
    again = capsys.readouterr().out
    assert again.count("finished before, read back") == 3
    assert json.loads((out / "measurement.json").read_text())["methods"] == rec["methods"]


def test_the_updater_probe_says_which_rule_numbers_each_memory_holds(tmp_path, capsys):
    import rules_updaters

    out = tmp_path / "ru"
    assert rules_updaters.main([*FAST, "--stream", "3", "--test", "2", "--updaters", "exprag,dc_rs",
                                "--out", str(out)]) == 0
    rec = json.loads((out / "updaters.json").read_text())
    assert list(rec["updaters"]) == ["exprag", "dc_rs"]
    assert set(rec["updaters"]["exprag"]["kept"]) == {"ship_rate", "handling"}
    # ExpRAG's bank is the tickets themselves: the stating tickets' numbers are in it
    assert rec["updaters"]["exprag"]["kept"] == {"ship_rate": True, "handling": True}
    assert "| exprag | " in capsys.readouterr().out


def test_kept_rules_reads_numbers_not_substrings():
    from rules_updaters import kept_rules
    from janus_memory.tasks.rules import make_world

    w = make_world("rules_small", 0)
    rate, fee = w.values["ship_rate"]["rate"], w.values["handling"]["fee"]
    assert kept_rules(f"Shipping is ${rate} per kg; handling ${fee}.", "rules_small", 0) == {
        "ship_rate": True, "handling": True}
    assert kept_rules(f"Shipping is ${rate}1 per kg.", "rules_small", 0) == {"ship_rate": False, "handling": False}
    assert kept_rules("(empty)", "rules_small", 0) == {"ship_rate": False, "handling": False}
