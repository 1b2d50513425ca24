"""A fresh user's stumbles: the test phase in the progress, unscored test answers listed, the summary under
-q -q, the wall time with its start-up, `janus report` saying what it does, strict config files (duplicate keys,
"5" or 5.0 for an integer), and `janus grid --help` not claiming a default dataset. Fake backend only."""
from __future__ import annotations

import json
import re

import pytest

from janus_memory.cli import main
from janus_memory.run.experiment import run_experiment
from janus_memory.settings.config import RunConfig
from janus_memory.store import events as E

RUN = ["run", "--backend", "fake", "--dataset", "gsm8k", "--stream-size", "3", "--test-size", "2",
       "--encoder", "hashing", "--updater", "dc_cu", "--warmup", "1", "--coverage-size", "1", "--boundary-size", "1",
       "--fresh-size", "1", "--no-cache"]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


def test_test_phase_events_count_answers_and_tokens_paid(tmp_path):
    """TestStarted, one TestProgress per test answer (checkpoint memories included), TestDone with the tokens paid
    in the test phase: exactly the run's test-role tokens."""
    cfg = RunConfig(backend="fake", dataset="gsm8k", stream_size=4, test_size=3, encoder="hashing", updater="dc_cu",
                    controller="both", no_cache=True, checkpoints=[0.5], out=str(tmp_path / "r"),
                    janus={"warmup": 1, "coverage_size": 1, "boundary_size": 1, "fresh_size": 1})
    seen: list = []
    summary = run_experiment(cfg, log=lambda m: None, on_event=seen.append)
    for method in ("dc_cu", "dc_cu+janus"):
        evs = [e for e in seen if getattr(e, "method", None) == method
               and isinstance(e, (E.TestStarted, E.TestProgress, E.TestDone))]
        assert evs[0] == E.TestStarted(method, 3, 6)
        assert [e.done for e in evs[1:-1]] == [1, 2, 3, 4, 5, 6]
        done = evs[-1]
        assert isinstance(done, E.TestDone) and (done.total, done.cached) == (3, 0)
        test_usage = summary["methods"][method]["usage"]["test"]
        assert done.tokens == evs[-2].tokens == test_usage["prompt_tokens"] + test_usage["completion_tokens"] > 0


def test_quiet_twice_keeps_the_summary_and_lists_unscored_answers(tmp_path, capsys, monkeypatch):
    """-q -q hides the progress only; the tables, unscored test answers (ids and why), the run folder and the wall
    time are printed; off a terminal (capsys) with COLUMNS=80 nothing is cut."""
    from janus_memory.run import loop

    real = loop.frozen_test

    def one_unparsed(ctx, updater):
        recs = real(ctx, updater)
        recs[0] = {**recs[0], "status": "unparsed", "correct": False}
        return recs

    monkeypatch.setattr(loop, "frozen_test", one_unparsed)
    monkeypatch.setenv("COLUMNS", "80")
    out = tmp_path / "r"
    assert main([*RUN, "--out", str(out), "-q", "-q"]) == 0
    text = capsys.readouterr().out
    assert "step 1/3" not in text and "test done" not in text  # no progress
    # no settings header, estimate or stage lines either
    assert not re.search(r"^(janus dataset=|run preset:|Janus preset|Janus:|estimate:|triggers decided|\[dc_cu\] stream of)",
                         text, re.M)
    first = json.loads((out / "dc_cu" / "test.jsonl").read_text().splitlines()[0])["task_id"]
    assert f"[dc_cu] test: 1 of 2 answers could not be scored (counted wrong): unparsed (no final answer found): " \
           f"{first}" in text.splitlines()
    assert "gsm8k / dc_cu: accuracy" in text and "cost per method" in text and "LLM usage by role" in text
    assert "…" not in text
    assert any(line.startswith("│ dc_cu+janus ") and len(line) > 0 for line in text.splitlines())
    assert f"run folder: {out.resolve()}" in text.splitlines()
    wall = re.search(r"^wall time: (\d+\.\d) s from start to end = start-up \d+\.\d s \(imports, dataset, encoder, "
                     r"before the first step\) \+ stream and test \d+\.\d s$", text, re.M)
    assert wall
    # one clock: the number janus view shows (the run folder's summary.json), counted from the command's start
    from janus_memory.view.data import view_data

    stored = json.loads((out / "summary.json").read_text())["wall_s"]
    assert wall.group(1) == f"{stored:.1f}" == f"{view_data([out])['runs'][0]['header']['wall_s']:.1f}"


def test_plain_progress_has_test_lines(tmp_path, capsys):
    assert main([*RUN, "--out", str(tmp_path / "r")]) == 0
    lines = capsys.readouterr().out.splitlines()
    starts = [x for x in lines if re.match(r"\[dc_cu(\+janus)?\] test: 2 held-out tasks with the frozen memory$", x)]
    ends = [x for x in lines if re.match(r"\[scripted\] \[dc_cu(\+janus)?\] test done: \d/2 correct "
                                         r"\(acc \d\.\d{3}\), tokens paid [\d,]+, \d+\.\ds$", x)]
    assert len(starts) == 2 and len(ends) == 2
    # the fake backend's scores are a script's, said on every result line: test lines, the accuracy table, a note
    from janus_memory.report.summary_table import SCRIPTED_RUN_NOTE

    assert any(x.strip().startswith("[scripted] ") and x.strip().endswith(": accuracy") for x in lines)
    assert SCRIPTED_RUN_NOTE in lines and SCRIPTED_RUN_NOTE.startswith("[scripted] ")


def test_report_says_what_it_is_doing(tmp_path, capsys):
    assert main([*RUN, "--out", str(tmp_path / "r"), "-q"]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err.splitlines()
    stages = [re.sub(r"^report \[ *\d+\.\d s\]: ", "", x) for x in err]
    assert stages == [f"reading the run folders in {tmp_path / 'r'}",
                      "building the tables: 2 method runs in 1 run folder, 1 group of comparable runs",
                      f"drawing the plots into {tmp_path / 'r' / 'report'}: checkpoints and token overhead first",
                      "drawing 1 trigger timeline plot(s)", "writing report.md"]
    assert all(re.match(r"^report \[ *\d+\.\d s\]: ", x) for x in err)


# ---------------------------------------------------------------------------------------------- config strictness
@pytest.mark.parametrize("text, message", [
    ("dataset: gsm8k\nstream_size: 3\nseed: 1\nstream_size: 500\n",
     "duplicate key 'stream_size' at line 4 (first at line 2); give it once"),
    ("janus:\n  warmup: 2\n  tau: 0.1\n  warmup: 3\n", "duplicate key 'warmup' at line 4 (first at line 2); give it once"),
    ("llm:\n  temperature: 0.0\n  temperature: 0.7\n",
     "duplicate key 'temperature' at line 3 (first at line 2); give it once"),
])
def test_duplicate_keys_in_a_config_file_are_one_line_errors(tmp_path, capsys, text, message):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    assert main(["run", "--config", str(cfg), "--backend", "fake", "--out", str(tmp_path / "r")]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: invalid YAML in {cfg}: {message}\n" and captured.out == ""
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("line, message", [
    ("stream_size: '5'", "invalid value for 'stream_size': Input should be a valid integer (got '5')"),
    ("stream_size: 5.0", "invalid value for 'stream_size': Input should be a valid integer (got 5.0)"),
    ("seed: true", "invalid value for 'seed': Input should be a valid integer (got True)"),
    ("test_size: 2.5", "invalid value for 'test_size': Input should be a valid integer (got 2.5)"),
    ("solver_max_tokens: '512'", "invalid value for 'llm.solver_max_tokens': Input should be a valid integer (got '512')"),
    ("llm: {n_ctx: 4096.0}", "invalid value for 'llm.n_ctx': Input should be a valid integer (got 4096.0)"),
    ("no_cache: 'yes'", "invalid value for 'no_cache': Input should be a valid boolean (got 'yes')"),
    ("janus: {warmup: '5'}", "invalid value for 'janus.warmup': Input should be a valid integer (got '5')"),
])
def test_config_file_numbers_are_strict_at_every_level(tmp_path, capsys, line, message):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: gsm8k\nbackend: fake\n{line}\n")
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "r")]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: {message} (line 3 of {cfg})\n" and captured.out == ""


def test_strict_settings_still_take_what_yaml_and_flags_give():
    """An integer where a float is expected (temperature: 0), the words on/off/auto for batch_eval, and the
    command line's flags (argparse converts them first) all still work."""
    cfg = RunConfig.parse({"temperature": 0, "checkpoints": [0.5, 1], "batch_eval": "off", "stream_size": 5})
    assert (cfg.llm.temperature, cfg.checkpoints, cfg.batch_eval, cfg.stream_size) == (0.0, [0.5, 1.0], False, 5)
    assert RunConfig.parse({"batch_eval": "auto"}).batch_eval is None
    from janus_memory.cli.parser import build_parser
    from janus_memory.cli.run_command import _config_from_args

    args = build_parser().parse_args(["run", "--stream-size", "5", "--temperature", "0", "--seed", "3",
                                      "--checkpoints", "0.5", "--batch-eval", "on", "--n-parallel", "2"])
    cfg = _config_from_args(args, demo=False)
    assert (cfg.stream_size, cfg.llm.temperature, cfg.seed, cfg.checkpoints, cfg.batch_eval, cfg.llm.n_parallel) == (
        5, 0.0, 3, [0.5], True, 2)


def test_grid_file_duplicate_nested_key_is_refused(tmp_path):
    from janus_memory.sweep.sweep import load_grid_cells

    g = tmp_path / "g.yaml"
    g.write_text("base:\n  backend: fake\n  janus:\n    warmup: 2\n    warmup: 4\ngrid:\n  seed: [0, 1]\n")
    with pytest.raises(ValueError) as e:
        load_grid_cells(g)
    assert str(e.value) == (f"invalid YAML in {g} at line 5: duplicate key 'warmup' at line 5 (first at line 4); "
                            "give it once")


def test_grid_help_names_dataset_as_required(capsys):
    with pytest.raises(SystemExit):
        main(["grid", "--help"])
    out = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "no stream: math500); required unless --config names one --stream-size" in out
    assert "(default: gsm8k)" not in out
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "-q, --quiet no settings header, estimate, progress bars" in out and "no stream: math500) (default: gsm8k)" in out


def test_config_file_errors_name_the_line_of_the_key(tmp_path, capsys):
    """A bad key or value written in --config names its line; an option that set it names the option instead; a key
    not written in the file (a default) gets no line."""
    from janus_memory.settings.yaml_load import key_line

    text = "backend: fake\ntemperature: 0.5\njanus:\n  warmup: 3\n  beta: 2.0\nllm: {max_retries: 1}\n"
    assert [key_line(text, k) for k in ("backend", "janus.warmup", "janus.beta", "llm.temperature",
                                        "llm.max_retries", "janus.tau", "seed", "janus.warmup.x")] == [
        1, 4, 5, 2, 6, None, None, None]
    assert key_line("- a\n- b\n", "a") is None and key_line("a: [\n", "a") is None
    cfg = tmp_path / "c.yaml"
    cfg.write_text("backend: fake\njanus:\n  warmup: 3\n  beta: 2.0\n")
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == f"error: invalid Janus setting: beta must be in [0, 1), got 2.0 (line 4 of {cfg})\n"
    assert main(["run", "--config", str(cfg), "--beta", "3", "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == "error: --beta must be in [0, 1), got 3.0\n"
    cfg.write_text("backend: fake\nstream_size: 2\nupdater: dc_cu\nupdater_config: {bogus: 2}\n")
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown config key 'updater_config.bogus' for updater dc_cu; allowed: ")
    assert err.endswith(f" (line 4 of {cfg})\n")
    assert not (tmp_path / "r").exists()
