"""JanusConfig's grouped settings: the four groups, the flat keywords and reads kept beside them, both dict forms, the
YAML ``janus:`` block, per-group and cross-group checks, and an old run folder read back and resumed."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from janus_memory.cli.app import main
from janus_memory.controller import Janus, JanusConfig
from janus_memory.controller.config import (
    RECOMMENDED_HYBRID_BOUNDARY_FIRST,
    RECOMMENDED_LEAD_TO_DEPLOY,
    DecisionConfig,
    EvalSetConfig,
    ReuseConfig,
    TriggerConfig,
)
from janus_memory.errors import ConfigError
from janus_memory.settings.config import RunConfig
from janus_memory.store.reader import RunReader

HERE = Path(__file__).resolve().parents[1]  # tests/

# the flat keys in the order config.json has always stored them
FLAT_KEYS = [
    "warmup", "coverage_size", "boundary_size", "fresh_size", "beta", "tau", "seed", "trigger", "trigger_rate",
    "trigger_period", "use_coverage", "use_boundary", "use_fresh", "early_stop", "early_stop_round", "dedup",
    "clustering", "pool_size", "decision_rule", "min_margin", "alpha", "same_memory_shortcut", "replay_limit",
    "retention_min", "shrink_max", "magnitude_ratio", "magnitude_window", "tau_quantile", "tau_window", "arm_warmup",
    "use_mmt", "skip_trivially_equal", "ignore_usage_counters", "seq_alpha", "seq_beta", "seq_theta", "seq_max_pairs",
    "seq_round", "eval_order", "gate_full_compare", "gate_compare", "near_copy_similarity", "near_copy_pairs",
    "reuse_old_results", "seq_extend_pairs", "seq_extend_margin", "seq_recent_pairs", "seq_recent_window", "eval_set",
    "panel_size", "panel_rotate", "panel_min_evals", "near_copy_inherit", "near_copy_anchor", "indeterminate_rollback",
    "seq_deploy_margin", "seq_quiet_deploy", "compare_on_broken_embeddings", "on_evaluation_error",
    "seq_rollback_lead", "seq_innocent", "panel_order", "seq_innocent_pairs", "seq_reoffer"]

PRESETS = {"paper": JanusConfig.paper(), "fast": JanusConfig.fast(), "recommended": JanusConfig.recommended(),
           "lead_to_deploy": JanusConfig(**RECOMMENDED_LEAD_TO_DEPLOY),
           "hybrid_boundary_first": JanusConfig(**RECOMMENDED_HYBRID_BOUNDARY_FIRST),
           "support_size_10": JanusConfig.with_support_size(10)}


def test_at_most_fifteen_top_level_fields_and_every_group_field_documented():
    names = [f.name for f in dataclasses.fields(JanusConfig)]
    assert names == ["warmup", "seed", "trigger", "eval_set", "decision", "reuse"]
    assert [len(dataclasses.fields(g)) for g in (TriggerConfig, EvalSetConfig, DecisionConfig, ReuseConfig)] == [
        16, 16, 22, 8]
    import ast
    import inspect

    for cls in (JanusConfig, TriggerConfig, EvalSetConfig, DecisionConfig, ReuseConfig):
        body = ast.parse(inspect.getsource(cls)).body[0].body  # type: ignore[attr-defined]
        documented = {a.target.id for a, doc in zip(body, body[1:]) if isinstance(a, ast.AnnAssign)
                      and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)}
        assert documented == {f.name for f in dataclasses.fields(cls)}, cls.__name__


def test_flat_keywords_and_reads_still_work():
    c = JanusConfig(trigger="always", tau=0.1)
    assert (c.trigger.kind, c.trigger.tau, c.tau, c.trigger_rate) == ("always", 0.1, 0.1, 0.3)
    assert c.trigger == "always" and c.trigger != "mmt" and str(c.trigger) == "always" and f"{c.trigger}" == "always"
    assert c.eval_set == "hybrid" and c.eval_set.kind == "hybrid"
    r = JanusConfig.recommended()
    assert (r.decision_rule, r.decision.rule, r.reuse_old_results, r.reuse.old_results, r.eval_order,
            r.eval_set.order, r.panel_size, r.seq_extend_pairs, r.gate_compare) == (
        "sequential", "sequential", True, True, "informative", "informative", 19, 12, True)
    # every flat keyword sets its setting and reads back, one at a time
    for key, value in JanusConfig.recommended().to_dict().items():
        one = JanusConfig(**{key: value}) if key not in ("reuse_old_results", "near_copy_similarity",
                                                          "near_copy_inherit", "seq_extend_pairs",
                                                          "seq_rollback_lead") else None
        if one is not None:
            assert one.flat_value(key) == value and one.to_dict()[key] == value, key
    assert JanusConfig(**JanusConfig.recommended().to_dict()) == JanusConfig.recommended()


def test_a_flat_keyword_updates_its_group_and_replace_keeps_working():
    c = JanusConfig(trigger=TriggerConfig(kind="random", rate=0.5), trigger_period=4, coverage_size=3)
    assert (c.trigger.kind, c.trigger.rate, c.trigger.period, c.eval_set.coverage_size) == ("random", 0.5, 4, 3)
    d = dataclasses.replace(JanusConfig(), tau=0.2, use_fresh=False)
    assert (d.tau, d.use_fresh, d.trigger.kind) == (0.2, False, "mmt")
    assert JanusConfig().replace(decision_rule="sign_test", alpha=0.1).decision == DecisionConfig(rule="sign_test",
                                                                                                    alpha=0.1)
    assert JanusConfig().replace(trigger=TriggerConfig(kind="never")).trigger.kind == "never"
    with pytest.raises(TypeError, match=r"^JanusConfig.__init__\(\) got an unexpected keyword argument 'tua'$"):
        JanusConfig(tua=0.1)
    with pytest.raises(ValueError, match=r"^decision must be a DecisionConfig, got 'sequential'$"):
        JanusConfig(decision="sequential")  # type: ignore[arg-type]


def test_to_dict_is_the_flat_form_in_its_fixed_order():
    d = JanusConfig().to_dict()
    assert list(d) == FLAT_KEYS
    assert (d["trigger"], d["eval_set"], d["decision_rule"], d["reuse_old_results"], d["replay_limit"]) == (
        "mmt", "hybrid", "paper", False, None)
    assert json.dumps(JanusConfig(trigger="always").to_dict()).startswith(
        '{"warmup": 20, "coverage_size": 12, "boundary_size": 8, "fresh_size": 5, "beta": 0.9, "tau": 0.0, "seed": 0, '
        '"trigger": "always", "trigger_rate": 0.3, "trigger_period": 3, ')


def test_the_grouped_form():
    g = JanusConfig().to_grouped_dict()
    assert list(g) == ["warmup", "seed", "trigger", "eval_set", "decision", "reuse"]
    assert g["trigger"] == {"kind": "mmt", "beta": 0.9, "tau": 0.0, "rate": 0.3, "period": 3, "use_mmt": True,
                            "retention_min": 0.25, "shrink_max": 0.5, "magnitude_ratio": 1.5, "magnitude_window": 10,
                            "tau_quantile": 0.0, "tau_window": 20, "arm_warmup": True, "gate_compare": False,
                            "gate_full_compare": False, "compare_on_broken_embeddings": True}
    assert g["decision"]["on_evaluation_error"] == "keep_old"
    assert g["reuse"] == {"old_results": False, "near_copy_similarity": 0.0, "near_copy_pairs": 2,
                          "near_copy_inherit": False, "near_copy_anchor": False, "same_memory_shortcut": False,
                          "skip_trivially_equal": False, "ignore_usage_counters": False}
    c = JanusConfig.from_dict({"warmup": 4, "trigger": {"kind": "periodic", "period": 2},
                               "decision": {"rule": "sequential", "seq_max_pairs": 6}, "eval_order": "informative"})
    assert (c.warmup, c.trigger_period, c.decision_rule, c.seq_max_pairs, c.eval_order) == (
        4, 2, "sequential", 6, "informative")


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_round_trips_of_every_preset(name):
    c = PRESETS[name]
    assert JanusConfig.from_dict(c.to_dict()) == c
    assert JanusConfig.from_dict(c.to_grouped_dict()) == c
    assert JanusConfig.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    assert hash(JanusConfig.from_dict(c.to_dict())) == hash(c)


def test_a_setting_given_flat_and_grouped():
    assert JanusConfig.from_dict({"tau": 0.1, "trigger": {"tau": 0.1}}).tau == 0.1  # the same value twice: fine
    with pytest.raises(ValueError, match=r"^Janus setting tau given twice with different values: tau=0\.2 and "
                                         r"trigger\.tau=0\.1$"):
        JanusConfig.from_dict({"tau": 0.2, "trigger": {"tau": 0.1}})
    with pytest.raises(ValueError, match=r"^unknown JanusConfig key: 'trigger\.rat' \(did you mean rate\?\) \(the "
                                         r"trigger group has kind, beta, tau, rate, period, use_mmt, retention_min, "):
        JanusConfig.from_dict({"trigger": {"rat": 0.1}})
    with pytest.raises(ValueError, match=r"^JanusConfig key 'reuse' is a group: give a mapping of its settings "
                                         r"\(old_results, near_copy_similarity, "):
        JanusConfig.from_dict({"reuse": True})
    with pytest.raises(ValueError, match=r"^unknown JanusConfig key: 'tua' \(did you mean tau\?\)$"):
        JanusConfig.from_dict({"tua": 0.1})


def test_per_group_checks_name_the_flat_key():
    cases = [
        (lambda: TriggerConfig(rate=1.5), "trigger_rate must be in [0, 1], got 1.5"),
        (lambda: TriggerConfig(beta=1.0), "beta must be in [0, 1), got 1.0"),
        (lambda: TriggerConfig(period=0), "trigger_period must be >= 1, got 0"),
        (lambda: TriggerConfig(kind="mmx"), "trigger must be one of ('never', 'always', 'random', 'periodic', 'mmt', "
                                            "'selective'), got 'mmx' (did you mean mmt?)"),
        (lambda: TriggerConfig(gate_compare=True, gate_full_compare=True),
         "gate_full_compare and gate_compare are two forms of one gate (a full paper-rule comparison, or one by the "
         "configured rule): set one of them"),
        (lambda: EvalSetConfig(coverage_size=-1), "coverage_size must be >= 0, got -1"),
        (lambda: EvalSetConfig(panel_size=0), "panel_size must be >= 1, got 0"),
        (lambda: EvalSetConfig(order="random"), "eval_order must be one of ('paper', 'informative', 'relevant', "
                                                "'fresh_first', 'interleaved'), got 'random'"),
        (lambda: EvalSetConfig(replay_limit=0), "replay_limit must be None or an int in [1, 1048576], got 0"),
        (lambda: EvalSetConfig(clustering="kmeans"), "clustering must be one of paper, sklearn, incremental, got "
                                                     "'kmeans'"),
        (lambda: DecisionConfig(seq_alpha=0.5), "seq_alpha must be in (0, 0.5), got 0.5"),
        (lambda: DecisionConfig(rule="sequential", seq_extend_pairs=3),
         "seq_extend_pairs must be above seq_max_pairs (> 0), got seq_extend_pairs=3 with seq_max_pairs=0"),
        (lambda: DecisionConfig(seq_recent_pairs=8), "seq_recent_pairs sets the sequential test's cap: set "
                                                     "decision_rule: sequential too"),
        (lambda: DecisionConfig(rule="sign_test", early_stop=True), "early_stop is exact only for "
                                                                    "decision_rule='paper'"),
        (lambda: DecisionConfig(rule="bayes"), "decision_rule must be one of ('paper', 'sign_test', 'sequential'), "
                                               "got 'bayes'"),
        (lambda: ReuseConfig(ignore_usage_counters=True), "ignore_usage_counters refines skip_trivially_equal: set "
                                                          "skip_trivially_equal: true too"),
        (lambda: ReuseConfig(near_copy_inherit=True), "near_copy_inherit passes the reused outcomes to a near copy: "
                                                      "set reuse_old_results: true and near_copy_similarity > 0 too"),
        (lambda: ReuseConfig(old_results=1), "reuse_old_results must be a bool"),
        (lambda: ReuseConfig(near_copy_similarity=float("nan")), "near_copy_similarity must be a finite number, got "
                                                                 "nan"),
        # the rules between groups
        (lambda: JanusConfig(reuse_old_results=True), "reuse_old_results feeds the sequential test: set "
                                                      "decision_rule: sequential too"),
        (lambda: JanusConfig(reuse=ReuseConfig(near_copy_similarity=0.9)), "near_copy_similarity caps the "
                                                                           "sequential test: set decision_rule: "
                                                                           "sequential too"),
        (lambda: JanusConfig(seed=-1), "seed must be in [0, 4294967295], got -1"),
        (lambda: JanusConfig(warmup=-1), "warmup must be >= 0, got -1"),
        (lambda: JanusConfig(eval_set="pannel"), "eval_set must be one of ('hybrid', 'panel'"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError) as e:
            make()
        assert str(e.value).startswith(message), (str(e.value), message)
    assert EvalSetConfig(clustering="full").clustering == "sklearn"  # the stored name of the scikit-learn k-means
    assert JanusConfig(decision_rule="sequential", reuse_old_results=True).reuse.old_results is True


def test_the_yaml_janus_block_takes_flat_and_grouped_keys(tmp_path):
    from janus_memory.settings.yaml_load import load_unique

    text = "dataset: gsm8k\njanus:\n  warmup: 4\n  trigger: {kind: periodic, period: 2}\n  decision:\n    rule: sign_test\n"
    cfg = RunConfig.parse(load_unique(text))
    assert cfg.janus.overrides() == {"warmup": 4, "trigger": "periodic", "trigger_period": 2,
                                     "decision_rule": "sign_test"}  # held and stored as flat keys
    jc = cfg.janus_config()
    assert (jc.trigger.kind, jc.trigger.period, jc.decision.rule, jc.warmup) == ("periodic", 2, "sign_test", 4)
    flat = RunConfig.parse(load_unique("dataset: gsm8k\njanus: {trigger: periodic, trigger_period: 2, warmup: 4, "
                                       "decision_rule: sign_test}\n"))
    assert flat.janus_config() == jc and flat.model_dump()["janus"] == cfg.model_dump()["janus"]
    with pytest.raises(ConfigError, match=r"^invalid value for 'janus': Janus setting tau given twice with different "
                                          r"values: tau=0\.2 and trigger\.tau=0\.1$"):
        RunConfig.parse(load_unique("janus:\n  tau: 0.2\n  trigger: {tau: 0.1}\n"))
    with pytest.raises(ConfigError, match=r"^invalid Janus setting: trigger_rate must be in \[0, 1\], got 1\.5$"):
        RunConfig.parse(load_unique("janus:\n  trigger: {rate: 1.5}\n"))


def test_the_cli_runs_a_grouped_yaml_file(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "run.yaml").write_text("janus:\n  warmup: 2\n  trigger: {kind: always}\n"
                                       "  eval_set: {coverage_size: 1, boundary_size: 1, fresh_size: 1}\n")
    out = tmp_path / "run"
    assert main(["run", "--config", str(tmp_path / "run.yaml"), "--backend", "fake", "--dataset", "gsm8k",
                 "--stream-size", "4", "--test-size", "1", "--encoder", "hashing:64", "--controller", "janus",
                 "--quiet", "--out", str(out)]) == 0
    stored = json.loads((out / "config.json").read_text())["janus"]
    assert sorted(stored) == sorted(FLAT_KEYS)  # written out whole, flat (canonical JSON: keys sorted)
    assert (stored["trigger"], stored["warmup"], stored["coverage_size"], stored["fresh_size"]) == ("always", 2, 1, 1)


def test_an_old_run_folder_reads_back_grouped_and_resumes(tmp_path, monkeypatch):
    """tests/store_v1: a run stored (flat janus section, clustering "full", keys added since absent) before the
    settings were grouped; read back, its controller has the groups, and it resumes to the end."""
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    old = tmp_path / "old"
    shutil.copytree(HERE / "store_v1" / "dc_rs_janus_step5", old)
    before = json.loads((old / "config.json").read_text())["janus"]
    assert "eval_set" not in before and before["clustering"] == "full"
    step, ck = RunReader(old).checkpoint("dc_rs+janus")
    j = Janus.from_state_dict(ck["janus"])
    assert (step, j.config.trigger.kind, j.config.eval_set.clustering, j.config.eval_set.kind, j.config.warmup) == (
        5, "always", "sklearn", "hybrid", 2)
    assert main(["run", "--resume", str(old)]) == 0
    assert RunReader(old).checkpoint("dc_rs+janus")[0] == 8  # the stream's end
    assert json.loads((old / "config.json").read_text())["janus"] == before  # its settings as stored


def test_a_kind_given_flat_keeps_the_rest_of_its_group():
    rec = JanusConfig.recommended()
    assert rec.replace(trigger="mmt").gate_compare is True  # the recommended trigger group's gate stays on
    assert (rec.replace(eval_set="hybrid").eval_order, rec.replace(eval_set="hybrid").dedup) == ("informative", True)
    c = JanusConfig(trigger="random", trigger_rate=0.7, tau=0.3)
    assert (c.replace(trigger="mmt").tau, c.replace(trigger="mmt").trigger_rate) == (0.3, 0.7)
    p = c.replace(trigger="periodic", trigger_period=4)
    assert (p.trigger.kind, p.trigger_period, p.trigger_rate, p.tau) == ("periodic", 4, 0.7, 0.3)


def test_matched_bench_policies_keep_the_reference_settings():
    from janus_memory.bench.policies import PolicySpec, matched_config

    spec = PolicySpec("rec-random", "janus", JanusConfig.recommended(), match="random", reference="rec")
    cfg = matched_config(spec, 3, 40, 10)
    assert (cfg.trigger.kind, cfg.trigger_rate, cfg.gate_compare, cfg.eval_order) == ("random", 0.5, True,
                                                                                      "informative")


def _stored_janus(tmp_path, yaml_text: str, *options: str) -> dict:
    tmp_path.mkdir()
    cfg = tmp_path / "o.yaml"
    cfg.write_text(yaml_text)
    out = tmp_path / "r"
    assert main(["run", "--config", str(cfg), "--backend", "fake", "--dataset", "gsm8k", "--stream-size", "3",
                 "--test-size", "1", "--encoder", "hashing:64", "--controller", "janus", "--quiet", "--out", str(out),
                 *options]) == 0
    return json.loads((out / "config.json").read_text())["janus"]


def test_an_option_over_a_grouped_file_replaces_one_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    grouped = "janus:\n  warmup: 1\n  trigger: {kind: mmt, tau: 0.1, beta: 0.5}\n  eval_set: {coverage_size: 2}\n"
    got = _stored_janus(tmp_path / "a", grouped, "--trigger", "selective")
    assert (got["trigger"], got["tau"], got["beta"], got["coverage_size"]) == ("selective", 0.1, 0.5, 2)
    got = _stored_janus(tmp_path / "b", grouped, "--tau", "0.3", "--coverage-size", "3")
    assert (got["trigger"], got["tau"], got["beta"], got["coverage_size"]) == ("mmt", 0.3, 0.5, 3)


def test_a_grid_axis_over_a_grouped_base_replaces_one_setting(tmp_path):
    from janus_memory.sweep.sweep import load_grid

    (tmp_path / "g.yaml").write_text(
        "base:\n  backend: fake\n  controller: janus\n  out: " + str(tmp_path / "o") + "\n"
        "  janus: {warmup: 5, trigger: {kind: mmt, tau: 0.05, beta: 0.5}}\n"
        "grid:\n  janus.tau: [0.0, 0.1]\n  janus.trigger: [mmt, selective]\n")
    cells = load_grid(tmp_path / "g.yaml")
    assert sorted((c.janus["trigger"], c.janus["tau"], c.janus["beta"]) for c in cells) == [
        ("mmt", 0.0, 0.5), ("mmt", 0.1, 0.5), ("selective", 0.0, 0.5), ("selective", 0.1, 0.5)]


def test_counts_are_bounded_and_numpy_ints_stored_as_ints():
    import numpy as np

    for key in ("warmup", "coverage_size", "fresh_size", "panel_size", "seq_max_pairs"):
        with pytest.raises(ValueError, match=rf"^{key} must be <= 1048576, got 100000000000000000000$"):
            JanusConfig(**{key: 10**20})
    with pytest.raises(ValueError) as e:
        JanusConfig(replay_limit=10**20)
    assert str(e.value) == "replay_limit must be None or an int in [1, 1048576], got 100000000000000000000"
    cfg = JanusConfig(warmup=np.int64(3), coverage_size=np.int32(4), replay_limit=np.int64(7))
    assert json.loads(json.dumps(cfg.to_dict()))["warmup"] == 3 and type(cfg.warmup) is int
    assert type(cfg.coverage_size) is int and type(cfg.replay_limit) is int
