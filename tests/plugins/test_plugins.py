"""A new updater, task family and dataset registered from OUTSIDE the package (tests/plugin_example) run through
`janus run`, `janus grid` and `janus report` with no edit to janus_memory."""
import json
import sys
from pathlib import Path

import pytest

from janus_memory import registry
from janus_memory.cli import main

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "plugin_example"
FAST = ["--backend", "fake", "--encoder", "hashing", "--quiet", "--stream-size", "10", "--test-size", "4",
        "--warmup", "2", "--coverage-size", "1", "--boundary-size", "1", "--fresh-size", "1", "--trigger", "always"]


@pytest.fixture(autouse=True)
def _plugin_path(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.setenv("PYTHONPATH", f"{PLUGIN_DIR}:{Path(__file__).resolve().parents[2] / 'src'}")
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(registry.PLUGINS_ENV, "")  # recorded, so the teardown removes what the CLI's --plugin writes
    monkeypatch.delenv(registry.PLUGINS_ENV)
    yield
    registry.UPDATERS.pop("notes", None)
    registry.DATASETS.pop("toy_sums", None)
    registry.FAMILIES.pop("toy", None)
    registry._LOADED.discard("janus_toy_plugin")
    sys.modules.pop("janus_toy_plugin", None)


def test_unknown_plugin_updater_without_the_plugin(tmp_path, capsys):
    assert main(["run", *FAST, "--dataset", "toy_sums", "--updater", "notes", "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip() == ("error: unknown dataset 'toy_sums'; choose one of: aime, apibench_hf, "
                                               "gpqa, gsm8k, humaneval, math, math500, mmlu_pro_eng, mmlu_pro_phy, rules, "
                                               "rules_late, rules_small")


def test_missing_plugin_module_is_one_line(tmp_path, capsys):
    assert main(["--plugin", "no_such_plugin_mod", "run", *FAST, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: cannot import plugin module 'no_such_plugin_mod'") and "\n" not in err


def test_plugin_updater_and_dataset_run_grid_report(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["--plugin", "janus_toy_plugin", "run", *FAST, "--dataset", "toy_sums", "--updater", "notes",
               "--controller", "both", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["methods"]) == {"notes", "notes+janus"}
    base = summary["methods"]["notes"]
    # the fake answers with the plugin family's own format; 1 in 4 replies is scripted wrong
    assert base["stream_tasks"] == 10 and base["test_tasks"] == 4
    assert 0 < base["online_accuracy"] < 1
    j = summary["methods"]["notes+janus"]
    assert j["triggers"] == 8 and j["accepts"] + j["rollbacks"] == 8  # trigger=always after 2 warm-up steps
    steps = [json.loads(x) for x in (out / "notes" / "steps.jsonl").read_text().splitlines()]
    assert steps[0]["output"].splitlines()[-1].startswith("So the answer is ") and steps[0]["status"] == "ok"
    assert (out / "prompts" / "task_math.txt").exists()
    # grid: the plugin updater plus the registered baselines, in worker processes that load the plugin via the env
    root = tmp_path / "grid"
    rc = main(["--plugin", "janus_toy_plugin", "grid", *FAST, "--dataset", "toy_sums", "--updaters", "notes",
               "--no-trigger-ablation", "--no-evalset-ablation", "--workers", "1", "--out", str(root)])
    assert rc == 0, capsys.readouterr()
    cells = sorted(p.parent.name for p in (root / "toy_sums").glob("*/seed0"))
    assert cells == ["exprag", "memory_free", "notes", "notes+janus"]
    rc = main(["--plugin", "janus_toy_plugin", "report", str(root), "--out", str(tmp_path / "rep")])
    assert rc == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| Method | Toy Sums | Avg |" in md
    body = [line.split(" | ")[0].lstrip("| ") for line in md.splitlines()
            if line.startswith("| ") and not line.startswith("| Method")]
    assert body[:4] == ["memory_free", "exprag", "notes", "notes+janus"]  # Table 1: baselines first (table_rank facts)


def test_a_plugin_that_fails_at_import_is_one_line(tmp_path, capsys, monkeypatch):
    """The adversary's plugin raised RuntimeError at import: `janus --plugin badplug report DIR` printed a traceback."""
    (tmp_path / "badplug_x29.py").write_text('raise RuntimeError("boom")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(registry.PLUGINS_ENV, "")
    assert main(["--plugin", "badplug_x29", "report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: plugin module 'badplug_x29' failed while it was imported (RuntimeError: boom); fix the "
                   "module or leave it out of JANUS_PLUGINS / --plugin")


def test_plugin_after_the_subcommand_says_where_it_goes(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--plugin", "mymod", "--backend", "fake"])
    assert e.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "error: unrecognized arguments: --plugin (a global option: put it before the subcommand, `janus --plugin "
        "MODULE run ...`); see `janus run --help`")


# ------------------------------------------------------------------------------------------------ injection
def test_plugin_updater_takes_every_injected_kind_through_the_base_hook():
    """The toy updater adds ``supports_injection`` and ``load_memory_text`` only (no edit to janus_memory.inject):
    each kind's candidate is exactly the sheet built from its memory text, and snapshot / rollback see it."""
    import janus_toy_plugin
    from janus_memory.inject.candidates import KINDS, harmful_candidate, inject_candidate, supports, templates
    from janus_memory.values import Task
    from updater_fakes import ExactFamily, ScriptedLLM

    assert supports("notes") and not supports("memory_free")
    tasks = [Task(f"t{i}", "toy_sums", f"What is {i} plus {i}?", str(2 * i)) for i in range(1, 5)]
    llm = ScriptedLLM(responder=lambda m, role, p: f"ANSWER: {2 * int(m[-1]['content'].split()[3])}")
    for kind in KINDS:
        upd = janus_toy_plugin.Notes(llm=llm, family=ExactFamily(), encoder=None)
        for t in tasks[:-1]:
            upd.step(t)
        before = upd.snapshot()
        out = upd.step(tasks[-1])
        assert upd.notes[-1] == "- What is 4 plus 4? -> 8"
        new = inject_candidate(upd, out, kind, task=tasks[-1], step=4, seed=1, before=before)
        want = harmful_candidate(kind, out.old_memory, tasks[-1], updater_kind="notes", seed=1, step=4,
                                 answer="ANSWER: 8")
        assert new.candidate_memory == upd.memory_text() == want
        assert new.info["injected"]["kind"] == kind and new.candidate_rejected is None
        upd.rollback(before)
        assert upd.memory_text() == out.old_memory == "- What is 1 plus 1? -> 2\n- What is 2 plus 2? -> 4\n" \
                                                       "- What is 3 plus 3? -> 6"
    # the last kind, falsify: one number the notes state given another value, everywhere in its entry
    assert want == "- What is 1 plus 1? -> 2\n- What is 2 plus 2? -> 4\n- What is 6 plus 6? -> 6"
    poison = harmful_candidate("poison", out.old_memory, tasks[-1], updater_kind="notes", seed=1, step=4)
    head, rule, blank, *rest = poison.split("\n")
    assert head == templates()["dc_poison_header"] and rule[2:] in templates()["poison"] and blank == ""
    assert "\n".join(rest) == out.old_memory  # planted on top of the notes, as on a DC cheatsheet


def test_plugin_updater_injected_run_end_to_end(tmp_path, capsys):
    out = tmp_path / "inj"
    rc = main(["--plugin", "janus_toy_plugin", "run", *FAST, "--dataset", "toy_sums", "--updater", "notes",
               "--controller", "both", "--inject", "poison@4,wipe@6,truncate@8", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    methods = json.loads((out / "summary.json").read_text())["methods"]
    blind, guarded = methods["notes"]["injections"], methods["notes+janus"]["injections"]
    assert (blind["injected"], blind["deployed"], blind["blocked"]) == (3, 3, 0)
    assert (guarded["injected"], guarded["deployed"], guarded["blocked"]) == (3, 1, 2)
    assert [(b["step"], b["kind"]) for b in guarded["blocked_steps"]] == [(4, "poison"), (6, "wipe")]
    lines = [json.loads(x) for x in (out / "notes" / "decisions.jsonl").read_text().splitlines()]
    assert [(x["step"], x["injected"]) for x in lines if x.get("injected")] == [(4, "poison"), (6, "wipe"),
                                                                                 (8, "truncate")]
    capsys.readouterr()
    assert main(["--plugin", "janus_toy_plugin", "memory", "diff", str(out), "3", "4", "--method", "notes"]) == 0
    diff = capsys.readouterr().out
    assert "+## Grading note (confirmed on earlier problems)\n" in diff
