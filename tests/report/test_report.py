"""Reports (tables + PNG plots) and memory diff on synthesised run folders and one real fake-backend run."""
from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from janus_memory.report.memdiff import memory_diff
from janus_memory.report.report import build_report, load_method_runs

PNG = b"\x89PNG\r\n\x1a\n"
JANUS = {"warmup": 2, "coverage_size": 2, "boundary_size": 1, "fresh_size": 2}


def _sha(t: str) -> str:
    return hashlib.sha256(t.encode()).hexdigest()


def make_run(root: Path, dataset: str, updater: str, methods: dict, *, seed=0, janus=None, cell=None, memories=None,
             before_presets=False):
    """Write a minimal finished run folder. methods: {name: dict(test_accuracy, triggers, decisions=[...])}; optional
    per method: "lines" {step: extra decision-log fields}, "summary" {extra summary fields, e.g. usage, injections}.
    The run preset is paper (Janus preset paper); ``before_presets``: a config.json as stored before the presets
    (settings/migrate.py: it ran as the small preset, scikit-learn k-means, the identical-memory shortcut on)."""
    root.mkdir(parents=True)
    cfg = {"dataset": dataset, "updater": updater, "seed": seed, "janus": janus if janus is not None else JANUS}
    if not before_presets:
        cfg.update(preset="paper", twin_cache="separate")
    (root / "config.json").write_text(json.dumps(cfg))
    summ = {"dataset": dataset, "updater": updater, "methods": {}}
    db = sqlite3.connect(root / "run.sqlite")
    db.executescript("CREATE TABLE steps (method TEXT, step INTEGER, decision TEXT, record TEXT);"
                     "CREATE TABLE memories (method TEXT, step INTEGER, sha256 TEXT, parent TEXT, text TEXT);")
    for name, m in methods.items():
        decs = m.get("decisions", [])
        is_j = name.endswith("+janus")
        summ["methods"][name] = {
            "janus": is_j, "test_accuracy": m["test_accuracy"], "stream_tasks": len(decs),
            "triggers": m.get("triggers") if is_j else None, "trigger_rate": m.get("trigger_rate") if is_j else None,
            "accepts": m.get("accepts") if is_j else None, "rollbacks": m.get("rollbacks") if is_j else None,
            "checkpoints": m.get("checkpoints", []),
            "usage": {"janus": {"calls": 10, "cache_hits": 0, "prompt_tokens": 900, "completion_tokens": 100}} if is_j else {},
            **m.get("summary", {}),
        }
        d = root / name
        d.mkdir()
        lines, recs = [], []
        for i, dec in enumerate(decs, 1):
            line = {"step": i, "task_id": f"t{i}", "correct": True, "old_memory_sha256": _sha("(empty)" if i == 1 else "x"),
                    "decision": dec, **m.get("lines", {}).get(i, {})}
            rec = {"step": i, "task_id": f"t{i}", "correct": True,
                   "llm_calls": [{"role": "solver", "prompt_tokens": 100, "completion_tokens": 10},
                                 {"role": "curator", "prompt_tokens": 200, "completion_tokens": 20}]}
            lines.append(json.dumps(line))
            recs.append(json.dumps(rec))
            db.execute("INSERT INTO steps VALUES (?,?,?,?)", (name, i, json.dumps(line), json.dumps(rec)))
        (d / "decisions.jsonl").write_text("".join(x + "\n" for x in lines))
        (d / "steps.jsonl").write_text("".join(x + "\n" for x in recs))
        (d / "memories").mkdir()
        for step, text in (memories or {}).get(name, []):
            db.execute("INSERT INTO memories VALUES (?,?,?,?,?)", (name, step, _sha(text), None, text))
            (d / "memories" / f"{step:05d}_{_sha(text)[:12]}.txt").write_text(text)
    db.commit()
    db.close()
    (root / "summary.json").write_text(json.dumps(summ))
    if cell is not None:
        (root / "cell.json").write_text(json.dumps({"cell": cell, "suffix": cell[cell.index("["):] if "[" in cell else ""}))
    (root / "COMPLETE").write_text("ok\n")
    return root


def _decs(pattern: str) -> list[dict]:
    """'w' warm-up, '.' not triggered, 'A' triggered+accepted, 'R' triggered+rolled back; cosine -0.5 when triggered."""
    out = []
    for ch in pattern:
        if ch == "w":
            out.append({"phase": "warmup", "triggered": False, "accept": True, "cosine": None, "evaluator_calls": 0})
        else:
            trig = ch in "AR"
            out.append({"phase": "post", "triggered": trig, "accept": ch != "R", "cosine": -0.5 if trig else 0.5,
                        "evaluator_calls": 10 if trig else 0, "eval_ids": ["e1", "e2", "e3", "e4"] if trig else []})
    return out


@pytest.fixture
def grid_root(tmp_path):
    root = tmp_path / "grid" / "gpqa"
    # Table 1 rows on two datasets
    make_run(root / "memory_free" / "seed0", "gpqa", "memory_free", {"memory_free": {"test_accuracy": 0.5}})
    make_run(root / "dc_rs" / "seed0", "gpqa", "dc_rs", {"dc_rs": {"test_accuracy": 0.6}})
    make_run(root / "dc_rs" / "seed1", "gpqa", "dc_rs", {"dc_rs": {"test_accuracy": 0.7}}, seed=1)
    make_run(root / "dc_rs+janus" / "seed0", "gpqa", "dc_rs", {"dc_rs+janus": {
        "test_accuracy": 0.75, "triggers": 3, "trigger_rate": 0.5, "accepts": 2, "rollbacks": 1,
        "decisions": _decs("ww.A.AR."),
        "checkpoints": [{"fraction": 0.5, "step": 4, "test_accuracy": 0.5},
                        {"fraction": 1.0, "step": 8, "test_accuracy": 0.75}]}})
    make_run(tmp_path / "grid" / "humaneval" / "dc_rs" / "seed0", "humaneval", "dc_rs", {"dc_rs": {"test_accuracy": 0.9}})
    # trigger ablation (label from cell.json) and eval-set ablation (label from the folder name only)
    make_run(root / "dc_rs+janus[trigger=always]" / "seed0", "gpqa", "dc_rs", {"dc_rs+janus": {
        "test_accuracy": 0.7, "triggers": 6, "trigger_rate": 1.0, "accepts": 6, "rollbacks": 0,
        "decisions": _decs("wwAAAAAA")}}, janus={**JANUS, "trigger": "always"}, cell="dc_rs+janus[trigger=always]")
    make_run(root / "dc_rs+janus[use_fresh=false]" / "seed0", "gpqa", "dc_rs", {"dc_rs+janus": {
        "test_accuracy": 0.55, "triggers": 3, "trigger_rate": 0.5, "accepts": 3, "rollbacks": 0,
        "decisions": _decs("ww.A.AA.")}}, janus={**JANUS, "use_fresh": False})
    return tmp_path / "grid"


def test_tables_exact_values(grid_root, tmp_path):
    rep = build_report([str(grid_root)], str(tmp_path / "rep"))
    acc = rep["tables"]["accuracy"]
    assert acc["datasets"] == ["gpqa", "humaneval"]
    assert acc["labels"] == ["memory_free", "dc_rs", "dc_rs+janus"]
    lines = acc["markdown"].splitlines()
    assert lines[0] == "| Method | GPQA | HumanEval | Avg |"
    # dc_rs: seeds 0.6 and 0.7 -> mean 65.0, sample std 7.1; avg over (65, 90) = 77.5
    assert lines[3] == "| dc_rs | 65.0 ± 7.1 | 90.0 | 77.5 |"
    assert lines[2] == "| memory_free | 50.0 | — | — |"
    assert acc["cells"]["dc_rs"]["gpqa"]["n"] == 2

    trig = {r["policy"]: r for r in rep["tables"]["trigger"]["rows"]}
    assert list(trig) == ["base (no Janus)", "always", "mmt"]
    # the paper's controller: its cost measure (#Trig x configured |E|) beside what it evaluated
    assert trig["mmt"]["triggers"] == 3 and trig["mmt"]["eval_set_size"] == 5 and trig["mmt"]["paper_cost"] == 15
    assert trig["mmt"]["evaluations"] == 30  # 3 triggered steps x 10 evaluator calls in the decision log
    assert trig["mmt"]["janus_calls_paid"] == 10  # the stored usage of the janus role
    assert trig["always"]["paper_cost"] == 30 and trig["always"]["trigger_rate"] == 1.0
    assert trig["base (no Janus)"]["test_accuracy"] == 0.6  # only seed 0 is shared with the Janus policies

    ev = rep["tables"]["evalset"]["rows"]
    assert [(r["variant"], r["eval_set_size"], r["test_accuracy"]) for r in ev] == [("full", 5, 0.75), ("w/o fresh", 3, 0.55)]
    # two seeds of dc_rs are a seed sweep (another split each), not a stream-order study
    assert rep["tables"]["stream_order"]["rows"] == []
    so = rep["tables"]["seeds"]["rows"]
    assert [(r["label"], r["seeds"]) for r in so] == [("dc_rs", [0, 1])]

    md = Path(rep["report"]).read_text()
    # MMT's 3 triggers beside; the rate in %; |E| = 4 members built per trigger of 5 configured; base: no trigger
    # no n_evaluated in these decision logs: tasks read n/a
    assert "| always | 70.0 | 6 | 3 | 100.0% | 2+1+2 | 4.0 / 5 | n/a | 60 | 10 | 30 | 6/0 |" in md
    assert "| base (no Janus) | 60.0 | — | — | — | — | — | — | — | — | — | — |" in md
    assert ("| Policy | Test acc | #Trig | MMT #Trig | Trig. rate | Evaluation set | \\|E\\| used (mean) / configured | "
            "Tasks read (mean) | Evaluations needed | Janus calls paid | Paper's cost (#Trig×\\|E\\|) | "
            "Accepts/Rollbacks |") in md
    cost = {(r["dataset"], r["label"]): r for r in rep["tables"]["cost"]["rows"]}
    assert (cost["gpqa", "dc_rs+janus"]["calls"], cost["gpqa", "dc_rs+janus"]["tokens"]) == (10, 1000)
    assert cost["gpqa", "dc_rs"]["calls"] is None  # no usage stored: n/a, never 0
    assert "| GPQA | dc_rs | n/a | n/a | n/a | — | — | — |" in md
    assert "| GPQA | dc_rs+janus[trigger=always] | 10 | 1,000 | 0 | 10 | 1,000 | 60 |" in md
    assert trig["mmt"]["eval_set_used"] == 4.0 and trig["always"]["eval_set_used"] == 4.0
    assert "## Seed sweep" in md and "## Stream order" not in md


def test_table_3_says_what_its_columns_mean(grid_root, tmp_path):
    """The controller, τ, the evaluation set and the costs are named in a legend between the heading and the table,
    as the other tables' legends are; the paper's cost measure is there for the paper's controller, beside what it
    evaluated."""
    from janus_memory.report.tables import COST_LEGEND, PAPER_COST_LEGEND

    md = Path(build_report([str(grid_root)], str(tmp_path / "rep"))["report"]).read_text().splitlines()
    at = md.index("## Table 3: Janus cost")
    assert md[at + 1:at + 4] == [
        "", "Janus = the controller's preset (paper, recommended, custom: what differs); τ = cosine threshold of the "
            "trigger (— for a trigger that does not read it); evaluation set: coverage K' + boundary K_b + fresh K_F "
            "for the paper's hybrid set (K = K' + K_b), or the panel's size, and for a sequential rule how many tasks "
            f"a comparison reads. {COST_LEGEND}. {PAPER_COST_LEGEND}.", ""]
    assert md[at + 4] == ("| Dataset | Method | Janus | τ | Evaluation set | Test acc | #Trig | Trig. rate | Evaluations needed "
                          "| Janus calls paid | Paper's cost (#Trig×\\|E\\|) |")
    assert md[at + 6:at + 9] == ["| GPQA | dc_rs+janus | paper | 0 | 2+1+2 | 75.0 | 3 | 50.0% | 30 | 10 | 15 |",
                                 "| GPQA | dc_rs+janus[trigger=always] | paper | — | 2+1+2 | 70.0 | 6 | 100.0% | 60 | 10 | "
                                 "30 |",
                                 "| GPQA | dc_rs+janus[use_fresh=false] | paper | 0 | 2+1 | 55.0 | 3 | 50.0% | 30 | 10 | 9 |"]


def test_plots_are_pngs(grid_root, tmp_path):
    rep = build_report([str(grid_root)], str(tmp_path / "rep"))
    names = set(rep["plots"])
    assert "stream_order" not in names  # a seed sweep is no stream-order study
    assert {"checkpoints", "evalset", "timeline_gpqa_dc_rs+janus_seed0",
            "timeline_gpqa_dc_rs+janus_trigger-always_seed0", "token_overhead"} <= names
    # the base/+Janus pair is drawn once, in the overhead view; no per-method token plot for it or for ablation cells
    assert not {"tokens_gpqa_dc_rs+janus_seed0", "tokens_gpqa_dc_rs_seed0"} & names
    assert not any(n.startswith("tokens_") and "trigger" in n for n in names)
    for p in rep["plots"].values():
        data = Path(p).read_bytes()
        assert data[:8] == PNG and len(data) > 5000


def test_cumulative_tokens_exact(grid_root):
    from janus_memory.report.plots import cumulative_tokens

    r = next(r for r in load_method_runs([grid_root]) if r.label == "dc_rs+janus")
    steps, cum, est = cumulative_tokens(r)
    assert steps == list(range(1, 9))
    assert cum["solver"][-1] == 8 * 110 and cum["curator"][-1] == 8 * 220
    # 3 triggered steps x 10 evaluator calls x (1000 tokens / 10 calls)
    assert cum["janus"] == [0, 0, 0, 1000, 1000, 2000, 3000, 3000] and est == {"janus": True}


def test_report_bad_input(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        build_report([str(tmp_path / "nope")], None)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no finished run"):
        build_report([str(tmp_path / "empty")], None)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "summary.json").write_text("{not json")
    with pytest.raises(ValueError, match="has no run.sqlite: its numbers cannot be checked"):
        build_report([str(bad)], None)  # nothing to check the summary against
    sqlite3.connect(bad / "run.sqlite").executescript("CREATE TABLE steps (method TEXT, step INTEGER, decision TEXT, "
                                                      "record TEXT);")
    (bad / "COMPLETE").write_text("ok\n")
    with pytest.raises(ValueError, match="not valid JSON"):
        build_report([str(bad)], None)
    (bad / "summary.json").write_text('{"x": 1}')
    with pytest.raises(ValueError, match="no 'methods'"):
        build_report([str(bad)], None)
    with pytest.raises(ValueError, match="at least one"):
        build_report([], None)


# ------------------------------------------------------------------------------------------------ memory diff
@pytest.fixture
def mem_run(tmp_path):
    mems = {"dc_rs+janus": [(1, "rule a\nrule b\n"), (3, "rule a\nrule c\n")], "dc_rs": [(1, "x\n")]}
    return make_run(tmp_path / "run", "gsm8k", "dc_rs",
                    {"dc_rs": {"test_accuracy": 0.5, "decisions": _decs("wwww")},
                     "dc_rs+janus": {"test_accuracy": 0.5, "triggers": 0, "decisions": _decs("wwww")}}, memories=mems)


def test_memory_diff_exact(mem_run):
    out = memory_diff(mem_run, 2, 4)  # default: the +janus method; step 2 -> version 1, step 4 -> version 3
    a, c = _sha("rule a\nrule b\n")[:12], _sha("rule a\nrule c\n")[:12]
    assert out == (f"--- dc_rs+janus@step2 (deployed at step 1, sha256 {a})\n"
                   f"+++ dc_rs+janus@step4 (deployed at step 3, sha256 {c})\n"
                   "@@ -1,2 +1,2 @@\n rule a\n-rule b\n+rule c\n")
    # step 0: the initial "(empty)" memory is recovered from step 1's old_memory_sha256
    assert memory_diff(mem_run, 0, 1, method="dc_rs").splitlines()[2:] == ["@@ -1 +1 @@", "-(empty)",
                                                                          "\\ No newline at end of file", "+x"]
    assert memory_diff(mem_run, 1, 2).startswith("no change: dc_rs+janus@step1")


def test_memory_diff_files_fallback(mem_run):
    with_db = memory_diff(mem_run, 2, 4)
    (mem_run / "run.sqlite").unlink()
    assert memory_diff(mem_run, 2, 4) == with_db


def test_memory_diff_files_fallback_refuses_a_file_whose_content_is_not_its_name(mem_run, capsys):
    """Without run.sqlite the memories/ files are the only record: one whose content does not hash to the sha256
    prefix in its name (edited or damaged) is named in one error line, never shown under that name's hash."""
    from janus_memory.cli import main
    from janus_memory.errors import RunFolderError

    (mem_run / "run.sqlite").unlink()
    kept, evil = _sha("rule a\nrule c\n")[:12], _sha("EVIL LINE\n")[:12]
    name = f"00003_{kept}.txt"
    bad = mem_run / "dc_rs+janus" / "memories" / name
    assert bad.exists()
    bad.write_text("EVIL LINE\n", encoding="utf-8")
    expect = (f"{bad} is damaged: its content's sha256 begins {evil}, not {kept} as its "
              "name says (the file was edited or damaged after the run wrote it)")
    with pytest.raises(RunFolderError) as e:
        memory_diff(mem_run, 2, 4)
    assert str(e.value) == expect
    capsys.readouterr()
    rc = main(["memory", "diff", str(mem_run), "2", "4"])
    out = capsys.readouterr()
    assert (rc, out.out, out.err) == (2, "", f"error: {expect}\n")


def test_memory_diff_bad_input(mem_run, tmp_path):
    with pytest.raises(ValueError, match=r"step_b=5 is out of range .* to 4"):
        memory_diff(mem_run, 0, 5)
    with pytest.raises(ValueError, match="step_a=-1 is out of range"):
        memory_diff(mem_run, -1, 2)
    with pytest.raises(ValueError, match="unknown method 'expel'.*dc_rs, dc_rs\\+janus"):
        memory_diff(mem_run, 1, 2, method="expel")
    with pytest.raises(ValueError, match="integer"):
        memory_diff(mem_run, "1", 2)
    with pytest.raises(ValueError, match="not a run folder"):
        (tmp_path / "plain").mkdir()
        memory_diff(tmp_path / "plain", 0, 1)


# ------------------------------------------------------------------------------------------------ real pipeline
def test_report_and_diff_on_fake_run(tmp_path):
    from janus_memory.run.experiment import run_experiment
    from janus_memory.settings.config import RunConfig

    cfg = RunConfig(dataset="gsm8k", stream_size=10, test_size=4, backend="fake", encoder="hashing",
                    cache_dir=str(tmp_path / "cache"), janus={**JANUS, "warmup": 3}, checkpoints=[0.2, 0.6],
                    out=str(tmp_path / "run"))
    summary = run_experiment(cfg, log=lambda m: None)
    rep = build_report([cfg.out], None)
    assert Path(rep["out_dir"]) == tmp_path / "run" / "report"
    assert {"checkpoints", "timeline_gsm8k_dc_rs+janus_seed0", "token_overhead"} <= set(rep["plots"])
    row = {r["label"]: r for r in rep["tables"]["janus_cost"]["rows"]}["dc_rs+janus"]
    m = summary["methods"]["dc_rs+janus"]
    assert row["triggers"] == m["triggers"] and row["paper_cost"] == m["triggers"] * 5
    # what it evaluated is the controller's own count, and (no cache hit, no batching here) what the run paid
    assert row["evaluations"] == m["janus_stats"]["evaluator_calls"] == row["janus_calls_paid"]
    assert rep["tables"]["accuracy"]["cells"]["dc_rs"]["gsm8k"]["mean"] == summary["methods"]["dc_rs"]["test_accuracy"]
    diff = memory_diff(cfg.out, 0, 10, method="dc_rs")
    assert diff.startswith("--- dc_rs@step0 (deployed at step 0, sha256 d29a0939bcb5)\n+++ dc_rs@step10")
    final = (tmp_path / "run" / "dc_rs" / "final_memory.txt").read_text()
    assert all(line[1:] in final for line in diff.splitlines()[3:] if line.startswith("+") and not line.startswith("+++"))


def test_paired_numbers_exact():
    from janus_memory.report.paired import mcnemar_exact, paired_ci, paired_compare

    assert mcnemar_exact(2, 8) == 0.109375  # 2 * (1 + 10 + 45) / 1024
    assert mcnemar_exact(0, 6) == 0.03125
    assert mcnemar_exact(5, 5) == 1.0 and mcnemar_exact(0, 0) == 1.0
    # Newcombe's square-and-add interval (both right, only +Janus right, only base right, neither)
    r6 = lambda ci: tuple(round(x, 6) for x in ci)  # noqa: E731
    assert r6(paired_ci(20, 8, 2, 20)) == (-0.005089, 0.237269)
    # published worked examples (Fagerland, Lydersen & Laake 2014): Cavo et al. and Bentur et al. tables
    assert r6(paired_ci(59, 6, 16, 80)) == (-0.118621, -0.004625)
    assert r6(paired_ci(1, 1, 7, 12)) == (-0.50692, -0.025559)
    # the real-model run that showed the Wald interval's problem: n = 10, 3 vs 0 discordant, exact p = 0.25
    assert r6(paired_ci(4, 3, 0, 3)) == (-0.046654, 0.550795) and mcnemar_exact(0, 3) == 0.25
    assert r6(paired_ci(3, 0, 0, 7)) == (-0.200193, 0.200193)  # no item differs: not a degenerate [0, 0]
    assert paired_ci(0, 0, 0, 0) == (0.0, 0.0)
    lo, hi = paired_ci(0, 10, 0, 0)
    assert hi == 1.0 and 0 < lo < 1  # truncated at the bounds
    base = {"a": True, "b": True, "c": False, "d": False, "e": True}
    jan = {"a": True, "b": False, "c": True, "d": True, "x": True}
    r = paired_compare(base, jan)
    assert (r["n"], r["base_only"], r["janus_only"], r["unmatched"]) == (4, 1, 2, 2)
    assert (r["base_acc"], r["janus_acc"], r["diff"], r["p_mcnemar"]) == (0.5, 0.75, 0.25, 1.0)


def _with_tests(root: Path, method: str, correct: list[bool]):
    (root / method / "test.jsonl").write_text(
        "".join(json.dumps({"task_id": f"q{i}", "correct": c}) + "\n" for i, c in enumerate(correct)))


def test_report_paired_table_setup_caption_and_size_groups(tmp_path):
    a = make_run(tmp_path / "a", "gsm8k", "dc_rs", {"dc_rs": {"test_accuracy": 0.4}, "dc_rs+janus": {"test_accuracy": 0.8}})
    _with_tests(a, "dc_rs", [True, True, False, False, False])
    _with_tests(a, "dc_rs+janus", [True, True, True, True, False])
    cfg = json.loads((a / "config.json").read_text())
    (a / "config.json").write_text(json.dumps({**cfg, "backend": "fake", "encoder": "hashing", "test_size": 5}))
    b = make_run(tmp_path / "b", "gsm8k", "dc_rs", {"dc_rs": {"test_accuracy": 0.9}})
    cfg = json.loads((b / "config.json").read_text())
    (b / "config.json").write_text(json.dumps({**cfg, "backend": "fake", "encoder": "hashing", "test_size": 50}))
    rep = build_report([str(tmp_path / "a"), str(tmp_path / "b")], str(tmp_path / "rep"))
    assert [s["caption"] for s in rep["sections"]] == [
        "backend fake, model scripted, encoder hashing, run preset paper; Janus paper; GSM8K: stream n=0, test n=?; "
        "seeds 0",
        "backend fake, model scripted, encoder hashing, run preset paper; GSM8K: stream n=0, test n=?; seeds 0"]
    assert rep["tables"]["accuracy"]["labels"] == ["dc_rs", "dc_rs+janus"]  # the 5-item run, not merged with b
    assert rep["sections"][1]["tables"]["accuracy"]["cells"]["dc_rs"]["gsm8k"]["mean"] == 0.9
    p = rep["tables"]["paired"]["rows"]
    assert [(x["n"], x["base_only"], x["janus_only"], x["diff"], x["p_mcnemar"]) for x in p] == [(5, 0, 2, 0.4, 0.5)]
    md = Path(rep["report"]).read_text()
    assert "These runs do not share one setup: 2 groups" in md
    assert ("| GSM8K | dc_rs vs dc_rs+janus | a | 0 | 5 | 40.0 | 80.0 | +40.0 | [-16.3, +72.6] | 2/0 | "
            "0.5 |") in md  # the run folder by its name; Newcombe: both 2, Janus-only 2, base-only 0, neither 1


@pytest.mark.parametrize("triggers, decisions, cause", [
    (5, "wwAAAAA", "MMT fired on most post-warm-up steps (5 triggers)"),
    (0, "wwwww", "the stream has no step after the Janus warm-up (no trigger could fire)"),
])
def test_periodic_period_one_is_flagged_with_its_cause(tmp_path, triggers, decisions, cause):
    from janus_memory.report.report import load_method_runs
    from janus_memory.report.tables import trigger_table

    root = tmp_path / "g"
    make_run(root / "dc_rs" / "seed0", "gpqa", "dc_rs", {"dc_rs": {"test_accuracy": 0.5}})
    for cell, janus in (("dc_rs+janus", JANUS), ("dc_rs+janus[trigger=periodic]",
                                                 {**JANUS, "trigger": "periodic", "trigger_period": 1})):
        make_run(root / cell / "seed0", "gpqa", "dc_rs", {"dc_rs+janus": {
            "test_accuracy": 0.6, "triggers": triggers, "decisions": _decs(decisions)}}, janus=janus,
            cell=None if cell == "dc_rs+janus" else cell)
    t = trigger_table(load_method_runs([str(root)]))
    assert t["notes"] == [f"GPQA / dc_rs seed 0: the matched periodic trigger degenerated to period 1 (= always) "
                          f"because {cause}; its row is not a distinct policy"]
    assert f"| periodic | 60.0 | {triggers} | {triggers} |" in t["markdown"]


def test_cross_method_memory_diff_exact(mem_run, capsys):
    from janus_memory.cli import main
    from janus_memory.report.memdiff import cross_method_diff

    x, c = _sha("x\n")[:12], _sha("rule a\nrule c\n")[:12]
    out = cross_method_diff(mem_run, 3, ("dc_rs", "dc_rs+janus"))
    assert out == (f"memory at step 3: dc_rs (1 lines, sha256 {x}) vs dc_rs+janus (2 lines, sha256 {c})\n"
                   "dc_rs+janus kept out 1 line(s) of dc_rs's memory and holds 2 line(s) dc_rs's memory does not\n"
                   "--- dc_rs@step3 (deployed at step 1)\n+++ dc_rs+janus@step3 (deployed at step 3)\n"
                   "@@ -1 +1,2 @@\n-x\n+rule a\n+rule c\n")
    assert main(["memory", "diff", str(mem_run), "3", "--methods", "dc_rs", "dc_rs+janus"]) == 0
    assert capsys.readouterr().out == out
    assert main(["memory", "diff", str(mem_run), "3", "4", "--methods", "dc_rs", "dc_rs+janus"]) == 2
    assert capsys.readouterr().err.startswith("error: --methods compares two methods at one step")
    with pytest.raises(ValueError, match="out of range"):
        cross_method_diff(mem_run, 9, ("dc_rs", "dc_rs+janus"))
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        cross_method_diff(mem_run, 1, ("dc_rs", "nope"))


def test_paired_verdicts_only_count_real_booleans():
    from janus_memory.report.paired import _verdicts, paired_compare

    recs = [{"task_id": "a", "correct": True}, {"task_id": "b", "correct": "false"}, {"task_id": "c"},
            {"task_id": "d", "correct": None}, {"task_id": "e", "correct": False}, "junk", {"correct": True}]
    assert _verdicts(recs) == {"a": True, "e": False}
    r = paired_compare({"a": True}, {"z": True})  # nothing shared
    assert (r["n"], r["base_acc"], r["diff"], r["unmatched"]) == (0, None, None, 2)



def test_timelines_of_several_folders_with_one_dataset_label_and_seed_do_not_overwrite_each_other(tmp_path):
    root = tmp_path / "runs"
    for folder in ("clean", "inj"):
        make_run(root / folder, "gsm8k", "dc_rs", {"dc_rs+janus": {"test_accuracy": 0.5, "triggers": 5,
                                                                   "decisions": _decs("wwAAAAA")}})
    rep = build_report([str(root)], str(tmp_path / "rep"))
    timelines = sorted(k for k in rep["plots"] if k.startswith("timeline_"))
    # the same settings and seed in two folders: two rows named by folder, so two timelines named by folder
    assert timelines == ["timeline_gsm8k_dc_rs+janus_clean_seed0", "timeline_gsm8k_dc_rs+janus_inj_seed0"]
    assert all(Path(rep["plots"][k]).is_file() for k in timelines)


def test_a_run_stored_before_the_presets_and_the_cost_records_says_what_ran_and_n_a(tmp_path):
    """An old run folder: no preset in config.json (it ran as the small preset does: scikit-learn k-means, the
    identical-memory shortcut on; settings/migrate.py), no evaluator_calls in its decision log, no usage stored. Its
    controller is described as it ran, its rows keep the trigger's name, and every cost it cannot tell is n/a: no
    number invented, and no paper's cost for a controller that was not the paper's."""
    decs = [{k: v for k, v in d.items() if k != "evaluator_calls"} for d in _decs("ww.AR.")]
    make_run(tmp_path / "old", "gsm8k", "dc_rs", {
        "dc_rs": {"test_accuracy": 0.5, "summary": {"usage": None}},
        "dc_rs+janus": {"test_accuracy": 0.5, "triggers": 2, "trigger_rate": 0.5, "accepts": 1, "rollbacks": 1,
                        "decisions": decs, "summary": {"usage": None}}}, before_presets=True)
    rep = build_report([str(tmp_path / "old")], str(tmp_path / "rep"))
    (row,) = [r for r in rep["tables"]["trigger"]["rows"] if r["policy"] != "base (no Janus)"]
    assert (row["policy"], row["controller"], row["evaluations"], row["janus_calls_paid"], row["paper_cost"]) == (
        "mmt", "custom: paper with clustering=sklearn, same_memory_shortcut=True", None, None, None)
    md = Path(rep["report"]).read_text()
    assert "| mmt | 50.0 | 2 | 2 | 50.0% | 2+1+2 | 4.0 / 5 | n/a | n/a | n/a | 1/1 |" in md
    assert "Paper's cost" not in md
    assert "| GSM8K | dc_rs+janus | n/a | n/a | n/a | n/a | n/a | n/a |" in md
    assert "- Run preset: not recorded (a run made before the presets; it ran as the small preset does)" in md
    assert "- Janus preset: custom: paper with clustering=sklearn, same_memory_shortcut=True" in md
