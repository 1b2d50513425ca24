"""RunConfig.batch_eval / --batch-eval on|off|auto: which evaluation path runs (fake backend, chat_many calls of the
janus role), the same decisions and run files either way, the evaluator's settings, the CLI flag and config.json."""
import json

import pytest

from janus_memory.cli.parser import build_parser
from janus_memory.cli.run_command import _config_from_args
from janus_memory.errors import ConfigError
from janus_memory.llm.client import LLMClient
from janus_memory.run.build import build_context
from janus_memory.run.experiment import run_experiment
from janus_memory.settings.config import RunConfig

# clustering sklearn: the request counts below were measured with it (the paper k-means picks other sets)
JANUS = {"warmup": 3, "coverage_size": 2, "boundary_size": 1, "fresh_size": 1, "trigger": "always",
         "clustering": "sklearn"}


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(autouse=True)
def _patient_math_scoring(monkeypatch):
    """A scoring pool with a long per-answer timeout: on a loaded machine the default 5 s can expire, and a "timeout"
    score in one run but not the other would differ for a reason that has nothing to do with batching."""
    from janus_memory.tasks import verify_math

    pool = verify_math.MathVerifier(timeout_s=300.0)
    monkeypatch.setattr(verify_math, "_DEFAULT", pool)
    yield
    pool.close()


def _cfg(out, **kw):
    base = dict(backend="fake", dataset="gsm8k", stream_size=8, test_size=3, encoder="hashing", out=str(out),
                janus=JANUS, updater="dc_rs", controller="janus", no_cache=True)
    return RunConfig(**{**base, **kw})


def _run(tmp_path, monkeypatch, name, **kw):
    """(janus chat_many sizes, decisions.jsonl + steps.jsonl bytes, config.json) of one fake run."""
    sent = []
    orig = LLMClient.chat_many

    def counting(self, batch, *, role="solver", **params):
        if role == "janus":
            sent.append(len(batch))
        return orig(self, batch, role=role, **params)

    monkeypatch.setattr(LLMClient, "chat_many", counting)
    run_experiment(_cfg(tmp_path / name, **kw), log=lambda m: None)
    monkeypatch.undo()
    d = tmp_path / name / "dc_rs+janus"
    return sent, (d / "decisions.jsonl").read_bytes() + (d / "steps.jsonl").read_bytes(), \
        json.loads((tmp_path / name / "config.json").read_text())


def test_full_comparisons_batched_unless_off(tmp_path, monkeypatch):
    auto = _run(tmp_path, monkeypatch, "auto")
    on = _run(tmp_path, monkeypatch, "on", batch_eval=True)
    off = _run(tmp_path, monkeypatch, "off", batch_eval=False)
    assert auto[0] == on[0] == [8, 8, 8, 8, 8]  # one chat_many per triggered step: entries x {old, new}
    assert off[0] == [3, 1, 3, 1, 3, 1, 3, 1, 4, 4, 4, 4, 4, 4]  # one per memory and fresh draw
    assert auto[1] == on[1] == off[1]  # same decisions and step records, byte for byte
    assert (auto[2]["batch_eval"], on[2]["batch_eval"], off[2]["batch_eval"]) == (None, True, False)


def test_early_stopping_prefetch_follows_the_switch(tmp_path, monkeypatch):
    kw = dict(janus={**JANUS, "early_stop": True}, concurrency=1)  # one request at a time: auto does not prefetch
    auto = _run(tmp_path, monkeypatch, "auto", **kw)
    on = _run(tmp_path, monkeypatch, "on", batch_eval=True, **kw)
    off = _run(tmp_path, monkeypatch, "off", batch_eval=False, **kw)
    assert on[0] == [8, 6, 6, 6, 8]  # the other memory prefetched every time (10 requests never used)
    # auto on a sequential engine: an early-stopping round is sent alone (nothing prefetched), as with off
    assert auto[0] == off[0] == [3, 1, 2, 1, 3, 3, 3, 4, 4]
    assert auto[1] == on[1] == off[1]


@pytest.mark.parametrize("batch_eval, concurrency, want", [
    (None, 4, (True, True)), (None, 1, (True, False)), (True, 1, (True, True)), (False, 4, (False, False))])
def test_evaluator_settings(tmp_path, batch_eval, concurrency, want):
    ctx = build_context(_cfg(tmp_path / "r", batch_eval=batch_eval, concurrency=concurrency), log=lambda m: None)
    ev = ctx.make_evaluator(ctx.make_updater())
    assert (ev.batch, ev.parallel) == want


def test_cli_flag(tmp_path, capsys):
    p = build_parser()

    def cfg(*extra):
        return _config_from_args(p.parse_args(["run", "--backend", "fake", *extra]), demo=False).batch_eval

    assert (cfg(), cfg("--batch-eval", "on"), cfg("--batch-eval", "OFF"), cfg("--batch-eval", "auto")) == \
        (None, True, False, None)
    f = tmp_path / "c.yaml"
    f.write_text("batch_eval: false\n")
    assert (cfg("--config", str(f)), cfg("--config", str(f), "--batch-eval", "auto")) == (False, None)
    with pytest.raises(SystemExit) as e:
        p.parse_args(["run", "--batch-eval", "maybe"])
    assert e.value.code == 2
    assert "argument --batch-eval: invalid choice: 'maybe' (choose from 'on', 'off', 'auto')" in capsys.readouterr().err


def test_config_values():
    assert [RunConfig.parse({"batch_eval": v}).batch_eval for v in ("auto", "on", "off", True, False, None)] == \
        [None, True, False, True, False, None]
    with pytest.raises(ConfigError) as e:
        RunConfig.parse({"batch_eval": "maybe"})
    assert str(e.value) == "invalid value for 'batch_eval': choose auto, on or off (or true, false, null) (got 'maybe')"
    with pytest.raises(ConfigError) as e:  # strict like every setting: no 1 for true
        RunConfig.parse({"batch_eval": 1})
    assert str(e.value) == "invalid value for 'batch_eval': Input should be a valid boolean (got 1)"
