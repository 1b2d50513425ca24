"""The settings of runs stored by older versions, spelled out as they ran (so an old run folder resumes and reports
unchanged): before the presets, the ``llm`` section, the twin cache and each later switch existed. Each step keys on
the setting whose absence dates the stored config. Reading a stored config back goes through settings/stored.py.
"""
from __future__ import annotations

from .llm_settings import lift_llm

# the JanusConfig switches that close the rewording-chain and all-None holes, as a config stored before they existed
# ran (off)
HOLE_SWITCHES_OFF = {"near_copy_anchor": False, "indeterminate_rollback": False}
# the sequential test's deploy margin, as a config stored before it existed ran (no lead asked)
DEPLOY_MARGIN_OFF = {"seq_deploy_margin": 0, "seq_quiet_deploy": True}


def migrate_stored(data: dict) -> dict:
    """A config stored before the presets existed (no ``preset`` key) ran what is now ``preset: small`` with the
    paper JanusConfig switches as stored and frozen (cached) replays: say so explicitly, so it resumes unchanged.
    A config stored before the ``llm`` section existed has its backend keys flat: they are lifted into it."""
    data = lift_llm(dict(data))  # stored before the llm section existed: flat backend keys
    if "preset" not in data:
        data.update(preset="small", janus_preset="paper", replay="frozen")
        data["janus"] = {"same_memory_shortcut": True, **(data.get("janus") or {})}
    if "twin_cache" not in data:  # stored before the twin cache setting (every config.json written since holds it)
        data = before_twin_cache(data)
    if "option_order" not in data:  # stored before GPQA's options could follow the question alone
        data["option_order"] = "seeded"
    if "apibench_split" not in data:  # stored before APIBench took the authors' split key and question text
        data.update(apibench_split="registry", apibench_question="instruction")
    janus = data.get("janus")
    if isinstance(janus, dict) and "trigger" in janus and "eval_set" not in janus:
        # the whole resolved JanusConfig, stored before the evaluation-set choice existed: the switches added with it
        # were off. Without this a run started with the recommended preset of that time would resume on the new one's
        # panel (or fail: its stored gate_full_compare and the new gate_compare exclude each other)
        data["janus"] = {**janus, "eval_set": "hybrid", "near_copy_inherit": False, "gate_compare": False}
    janus = data.get("janus")
    if isinstance(janus, dict) and "trigger" in janus and "near_copy_anchor" not in janus:
        # the whole resolved JanusConfig, stored before those switches existed: they were off (a recommended run of
        # that time resumes as it ran)
        data["janus"] = {**janus, **HOLE_SWITCHES_OFF}
    janus = data.get("janus")
    if isinstance(janus, dict) and "trigger" in janus and "seq_deploy_margin" not in janus:
        # the whole resolved JanusConfig, stored before the deploy margin existed: the sequential test deployed on no
        # lead (margin 0, a quiet comparison deploys); today's recommended preset asks a lead of 1
        data["janus"] = {**janus, **DEPLOY_MARGIN_OFF}
    stored_dc = data.get("updater_config") or {}
    if data.get("updater") in ("dc_rs", "dc_cu") and "prompts" in stored_dc and "letter_format" not in stored_dc:
        # a resolved DC config (config.json lists every updater default) stored before the paper generator showed
        # a choice as "(A)"
        data["updater_config"] = {"letter_format": "bare", **stored_dc}
    if data.get("updater") == "expel" and "outputs" not in (data.get("updater_config") or {}):
        # stored before ExpeL kept the authors' raw outputs and showed raw questions as examples
        data["updater_config"] = {"outputs": "visible", "examples_input": "task_prompt",
                                  "test_scoring": "answer_block", **(data.get("updater_config") or {})}
    if data.get("updater") == "expel" and "message_shape" not in (data.get("updater_config") or {}):
        # stored before the solver prompt went out as one [SYSTEM] / [HUMAN] text with the authors' kind of
        # operation format lines
        data["updater_config"] = {"message_shape": "system_user", "ops_format": "short",
                                  **(data.get("updater_config") or {})}
    if data.get("updater") == "expel" and "solver_layout" not in (data.get("updater_config") or {}):
        # stored before the solver prompt followed the authors' section order and placeholders
        data["updater_config"] = {"solver_layout": "rules_first", **(data.get("updater_config") or {})}
    return data


def before_twin_cache(data: dict) -> dict:
    """The settings a run stored before the ``twin_cache`` setting existed ran with, spelled out: our strict
    checker, a replay failure ends the comparison, the base and +Janus twin share cached answers, scikit-learn
    k-means, truncation samplers left to the backend."""
    data = dict(data)
    data.update(checker="strict", replay_failures="abort", twin_cache="shared", checkpoint_restore="exact")
    data["janus"] = {**(data.get("janus") or {})}
    data["janus"].setdefault("clustering", "sklearn")
    data["updater_config"] = {**(data.get("updater_config") or {})}
    data["updater_config"].setdefault("sampling", "backend")
    if data.get("updater") == "expel":  # ExpeL's retrieval fields were ours then
        data["updater_config"].setdefault("retrieval", "multi_field")
        data["updater_config"].setdefault("curator_input", "task_prompt")
    if data.get("updater") in ("dc_rs", "dc_cu", "expel"):  # the parsers saw the answer text only
        data["updater_config"].setdefault("parse_reasoning", False)
    return data
