"""Run presets and typed settings: the run presets reach the runner, every new option with exact values,
bad input as one-line errors (exit 2), config.json records the preset, old stored configs still resume."""
import json

import pytest

from janus_memory.cli import main
from janus_memory.controller import JanusConfig
from janus_memory.errors import ConfigError
from janus_memory.run.build import build_context, resolve_config, sandbox_info, validate_names
from janus_memory.settings.config import JanusSettings, RunConfig, check_updater_config, demo_config, migrate_stored
from janus_memory.settings.presets import SEED_HELP


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


def _cfg(out="runs/x", **kw):
    base = dict(backend="fake", dataset="gsm8k", stream_size=4, test_size=2, encoder="hashing", out=str(out),
                janus={"warmup": 1, "coverage_size": 1, "boundary_size": 1, "fresh_size": 1, "trigger": "always"},
                updater="dc_rs", controller="janus")
    base.update(kw)
    return RunConfig.parse(base)


# ------------------------------------------------------------------ presets reach the controller, updater, evaluator
def test_paper_preset_is_the_default_of_run():
    cfg = RunConfig()
    assert cfg.preset == "paper" and cfg.replay_mode() == "fresh" and cfg.janus_config() == JanusConfig.paper()
    assert cfg.updater_settings() == {"temperature": 0.7, "solver_max_tokens": 8192, "curator_max_tokens": 8192}


def test_small_preset_settings_exact():
    cfg = RunConfig(preset="small")
    assert cfg.replay_mode() == "frozen" and cfg.janus_config() == JanusConfig.fast()
    assert cfg.updater_settings() == {"prompts": "small", "extraction": "last", "presence_penalty": None,
                                      "execute_code": False, "curator_input": "question", "temperature": 0.7,
                                      "solver_max_tokens": 8192, "curator_max_tokens": 8192, "sampling": "backend",
                                      "parse_reasoning": False}
    assert RunConfig(preset="small", updater="expel").updater_settings()["rule_ops"] == "strict"
    assert RunConfig(preset="small", updater="exprag").updater_settings()["presence_penalty"] is None
    # the user's settings win over the preset's
    assert RunConfig(preset="small", updater_config={"prompts": "paper"}).updater_settings()["prompts"] == "paper"


def test_demo_uses_the_small_preset():
    cfg = demo_config(out="runs/d")
    assert cfg.preset == "small" and cfg.replay_mode() == "frozen"
    assert cfg.janus_config() == JanusConfig.fast(warmup=4, coverage_size=2, boundary_size=1, fresh_size=1,
                                                       skip_trivially_equal=True,  # demo only
                                                       trigger="always")  # 5 steps give MMT no history
    assert demo_config(out="runs/d", preset="paper").replay_mode() == "fresh"


def test_janus_preset_and_explicit_switches_override_the_run_preset():
    cfg = RunConfig(preset="small", janus_preset="paper", replay="fresh", janus={"same_memory_shortcut": True})
    assert cfg.janus_config() == JanusConfig.paper(same_memory_shortcut=True) and cfg.replay_mode() == "fresh"
    assert RunConfig(janus_preset="fast").janus_config() == JanusConfig.fast()
    assert RunConfig(janus={"replay_limit": 7}).janus_config().replay_limit == 7


def test_evaluator_of_a_run_has_its_replay_mode_and_salt(tmp_path):
    ctx = build_context(_cfg(tmp_path / "r", seed=3, stream_order_seed=5), log=lambda m: None)
    ev = ctx.make_evaluator(ctx.make_updater())
    assert (ev.replay, ev.salt) == ("fresh", "seed=3;order=5")
    ctx2 = build_context(_cfg(tmp_path / "r2", preset="small"), log=lambda m: None)
    ev2 = ctx2.make_evaluator(ctx2.make_updater())
    assert (ev2.replay, ev2.salt) == ("frozen", "seed=0;order=None")


def test_resolved_config_writes_every_preset_choice_out():
    r = resolve_config(_cfg(preset="small"))
    assert r.replay == "frozen" and r.janus["same_memory_shortcut"] is True and r.janus["early_stop"] is True
    assert r.updater_config["prompts"] == "small" and r.updater_config["curator_input"] == "question"
    p = resolve_config(_cfg())
    assert p.replay == "fresh" and p.janus["same_memory_shortcut"] is False
    assert p.updater_config["prompts"] == "paper" and p.updater_config["presence_penalty"] == 1.0
    assert resolve_config(p) == p  # idempotent: a stored config resumes as itself
    assert p.llm.n_ctx == 0  # only the embedded backend gets a sized window


# ------------------------------------------------------------------ typed settings: one-line errors naming the key
@pytest.mark.parametrize("data, msg", [
    ({"bogus": 1}, "unknown config key 'bogus'"),
    ({"janus": {"warmupp": 3}}, "unknown config key 'janus.warmupp' (did you mean warmup?)"),
    ({"janus": {"warmup": "3"}}, "invalid value for 'janus.warmup': Input should be a valid integer (got '3')"),
    ({"janus": {"same_memory_shortcut": "yes"}},
     "invalid value for 'janus.same_memory_shortcut': Input should be a valid boolean (got 'yes')"),
    ({"janus": {"beta": 1.0}}, "invalid Janus setting: beta must be in [0, 1), got 1.0"),
    ({"janus": {"trigger": "sometimes"}},
     "invalid Janus setting: trigger must be one of ('never', 'always', 'random', 'periodic', 'mmt', 'selective'), "
     "got 'sometimes'"),
    ({"janus": {"replay_limit": 0}}, "invalid Janus setting: replay_limit must be None or an int in [1, 1048576], got 0"),
    ({"preset": "fast"}, "invalid value for 'preset': Input should be 'paper' or 'small' (got 'fast')"),
    ({"replay": "warm"}, "invalid value for 'replay': Input should be 'fresh' or 'frozen' (got 'warm')"),
    ({"max_retries": -1}, "invalid value for 'llm.max_retries': must be in [0, 100], got -1"),
    ({"request_timeout": 0}, "invalid value for 'llm.request_timeout': must be in (0, 86400], got 0"),
    ({"request_deadline": -5.0}, "invalid value for 'llm.request_deadline': must be in (0, 604800], got -5.0"),
    ({"n_ctx": -1}, "invalid value for 'llm.n_ctx': must be in [0, 1048576], got -1"),
])
def test_bad_settings_are_one_line_config_errors(data, msg):
    with pytest.raises(ConfigError) as e:
        RunConfig.parse(data)
    assert str(e.value) == msg and "\n" not in str(e.value)


def test_updater_config_checked_against_the_updaters_declared_settings():
    from janus_memory.plugins import ensure_builtins
    from janus_memory.registry import UPDATERS

    ensure_builtins()
    dc = UPDATERS["dc_rs"]
    check_updater_config(dc, {"top_k": 2, "prompts": "small", "presence_penalty": None, "exec_timeout_s": 5})
    with pytest.raises(ConfigError, match=r"^unknown config key 'updater_config.topk' for updater dc_rs; allowed: "):
        check_updater_config(dc, {"topk": 2})
    with pytest.raises(ConfigError) as e:
        check_updater_config(dc, {"prompts": "tiny"})
    assert str(e.value) == "invalid value for 'updater_config.prompts': 'tiny'; choose one of ['paper', 'small']"
    with pytest.raises(ConfigError) as e:
        check_updater_config(dc, {"top_k": "3"})
    assert str(e.value) == "invalid value for 'updater_config.top_k': expected a whole number, got '3'"
    with pytest.raises(ConfigError) as e:
        check_updater_config(dc, {"execute_code": 1})
    assert str(e.value) == "invalid value for 'updater_config.execute_code': expected bool, got 1"
    with pytest.raises(ConfigError, match="unknown config key 'updater_config.topk'"):
        validate_names(_cfg(updater_config={"topk": 2}))


def test_janus_settings_read_like_the_dict_they_replace():
    s = JanusSettings(warmup=3, trigger="always")
    assert dict(s.items()) == {"warmup": 3, "trigger": "always"} == {**s} and s == {"warmup": 3, "trigger": "always"}
    assert s.get("trigger") == "always" and s.get("tau") is None and "tau" not in s and len(s) == 2
    assert RunConfig(janus=s).model_dump()["janus"] == {"warmup": 3, "trigger": "always"}
    assert RunConfig(janus={"tau": 0.2}).with_janus(warmup=2).janus == {"tau": 0.2, "warmup": 2}


# ------------------------------------------------------------------ context window of the embedded backend
def test_context_window_sized_from_the_request_or_refused():
    assert RunConfig().context_window() == 8192 + 2048
    assert RunConfig(solver_max_tokens=448, curator_max_tokens=320).context_window() == 448 + 2048
    assert RunConfig(n_ctx=16384).context_window() == 16384
    with pytest.raises(ConfigError) as e:
        RunConfig(n_ctx=4096).context_window()
    assert str(e.value) == ("n_ctx: n_ctx 4096 is below max_tokens 8192 + a 2048-token prompt budget (10240); raise "
                            "n_ctx (or leave it 0 to size it) or lower the max tokens")
    cfg = RunConfig(backend="local", n_ctx=4096)
    with pytest.raises(ConfigError, match="^n_ctx: n_ctx 4096 is below"):
        validate_names(cfg)  # before any model load
    assert resolve_config(RunConfig(backend="local", solver_max_tokens=1000, curator_max_tokens=3000)).llm.n_ctx == 5048


def test_local_backend_gets_the_sized_window(monkeypatch, tmp_path):
    import janus_memory.llm as llm
    from janus_memory.run import backends

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 16)
    seen = {}
    monkeypatch.setattr(llm, "LocalBackend", lambda path, n_ctx, n_threads, n_parallel=1: seen.update(n_ctx=n_ctx) or "backend")
    monkeypatch.setattr("janus_memory.llm.model_fetch.resolve_model_path", lambda p: gguf)
    pytest.importorskip("xllamacpp")
    assert backends.local_backend(RunConfig(solver_max_tokens=6000, curator_max_tokens=100), []) == "backend"
    assert seen == {"n_ctx": 8048}


# ------------------------------------------------------------------ request timeout / retries / deadline, sandbox
def test_request_settings_reach_the_client_and_the_openai_backend(tmp_path, monkeypatch):
    ctx = build_context(_cfg(tmp_path / "r", max_retries=2, request_deadline=600.0), log=lambda m: None)
    assert ctx.client.max_retries == 2 and ctx.client.deadline_s == 600.0
    ctx = build_context(_cfg(tmp_path / "r2"), log=lambda m: None)
    assert ctx.client.max_retries == 6 and ctx.client.deadline_s is None
    from janus_memory.run import backends

    monkeypatch.setattr(backends, "check_endpoint", lambda url, *a, **k: None)
    be = backends.openai_backend(RunConfig(backend="openai", base_url="http://127.0.0.1:9/v1", model="m",
                                           request_timeout=33.0), [])
    assert be.timeout == 33.0


def test_sandbox_info_names_the_backend_and_the_fallback_notice(monkeypatch):
    from janus_memory.tasks import sandbox

    class Fam:
        backend = "auto"
        allow_weak_sandbox = False

    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    monkeypatch.delenv(sandbox.ENV_ALLOW_WEAK, raising=False)
    with pytest.raises(sandbox.WeakSandboxRefused, match="--allow-weak-sandbox"):
        sandbox_info(Fam())  # no bubblewrap and no opt-in: the run stops before its first answer
    monkeypatch.setattr(sandbox, "_SAID", set())
    Fam.allow_weak_sandbox = True
    said = []
    assert sandbox_info(Fam(), say=said.append) == {"backend": "unshare", "notice": None}
    assert sandbox_info(object()) is None
    skipped = sandbox_info(object(), True)  # DC's "EXECUTE CODE!" step without the opt-in: skipped, said so
    assert skipped["backend"].startswith("none") and "step is skipped" in skipped["notice"]
    assert sandbox_info(object(), True, True, say=said.append) == {"backend": "unshare", "notice": None}
    assert said == [sandbox.FALLBACK_NOTICE]  # the weak sandbox's warning, once per process
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(sandbox, "self_test", lambda backend="auto", refresh=False: {})
    Fam.ensure_sandbox = lambda self, say=None: "bwrap"
    assert sandbox_info(Fam()) == {"backend": "bwrap", "notice": None}


def test_allow_weak_sandbox_reaches_a_copy_of_the_family(tmp_path, monkeypatch):
    from janus_memory.tasks import get_family

    monkeypatch.setattr("janus_memory.tasks.sandbox.bwrap_path", lambda: None)
    monkeypatch.setattr("janus_memory.tasks.sandbox._SAID", set())
    logs = []
    ctx = build_context(_cfg(tmp_path / "r", dataset="humaneval", allow_weak_sandbox=True), log=logs.append)
    assert ctx.family.allow_weak_sandbox is True and get_family("humaneval").allow_weak_sandbox is False
    assert ctx.backend_info["sandbox"] == "unshare" and logs.count(
        __import__("janus_memory.tasks.sandbox", fromlist=["x"]).FALLBACK_NOTICE) == 1


# ------------------------------------------------------------------ CLI
def test_cli_seed_help_and_new_options(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert " ".join(SEED_HELP.split()) in out
    for opt in ("--preset {paper,small}", "--replay {fresh,frozen}", "--replay-limit", "--same-memory-shortcut on|off",
                "--janus-preset {paper,fast,recommended}", "--request-timeout", "--max-retries", "--request-deadline",
                "--allow-weak-sandbox", "--n-ctx"):
        assert opt in out, opt


@pytest.mark.parametrize("argv, err", [
    (["--preset", "large"], "argument --preset: invalid choice: 'large' (choose from 'paper', 'small')"),
    (["--replay", "warm"], "argument --replay: invalid choice: 'warm' (choose from 'fresh', 'frozen')"),
    (["--same-memory-shortcut", "maybe"], "argument --same-memory-shortcut: expected on or off, got 'maybe'"),
    (["--max-retries", "-1"], "--max-retries must be in [0, 100], got -1"),
    (["--replay-limit", "0"], "--replay-limit must be None or an int in [1, 1048576], got 0"),
    (["--request-timeout", "0"], "--request-timeout must be in (0, 86400], got 0.0"),
    (["--backend", "local", "--n-ctx", "1024"], "n_ctx: n_ctx 1024 is below max_tokens 8192 + a 2048-token prompt "
                                                 "budget (10240); raise n_ctx (or leave it 0 to size it) or lower the "
                                                 "max tokens"),
])
def test_cli_bad_options_exit_2_with_one_line(argv, err, capsys, tmp_path):
    base = ["run", "--backend", "fake", "--dataset", "gsm8k", "--out", str(tmp_path / "r")]
    with pytest.raises(SystemExit) as e:
        rc = main(base + argv)
        raise SystemExit(rc)
    assert e.value.code == 2
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error:")]
    # argparse's own errors carry the CLI's pointer to the help; the settings errors are the message alone
    suffix = "; see `janus run --help`" if err.startswith("argument ") else ""
    assert lines == [f"error: {err}{suffix}"]
    assert not (tmp_path / "r").exists()


def test_cli_options_reach_the_stored_config_and_the_report(tmp_path, capsys):
    out = tmp_path / "r"
    rc = main(["run", "--backend", "fake", "--encoder", "hashing", "--dataset", "gsm8k", "--stream-size", "4",
               "--test-size", "2", "--updater", "dc_rs", "--controller", "janus", "--warmup", "1", "--coverage-size", "1",
               "--boundary-size", "1", "--fresh-size", "1", "--trigger", "always", "--replay-limit", "2",
               "--same-memory-shortcut", "on", "--max-retries", "3", "--request-deadline", "50", "--request-timeout",
               "9", "--out", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert ("\nJanus preset: custom: paper with same_memory_shortcut=True, replay_limit=2; differs from the paper's: "
            "warm-up 1 (paper 20), coverage 1 (paper 12), boundary 1 (paper 8), fresh 1 (paper 5), trigger always "
            "(paper mmt)\n") in printed
    assert ("evaluation set: the paper's hybrid set of coverage 1 + boundary 1 + fresh 1 = 3 tasks, 2 of them sampled "
            "per comparison;") in printed
    assert "triggers decided by encoder hashing: scikit-learn HashingVectorizer" in printed
    cfg = json.loads((out / "config.json").read_text())
    assert (cfg["preset"], cfg["replay"], cfg["llm"]["max_retries"], cfg["llm"]["request_deadline"],
            cfg["llm"]["request_timeout"]) == (
        "paper", "fresh", 3, 50.0, 9.0)
    assert cfg["janus"]["replay_limit"] == 2 and cfg["janus"]["same_memory_shortcut"] is True
    assert cfg["preset_summary"] == {
        "name": "paper", "janus_preset": "custom", "replay": "fresh",
        "janus": "janus preset: custom (trigger=always, tau=0.0, same_memory_shortcut=True, early_stop=False, "
                 "dedup=False, clustering=paper, replay_limit=2)",
        "encoder": "triggers decided by encoder hashing: scikit-learn HashingVectorizer (no weights; a plumbing "
                   "fallback, not the paper's encoder)"}
    decisions = [json.loads(x) for x in (out / "dc_rs+janus" / "decisions.jsonl").read_text().splitlines()]
    assert max(len(d["decision"]["eval_ids"]) for d in decisions) == 2  # replay_limit reached the controller
    assert all("sample" in e for d in decisions for e in d["decision"]["evaluations"])  # fresh draws are recorded
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "- Janus preset: custom: paper with same_memory_shortcut=True, replay_limit=2\n" in md
    assert "- Encoder (decides the triggers): hashing: scikit-learn HashingVectorizer" in md


# ------------------------------------------------------------------ old stored configs
def test_migrate_stored_config_spells_out_the_old_behaviour():
    # (and, stored before the twin cache setting too, the settings of then: settings/migrate.before_twin_cache)
    pre27 = {"checker": "strict", "replay_failures": "abort", "twin_cache": "shared", "checkpoint_restore": "exact",
             "updater_config": {"sampling": "backend"}, "option_order": "seeded", "apibench_split": "registry",
             "apibench_question": "instruction"}
    assert migrate_stored({"janus": {"warmup": 2}}) == {
        "janus": {"same_memory_shortcut": True, "warmup": 2, "clustering": "sklearn"}, "preset": "small",
        "janus_preset": "paper", "replay": "frozen", **pre27}
    assert migrate_stored({"preset": "paper", "janus": {}}) == {"preset": "paper", "janus": {"clustering": "sklearn"},
                                                                **pre27}
    before_apibench = {"apibench_split": "registry", "apibench_question": "instruction"}
    assert migrate_stored({"preset": "paper", "janus": {}, "twin_cache": None}) == {
        "preset": "paper", "janus": {}, "twin_cache": None, "option_order": "seeded",
        **before_apibench}  # with the twin cache key: as stored
    assert migrate_stored({"preset": "paper", "janus": {}, "twin_cache": None, "option_order": None}) == {
        "preset": "paper", "janus": {}, "twin_cache": None, "option_order": None, **before_apibench}
    newest = {"preset": "paper", "janus": {}, "twin_cache": None, "option_order": None, "apibench_split": None,
              "apibench_question": None}
    assert migrate_stored(newest) == newest  # the preset's (question, paper, code)


def test_a_recommended_run_stored_before_the_evaluation_set_choice_resumes_as_it_ran():
    """The whole resolved JanusConfig of a run started with the recommended preset before the evaluation-set choice
    existed has no eval_set, near_copy_inherit or gate_compare key: it resumes on what it ran (the hybrid set, the
    full gate), not on today's panel, and does not fail on the two gates."""
    from janus_memory.controller.config import RECOMMENDED_HYBRID_BOUNDARY_FIRST

    old = {k: v for k, v in JanusConfig(**RECOMMENDED_HYBRID_BOUNDARY_FIRST, warmup=2).to_dict().items()
           if k not in ("eval_set", "panel_size", "panel_rotate", "panel_min_evals", "near_copy_inherit",
                        "gate_compare")}
    stored = {"preset": "paper", "twin_cache": "separate", "janus_preset": "recommended", "backend": "fake",
              "janus": old}
    cfg = RunConfig.parse(migrate_stored(stored))
    jc = cfg.janus_config()
    unused = ("panel_size", "panel_rotate")  # the panel's own settings, not read with eval_set hybrid
    want = JanusConfig(**RECOMMENDED_HYBRID_BOUNDARY_FIRST, warmup=2).to_dict()
    assert {k: v for k, v in jc.to_dict().items() if k not in unused} == {k: v for k, v in want.items()
                                                                          if k not in unused}
    assert (jc.eval_set, jc.gate_full_compare, jc.gate_compare, jc.near_copy_inherit, jc.seq_max_pairs) == (
        "hybrid", True, False, False, 6)
    today = {"preset": "paper", "twin_cache": "separate", "janus_preset": "recommended", "backend": "fake",
             "janus": JanusConfig.recommended(warmup=2).to_dict()}
    assert RunConfig.parse(migrate_stored(today)).janus_config() == JanusConfig.recommended(warmup=2)


def test_a_recommended_run_stored_before_the_holes_were_closed_resumes_as_it_ran():
    """A run started with the panel controller judged on seeds 60-79 stored its whole JanusConfig without
    near_copy_anchor and indeterminate_rollback: it resumes with both off (rewordings may chain, an all-None candidate
    is deployed), as it ran; the controller state it checkpointed has no such keys either and loads the same way."""
    from janus_memory.controller import Janus

    # that controller's settings (the recommended preset judged on seeds 60-79; docs/measurements.md)
    ties = dict(trigger="always", decision_rule="sequential", eval_set="panel", panel_size=19, panel_rotate=0.5,
                panel_min_evals=5, seq_max_pairs=11, seq_extend_pairs=19, seq_extend_margin=0, seq_round=2,
                seq_alpha=0.2, seq_beta=0.2, seq_theta=0.3, reuse_old_results=True, near_copy_similarity=0.93,
                near_copy_inherit=True, near_copy_pairs=1, gate_compare=True, gate_full_compare=False,
                eval_order="informative", dedup=True, same_memory_shortcut=True, clustering="paper",
                seq_recent_pairs=0, near_copy_anchor=False, indeterminate_rollback=False, seq_deploy_margin=0,
                seq_quiet_deploy=True)

    old = {k: v for k, v in JanusConfig(**ties, warmup=2).to_dict().items()
           if k not in ("near_copy_anchor", "indeterminate_rollback")}
    stored = {"preset": "paper", "twin_cache": "separate", "janus_preset": "recommended", "backend": "fake",
              "janus": old}
    jc = RunConfig.parse(migrate_stored(stored)).janus_config()
    assert jc == JanusConfig(**ties, warmup=2) != JanusConfig.recommended(warmup=2)
    assert (jc.near_copy_anchor, jc.indeterminate_rollback, jc.eval_set) == (False, False, "panel")
    state = Janus(JanusConfig(**ties, warmup=2)).state_dict()
    state["config"] = old
    assert Janus.from_state_dict(state).config == jc


def test_yaml_config_file_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text("backend: fake\npreset: small\njanus:\n  warmup: 2\n  tau_x: 0.1\n")
    assert main(["run", "--config", str(bad), "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: unknown config key 'janus.tau_x' (did you mean tau?) (line 5 of {bad})"]
    bad.write_text("backend: fake\nupdater_config:\n  top_k: three\n")
    assert main(["run", "--config", str(bad), "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: invalid value for 'updater_config.top_k': expected a whole number, got 'three' (line 3 of {bad})"]
    assert not (tmp_path / "r").exists()


def test_janus_settings_mirror_every_janus_config_field_with_its_default():
    """The typed settings and the controller's flat keys cannot drift apart: same names, same defaults, same order."""
    from janus_memory.controller.janus import JanusConfig
    from janus_memory.settings.config import JanusSettings

    js = {k: v.default for k, v in JanusSettings.model_fields.items()}
    assert list(js.items()) == list(JanusConfig().to_dict().items())
