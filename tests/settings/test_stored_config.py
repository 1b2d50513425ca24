"""settings/stored.py, the one place where a run's defaults are worked out: a config with every default written out
(resolve_config), a stored config read back as it ran (stored_config: old keys migrated, then parsed, then resolved)
and its comparable dump (stored_dump, with the fallback for a config this version cannot parse). Old run folders and
old YAML files load as before."""
from __future__ import annotations

import json

import pytest

from janus_memory.controller import JanusConfig
from janus_memory.errors import ConfigError
from janus_memory.run.build import resolve_config as build_resolve_config
from janus_memory.settings.config import RunConfig
from janus_memory.settings.migrate import migrate_stored
from janus_memory.settings.stored import _top_level_defaults, resolve_config, stored_config, stored_dump
from janus_memory.settings.yaml_load import load_unique

# a config.json of a run stored before the presets, the llm section and the twin cache existed (flat backend keys)
OLD_FLAT = {"dataset": "gsm8k", "updater": "dc_rs", "backend": "fake", "model": "m", "n_ctx": 4096, "seed": 3,
            "janus": {"warmup": 4}, "updater_config": {"top_k": 2}}
# the same settings as a config.json written today (whatever this version resolves)
TODAY = {"dataset": "gsm8k", "updater": "expel", "llm": {"backend": "fake"}, "preset": "paper", "twin_cache": None,
         "option_order": None, "apibench_split": None, "apibench_question": None}


def test_the_runner_and_the_settings_resolve_with_one_function():
    assert build_resolve_config is resolve_config


def test_an_old_flat_stored_config_reads_back_as_it_ran():
    cfg = stored_config(OLD_FLAT)
    # before the presets: the small preset with the paper controller switches and frozen replays
    assert (cfg.preset, cfg.janus_preset, cfg.replay) == ("small", "paper", "frozen")
    # before the twin cache: our checker, aborting replays, shared twin answers, exact checkpoints
    assert (cfg.checker, cfg.replay_failures, cfg.twin_cache, cfg.checkpoint_restore) == (
        "strict", "abort", "shared", "exact")
    assert (cfg.llm.backend, cfg.llm.model, cfg.llm.n_ctx, cfg.seed) == ("fake", "m", 4096, 3)  # flat keys lifted
    jc = cfg.janus_config()
    assert (jc.warmup, jc.same_memory_shortcut, jc.clustering) == (4, True, "sklearn")
    assert cfg.janus.overrides() == jc.to_dict()  # resolved: every Janus setting written out
    upd = cfg.updater_config
    assert (upd["top_k"], upd["sampling"], upd["parse_reasoning"], upd["prompts"]) == (2, "backend", False, "small")
    assert stored_config(cfg.model_dump()) == cfg  # a resolved config reads back as itself


def test_resolve_false_keeps_the_stored_settings_as_given():
    cfg = stored_config(OLD_FLAT, resolve=False)
    assert cfg == RunConfig.parse(migrate_stored(OLD_FLAT))
    assert cfg.janus.overrides() == {"warmup": 4, "same_memory_shortcut": True, "clustering": "sklearn"}
    assert cfg.updater_config == {"top_k": 2, "sampling": "backend", "parse_reasoning": False}
    assert resolve_config(cfg) == stored_config(OLD_FLAT)


@pytest.mark.parametrize("stored", [OLD_FLAT, TODAY, {}, {"preset": "paper", "janus": {"tau": 0.1}},
                                    {"updater": "reasoning_bank", "backend": "openai", "base_url": "http://x:1/v1"}])
def test_filling_the_top_level_defaults_first_changes_nothing(stored):
    """What the resume's comparison did before (RunConfig's defaults filled into the stored mapping, then parsed):
    the same settings as parsing the migrated mapping, so the stored run's comparison is unchanged."""
    old_way = resolve_config(RunConfig.parse(_top_level_defaults(migrate_stored(stored)))).model_dump()
    assert stored_config(stored).model_dump() == old_way == stored_dump(stored)


def test_a_config_this_version_cannot_parse_is_compared_as_stored_with_defaults():
    unknown = {"updater": "not_loaded_plugin", "llm": {"backend": "fake"}, "janus": {"tau": 0.2}, "preset": "paper",
               "twin_cache": None}
    with pytest.raises(ConfigError):
        stored_config(unknown)
    d = stored_dump(unknown)
    assert d["updater"] == "not_loaded_plugin" and d["seed"] == 0 and d["dataset"] == "gsm8k"  # top-level defaults
    assert d["llm"]["backend"] == "fake" and d["llm"]["max_retries"] == RunConfig().llm.max_retries
    assert d["janus"] == {**JanusConfig().to_dict(), "tau": 0.2}
    # flat and nested backend keys that contradict each other (an edited file): as stored, the Janus defaults added
    edited = {"backend": "fake", "llm": {"backend": "openai"}, "janus": {}}
    assert stored_dump(edited) == {"backend": "fake", "llm": {**RunConfig().llm.model_dump(), "backend": "openai"},
                                   "janus": JanusConfig().to_dict()}


def test_an_old_yaml_file_with_flat_backend_keys_loads_as_the_nested_form(tmp_path):
    flat = load_unique("dataset: gsm8k\nbackend: openai\nbase_url: http://127.0.0.1:9/v1\nmodel: q\nconcurrency: 3\n")
    nested = load_unique("dataset: gsm8k\nllm:\n  backend: openai\n  base_url: http://127.0.0.1:9/v1\n  model: q\n"
                         "  concurrency: 3\n")
    assert RunConfig.parse(flat) == RunConfig.parse(nested)
    assert resolve_config(RunConfig.parse(flat)).model_dump() == resolve_config(RunConfig.parse(nested)).model_dump()
    # and a config.json of it reads back the same way
    dumped = json.loads(json.dumps(resolve_config(RunConfig.parse(flat)).model_dump()))
    assert stored_config(dumped) == resolve_config(RunConfig.parse(nested))


def test_a_recommended_run_stored_before_the_deploy_margin_reads_back_as_it_ran():
    """A recommended run's whole resolved JanusConfig, stored before seq_deploy_margin and seq_quiet_deploy existed,
    ran with no lead asked (margin 0, a quiet comparison deploys): read back, resumed and reported that way, not with
    today's recommended margin of 1."""
    ran = {k: v for k, v in JanusConfig.recommended().to_dict().items()
           if k not in ("seq_deploy_margin", "seq_quiet_deploy")}
    stored = {**TODAY, "updater": "dc_rs", "janus_preset": "recommended", "janus": json.loads(json.dumps(ran))}
    jc = stored_config(stored).janus_config()
    assert (jc.seq_deploy_margin, jc.seq_quiet_deploy) == (0, True)
    assert migrate_stored(stored)["janus"]["seq_deploy_margin"] == 0
    # a config stored since keeps what it says
    today = {**stored, "janus": {**stored["janus"], "seq_deploy_margin": 1, "seq_quiet_deploy": False}}
    jc = stored_config(today).janus_config()
    assert (jc.seq_deploy_margin, jc.seq_quiet_deploy) == (1, False)
