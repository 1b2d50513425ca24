"""The nested backend section ``llm`` of RunConfig: flat keys (CLI flags, config files, old run folders) are
lifted into it, a key given both ways with two values is one line, config.json is written nested and parses back."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from janus_memory.cli import main
from janus_memory.errors import ConfigError
from janus_memory.settings.config import RunConfig
from janus_memory.settings.llm_settings import LLM_KEYS, LLMSettings, lift_llm, overlay

SMALL = ["--backend", "fake", "--dataset", "gsm8k", "--stream-size", "6", "--test-size", "2", "--encoder", "hashing",
         "--warmup", "2", "--coverage-size", "1", "--boundary-size", "1", "--fresh-size", "1", "--quiet",
         "--updater", "dc_rs", "--controller", "janus"]
M = "dc_rs+janus"

FLAT = """\
dataset: gsm8k
backend: openai
base_url: http://127.0.0.1:8000/v1
model: Qwen/Qwen3-8B
temperature: 0.0
solver_max_tokens: 512
max_retries: 2
"""
NESTED = """\
dataset: gsm8k
llm:
  backend: openai
  base_url: http://127.0.0.1:8000/v1
  model: Qwen/Qwen3-8B
  temperature: 0.0
  solver_max_tokens: 512
  max_retries: 2
"""


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


def _one_error(capsys, rc: int) -> str:
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_the_section_holds_exactly_the_backend_keys():
    assert LLM_KEYS == ("backend", "model", "base_url", "model_path", "n_ctx", "n_parallel", "concurrency", "temperature",
                        "solver_max_tokens", "curator_max_tokens", "extra_body", "request_timeout", "max_retries",
                        "request_deadline")
    assert not set(LLM_KEYS) & set(RunConfig.model_fields)  # no flat copy left on RunConfig
    assert RunConfig().llm == LLMSettings()


def test_flat_and_nested_yaml_give_equal_configs():
    flat, nested = (RunConfig.parse(yaml.safe_load(t)) for t in (FLAT, NESTED))
    assert flat == nested
    assert flat.model_dump() == nested.model_dump()
    assert (flat.llm.backend, flat.llm.base_url, flat.llm.model, flat.llm.temperature, flat.llm.solver_max_tokens,
            flat.llm.max_retries, flat.llm.curator_max_tokens) == (
        "openai", "http://127.0.0.1:8000/v1", "Qwen/Qwen3-8B", 0.0, 512, 2, 8192)
    assert flat.updater_settings() == {"temperature": 0.0, "solver_max_tokens": 512, "curator_max_tokens": 8192}
    # Python: flat keyword arguments, a nested dict or an LLMSettings are the same settings
    assert RunConfig(backend="fake", temperature=0.2) == RunConfig(llm={"backend": "fake", "temperature": 0.2}) \
        == RunConfig(llm=LLMSettings(backend="fake", temperature=0.2))
    # the same value both ways is accepted
    assert RunConfig.parse({"temperature": 0.2, "llm": {"temperature": 0.2}}).llm.temperature == 0.2


@pytest.mark.parametrize("data, expect", [
    ({"temperature": 0.5, "llm": {"temperature": 0.0}},
     "'temperature' is given twice with different values: 0.5 (flat) and 0.0 (llm.temperature); give it once"),
    ({"backend": "fake", "llm": {"backend": "openai", "model": "m"}},
     "'backend' is given twice with different values: 'fake' (flat) and 'openai' (llm.backend); give it once"),
    ({"llm": {"temprature": 0.0}}, "unknown config key 'llm.temprature' (did you mean temperature?)"),
    ({"llm": {"backend": "fake", "n_threads": 4}}, "unknown config key 'llm.n_threads'"),
    ({"llm": {"max_retries": -1}}, "invalid value for 'llm.max_retries': must be in [0, 100], got -1"),
    ({"llm": 3}, "invalid value for 'llm': Input should be a valid dictionary or instance of LLMSettings (got 3)"),
    ({"llm": 3, "temperature": 0.1},
     "invalid value for 'llm': Input should be a valid dictionary or instance of LLMSettings (got 3)"),
])
def test_bad_sections_are_one_line_config_errors(data, expect):
    with pytest.raises(ConfigError) as e:
        RunConfig.parse(data)
    assert str(e.value) == expect


def test_cli_conflict_and_unknown_nested_key_are_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("backend: fake\nllm:\n  backend: openai\n")
    assert _one_error(capsys, main(["run", "--config", str(bad), "--out", str(tmp_path / "r")])) == (
        "error: 'backend' is given twice with different values: 'fake' (flat) and 'openai' (llm.backend); give it once")
    typo = tmp_path / "typo.yaml"
    typo.write_text("llm:\n  backend: fake\n  temprature: 0.0\n")
    assert _one_error(capsys, main(["run", "--config", str(typo), "--out", str(tmp_path / "r")])) == (
        f"error: unknown config key 'llm.temprature' (did you mean temperature?) (line 3 of {typo})")
    assert not (tmp_path / "r").exists()


def test_a_flag_wins_over_the_files_nested_key():
    base = {"dataset": "gsm8k", "llm": {"backend": "openai", "temperature": 0.0, "max_retries": 2}}
    merged = overlay(base, {"temperature": 0.7, "out": "x"})
    assert merged == {"dataset": "gsm8k", "out": "x",
                      "llm": {"backend": "openai", "temperature": 0.7, "max_retries": 2}}
    assert base["llm"]["temperature"] == 0.0  # the layers are not changed
    assert lift_llm({"seed": 1}) == {"seed": 1}
    assert lift_llm({"seed": 1, "model": "m", "llm": {"backend": "openai"}}) == {
        "seed": 1, "llm": {"backend": "openai", "model": "m"}}


def test_config_json_is_nested_and_parses_back_to_the_run_config(tmp_path):
    out = tmp_path / "r"
    assert main(["run", *SMALL, "--temperature", "0.3", "--out", str(out)]) == 0
    dump = json.loads((out / "config.json").read_text())
    assert not set(LLM_KEYS) & set(dump)
    assert dump["llm"] == {"backend": "fake", "model": None, "base_url": None, "model_path": None, "n_ctx": 0,
                           "n_parallel": 1, "concurrency": 4, "temperature": 0.3, "solver_max_tokens": 8192,
                           "curator_max_tokens": 8192, "extra_body": None, "request_timeout": 120.0, "max_retries": 6,
                           "request_deadline": None}
    stored = json.loads(sqlite3.connect(out / "run.sqlite").execute(
        "SELECT value FROM meta WHERE key='config'").fetchone()[0])
    cfg = RunConfig.parse(stored)
    assert RunConfig.parse(dump) == cfg  # the derived preset_summary is recomputed, not a setting
    assert RunConfig.parse(json.loads(json.dumps(cfg.model_dump()))) == cfg
    env = json.loads((out / "environment.json").read_text())
    assert env["backend"]["identity"].startswith("fake")


def _flatten_stored_config(out: Path) -> dict:
    """Rewrite a run folder's stored config and config.json as an older janus-memory wrote them (flat backend keys)."""
    db = sqlite3.connect(out / "run.sqlite")
    cfg = json.loads(db.execute("SELECT value FROM meta WHERE key='config'").fetchone()[0])
    cfg.update(cfg.pop("llm"))
    db.execute("UPDATE meta SET value=? WHERE key='config'", (json.dumps(cfg, sort_keys=True),))
    db.execute("DELETE FROM meta WHERE key='seal:setup'")  # an older janus-memory wrote no setup seal
    db.commit()
    db.close()
    on_disk = json.loads((out / "config.json").read_text())
    on_disk.update(on_disk.pop("llm"))
    (out / "config.json").write_text(json.dumps(on_disk, indent=2, sort_keys=True))
    return cfg


def test_an_old_flat_run_folder_resumes_to_the_same_exports(tmp_path):
    from janus_memory.cli.parser import build_parser
    from janus_memory.cli.run_command import _config_from_args
    from janus_memory.report.runs import load_method_runs
    from janus_memory.run.experiment import Stopped, run_experiment

    ref = tmp_path / "ref"
    assert main(["run", *SMALL, "--out", str(ref)]) == 0
    out = tmp_path / "old"
    args = build_parser().parse_args(["run", *SMALL, "--out", str(out)])
    with pytest.raises(Stopped):
        run_experiment(_config_from_args(args, demo=False), log=lambda m: None, stop_after=3)
    flat = _flatten_stored_config(out)
    assert (flat["backend"], flat["temperature"], "llm" in flat) == ("fake", 0.7, False)
    assert main(["run", "--resume", str(out), "--quiet"]) == 0
    for f in ("decisions.jsonl", "steps.jsonl", "test.jsonl", "final_memory.txt"):
        assert (out / M / f).read_bytes() == (ref / M / f).read_bytes(), f
    # its config.json stays as it was written; the report still names backend and model
    assert json.loads((out / "config.json").read_text())["backend"] == "fake"
    (row,) = load_method_runs([out])
    assert (row.setup["backend"], row.setup["model"]) == ("fake", "scripted")


def test_an_old_flat_run_folder_refuses_another_model_but_not_another_endpoint(tmp_path, capsys):
    from janus_memory.cli.parser import build_parser
    from janus_memory.cli.run_command import _config_from_args
    from janus_memory.run.experiment import Stopped, run_experiment

    out = tmp_path / "old"
    args = build_parser().parse_args(["run", *SMALL, "--out", str(out)])
    with pytest.raises(Stopped):
        run_experiment(_config_from_args(args, demo=False), log=lambda m: None, stop_after=2)
    _flatten_stored_config(out)
    rc = main(["run", "--resume", str(out), "--temperature", "0.1", "--quiet"])
    assert "janus dataset=" not in capsys.readouterr().out  # refused before the header
    rc = main(["run", "--resume", str(out), "--temperature", "0.1", "--quiet"])
    assert _one_error(capsys, rc) == (
        "error: cannot resume: the config differs from the stored run: llm.temperature: 0.7 -> 0.1 (a resumed run "
        "keeps its stored settings: leave those options out)")
    assert main(["run", "--resume", str(out), "--concurrency", "2", "--quiet"]) == 0


def test_an_unknown_encoder_is_one_line_before_the_header_and_makes_no_folder(tmp_path, capsys):
    out = tmp_path / "e"
    rc = main(["run", "--backend", "fake", "--dataset", "gsm8k", "--stream-size", "3", "--test-size", "1",
               "--encoder", "foo", "--out", str(out)])
    assert capsys.readouterr().out == ""
    assert rc == 2 and not out.exists()
    rc = main(["run", "--backend", "fake", "--dataset", "gsm8k", "--encoder", "foo", "--out", str(out)])
    assert _one_error(capsys, rc) == ("error: unknown encoder 'foo'; choose one of: hashing, minilm, st ('minilm', "
                                      "'hashing[:n]' or 'st:<name-or-path>')")
