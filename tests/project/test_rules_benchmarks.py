"""The rules benchmarks run end to end on the scripted backend (their numbers mean nothing there; the plumbing is what
is checked): the real-model measurement (four methods from three runs, the record it writes, a rerun that reads the
finished runs back and pays nothing) and the updater probe (which rule numbers each final memory holds)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBES = Path(__file__).resolve().parents[2] / "benchmarks" / "probes"
FAST = ["--backend", "fake", "--encoder", "hashing:64"]


def _script(name: str, argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """Run a benchmark script as a user does (tests do not import benchmarks), with a private cache."""
    env = {**os.environ, "JANUS_CACHE_DIR": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, str(PROBES / name), *argv], capture_output=True, text=True, env=env,
                          timeout=600)


def test_the_real_run_measures_four_methods_and_a_rerun_reads_them_back(tmp_path):
    out = tmp_path / "rr"
    argv = [*FAST, "--dataset", "rules_small", "--stream", "6", "--test", "3", "--warmup", "2",
            "--inject", "falsify@3,wipe@5", "--out", str(out)]
    p = _script("rules_real_run.py", argv, tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    rec = json.loads((out / "measurement.json").read_text())
    assert list(rec["methods"]) == ["blind", "paper", "always", "recommended"]
    assert rec["settings"]["updater"] == "exprag" and rec["command"].startswith("python benchmarks/probes/rules_real_run.py")
    for name, m in rec["methods"].items():
        assert m["test_tasks"] == 3 and 0 <= m["test_correct"] <= 3
        c = m["calls"]
        assert c["total"] == c["stream"] + c["janus"] + c["test"] and c["stream"] == 6 and c["test"] == 3
        if name == "blind":
            assert c["janus"] == 0 and m["injections"]["deployed"] == [3, 5]
    assert rec["methods"]["always"]["triggers"] == 4  # every step after the warm-up of 2
    assert set(rec["paired"]) == {"paper", "recommended", "always"}
    assert "| method | test correct |" in p.stdout and "wall" in (out / "measurement.md").read_text()
    # the recommended run's trigger lines name its panel, not an empty hybrid set
    assert "(the panel)" in p.stdout and "coverage+boundary+fresh 0+0+0" not in p.stdout
    # the injection column names each injected candidate on both sides, with the scores of a blocked one
    blind_row = next(x for x in p.stdout.splitlines() if x.startswith("| blind |"))
    assert "| falsify@3, wipe@5 / none | — | 1 of 2 | handling |" in blind_row  # blind: no rollback; 1 rule kept
    for name, m in rec["methods"].items():  # what the memory kept, beside gain and cost
        k = m["kept"]
        assert (k["genuine"] is None) == (name == "blind") and len(k["stated"]) == 2 and set(k["held"]) <= set(
            k["stated"])
    for name in ("paper", "always", "recommended"):
        inj = rec["methods"][name]["injections"]
        row = next(x for x in p.stdout.splitlines() if x.startswith(f"| {name} |"))
        cell = row.split("|")[9].strip()
        kinds = {3: "falsify", 5: "wipe"}
        want_dep = ", ".join(f"{kinds[st]}@{st}" for st in inj["deployed"]) or "none"
        want_blk = ", ".join(f"{b['kind']}@{b['step']} (E {b['old_score']:.2f} vs {b['new_score']:.2f})"
                             for b in inj["blocked"]) or "none"
        assert cell == f"{want_dep} / {want_blk}"
    p = _script("rules_real_run.py", argv, tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.count("finished before, read back") == 3
    assert json.loads((out / "measurement.json").read_text())["methods"] == rec["methods"]


def test_the_real_run_can_stop_after_some_runs(tmp_path):
    out = tmp_path / "rr"
    argv = [*FAST, "--dataset", "rules_small", "--stream", "4", "--test", "2", "--warmup", "2",
            "--inject", "falsify@3", "--out", str(out)]
    p = _script("rules_real_run.py", [*argv, "--runs", "paper"], tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    rec = json.loads((out / "measurement.json").read_text())
    assert list(rec["methods"]) == ["blind", "paper"] and set(rec["paired"]) == {"paper"}
    assert "| always | not run yet (`--runs`) |" in p.stdout and not (out / "always").exists()
    p = _script("rules_real_run.py", [*argv, "--runs", "always"], tmp_path)
    assert p.returncode != 0 and "the paper run included" in p.stderr
    p = _script("rules_real_run.py", [*argv, "--runs", "paper,nope"], tmp_path)
    assert p.returncode != 0 and "--runs takes some of paper, always, recommended" in p.stderr


def test_the_real_run_refuses_a_folder_made_with_other_settings_and_bad_plans_in_one_line(tmp_path):
    out = tmp_path / "rr"
    argv = [*FAST, "--dataset", "rules_small", "--stream", "4", "--test", "2", "--warmup", "2", "--out", str(out),
            "--runs", "paper"]
    p = _script("rules_real_run.py", [*argv, "--inject", "falsify@3"], tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    md = (out / "measurement.md").read_text()
    assert "updater exprag (janus_replay top_k, top-k 4), encoder hashing:64, --inject falsify@3" in md
    assert "evaluation set of the paper and always methods 12,8,5 (coverage, boundary, fresh)" in md
    before = (out / "measurement.json").read_text()
    p = _script("rules_real_run.py", [*argv, "--inject", "poison@3", "--eval", "2,1,1"], tmp_path)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines()[-1] == (
        f"error: {out / 'paper'} was run with other settings (inject: 'falsify@3' there, 'poison@3' now; janus: "
        "{'boundary_size': 8, 'coverage_size': 12, 'fresh_size': 5, 'warmup': 2} there, {'warmup': 2, "
        "'coverage_size': 2, 'boundary_size': 1, 'fresh_size': 1} now); give the same options to continue or read "
        "it back, or another --out")
    assert (out / "measurement.json").read_text() == before  # nothing relabelled
    # a plan past the stream: one line, no traceback, nothing made
    p = _script("rules_real_run.py", [*FAST, "--stream", "4", "--test", "2", "--out", str(tmp_path / "x")], tmp_path)
    assert p.returncode == 1 and "Traceback" not in p.stderr and not (tmp_path / "x").exists()
    assert p.stderr.strip().splitlines()[-1].startswith("error: --inject falsify@14,wipe@22,falsify@28: the stream "
                                                        "has only 4 steps")


def test_the_updater_probe_says_which_rule_numbers_each_memory_holds(tmp_path):
    out = tmp_path / "ru"
    p = _script("rules_updaters.py", [*FAST, "--stream", "3", "--test", "2", "--updaters", "exprag,dc_rs",
                                      "--out", str(out)], tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    rec = json.loads((out / "updaters.json").read_text())
    assert list(rec["updaters"]) == ["exprag", "dc_rs"]
    assert set(rec["updaters"]["exprag"]["kept"]) == {"ship_rate", "handling"}
    # ExpRAG's bank is the tickets themselves: the stating tickets' numbers are in it
    assert rec["updaters"]["exprag"]["kept"] == {"ship_rate": True, "handling": True}
    assert "| exprag | " in p.stdout


def test_kept_rules_reads_numbers_not_substrings():
    from janus_memory.inject.falsify import kept_rules
    from janus_memory.tasks.rules import make_world

    w = make_world("rules_small", 0)
    rate, fee = w.values["ship_rate"]["rate"], w.values["handling"]["fee"]
    assert kept_rules(f"Shipping is ${rate} per kg; handling ${fee}.", "rules_small", 0) == {
        "ship_rate": True, "handling": True}
    assert kept_rules(f"Shipping is ${rate}1 per kg.", "rules_small", 0) == {"ship_rate": False, "handling": False}
    assert kept_rules("(empty)", "rules_small", 0) == {"ship_rate": False, "handling": False}


def test_kept_rules_reads_a_number_as_the_statement_writes_it():
    from janus_memory.inject.falsify import kept_rules

    # rules_small seed 0: shipping $12 per kg, handling $7; a "7 kg" parcel holds no $7 fee
    assert kept_rules("Shipping costs $9 per kg. A 7 kg parcel costs 63.", "rules_small", 0) == {
        "ship_rate": False, "handling": False}
