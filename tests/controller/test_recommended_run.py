"""`janus run --janus-preset recommended` end to end on the fake backend (in-process): its decisions, pinned."""
from __future__ import annotations

import json

from janus_memory.cli import main

PRESET_LINE = ("janus preset: recommended (trigger=always, tau=0.0, same_memory_shortcut=True, early_stop=False, "
               "dedup=True, clustering=paper, replay_limit=None, decision_rule=sequential, seq_max_pairs=5, "
               "gate_full_compare=False, gate_compare=True, reuse_old_results=True, seq_extend_pairs=12, "
               "seq_extend_margin=0, seq_round=1, seq_deploy_margin=1, seq_quiet_deploy=False, seq_rollback_lead=3, "
               "seq_innocent=additions, seq_innocent_pairs=12, seq_reoffer=3, near_copy_similarity=0.93, "
               "near_copy_inherit=True, eval_set=panel, "
               "panel_size=19, panel_rotate=0.6, panel_min_evals=5, panel_order=touched)")
# (step, triggered, accept, reason, evaluator calls, full-evaluation calls, pairs evaluated): the panel holds every
# task before the current one on this short stream (2 at step 3, 8 at step 10), the tasks the changed lines touch
# read first, one task at a time; after the first comparison the deployed memory's outcomes are known, so a pair
# mostly costs one call. No candidate of this scripted stream gets ahead by a task (and none only adds lines): each
# is rolled back, without a lead at the fifth task (or the whole panel) or behind by the sequential test
EXPECT = [
    (1, False, True, "warmup", 0, 0, 0),
    (2, False, True, "warmup", 0, 0, 0),
    (3, True, False, "sprt_truncated_old_better", 4, 4, 2),
    (4, True, False, "sprt_truncated_no_lead", 4, 6, 3),
    (5, True, False, "sprt_new_worse", 4, 8, 3),
    (6, True, False, "sprt_truncated_no_lead", 6, 10, 5),
    (7, True, False, "sprt_new_worse", 5, 12, 4),
    (8, True, False, "sprt_new_worse", 5, 14, 4),
    (9, True, False, "sprt_truncated_no_lead", 5, 16, 5),
    (10, True, False, "sprt_new_worse", 5, 18, 4),
]


def test_run_with_the_recommended_preset_pins_its_decisions(tmp_path, capsys):
    out = tmp_path / "r"
    rc = main(["run", "--backend", "fake", "--encoder", "hashing", "--dataset", "gsm8k", "--stream-size",
               "10", "--test-size", "2", "--updater", "dc_rs", "--controller", "janus", "--janus-preset",
               "recommended", "--warmup", "2", "--out", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out.splitlines()
    # the run preset and the Janus preset are two lines; the controller is described, not listed as settings
    assert printed[1:5] == [
        "run preset: paper (the authors' prompts, parsers, checker and sampling; Janus replays a fresh sample per "
        "task, memory and comparison)",
        "Janus preset: recommended",
        "Janus: warm-up 2; trigger always (a comparison at every step after the warm-up); evaluation set: a panel of "
        "19 seen tasks, those the changed lines touch first (read 5, up to 12 while the candidate leads by exactly 1 "
        "task); decision: Wald's sequential test on the tasks the memories disagree on (alpha 0.2, beta 0.2, theta "
        "0.3), 1 task a round, then deployed only when the candidate leads by 1 task on the tasks read (none "
        "disagreeing: rolled back); a candidate that only adds lines is deployed unless a test on the tasks it loses "
        "shows it harmful (at most 12 tasks; innocent until shown harmful), its lines offered again at most 3 times "
        "when rolled back; the deployed memory's measured outcomes reused",
        "Janus also: a dump/wipe-looking candidate gets a comparison at any step, warm-up included; a rewording "
        "(similarity >= 0.93) is checked on 1 task and keeps the deployed memory's other outcomes; identical texts are "
        "evaluated once"]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["janus_preset"] == "recommended" and cfg["preset_summary"]["janus"] == PRESET_LINE
    rows = [json.loads(x)["decision"] for x in (out / "dc_rs+janus" / "decisions.jsonl").read_text().splitlines()]
    got = [(d["step"], d["triggered"], d["accept"], d["reason"], d["evaluator_calls"], d["evaluator_calls_full"],
            d["n_evaluated"]) for d in rows]
    assert got == EXPECT
    # the old memory's outcomes are reused: fewer calls than two per evaluated pair once it has been measured
    assert sum(d["evaluator_calls"] for d in rows) == 38 < 2 * sum(d["n_evaluated"] for d in rows) == 60
    # the panel keeps its members (it only grows on this short stream); the reading order follows the change
    ids = [d["eval_ids"] for d in rows if d["triggered"]]
    assert all(set(a) <= set(b) for a, b in zip(ids, ids[1:]))
    assert ids[2][0] not in ids[1]  # step 5 reads first a task the step-4 comparison did not have
    assert all(d["coverage"] == d["boundary"] == d["fresh"] == [] for d in rows)


def test_sweep_and_grid_accept_the_recommended_preset(tmp_path, capsys):
    grid = tmp_path / "g.yaml"
    grid.write_text(f"base: {{backend: fake, stream_size: 4, test_size: 2, out: {tmp_path / 'sw'}}}\n"
                    "grid: {updater: [dc_rs], controller: [janus]}\n")
    from janus_memory.sweep.sweep import load_grid_cells

    (name, cfg), = load_grid_cells(grid, janus_preset="recommended")
    assert cfg.janus_preset == "recommended" and cfg.janus_config().preset == "recommended"
    assert main(["sweep", str(grid), "--janus-preset", "recommended", "--dry-run"]) == 0
    import pytest

    with pytest.raises(SystemExit) as e:
        main(["sweep", str(grid), "--janus-preset", "recomended", "--dry-run"])
    assert e.value.code == 2
    assert "invalid choice: 'recomended' (did you mean recommended?)" in capsys.readouterr().err


def _run(tmp_path, *extra):
    return main(["run", "--backend", "fake", "--encoder", "hashing", "--dataset", "gsm8k", "--stream-size", "6",
                 "--test-size", "2", "--updater", "dc_rs", "--controller", "janus", "--janus-preset", "recommended",
                 "--warmup", "2", "--out", str(tmp_path / "r"), *extra])


def test_trigger_lines_say_how_many_tasks_the_sequential_test_compared(tmp_path, capsys):
    assert _run(tmp_path) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if " trigger at step " in ln]
    assert lines and all(" compared on " in ln for ln in lines)
    rows = [json.loads(x)["decision"] for x in (tmp_path / "r" / "dc_rs+janus" / "decisions.jsonl").read_text()
            .splitlines()]
    want = [f"|E|={len(d['eval_ids'])} " for d in rows if d["triggered"]]
    assert [ln.split(" (the panel)")[0].rsplit(" ", 1)[-1] + " " for ln in lines] == want
    assert [int(ln.split(" compared on ")[1].split(" of ")[0]) for ln in lines] == [
        d["n_evaluated"] for d in rows if d["triggered"]]


def test_a_changed_recommended_trigger_is_labelled_and_tau_without_effect_is_named(tmp_path, capsys):
    assert _run(tmp_path, "--trigger", "mmt", "--tau", "0.2") == 0
    out = capsys.readouterr().out
    assert "Janus preset: recommended + trigger mmt\n" in out
    assert "Janus: warm-up 2; trigger MMT (compares when cos(z_t, m_t-1) < tau = 0.2; beta = 0.9); " in out
    assert "has no effect" not in out  # mmt reads tau
    assert _run(tmp_path, "--quiet", "--tau", "0.3", "--overwrite") == 0
    out = capsys.readouterr().out
    assert ("warning: --tau 0.3 has no effect with trigger always (only the mmt and selective triggers read the "
            "threshold)") in out
    assert "Janus preset:" not in out  # --quiet: the warning stays, the settings header goes
    assert _run(tmp_path, "--quiet", "--overwrite") == 0
    assert "has no effect" not in capsys.readouterr().out
    # the hybrid set's sizes do nothing on the panel: said, not silently ignored
    assert _run(tmp_path, "--quiet", "--overwrite", "--coverage-size", "3", "--fresh-size", "2") == 0
    assert ("warning: --coverage-size, --fresh-size have no effect with eval_set panel (the recommended preset "
            "compares on a panel of 19 seen tasks, those the changed lines touch first; docs/controller.md)") in \
        capsys.readouterr().out


def test_report_of_a_recommended_run_names_it_and_counts_what_it_evaluated_and_paid(tmp_path, capsys):
    """A reviewer's run, then `janus report`: the Janus rows are named `recommended` (not `always`), the
    evaluation set is the panel (not K = 20, K_F = 5), the cost is what the controller evaluated (the decision log's
    evaluator calls: 191) beside the Janus calls the run paid (also 191: the batching evaluator follows the controller's
    plan and never asks for the deployed memory's reused outcomes), and no #Trig x configured |E| figure: that is the
    paper's measure, for its controller."""
    from janus_memory.report.report import build_report

    out = tmp_path / "r"
    assert main(["run", "--backend", "fake", "--dataset", "gsm8k", "--updater", "dc_rs", "--controller", "both",
                 "--janus-preset", "recommended", "--stream-size", "40", "--test-size", "5", "--warmup", "5",
                 "--encoder", "hashing", "--cache-dir", str(tmp_path / "cache"), "--quiet", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())["methods"]["dc_rs+janus"]
    decisions = [json.loads(x)["decision"] for x in (out / "dc_rs+janus" / "decisions.jsonl").read_text().splitlines()]
    evaluated = sum(d["evaluator_calls"] for d in decisions)
    assert evaluated == summary["janus_stats"]["evaluator_calls"] == 191
    assert (summary["usage"]["janus"]["calls"], summary["usage"]["janus"]["cache_hits"]) == (191, 0)
    capsys.readouterr()
    assert main(["report", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    assert ("setup: backend fake, model scripted, encoder hashing, run preset paper; Janus recommended; GSM8K: stream "
            "n=40, test n=5; seeds 0") in printed
    assert "│ dc_rs+janus │   GSM8K │            276 │     167,212 │                     0 │       0 │              191 │" \
           "                      191 │" in printed  # calls paid, ..., retries, Janus calls paid, evaluations needed
    rep = build_report([str(out)], str(tmp_path / "rep"))
    (row,) = [r for r in rep["tables"]["trigger"]["rows"] if r["policy"] != "base (no Janus)"]
    assert (row["policy"], row["eval_set"], row["eval_set_size"], row["evaluations"], row["janus_calls_paid"],
            row["paper_cost"], row["triggers"]) == ("recommended", "panel 19, read 5-12", 19, 191, 191, None, 35)
    (t3,) = rep["tables"]["janus_cost"]["rows"]
    assert (t3["controller"], t3["K"], t3["K_F"], t3["evaluations"], t3["janus_calls_paid"]) == (
        "recommended", None, None, 191, 191)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert ("| recommended | 60.0 | 35 | — | 100.0% | panel 19, read 5-12 | 16.0 / 19 | 4.8 | 191 | 191 | 1/34 |"
            in md)
    assert "| GSM8K | dc_rs+janus | recommended | — | panel 19, read 5-12 | 60.0 | 35 | 100.0% | 191 | 191 |" in md
    assert "Paper's cost" not in md and "| always |" not in md and "K_F = 5" not in md
    assert "- Janus preset: recommended" in md and "- Run preset: paper (" in md
