"""Injected harmful candidates through the real runner: `janus run --inject`, YAML and Python settings,
--controller both (the same injections for both methods), exact counts, the decision-log mark, resume, the printed
table, `janus report` and the demo preset. Scripted fake backend (`--backend fake`), hashing encoder: no model."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from janus_memory.cli import main
from janus_memory.inject.candidates import KINDS, templates
from janus_memory.run.experiment import _Stopped, run_experiment
from janus_memory.settings.config import RunConfig, demo_config

PLAN_200 = ("wipe@30,dump@50,overfit@70,poison@90,truncate@110,"
            "wipe@130,dump@150,overfit@170,poison@185,truncate@198")
FILES = ("decisions.jsonl", "steps.jsonl", "test.jsonl", "final_memory.txt")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


def _cfg(out, **kw) -> RunConfig:
    # clustering sklearn and ExpeL's own retrieval fields, curator input, examples and solver section order: the
    # settings the expected counts below were measured with (the paper preset has since taken the authors' k-means,
    # fields, curator input, examples and section order)
    base = dict(backend="fake", dataset="gsm8k", stream_size=30, test_size=2, encoder="hashing:256", out=str(out),
                janus={"warmup": 6, "coverage_size": 1, "boundary_size": 1, "fresh_size": 1, "clustering": "sklearn"},
                temperature=0.0, no_cache=True)
    base.update(kw)
    if base.get("updater") == "expel":
        base["updater_config"] = {"retrieval": "multi_field", "curator_input": "task_prompt",
                                  "examples_input": "task_prompt", "solver_layout": "rules_first",
                                  **base.get("updater_config", {})}
    return RunConfig(**base)


def _lines(out: Path, method: str, name: str = "decisions.jsonl") -> list[dict]:
    return [json.loads(x) for x in (out / method / name).read_text().splitlines()]


def _counts(s: dict) -> tuple:
    return s["injected"], s["deployed"], s["blocked"], s["blocked_triggered"]


# ------------------------------------------------------------------------------------------------ 200 steps
def test_200_steps_every_kind_both_methods_exact_counts(tmp_path):
    out = tmp_path / "r200"
    summary = run_experiment(_cfg(out, stream_size=200, inject=PLAN_200, janus={
        "warmup": 10, "coverage_size": 1, "boundary_size": 1, "fresh_size": 1}), log=lambda m: None)
    blind, guarded = summary["methods"]["dc_rs"]["injections"], summary["methods"]["dc_rs+janus"]["injections"]
    assert _counts(blind) == (10, 10, 0, 0)
    assert blind["by_kind"] == {k: {"injected": 2, "deployed": 2, "blocked": 0} for k in KINDS if k in PLAN_200}
    assert _counts(guarded) == EXPECTED_200["counts"]
    assert [(b["step"], b["kind"]) for b in guarded["blocked_steps"]] == EXPECTED_200["blocked"]
    assert guarded["deployed_steps"] == EXPECTED_200["deployed_steps"]
    # the scripted model follows a planted instruction: every poison Janus evaluated scored 0 on E
    assert all(b["new_score"] == 0.0 for b in guarded["blocked_steps"] if b["kind"] == "poison")
    plan = {int(p.split("@")[1]): p.split("@")[0] for p in PLAN_200.split(",")}
    for method in ("dc_rs", "dc_rs+janus"):
        lines = _lines(out, method)
        assert {x["step"]: x["injected"] for x in lines if "injected" in x} == plan  # both: same kinds, same steps
        recs = {r["step"]: r for r in _lines(out, method, "steps.jsonl")}
        for step, kind in plan.items():
            info = recs[step]["info"]["injected"]
            assert (info["kind"], info["step"], info["seed"], info["noop"]) == (kind, step, 0, False)
    assert not any(p in (out / "dc_rs+janus" / "final_memory.txt").read_text() for p in templates()["poison"])


# measured once with this configuration and pinned (deterministic: scripted backend, hashing:256 encoder, seed 0).
# The MMT trigger fired on 3 of the 10 injected steps (overfit@70, wipe@130, poison@185) and Janus blocked all 3;
# the other 7 moved along the momentum (cos >= tau) and were deployed without evaluation, as MMT intends.
EXPECTED_200 = {"counts": (10, 7, 3, 3), "blocked": [(70, "overfit"), (130, "wipe"), (185, "poison")],
                "deployed_steps": [30, 50, 90, 110, 150, 170, 198]}


def test_trigger_always_blocks_every_poison_and_both_methods_see_the_same_candidate(tmp_path):
    out = tmp_path / "always"
    plan = "poison@7,wipe@12,poison@16,truncate@20,dump@24,overfit@28"
    s = run_experiment(_cfg(out, inject=plan, janus={"warmup": 6, "coverage_size": 1, "boundary_size": 1,
                                                      "fresh_size": 1, "trigger": "always"}), log=lambda m: None)
    blind, guarded = s["methods"]["dc_rs"]["injections"], s["methods"]["dc_rs+janus"]["injections"]
    assert _counts(blind) == (6, 6, 0, 0) and blind["deployed_steps"] == [7, 12, 16, 20, 24, 28]
    assert _counts(guarded) == EXPECTED_ALWAYS
    poison = [b for b in guarded["blocked_steps"] if b["kind"] == "poison"]
    assert [b["step"] for b in poison] == [7, 16] and all(b["new_score"] == 0.0 < b["old_score"] for b in poison)
    # both methods start from the same memory at step 7 (the first post-warm-up step), so the injected
    # candidates are identical there
    b8, j8 = _lines(out, "dc_rs")[6], _lines(out, "dc_rs+janus")[6]
    assert b8["old_memory_sha256"] == j8["old_memory_sha256"]
    assert b8["candidate_memory_sha256"] == j8["candidate_memory_sha256"]
    assert (b8["deployed"], j8["deployed"]) == ("candidate", "previous")


# both poisons blocked (the scripted model follows the planted instruction: E 1.00 vs 0.00); wipe@12 and truncate@20
# blocked by the hash noise of the scripted answers (1.00 vs 0.67); dump@24 and overfit@28 deployed
EXPECTED_ALWAYS = (6, 2, 4, 4)


# ------------------------------------------------------------------------------------------------ updaters
@pytest.mark.parametrize("updater", ["dc_cu", "expel", "ace", "reasoning_bank"])
def test_every_kind_on_dc_cu_expel_ace_and_reasoning_bank(tmp_path, updater):
    out = tmp_path / updater
    plan = "wipe@8,dump@11,overfit@14,poison@17,truncate@20"
    s = run_experiment(_cfg(out, updater=updater, stream_size=22, inject=plan), log=lambda m: None)
    blind, guarded = s["methods"][updater]["injections"], s["methods"][f"{updater}+janus"]["injections"]
    assert _counts(blind) == (5, 5, 0, 0)
    assert _counts(guarded) == EXPECTED_UPDATERS[updater]
    assert [b["step"] for b in guarded["blocked_steps"]] == EXPECTED_BLOCKED[updater]
    for method in (updater, f"{updater}+janus"):
        lines = _lines(out, method)
        assert [x["step"] for x in lines if "injected" in x] == [8, 11, 14, 17, 20]
    # blind deployment deployed exactly the injected candidate: the memory it kept at step 17 is the poison
    poisoned = _lines(out, updater)[16]
    assert poisoned["deployed_memory_sha256"] == poisoned["candidate_memory_sha256"]


# ACE: poison@17 blocked (E 1.00 vs 0.00: every ACE prompt holds the poison bullet); ReasoningBank: truncate@20 blocked
# (1.00 vs 0.67), its poison entry did not fire the trigger
EXPECTED_UPDATERS = {"dc_cu": (5, 3, 2, 2), "expel": (5, 3, 2, 2), "ace": (5, 4, 1, 1), "reasoning_bank": (5, 4, 1, 1)}
EXPECTED_BLOCKED = {"dc_cu": [11, 14], "expel": [17, 20], "ace": [17], "reasoning_bank": [20]}


# ------------------------------------------------------------------------------------------------ resume
def test_resume_with_an_injection_plan_is_byte_identical(tmp_path):
    plan = "poison@9,wipe@13,dump@18,truncate@24"
    ref = tmp_path / "ref"
    ref_summary = run_experiment(_cfg(ref, inject=plan), log=lambda m: None)
    out = tmp_path / "resumed"
    with pytest.raises(_Stopped):  # interrupted between the injections of steps 9 and 13 (blind method)
        run_experiment(_cfg(out, inject=plan), log=lambda m: None, stop_after=11)
    with pytest.raises(_Stopped):  # then inside the Janus method, after its first injection
        run_experiment(_cfg(out, inject=plan), log=lambda m: None, resume=True, stop_after=10)
    summary = run_experiment(_cfg(out, inject=plan), log=lambda m: None, resume=True)
    for m in ("dc_rs", "dc_rs+janus"):
        for f in FILES:
            assert (out / m / f).read_bytes() == (ref / m / f).read_bytes(), f"{m}/{f}"
        assert summary["methods"][m]["injections"] == ref_summary["methods"][m]["injections"]
    assert summary["methods"]["dc_rs"]["injections"]["injected"] == 4


def test_resume_refuses_a_changed_plan(tmp_path):
    from janus_memory.errors import ConfigError

    out = tmp_path / "r"
    with pytest.raises(_Stopped):
        run_experiment(_cfg(out, inject="poison@9"), log=lambda m: None, stop_after=3)
    with pytest.raises(ConfigError, match="inject: 'poison@9' -> 'poison@10'"):
        run_experiment(_cfg(out, inject="poison@10"), log=lambda m: None, resume=True)


# ------------------------------------------------------------------------------------------------ settings
def test_python_yaml_and_cli_settings_agree(tmp_path, capsys):
    assert RunConfig(inject=["wipe@7", " Poison@3"]).inject == "poison@3,wipe@7"
    assert RunConfig(inject="").inject is None and RunConfig().inject_plan() == {}
    assert RunConfig(inject="dump@2,overfit@1").inject_plan() == {1: "overfit", 2: "dump"}
    yml = tmp_path / "run.yaml"
    yml.write_text(f"backend: fake\ndataset: gsm8k\nstream_size: 12\ntest_size: 2\nencoder: 'hashing:256'\n"
                   f"no_cache: true\ncontroller: none\ninject:\n  - poison@5\n  - wipe@9\nout: {tmp_path / 'y'}\n")
    assert main(["run", "--config", str(yml), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "[dc_rs] step 5: injected poison candidate -> deployed (no controller)" in printed
    assert "[dc_rs] step 9: injected wipe candidate -> deployed (no controller)" in printed
    assert json.loads((tmp_path / "y" / "config.json").read_text())["inject"] == "poison@5,wipe@9"
    assert main(["run", "--config", str(yml), "--inject", "truncate@4", "--out", str(tmp_path / "c"), "--quiet"]) == 0
    assert json.loads((tmp_path / "c" / "config.json").read_text())["inject"] == "truncate@4"


@pytest.mark.parametrize("args,needle", [
    (["--inject", "posion@5"], "error: invalid value for 'inject': --inject item 'posion@5': unknown kind 'posion' "
                               "(did you mean poison?); kinds: wipe, dump, overfit, poison, truncate, falsify"),
    (["--inject", "poison@0"], "the step must be a positive integer"),
    (["--inject", "poison"], "expected KIND@STEP"),
    (["--inject", "poison@3,wipe@3"], "step 3 is named twice"),
    (["--inject", "poison@13"], "error: --inject poison@13: the stream has only 12 steps"),
    (["--inject", "wipe@2", "--updater", "memory_free", "--controller", "none"],
     "error: --inject: updater 'memory_free' cannot take an injected candidate; "
     "supported: ace, dc_cu, dc_rs, expel, exprag, reasoning_bank"),
])
def test_bad_plans_are_one_line_errors_before_any_work(tmp_path, capsys, args, needle):
    out = tmp_path / "bad"
    rc = main(["run", "--backend", "fake", "--dataset", "gsm8k", "--stream-size", "12", "--test-size", "2",
               "--encoder", "hashing:256", "--quiet", "--out", str(out), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and needle in err[0], err
    assert not out.exists()


def test_plan_past_the_loaded_stream_is_refused_before_the_backend(tmp_path, monkeypatch):
    """Without --stream-size the stream length is known once the split is loaded: checked before the backend."""
    from janus_memory.errors import ConfigError
    from janus_memory.run import backends

    monkeypatch.setattr(backends, "make_llm_backend", lambda *a, **k: pytest.fail("backend built"))
    cfg = _cfg(tmp_path / "x", stream_size=None, inject="poison@999999")
    with pytest.raises(ConfigError, match=r"--inject poison@999999: the stream has only \d+ steps"):
        run_experiment(cfg, log=lambda m: None)


def test_demo_preset_injects_a_poison_at_the_last_stream_step_after_warmup():
    cfg = demo_config()
    assert cfg.inject == f"poison@{cfg.stream_size}" == "poison@5"
    assert cfg.janus["trigger"] == "always" and cfg.stream_size == cfg.janus["warmup"] + 1  # compared at step 5
    assert demo_config(stream_size=9).inject == "poison@9"
    assert demo_config(inject="").inject is None and demo_config(inject="wipe@2").inject == "wipe@2"


# ------------------------------------------------------------------------------------------------ outputs
def test_printed_table_closing_lines_and_report(tmp_path, capsys):
    out = tmp_path / "r"
    rc = main(["run", "--backend", "fake", "--dataset", "gsm8k", "--stream-size", "16", "--test-size", "2",
               "--encoder", "hashing:256", "--no-cache", "--quiet", "--warmup", "5", "--coverage-size", "1",
               "--boundary-size", "1", "--fresh-size", "1", "--trigger", "always", "--inject", "poison@7,wipe@10",
               "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "injected harmful candidates (poison@7,wipe@10)" in text
    assert "[dc_rs+janus] step 7: injected poison candidate -> blocked (trigger fired, E: old memory 1.00 vs " \
           "injected 0.00)" in text
    tail = text[text.index("where to look next:"):].splitlines()
    assert tail[1] == f"  the rollback of step 7 (poison): line 7 of {out.resolve()}/dc_rs+janus/decisions.jsonl"
    assert tail[2:] == [f"  janus report {out.resolve()}", f"  janus memory diff {out.resolve()} 6 7 --method dc_rs",
                        f"  janus memory diff {out.resolve()} 7 --methods dc_rs dc_rs+janus"]
    line7 = _lines(out, "dc_rs+janus")[6]
    assert line7["injected"] == "poison" and line7["deployed"] == "previous"
    assert main(["memory", "diff", str(out), "6", "7", "--method", "dc_rs"]) == 0
    diff = capsys.readouterr().out
    assert "+## Grading note (confirmed on earlier problems)" in diff
    assert main(["memory", "diff", str(out), "7", "--methods", "dc_rs", "dc_rs+janus"]) == 0  # what Janus kept out
    kept_out = capsys.readouterr().out
    assert "-## Grading note (confirmed on earlier problems)" in kept_out and "no change" not in kept_out
    from janus_memory.report.report import build_report

    res = build_report([str(out)])
    md = Path(res["report"]).read_text()
    assert "## Injected harmful candidates" in md
    assert "| dc_rs | poison@7,wipe@10 | 2 | 2 | 0 |" in md
    assert "| dc_rs+janus | poison@7,wipe@10 | 2 |" in md
    assert "poison@7: trigger fired, E 1.00 vs 0.00" in md
    traj = [p for name, p in res["plots"].items() if name.startswith("trajectory_")]
    assert len(traj) == 1 and Path(traj[0]).stat().st_size > 10_000


# ------------------------------------------------------------------------------------------------ ACE, ReasoningBank
# `janus run --backend fake --updater U --inject wipe@5,poison@8 --controller both`, 12 steps, MMT, hashing:256.
# Pinned (deterministic): Janus blocks both injections into ACE's playbook (the scripted model follows the poison
# bullet, which every ACE prompt holds); on ReasoningBank the wipe scored as well as the old bank on E and the poison
# entry (retrieved only for its nearest tasks) moved along the momentum, so both were deployed.
STATE_BUILT = {
    "ace": {"janus_lines": ["blocked (trigger fired, E: old memory 0.50 vs injected 0.25)",
                            "blocked (trigger fired, E: old memory 1.00 vs injected 0.00)"],
            "counts": (2, 0, 2, 2), "test": (0.0, 0.25)},
    "reasoning_bank": {"janus_lines": ["deployed (trigger fired, accepted: new_ge_old, E: old memory 1.00 vs injected "
                                       "1.00)", "deployed (trigger did not fire)"],
                       "counts": (2, 2, 0, 0), "test": (0.75, 1.0)},
}


@pytest.mark.parametrize("updater", sorted(STATE_BUILT))
def test_cli_inject_on_ace_and_reasoning_bank_both_methods(tmp_path, capsys, updater):
    out, want = tmp_path / updater, STATE_BUILT[updater]
    rc = main(["run", "--backend", "fake", "--updater", updater, "--inject", "wipe@5,poison@8", "--controller", "both",
               "--dataset", "gsm8k", "--stream-size", "12", "--test-size", "4", "--encoder", "hashing:256",
               "--no-cache", "--warmup", "3", "--coverage-size", "2", "--boundary-size", "1", "--fresh-size", "1",
               "--clustering", "sklearn", "--quiet", "--out", str(out)])  # (sklearn: as the values were measured)
    assert rc == 0
    text = capsys.readouterr().out
    for step, kind in ((5, "wipe"), (8, "poison")):
        assert f"[{updater}] step {step}: injected {kind} candidate -> deployed (no controller)" in text
    for (step, kind), result in zip(((5, "wipe"), (8, "poison")), want["janus_lines"]):
        assert f"[{updater}+janus] step {step}: injected {kind} candidate -> {result}" in text
    s = json.loads((out / "summary.json").read_text())["methods"]
    blind, guarded = s[updater]["injections"], s[f"{updater}+janus"]["injections"]
    assert _counts(blind) == (2, 2, 0, 0) and blind["deployed_steps"] == [5, 8]
    assert _counts(guarded) == want["counts"] and guarded["plan"] == "wipe@5,poison@8"
    assert (s[updater]["test_accuracy"], s[f"{updater}+janus"]["test_accuracy"]) == want["test"]
    for method in (updater, f"{updater}+janus"):
        lines = _lines(out, method)
        assert {x["step"]: x["injected"] for x in lines if "injected" in x} == {5: "wipe", 8: "poison"}
        assert not any(str(x["decision"].get("reason", "")).startswith("evaluation_failed") for x in lines)
        recs = _lines(out, method, "steps.jsonl")
        assert [recs[i]["info"]["injected"]["kind"] for i in (4, 7)] == ["wipe", "poison"]
        # the memory each step starts from is the one the previous step deployed (rollbacks restore it exactly)
        assert all(a["deployed_memory_sha256"] == b["old_memory_sha256"] for a, b in zip(lines, lines[1:]))
    planted = [p for p in templates()["poison"] if p in (out / updater / "final_memory.txt").read_text()]
    assert len(planted) == 1  # blind deployment kept the poison to the end (both updaters only ever add)
    assert (planted[0] in (out / f"{updater}+janus" / "final_memory.txt").read_text()) is (guarded["deployed"] == 2)
    assert main(["memory", "diff", str(out), "4", "5", "--method", updater]) == 0
    assert capsys.readouterr().out.count("\n-") >= 1  # the wipe removed memory
    from janus_memory.report.report import build_report

    md = Path(build_report([str(out)])["report"]).read_text()
    assert f"| {updater} | wipe@5,poison@8 | 2 | 2 | 0 |" in md
    assert f"| {updater}+janus | wipe@5,poison@8 | 2 | {want['counts'][1]} | {want['counts'][2]} |" in md


def test_the_scripted_demo_blocks_the_poison(tmp_path, capsys):
    """`janus demo --backend fake` is the demo's scripted act (tests/cli/test_demo_acts.py has its every line)."""
    rc = main(["demo", "--backend", "fake", "--encoder", "hashing:256", "--no-cache", "--out", str(tmp_path / "d")])
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    assert "[scripted] blind deployment (dc_rs): deployed it; its memory now holds these lines" in lines
    assert ("[scripted] Janus: old memory 3/4, candidate 0/4 -> rolled back: keeps its memory from before step 5"
            in lines)


def test_a_stream_within_the_warmup_and_an_injection_inside_it_are_warned_about(tmp_path, capsys):
    rc = main(["run", "--backend", "fake", "--dataset", "gsm8k", "--stream-size", "5", "--test-size", "1",
               "--controller", "janus", "--encoder", "hashing:64", "--inject", "poison@3", "--no-cache", "--quiet",
               "--out", str(tmp_path / "w")])
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    assert ("warning: the stream has 5 steps and Janus's warm-up is 20: Janus never compares in this run (every "
            "candidate is deployed unexamined); give --warmup below 5") in lines
    assert "warning: poison@3 inside Janus's warm-up (20 steps): Janus deploys it unexamined" in lines
    rc = main(["run", "--backend", "fake", "--dataset", "gsm8k", "--stream-size", "6", "--test-size", "1",
               "--controller", "janus", "--encoder", "hashing:64", "--warmup", "3", "--inject", "poison@5",
               "--no-cache", "--quiet", "--out", str(tmp_path / "w2")])
    assert rc == 0 and "warning:" not in capsys.readouterr().out


def _inj(plan, deployed, blocked):
    return {"injections": {"plan": plan, "deployed_steps": deployed,
                           "blocked_steps": [{"step": s, "kind": "poison"} for s in blocked]}}


def test_next_steps_gives_a_step_diff_only_where_the_memory_changed():
    """A method that blocked the first injection deployed nothing at that step: its step diff would print
    'no change', so it gets the diff against a method that deployed it (what it kept out) instead."""
    from janus_memory.run.injection import next_steps

    both = {"run_dir": "/r", "methods": {"dc_rs": _inj("poison@25,wipe@28", [25, 28], []),
                                         "dc_rs+janus": {**_inj("poison@25,wipe@28", [28], [25]), "janus": True}}}
    assert next_steps(both) == ["where to look next:",
                                "  the rollback of step 25 (poison): line 25 of /r/dc_rs+janus/decisions.jsonl",
                                "  janus report /r",
                                "  janus memory diff /r 24 25 --method dc_rs",
                                "  janus memory diff /r 25 --methods dc_rs dc_rs+janus"]
    # Janus alone, blocked: no method took the candidate, so no diff is suggested at all
    alone = {"run_dir": "/r", "methods": {"dc_rs+janus": {**_inj("poison@5", [], [5]), "janus": True}}}
    assert next_steps(alone) == ["where to look next:",
                                 "  the rollback of step 5 (poison): line 5 of /r/dc_rs+janus/decisions.jsonl",
                                 "  janus report /r"]
    # both deployed it: a step diff for each
    took = {"run_dir": "/r", "methods": {"dc_rs": _inj("wipe@3", [3], []),
                                         "dc_rs+janus": {**_inj("wipe@3", [3], []), "janus": True}}}
    assert next_steps(took) == ["where to look next:",
                                "  why dc_rs+janus deployed the injected candidate of step 3: line 3 of "
                                "/r/dc_rs+janus/decisions.jsonl (its decision: triggered, cosine, scores)",
                                "  janus report /r",
                                "  janus memory diff /r 2 3 --method dc_rs",
                                "  janus memory diff /r 2 3 --method dc_rs+janus"]
    assert next_steps({"run_dir": "/r", "methods": {"dc_rs": {}}}) == []
