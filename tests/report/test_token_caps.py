"""report/token_caps.py (run as benchmarks/probes/token_caps.py): what a lower solver token cap would have given on
answers a model already wrote."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from janus_memory.report import token_caps as tc


def _run(tmp: Path, name: str, cap: int, steps: list[dict], decisions: list[dict]) -> Path:
    run = tmp / name
    (run / "m").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"llm": {"solver_max_tokens": cap}}))
    (run / "m" / "steps.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    (run / "m" / "decisions.jsonl").write_text("".join(json.dumps(d) + "\n" for d in decisions))
    return run


def _step(task, out, toks, ok, status="ok", calls=None):
    return {"task_id": task, "output": out, "correct": ok, "status": status,
            "llm_calls": calls if calls is not None else [{"role": "curator", "completion_tokens": 99},
                                                           {"role": "solver", "completion_tokens": toks}]}


def test_counts_each_distinct_solve_once_and_cuts_long_answers(tmp_path, capsys):
    steps = [_step("a", "x", 100, True), _step("b", "y", 300, True), _step("c", "z", 448, False, "truncated"),
             _step("a", "x", 100, True),  # the same solve again (shared first steps of two methods): once
             _step("d", "w", 50, True, calls=[{"role": "solver", "completion_tokens": 1},
                                              {"role": "solver", "completion_tokens": 2}])]  # two solver calls: skipped
    ev = {"task_id": "e", "memory_sha256": "m1", "completion_tokens": 200, "extracted": "5", "status": "ok",
          "correct": True}
    decisions = [{"decision": {"evaluations": [ev, dict(ev)]}}, {"decision": None},
                 {"decision": {"evaluations": [dict(ev, memory_sha256="m2", completion_tokens=260, correct=False)]}}]
    r1 = _run(tmp_path, "r1", 448, steps, decisions)
    r2 = _run(tmp_path, "r2", 512, [_step("f", "v", 500, True)], [])
    rows, caps = tc.collect([r1, r2])
    assert sorted(rows) == [(100, True, "ok"), (200, True, "ok"), (260, False, "ok"), (300, True, "ok"),
                            (448, False, "truncated"), (500, True, "ok")]
    assert caps == [448, 512]
    r = tc.at_cap(rows, 256)
    assert (r["n"], r["correct"], r["cut"]) == (6, 2, 4)  # 300 and 500 would have been cut: counted wrong
    assert r["mean_generated"] == pytest.approx((100 + 200 + 256 + 256 + 256 + 256) / 6)
    lo, hi = r["ci95"]
    assert lo == pytest.approx(0.0968, abs=1e-4) and hi == pytest.approx(0.7000, abs=1e-4)
    assert tc.main([str(r1), str(r2), "--caps", "256,448,600"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("6 distinct solves from 2 run folder(s); recorded solver cap 448; generated tokens: median 300, "
                      "p90 500, max 500; 1 hit the recorded cap")
    assert out[2].split()[:4] == ["256", "0.333", "[0.097,", "0.700]"]
    assert out[3].split()[:3] == ["448", "0.500", "[0.188,"]
    assert out[3].endswith("1.00x")
    assert out[4] == "  600  (above the recorded cap 448: not judged from these answers)"


def test_no_solves_is_an_error_not_a_table(tmp_path, capsys):
    r = _run(tmp_path, "r", 448, [], [])
    assert tc.main([str(r)]) == 1
    assert capsys.readouterr().err == "no single-call solves found in these folders\n"
