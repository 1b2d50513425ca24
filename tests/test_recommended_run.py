"""`janus run --janus-preset recommended` end to end on the fake backend (in-process): its decisions, pinned."""
from __future__ import annotations

import json

from janus_memory.cli import main

PRESET_LINE = ("janus preset: recommended (trigger=always, tau=0.0, same_memory_shortcut=True, early_stop=False, "
               "dedup=True, clustering=paper, replay_limit=None, decision_rule=sequential, eval_order=informative, "
               "seq_max_pairs=6, "
               "gate_full_compare=True, reuse_old_results=True, seq_extend_pairs=14, seq_extend_margin=0, "
               "near_copy_similarity=0.93, near_copy_pairs=4)")
# (step, triggered, accept, reason, evaluator calls, full-evaluation calls, pairs evaluated); issue 24 round 2 (cap 6
# extended to 14 while tied, paper k-means): step 9 compares 5 tasks (round 1, cap 9 and scikit-learn k-means: 6 of 6)
EXPECT = [
    (1, False, True, "warmup", 0, 0, 0),
    (2, False, True, "warmup", 0, 0, 0),
    (3, True, False, "sprt_truncated_old_better", 6, 6, 3),
    (4, True, True, "sprt_truncated_new_ge_old", 5, 8, 4),
    (5, True, False, "sprt_truncated_old_better", 4, 6, 3),
    (6, True, True, "sprt_truncated_new_ge_old", 5, 8, 4),
    (7, True, False, "sprt_truncated_old_better", 5, 8, 4),
    (8, True, False, "sprt_truncated_old_better", 6, 10, 5),
    (9, True, True, "sprt_truncated_new_ge_old", 6, 10, 5),
    (10, True, False, "sprt_old_worse", 4, 12, 4),
]


def test_run_with_the_recommended_preset_pins_its_decisions(tmp_path, capsys):
    out = tmp_path / "r"
    rc = main(["run", "--backend", "fake", "--encoder", "hashing", "--quiet", "--dataset", "gsm8k", "--stream-size",
               "10", "--test-size", "2", "--updater", "dc_rs", "--controller", "janus", "--janus-preset",
               "recommended", "--warmup", "2", "--coverage-size", "3", "--boundary-size", "2", "--fresh-size", "2",
               "--out", str(out)])
    assert rc == 0
    assert PRESET_LINE in capsys.readouterr().out
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["janus_preset"] == "recommended" and cfg["preset_summary"]["janus"] == PRESET_LINE
    rows = [json.loads(x)["decision"] for x in (out / "dc_rs+janus" / "decisions.jsonl").read_text().splitlines()]
    got = [(d["step"], d["triggered"], d["accept"], d["reason"], d["evaluator_calls"], d["evaluator_calls_full"],
            d["n_evaluated"]) for d in rows]
    assert got == EXPECT
    # the old memory's outcomes are reused: fewer calls than two per evaluated pair once it has been measured
    assert sum(d["evaluator_calls"] for d in rows) == 41 < 2 * sum(d["n_evaluated"] for d in rows) == 64
    # the boundary (past flips) leads the evaluation order
    d9 = rows[8]
    assert d9["eval_ids"][:len(d9["boundary"])] == d9["boundary"]


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
                 "--warmup", "2", "--coverage-size", "3", "--boundary-size", "2", "--fresh-size", "2",
                 "--out", str(tmp_path / "r"), *extra])


def test_trigger_lines_say_how_many_tasks_the_sequential_test_compared(tmp_path, capsys):
    assert _run(tmp_path) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if " trigger at step " in ln]
    assert lines and all(" compared on " in ln for ln in lines)
    rows = [json.loads(x)["decision"] for x in (tmp_path / "r" / "dc_rs+janus" / "decisions.jsonl").read_text()
            .splitlines()]
    want = [f"|E|={len(d['eval_ids'])} " for d in rows if d["triggered"]]
    assert [ln.split(" (coverage")[0].rsplit(" ", 1)[-1] + " " for ln in lines] == want
    assert [int(ln.split(" compared on ")[1].split(" of ")[0]) for ln in lines] == [
        d["n_evaluated"] for d in rows if d["triggered"]]


def test_a_changed_recommended_trigger_is_labelled_and_tau_without_effect_is_named(tmp_path, capsys):
    assert _run(tmp_path, "--quiet", "--trigger", "mmt", "--tau", "0.2") == 0
    out = capsys.readouterr().out
    assert "janus preset: recommended + trigger mmt (trigger=mmt, tau=0.2, " in out
    assert "has no effect" not in out  # mmt reads tau
    assert _run(tmp_path, "--quiet", "--tau", "0.3", "--overwrite") == 0
    out = capsys.readouterr().out
    assert ("warning: --tau 0.3 has no effect with trigger always (only the mmt and selective triggers read the "
            "threshold)") in out
    assert "janus preset: recommended (trigger=always, tau=0.3, " in out
    assert _run(tmp_path, "--quiet", "--overwrite") == 0
    assert "has no effect" not in capsys.readouterr().out
