"""An updater's numeric settings: a whole number where the updater counts (a retrieval depth of 2.5 or -1, a token
cap of 0, a curator every 0 steps are refused with one line before a run starts, and by the updater itself when it is
built from Python)."""
from __future__ import annotations

import pytest

from janus_memory.cli import main
from janus_memory.errors import ConfigError
from janus_memory.run.build import validate_names
from janus_memory.settings.config import RunConfig
from janus_memory.updaters import make_updater


def _cfg(updater: str, updater_config: dict) -> RunConfig:
    return RunConfig.parse({"backend": "fake", "controller": "none", "updater": updater,
                            "updater_config": updater_config})


@pytest.mark.parametrize("updater,key,value,message", [
    ("exprag", "top_k", 2.5, "invalid value for 'updater_config.top_k': expected a whole number, got 2.5"),
    ("exprag", "top_k", -1, "invalid value for 'updater_config.top_k': must be in [0, 1048576], got -1"),
    ("dc_rs", "solver_max_tokens", 0, "invalid value for 'updater_config.solver_max_tokens': must be in [1, 1048576], "
                                      "got 0"),
    ("expel", "reflection_max_tokens", 0, "invalid value for 'updater_config.reflection_max_tokens': must be in "
                                          "[1, 1048576], got 0"),
    ("ace", "curator_frequency", 0, "invalid value for 'updater_config.curator_frequency': must be in [1, 1048576], "
                                    "got 0"),
    ("expel", "batch_update_size", 0, "invalid value for 'updater_config.batch_update_size': must be in [1, 1048576], "
                                      "got 0"),
    ("ace", "refine_threshold", 2, "invalid value for 'updater_config.refine_threshold': must be in [0.0, 1.0], got 2"),
    ("ace", "curator_frequency", None, "invalid value for 'updater_config.curator_frequency': expected a whole number, "
                                       "got None"),
    ("expel", "batch_update_size", None, "invalid value for 'updater_config.batch_update_size': expected a whole "
                                         "number, got None"),
    ("dc_rs", "temperature", None, "invalid value for 'updater_config.temperature': expected float, got None"),
    ("dc_rs", "faithful", None, "invalid value for 'updater_config.faithful': expected bool, got None"),
    ("exprag", "retrieved_output_chars", -5, "invalid value for 'updater_config.retrieved_output_chars': must be in "
                                             "[0, 1048576], got -5"),
    ("exprag", "retrieved_output_chars", 2.5, "invalid value for 'updater_config.retrieved_output_chars': expected a "
                                              "whole number, got 2.5"),
    ("exprag", "extra_body", "x", "invalid value for 'updater_config.extra_body': expected dict, got 'x'"),
    ("reasoning_bank", "extraction_temperature", 9, "invalid value for 'updater_config.extraction_temperature': must "
                                                    "be in [0.0, 2.0], got 9"),
])
def test_settings_refuse_a_count_that_is_not_one(updater, key, value, message):
    with pytest.raises(ConfigError) as e:
        validate_names(_cfg(updater, {key: value}))
    assert str(e.value) == message


def test_none_where_it_means_something_passes():
    validate_names(_cfg("dc_rs", {"presence_penalty": None, "retrieved_output_chars": None, "extra_body": None}))
    validate_names(_cfg("ace", {"reflection_chars": None}))
    validate_names(_cfg("reasoning_bank", {"extraction_temperature": None}))
    validate_names(_cfg("reasoning_bank", {"extraction_temperature": 0.7}))
    validate_names(_cfg("exprag", {"retrieved_output_chars": 300}))


def test_zero_retrieval_depth_and_a_float_where_the_default_is_a_float_pass():
    validate_names(_cfg("exprag", {"top_k": 0}))
    validate_names(_cfg("ace", {"refine_threshold": 1}))


def test_the_cli_refuses_with_the_line_and_creates_nothing(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("backend: fake\ncontroller: none\nupdater: exprag\nupdater_config:\n  top_k: 1.5\n")
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == ("error: invalid value for 'updater_config.top_k': expected a whole number, "
                                       f"got 1.5 (line 5 of {cfg})\n")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("key,value", [("top_k", -1), ("top_k", 2.0), ("top_k", True), ("solver_max_tokens", 0),
                                       ("curator_max_tokens", "512")])
def test_an_updater_built_from_python_refuses_too(key, value):
    from janus_memory.tasks import get_family

    with pytest.raises(ValueError) as e:
        make_updater("exprag", llm=None, family=get_family("rules"), encoder=None, config={key: value})
    least = 0 if key == "top_k" else 1
    assert str(e.value) == f"config {key!r} for updater 'exprag' must be a whole number >= {least}, got {value!r}"
