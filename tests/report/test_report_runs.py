"""Which runs `janus report` averages, how rows that share a method name are told apart, unfinished folders and the
console table (a fresh-user review of `janus report`).

Run folders are synthesised (test_report.make_run, then a full config.json as `janus run` writes it); one test makes
real ones with the scripted fake backend."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console

from janus_memory.errors import RunFolderError
from janus_memory.report.report import build_report
from janus_memory.settings.config import RunConfig
from test_report import JANUS, _decs, _with_tests, make_run

J = {"test_accuracy": 0.6, "triggers": 2, "decisions": _decs("ww.AA.")}


def _config(root: Path, *, seed=0, controller="both", janus=None, llm=None, updater_config=None, **over) -> None:
    """config.json as `janus run` writes it (every default resolved), with these settings."""
    cfg = RunConfig(dataset="gsm8k", updater="dc_rs", backend="fake", encoder="hashing", stream_size=6, test_size=5,
                    seed=seed, controller=controller, out=str(root)).model_dump()
    cfg["janus"].update({**JANUS, **(janus or {})})
    cfg["llm"].update(llm or {})
    cfg["updater_config"].update(updater_config or {})
    cfg.update(over)
    (root / "config.json").write_text(json.dumps(cfg))


def _run(root: Path, accs: dict, *, seed=0, tests=None, cell=None, dataset="gsm8k", **settings) -> Path:
    """A finished run folder of the methods in ``accs`` ({method: test accuracy}) with these settings."""
    methods = {m: ({**J, "test_accuracy": a} if m.endswith("+janus") else {"test_accuracy": a}) for m, a in accs.items()}
    make_run(root, dataset, "dc_rs", methods, seed=seed, cell=cell)
    _config(root, seed=seed, controller="both" if len(accs) > 1 else ("janus" if "+janus" in next(iter(accs)) else
                                                                       "none"), dataset=dataset, **settings)
    for m, correct in (tests or {}).items():
        _with_tests(root, m, correct)
    return root


def _table1(rep: dict, i: int = 0) -> list[str]:
    return rep["sections"][i]["tables"]["accuracy"]["markdown"].splitlines()[2:]


def _console_rows(lines: list[str], title: str) -> list[str]:
    """The body lines ("│ ...") of the first console table titled ``title`` (up to its closing line)."""
    at = next(k for k, x in enumerate(lines) if x.strip() == title)
    end = next(k for k in range(at, len(lines)) if lines[k].startswith("└"))
    return [x for x in lines[at:end] if x.startswith("│")]


# ------------------------------------------------------------------------------------------------ averaging
def test_two_seed0_runs_with_different_settings_are_never_averaged(tmp_path):
    """The review's case: two `janus run --seed 0 --controller both` runs, Janus tau 0 and 0.2, in one parent folder.
    Before: one dc_rs+janus row 70.0 ± 14.1 (two 'seeds') and one dc_rs row 40.0 ± 0.0."""
    base = [True, True, False, False, False]
    _run(tmp_path / "runs" / "a", {"dc_rs": 0.4, "dc_rs+janus": 0.6}, janus={"tau": 0.0},
         tests={"dc_rs": base, "dc_rs+janus": [True, True, True, False, False]})
    _run(tmp_path / "runs" / "b", {"dc_rs": 0.4, "dc_rs+janus": 0.8}, janus={"tau": 0.2},
         tests={"dc_rs": base, "dc_rs+janus": [True, True, True, True, False]})
    rep = build_report([str(tmp_path / "runs")], str(tmp_path / "rep"))
    assert _table1(rep) == ["| dc_rs (a) | 40.0 | 40.0 |", "| dc_rs (b) | 40.0 | 40.0 |",
                            "| dc_rs+janus (tau=0.0, a) | 60.0 | 60.0 |", "| dc_rs+janus (tau=0.2, b) | 80.0 | 80.0 |"]
    assert all(c["gsm8k"]["n"] == 1 for c in rep["tables"]["accuracy"]["cells"].values())
    sec = rep["sections"][0]
    # the base method is the same run made twice (its settings do not include Janus's): said, and not averaged
    assert sec["duplicates"] == ["warning: dc_rs on GSM8K seed 0 was run 2 times with the same settings (a, b): "
                                 "separate rows named by folder, not averaged as seeds"]
    assert sec["sources"] == ["dc_rs (a): a", "dc_rs (b): b", "dc_rs+janus (tau=0.0, a): a",
                              "dc_rs+janus (tau=0.2, b): b"]
    assert rep["tables"]["seeds"]["rows"] == []  # no "seed sweep" made of two folders' seed 0
    paired = [(p["base"], p["label"], p["folders"], p["n"], p["diff"]) for p in rep["tables"]["paired"]["rows"]]
    assert paired == [("dc_rs (a)", "dc_rs+janus (tau=0.0, a)", "a", 5, 0.2),
                      ("dc_rs (b)", "dc_rs+janus (tau=0.2, b)", "b", 5, 0.4)]
    md = Path(rep["report"]).read_text().splitlines()
    assert "| GSM8K | dc_rs (b) vs dc_rs+janus (tau=0.2, b) | b | 0 | 5 | 40.0 | 80.0 | +40.0 | [-16.3, +72.6] | 2/0 | " \
           "0.5 |" in md
    assert "> warning: dc_rs on GSM8K seed 0 was run 2 times with the same settings (a, b): separate rows named by " \
           "folder, not averaged as seeds" in md
    i = md.index("Rows that share a method name, by what tells them apart, and their run folders:")
    assert md[i + 2:i + 6] == ["- dc_rs (a): a", "- dc_rs (b): b", "- dc_rs+janus (tau=0.0, a): a",
                               "- dc_rs+janus (tau=0.2, b): b"]
    # Table 2: one group per setting, each with the base run of its own folder
    trig = [(r["tag"], r["policy"], r["test_accuracy"], r["n"]) for r in rep["tables"]["trigger"]["rows"]]
    assert trig == [("tau=0.0, a", "base (no Janus)", 0.4, 1), ("tau=0.0, a", "mmt", 0.6, 1),
                    ("tau=0.2, b", "base (no Janus)", 0.4, 1), ("tau=0.2, b", "mmt", 0.8, 1)]
    assert "**GSM8K / dc_rs (tau=0.2, b)**" in md


def test_runs_that_differ_in_settings_and_seed_are_not_a_seed_sweep(tmp_path):
    _run(tmp_path / "a", {"dc_rs+janus": 0.4}, seed=0, llm={"temperature": 0.7})
    _run(tmp_path / "b", {"dc_rs+janus": 0.8}, seed=1, llm={"temperature": 0.5})
    rep = build_report([str(tmp_path / "a"), str(tmp_path / "b")], str(tmp_path / "rep"))
    assert _table1(rep) == ["| dc_rs+janus (temperature=0.5) | 80.0 | 80.0 |",
                            "| dc_rs+janus (temperature=0.7) | 40.0 | 40.0 |"]
    assert rep["sections"][0]["duplicates"] == []
    assert rep["sections"][0]["sources"] == ["dc_rs+janus (temperature=0.5): b", "dc_rs+janus (temperature=0.7): a"]
    assert rep["tables"]["seeds"]["rows"] == []


def test_seeds_of_one_configuration_are_still_averaged_whatever_their_folders_cache_or_endpoint(tmp_path):
    """Settings that do not change what is measured (out, cache, endpoint, concurrency, data_dir, checkpoints) do not
    split a seed sweep."""
    _run(tmp_path / "s0", {"dc_rs+janus": 0.4}, seed=0)
    _run(tmp_path / "s1", {"dc_rs+janus": 0.6}, seed=1, cache_dir="/elsewhere", no_cache=True, data_dir="/copy",
         checkpoints=[0.5], llm={"concurrency": 16, "base_url": "http://other:8000/v1", "n_parallel": 4})
    rep = build_report([str(tmp_path)], str(tmp_path / "rep"))
    assert _table1(rep) == ["| dc_rs+janus | 50.0 ± 14.1 | 50.0 |"]
    assert rep["sections"][0]["sources"] == [] and rep["sections"][0]["duplicates"] == []
    assert [(r["label"], r["seeds"]) for r in rep["tables"]["seeds"]["rows"]] == [("dc_rs+janus", [0, 1])]


def test_a_run_made_twice_beside_another_seed_gives_one_row_per_folder(tmp_path):
    _run(tmp_path / "x", {"dc_rs+janus": 0.4}, seed=0)
    _run(tmp_path / "y", {"dc_rs+janus": 0.6}, seed=1)
    _run(tmp_path / "z", {"dc_rs+janus": 0.5}, seed=0)
    rep = build_report([str(tmp_path)], str(tmp_path / "rep"))
    assert _table1(rep) == ["| dc_rs+janus (x) | 40.0 | 40.0 |", "| dc_rs+janus (y) | 60.0 | 60.0 |",
                            "| dc_rs+janus (z) | 50.0 | 50.0 |"]
    assert rep["sections"][0]["duplicates"] == [
        "warning: dc_rs+janus on GSM8K seed 0 was run 2 times with the same settings (x, z): separate rows named by "
        "folder, not averaged as seeds"]


def test_two_copies_of_a_grid_are_told_apart_by_grid_root_in_every_table(tmp_path):
    for grid, acc in (("g1", 0.5), ("g2", 0.7)):
        root = tmp_path / grid / "gsm8k"
        _run(root / "dc_rs" / "seed0", {"dc_rs": 0.4}, cell="dc_rs")
        _run(root / "dc_rs+janus" / "seed0", {"dc_rs+janus": acc}, cell="dc_rs+janus")
        _run(root / "dc_rs+janus[use_fresh=false]" / "seed0", {"dc_rs+janus": 0.3}, cell="dc_rs+janus[use_fresh=false]",
             janus={"use_fresh": False})
    rep = build_report([str(tmp_path / "g1"), str(tmp_path / "g2")], str(tmp_path / "rep"))
    assert _table1(rep) == ["| dc_rs (g1) | 40.0 | 40.0 |", "| dc_rs (g2) | 40.0 | 40.0 |",
                            "| dc_rs+janus (g1) | 50.0 | 50.0 |", "| dc_rs+janus (g2) | 70.0 | 70.0 |"]
    ev = [(r["tag"], r["variant"], r["test_accuracy"], r["n"]) for r in rep["tables"]["evalset"]["rows"]]
    assert ev == [("g1", "full", 0.5, 1), ("g1", "w/o fresh", 0.3, 1), ("g2", "full", 0.7, 1), ("g2", "w/o fresh", 0.3, 1)]
    paired_folders = [p["folders"] for p in rep["tables"]["paired"]["rows"]]
    assert paired_folders == []  # no test.jsonl in these folders: nothing to pair, and nothing invented
    assert rep["sections"][0]["sources"][0] == "dc_rs (g1): g1/gsm8k/dc_rs/seed0"


def test_matched_grid_cells_pool_over_seeds_but_a_rate_sweep_does_not(tmp_path):
    root = tmp_path / "grid" / "gsm8k"
    for seed, rate in ((0, 0.25), (1, 0.5)):  # random matched to each seed's MMT count: one configuration
        run = _run(root / "dc_rs+janus[trigger=random]" / f"seed{seed}", {"dc_rs+janus": 0.5 + 0.1 * seed}, seed=seed,
                   cell="dc_rs+janus[trigger=random]", janus={"trigger": "random", "trigger_rate": rate})
        cell = json.loads((run / "cell.json").read_text())
        (run / "cell.json").write_text(json.dumps({**cell, "matched": {"trigger_rate": rate, "mmt_triggers": 2}}))
    for rate, acc in ((0.1, 0.2), (0.3, 0.4)):  # a sweep over the rate without a cell suffix: two configurations
        _run(tmp_path / f"rate{rate}", {"dc_rs+janus": acc}, janus={"trigger": "random", "trigger_rate": rate})
    rep = build_report([str(tmp_path)], str(tmp_path / "rep"))
    cost = [(r["label"], r["test_accuracy"], r["n"]) for r in rep["tables"]["janus_cost"]["rows"]]
    assert cost == [("dc_rs+janus (trigger_rate=0.1)", 0.2, 1), ("dc_rs+janus (trigger_rate=0.3)", 0.4, 1),
                    ("dc_rs+janus[trigger=random]", pytest.approx(0.55), 2)]


def test_two_cells_with_one_trigger_are_two_policy_rows(tmp_path):
    root = tmp_path / "sweep" / "gsm8k"
    _run(root / "dc_rs" / "seed0", {"dc_rs": 0.4}, cell="dc_rs")
    for rate, acc in (("0.1", 0.5), ("0.3", 0.7)):
        cell = f"dc_rs+janus[trigger_rate={rate}]"
        _run(root / cell / "seed0", {"dc_rs+janus": acc}, cell=cell,
             janus={"trigger": "random", "trigger_rate": float(rate)})
    rep = build_report([str(tmp_path / "sweep")], str(tmp_path / "rep"))
    rows = [(r["policy"], r["test_accuracy"]) for r in rep["tables"]["trigger"]["rows"]]
    assert rows == [("base (no Janus)", 0.4), ("random [trigger_rate=0.1]", 0.5), ("random [trigger_rate=0.3]", 0.7)]


def test_a_sweep_of_variant_cells_prints_table_3(tmp_path):
    from janus_memory.report.console import print_report

    root = tmp_path / "sweep" / "gsm8k"
    for tau, acc in (("0.0", 0.5), ("0.2", 0.7)):
        cell = f"dc_rs+janus[tau={tau}]"
        _run(root / cell / "seed0", {"dc_rs+janus": acc}, cell=cell, janus={"tau": float(tau)})
    console = Console(width=80, force_terminal=True, record=True, color_system=None)
    print_report(build_report([str(tmp_path / "sweep")], str(tmp_path / "rep")), console)
    lines = console.export_text().splitlines()
    assert lines[0].strip() == "test accuracy (%) of every Janus label (Table 3)"
    # what the controller evaluated (2 triggers x 10 evaluator calls), never #Trig x |E|
    assert _console_rows(lines, "test accuracy (%) of every Janus label (Table 3)") == [
        "│ dc_rs+janus[tau=0.0] │   GSM8K │ paper │     50.0 │     2 │          20 │",  # brackets kept (no markup)
        "│ dc_rs+janus[tau=0.2] │   GSM8K │ paper │     70.0 │     2 │          20 │"]


def test_a_long_difference_is_named_setup_n_and_spelled_out(tmp_path):
    _run(tmp_path / "one", {"dc_rs+janus": 0.4})
    _run(tmp_path / "two", {"dc_rs+janus": 0.6}, llm={"temperature": 0.2, "solver_max_tokens": 1024},
         updater_config={"top_k": 5})
    rep = build_report([str(tmp_path)], str(tmp_path / "rep"))
    assert _table1(rep) == ["| dc_rs+janus (setup 1) | 40.0 | 40.0 |", "| dc_rs+janus (setup 2) | 60.0 | 60.0 |"]
    assert rep["sections"][0]["sources"] == [
        "dc_rs+janus (setup 1): one (solver_max_tokens=8192, temperature=0.7, top_k=3)",
        "dc_rs+janus (setup 2): two (solver_max_tokens=1024, temperature=0.2, top_k=5)"]


def test_one_row_never_mixes_settings_across_datasets(tmp_path):
    _run(tmp_path / "g", {"dc_rs+janus": 0.4}, janus={"tau": 0.0})
    _run(tmp_path / "p", {"dc_rs+janus": 0.6}, janus={"tau": 0.2}, dataset="gpqa")
    rep = build_report([str(tmp_path)], str(tmp_path / "rep"))
    assert rep["tables"]["accuracy"]["markdown"].splitlines()[0] == "| Method | GPQA | GSM8K | Avg |"
    assert _table1(rep) == ["| dc_rs+janus (tau=0.0) | — | 40.0 | — |", "| dc_rs+janus (tau=0.2) | 60.0 | — | — |"]


# ------------------------------------------------------------------------------------------------ unfinished folders
def _unfinished(root: Path, steps: dict[str, int], tested=("dc_rs",), *, config=True, summary=False) -> Path:
    """A run folder as an interrupted `janus run --controller both` leaves it: run.sqlite, no COMPLETE."""
    root.mkdir(parents=True)
    db = sqlite3.connect(root / "run.sqlite")
    db.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                     "CREATE TABLE steps (method TEXT, step INTEGER, decision TEXT, record TEXT);"
                     "CREATE TABLE method_results (method TEXT PRIMARY KEY, summary TEXT NOT NULL);")
    if config:
        cfg = RunConfig(dataset="gsm8k", backend="fake", encoder="hashing", stream_size=6, out=str(root)).model_dump()
        db.execute("INSERT INTO meta VALUES ('config', ?)", (json.dumps(cfg),))
        db.execute("INSERT INTO meta VALUES ('splits', ?)", (json.dumps({"stream": {"n": 6}, "test": {"n": 5}}),))
    for m, k in steps.items():
        db.executemany("INSERT INTO steps VALUES (?,?,?,?)", [(m, s, "{}", "{}") for s in range(1, k + 1)])
    for m in tested:
        db.execute("INSERT INTO method_results VALUES (?, ?)", (m, json.dumps(  # a complete result (reader.py)
            {"method": m, "stream_tasks": steps[m], "online_accuracy": 0.5, "test_tasks": 2, "test_correct": 1,
             "test_accuracy": 0.5})))
    db.commit()
    db.close()
    if summary:  # a repair (resume of a damaged COMPLETE folder) that did not end: an old summary, no COMPLETE
        (root / "summary.json").write_text(json.dumps({"dataset": "gsm8k", "methods": {"dc_rs": {"test_accuracy": 1}}}))
    return root


def test_unfinished_folders_are_named_in_one_line_and_left_out(tmp_path):
    _run(tmp_path / "runs" / "done", {"dc_rs": 0.4, "dc_rs+janus": 0.6})
    cut = _unfinished(tmp_path / "runs" / "cut", {"dc_rs": 6, "dc_rs+janus": 2})
    odd = _unfinished(tmp_path / "runs" / "my run [2]", {"dc_rs": 3}, tested=(), summary=True)
    bare = _unfinished(tmp_path / "runs" / "bare", {}, tested=(), config=False)
    rep = build_report([str(tmp_path / "runs")], str(tmp_path / "rep"))
    assert _table1(rep) == ["| dc_rs | 40.0 | 40.0 |", "| dc_rs+janus | 60.0 | 60.0 |"]  # done only
    assert rep["unfinished"] == [
        f"not in the report: {bare} holds a run that stopped before its settings were stored; start it again "
        "with the command that made it (without --resume)",
        f"not in the report: {cut} (dc_rs: 6/6 steps, tested; dc_rs+janus: 2/6 steps) is unfinished; continue it "
        f"with: janus run --resume {cut}",
        f"not in the report: {odd} (dc_rs: 3/6 steps; dc_rs+janus: 0/6 steps) is unfinished; continue it with: "
        f"janus run --resume '{odd}'"]
    md = Path(rep["report"]).read_text()
    assert (f"- {cut} (dc_rs: 6/6 steps, tested; dc_rs+janus: 2/6 steps) is unfinished; continue it with: "
            f"janus run --resume {cut}\n") in md
    # named directly beside a finished run: the same line, no error
    rep = build_report([str(tmp_path / "runs" / "done"), str(cut)], str(tmp_path / "rep2"))
    assert len(rep["unfinished"]) == 1 and rep["unfinished"][0].startswith(f"not in the report: {cut} (dc_rs: 6/6")


def test_only_unfinished_runs_is_one_error_line_saying_how_to_continue(tmp_path):
    cut = _unfinished(tmp_path / "cut", {"dc_rs": 6, "dc_rs+janus": 2})
    with pytest.raises(RunFolderError) as e:
        build_report([str(cut)], str(tmp_path / "rep"))
    assert str(e.value) == (f"no finished run under {cut}: {cut} (dc_rs: 6/6 steps, tested; dc_rs+janus: 2/6 steps) "
                            f"is unfinished; continue it with: janus run --resume {cut}")


def test_a_run_still_in_progress_is_named_with_its_pid(tmp_path):
    import os

    from janus_memory.store.lock import RunLock

    _run(tmp_path / "done", {"dc_rs": 0.4})
    live = _unfinished(tmp_path / "live", {"dc_rs": 4}, tested=())
    with RunLock(live):
        rep = build_report([str(tmp_path)], str(tmp_path / "rep"))
    assert rep["unfinished"] == [f"not in the report: {live} (dc_rs: 4/6 steps; dc_rs+janus: 0/6 steps) is still "
                                 f"running (pid {os.getpid()}); run janus report again when it has finished"]


# ------------------------------------------------------------------------------------------------ console
@pytest.fixture
def terminal(monkeypatch):
    """`janus report` on an 80-column terminal, its output recorded."""
    console = Console(width=80, force_terminal=True, record=True, color_system=None)
    monkeypatch.setattr("janus_memory.cli.app.make_console", lambda: console)
    return console


def _two_settings(tmp_path: Path) -> Path:
    base = [True, True, False, False, False]
    for name, tau, acc, janus_tests in (("a", 0.0, 0.6, [True, True, True, False, False]),
                                        ("b", 0.2, 0.8, [True, True, True, True, False])):
        _run(tmp_path / "runs" / name, {"dc_rs": 0.4, "dc_rs+janus": acc}, janus={"tau": tau},
             tests={"dc_rs": base, "dc_rs+janus": janus_tests})
    _unfinished(tmp_path / "runs" / "c", {"dc_rs": 6, "dc_rs+janus": 2})
    return tmp_path / "runs"


def test_report_prints_the_accuracy_table_in_80_columns(tmp_path, terminal, capsys):
    from janus_memory.cli import main

    runs = _two_settings(tmp_path)
    assert main(["report", str(runs), "--out", str(tmp_path / "rep")]) == 0
    text = terminal.export_text()
    lines = text.splitlines()
    assert max(len(x) for x in lines if x[:1] in "┏┃┡│└") <= 80 and "…" not in text
    i = lines.index("┃ Method                   ┃ GSM8K ┃  Avg ┃")
    assert lines[i - 2].strip() == "[scripted] Table 1: test accuracy (%)"  # the fake backend's: never a model's
    assert lines[i + 2:i + 6] == ["│ dc_rs (a)                │  40.0 │ 40.0 │", "│ dc_rs (b)                │  40.0 │ 40.0 │",
                                  "│ dc_rs+janus (tau=0.0, a) │  60.0 │ 60.0 │", "│ dc_rs+janus (tau=0.2, b) │  80.0 │ 80.0 │"]
    tail = lines[next(k for k, x in enumerate(lines) if x.startswith("setup: ")):]
    cut = runs / "c"
    assert tail == [
        "setup: backend fake, model scripted, encoder hashing, run preset paper; Janus paper; GSM8K: stream n=0/6, "
        "test n=?; seeds 0",
        "warning: dc_rs on GSM8K seed 0 was run 2 times with the same settings (a, b): separate rows named by folder, "
        "not averaged as seeds",
        "rows that share a method name, and their run folders:",
        "  dc_rs (a): a", "  dc_rs (b): b", "  dc_rs+janus (tau=0.0, a): a", "  dc_rs+janus (tau=0.2, b): b",
        "[scripted] base vs +Janus, paired on the same test items (+Janus minus base accuracy):",
        "  [scripted] dc_rs (a) vs dc_rs+janus (tau=0.0, a), GSM8K seed 0, run folder(s) a: n=5, diff +20.0 pp, 95% CI "
        "[-25.2, +54.6], McNemar p=1",
        "  [scripted] dc_rs (b) vs dc_rs+janus (tau=0.2, b), GSM8K seed 0, run folder(s) b: n=5, diff +40.0 pp, 95% CI "
        "[-16.3, +72.6], McNemar p=0.5",
        "[scripted] these runs used the fake backend: its answers come from a script (by default right or wrong by a "
        "hash of the prompt and always wrong while the memory holds a planted instruction; with --model rules right "
        "exactly when the memory states the rules a ticket needs), not from a model; their accuracies and "
        "differences check the pipeline, they measure no memory",
        f"not in the report: {cut} (dc_rs: 6/6 steps, tested; dc_rs+janus: 2/6 steps) is unfinished; continue it "
        f"with: janus run --resume {cut}",
        f"report: {tmp_path / 'rep' / 'report.md'}  (3 plots in {tmp_path / 'rep'})"]
    assert capsys.readouterr().err.count("report [") == 5  # the stage lines, on stderr
    assert main(["report", str(runs), "--out", str(tmp_path / "rep"), "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_report_table_is_never_cut_when_piped(tmp_path, monkeypatch):
    from janus_memory.cli import main

    monkeypatch.setattr("sys.stdout.isatty", lambda: False)
    monkeypatch.setenv("COLUMNS", "40")
    from janus_memory.cli.closing import make_console

    console = make_console()
    monkeypatch.setattr("janus_memory.cli.app.make_console", lambda: console)
    for name in ("a", "b"):
        _run(tmp_path / "runs" / name, {"dc_rs+janus": 0.5},
             llm={"model": f"a-rather-long-model-name-{name}", "temperature": 0.1 if name == "a" else 0.9})
    with console.capture() as cap:
        assert main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "rep"), "-q"]) == 0
    text = cap.get()
    assert "…" not in text
    rows = [x for x in text.splitlines() if x.startswith("│ dc_rs+janus") and x.endswith(" 50.0 │")]
    assert rows == ["│ dc_rs+janus │  50.0 │ 50.0 │"] * 2  # two models: two groups, a table each, one line per row
    assert text.splitlines()[0] == ("group 1 of 2: backend fake, model a-rather-long-model-name-a, encoder hashing, "
                                    "run preset paper; Janus paper; GSM8K: stream n=6, test n=?; seeds 0")


def test_a_name_too_long_for_the_terminal_wraps_at_spaces_and_is_never_cut():
    from janus_memory.report.summary_table import fit_table

    name = "dc_rs+janus (tau=0.2, an-experiment-folder-with-a-long-name)"
    rows = [[name, *(["65.0 ± 7.1"] * 3)], ["dc_rs", *(["100.0"] * 3)]]
    console = Console(width=80, force_terminal=True, record=True, color_system=None)
    console.print(fit_table("Table 1", ("Method", "GSM8K", "GPQA", "Avg"), rows, width=80), crop=False)
    lines = console.export_text().splitlines()
    assert max(len(x) for x in lines) <= 80 and "…" not in "".join(lines)
    cells = [x.split("│")[1].strip() for x in lines if x.startswith("│")]
    assert " ".join(c for c in cells if c) == f"{name} dc_rs"  # whole, wrapped at its spaces


def test_report_console_of_real_fake_backend_runs(tmp_path, terminal, monkeypatch):
    """Two real `--seed 0` runs (Janus tau 0 and 0.3) and an interrupted one, all with the scripted backend."""
    from janus_memory.cli import main
    from janus_memory.run.experiment import Stopped, run_experiment

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    kw = dict(dataset="gsm8k", stream_size=6, test_size=3, backend="fake", encoder="hashing:256",
              cache_dir=str(tmp_path / "cache"))
    for name, tau in (("t0", 0.0), ("t3", 0.3)):
        cfg = RunConfig(**kw, out=str(tmp_path / "runs" / name)).with_janus(**{**JANUS, "tau": tau})
        run_experiment(cfg, log=lambda m: None)
    with pytest.raises(Stopped):
        run_experiment(RunConfig(**kw, out=str(tmp_path / "runs" / "cut")).with_janus(**JANUS), log=lambda m: None,
                       stop_after=3)
    assert main(["report", str(tmp_path / "runs"), "-q"]) == 0
    lines = terminal.export_text().splitlines()
    rows = [x.split("│")[1].strip() for x in _console_rows(lines, "[scripted] Table 1: test accuracy (%)")]
    assert rows == ["dc_rs (t0)", "dc_rs (t3)", "dc_rs+janus (tau=0.0, t0)", "dc_rs+janus (tau=0.3, t3)"]
    cut = tmp_path / "runs" / "cut"
    assert (f"not in the report: {cut} (dc_rs: 3/6 steps; dc_rs+janus: 0/6 steps) is unfinished; continue it with: "
            f"janus run --resume {cut}") in lines
    assert "warning: dc_rs on GSM8K seed 0 was run 2 times with the same settings (t0, t3): separate rows named by " \
           "folder, not averaged as seeds" in lines
