"""Preset switches, --seed help, context sizing, which encoder decided the triggers."""
import pytest

from janus_memory.controller import JanusConfig
from janus_memory.settings import presets


def test_controller_presets():
    p, f = JanusConfig(), JanusConfig.fast()
    assert (p.preset, p.same_memory_shortcut, p.early_stop, p.dedup, p.clustering, p.replay_limit) == (
        "paper", False, False, False, "paper", None)
    assert (f.preset, f.same_memory_shortcut, f.early_stop, f.dedup, f.clustering) == (
        "fast", True, True, True, "incremental")
    assert JanusConfig(same_memory_shortcut=True).preset == "custom"
    assert JanusConfig(tau=0.2, trigger="always").preset == "paper"  # settings, not preset switches
    assert p.preset_line() == ("janus preset: paper (trigger=mmt, tau=0.0, same_memory_shortcut=False, "
                               "early_stop=False, dedup=False, clustering=paper, replay_limit=None)")
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="replay_limit"):
            JanusConfig(replay_limit=bad)
    assert JanusConfig.from_dict(JanusConfig(replay_limit=7).to_dict()).replay_limit == 7


def test_run_presets():
    assert presets.updater_overrides("paper", "dc_rs") == {}
    ours = {"sampling": "backend", "parse_reasoning": False}  # the small preset keeps ours
    assert presets.updater_overrides("small", "dc_rs") == {"prompts": "small", "extraction": "last",
                                                           "presence_penalty": None, "execute_code": False,
                                                           "curator_input": "question", **ours}
    assert presets.updater_overrides("small", "dc_cu") == {"prompts": "small", "extraction": "last",
                                                           "presence_penalty": None, "execute_code": False, **ours}
    assert presets.updater_overrides("small", "expel")["rule_ops"] == "strict"
    assert presets.updater_overrides("small", "expel")["curator_input"] == "task_prompt"
    assert presets.updater_overrides("small", "exprag") == {"presence_penalty": None, "sampling": "backend"}
    assert (presets.replay_mode("paper"), presets.replay_mode("small")) == ("fresh", "frozen")
    assert presets.janus_config("small").preset == "fast" and presets.janus_config("paper", tau=0.2).tau == 0.2
    with pytest.raises(ValueError, match="preset must be one of"):
        presets.updater_overrides("faithful", "dc_rs")
    s = presets.preset_summary("paper", JanusConfig(), "minilm", "fresh")
    assert s["name"] == "paper" and s["replay"] == "fresh" and s["janus_preset"] == "paper"


def test_seed_help_and_encoder_line():
    assert "does not change Janus's own seed" in presets.SEED_HELP
    assert presets.encoder_line("minilm").startswith("triggers decided by encoder minilm: all-MiniLM-L6-v2")
    assert presets.encoder_line("st:Qwen/Qwen3-Embedding-0.6B").endswith("(the paper's)")
    assert "plumbing fallback" in presets.encoder_line("hashing:1024")
    assert presets.encoder_line("st:foo") == ("triggers decided by encoder st:foo: user-chosen encoder; the paper's "
                                              "is st:Qwen/Qwen3-Embedding-0.6B")


def test_context_sizing():
    assert presets.check_context(0, 8192) == 10240
    assert presets.check_context(16384, 8192) == 16384
    with pytest.raises(ValueError, match="n_ctx 4096 is below max_tokens 8192"):
        presets.check_context(4096, 8192)


def test_a_run_without_a_controller_says_what_its_encoder_does():
    assert presets.encoder_line("hashing", controller=False) == (
        "encoder hashing (the updater's retrieval only: no controller ran): scikit-learn HashingVectorizer (no "
        "weights; a plumbing fallback, not the paper's encoder)")
