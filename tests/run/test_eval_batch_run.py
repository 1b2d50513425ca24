"""The runner's batching on whole fake-backend runs: a triggered step's replays go out as one chat_many (calls per
role with and without batching, identical run files), the slot setting reaches the engine and the client, the
demo preset (and only it) skips trivially equal candidates and counts them in the summary."""
import json

import pytest

from janus_memory.llm.client import LLMClient
from janus_memory.run import eval_batch
from janus_memory.run.build import build_context
from janus_memory.run.experiment import run_experiment
from janus_memory.settings.config import RunConfig, demo_config


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


def _cfg(out, **kw):
    base = dict(backend="fake", dataset="gsm8k", stream_size=8, test_size=3, encoder="hashing", out=str(out),
                # clustering sklearn: the streams these counts were measured on (the paper k-means picks other sets)
                janus={"warmup": 3, "coverage_size": 2, "boundary_size": 1, "fresh_size": 1, "trigger": "always",
                       "clustering": "sklearn"},
                updater="dc_rs", controller="janus", no_cache=True)
    base.update(kw)
    return RunConfig(**base)


def _run(tmp_path, name, monkeypatch, *, batch: bool, **kw):
    """Run and return (chat_many calls as (role, size), usage by role, decisions.jsonl bytes, summary)."""
    sent = []
    orig = LLMClient.chat_many

    def counting(self, batch_, *, role="solver", **params):
        sent.append((role, len(batch_)))
        return orig(self, batch_, role=role, **params)

    monkeypatch.setattr(LLMClient, "chat_many", counting)
    init = eval_batch.PairedEvaluator.__init__
    monkeypatch.setattr(eval_batch.PairedEvaluator, "__init__",
                        lambda self, upd, **k: init(self, upd, **{**k, "batch": batch}))
    summary = run_experiment(_cfg(tmp_path / name, **kw), log=lambda m: None)
    monkeypatch.undo()
    method = next(iter(summary["methods"]))
    files = {f: (tmp_path / name / method / f).read_bytes() for f in ("decisions.jsonl", "steps.jsonl", "test.jsonl")}
    return sent, summary["methods"][method], files


@pytest.mark.parametrize("replay_kw", [{}, {"janus": {"warmup": 3, "coverage_size": 2, "boundary_size": 1,
                                                      "fresh_size": 1, "trigger": "always", "early_stop": True,
                                                      "clustering": "sklearn"}}])
def test_triggered_steps_send_one_batch_same_run_files(tmp_path, monkeypatch, replay_kw):
    sent_b, sum_b, files_b = _run(tmp_path, "batched", monkeypatch, batch=True, **replay_kw)
    sent_u, sum_u, files_u = _run(tmp_path, "plain", monkeypatch, batch=False, **replay_kw)
    assert files_b == files_u  # decisions, steps (incl. evaluation records) and test: byte-identical
    dec = [json.loads(x)["decision"] for x in files_b["decisions.jsonl"].splitlines()]
    triggered = [d for d in dec if d["triggered"]]
    assert len(triggered) == 5  # 8 steps, warm-up 3, trigger always
    janus_b = [n for r, n in sent_b if r == "janus"]
    janus_u = [n for r, n in sent_u if r == "janus"]
    # default replay is fresh: a task listed twice in E (a coverage rep that is also fresh) is a separate draw, so
    # the unbatched evaluator sends one chat_many per draw; the batched one a single chat_many per triggered step
    if not replay_kw:  # full comparisons: the batch is exactly the entries x {old, new} of the decision
        assert janus_b == [8, 8, 8, 8, 8] == [2 * len(d["eval_ids"]) for d in triggered]
        assert janus_u == [3, 1, 3, 1, 3, 1, 3, 1, 4, 4, 4, 4, 4, 4]
        assert sum_b["usage"]["janus"]["calls"] == sum_u["usage"]["janus"]["calls"] == 40
    else:  # early stopping: the same decisions; three comparisons stop after the new memory (4 + 3 + 3 entries),
        # so their prefetched old half (10 requests) is never used: 34 requests instead of 24, 5 batches instead of 9
        assert [d["reason"] for d in triggered].count("early_stop_new_ge_old") == 3
        assert janus_b == [8, 6, 6, 6, 8]
        assert janus_u == [3, 1, 2, 1, 3, 3, 3, 4, 4]
        assert (sum_b["usage"]["janus"]["calls"], sum_u["usage"]["janus"]["calls"]) == (34, 24)
    for role in ("solver", "curator", "test"):
        drop = lambda u: {k: v for k, v in u.items() if k != "wall_s"}  # noqa: E731
        assert drop(sum_b["usage"][role]) == drop(sum_u["usage"][role])
    assert [n for r, n in sent_b if r == "test"] == [3]  # the frozen test: one batch for the final memory


def test_n_parallel_reaches_client_and_engine(tmp_path, monkeypatch):
    ctx = build_context(_cfg(tmp_path / "r", n_parallel=3, concurrency=1), log=lambda m: None)
    assert ctx.client.concurrency == 3  # never fewer requests in flight than engine slots
    ctx = build_context(_cfg(tmp_path / "r", n_parallel=2, concurrency=6), log=lambda m: None)
    assert ctx.client.concurrency == 6
    assert RunConfig().llm.n_parallel == 1
    with pytest.raises(ValueError):
        RunConfig(n_parallel=0)

    captured = {}

    class FakeLocal:
        def __init__(self, path, **kw):
            captured.update(kw, path=path)

    import janus_memory.llm as llm_pkg
    from janus_memory.run import backends

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 64)
    monkeypatch.setattr(llm_pkg, "LocalBackend", FakeLocal)
    pytest.importorskip("xllamacpp")
    backends.local_backend(RunConfig(model_path=str(gguf), n_parallel=2, n_ctx=4096, solver_max_tokens=512,
                                     curator_max_tokens=512), [])
    assert (captured["n_parallel"], captured["n_ctx"], captured["path"]) == (2, 4096, str(gguf))
    backends.local_backend(RunConfig(model_path=str(gguf), n_parallel=2), [])  # n_ctx 0: sized per slot
    assert (captured["n_parallel"], captured["n_ctx"]) == (2, 8192 + 2048)


def test_trivially_equal_on_in_the_demo_preset_only():
    assert demo_config().janus_config().skip_trivially_equal is True
    assert RunConfig().janus_config().skip_trivially_equal is False  # paper defaults


def test_trivially_equal_counted_in_summary(tmp_path, monkeypatch):
    from janus_memory.controller import janus as janus_mod

    # every candidate counts as trivially equal: the count is the number of post-warm-up steps that fired
    monkeypatch.setattr(janus_mod, "trivially_equal", lambda a, b, *bookkeeping: True)
    cfg = _cfg(tmp_path / "t", janus={"warmup": 3, "coverage_size": 2, "boundary_size": 1, "fresh_size": 1,
                                      "trigger": "always", "skip_trivially_equal": True})
    s = run_experiment(cfg, log=lambda m: None)["methods"]["dc_rs+janus"]
    assert (s["trivially_equal"], s["triggers"], s["usage"].get("janus")) == (5, 0, None)
    plain = run_experiment(_cfg(tmp_path / "p"), log=lambda m: None)["methods"]["dc_rs+janus"]
    assert "trivially_equal" not in plain and plain["triggers"] == 5


def test_the_recommended_controller_is_never_asked_again_what_it_knows(tmp_path, monkeypatch):
    """The recommended controller reuses the deployed memory's measured outcomes; batching (no speculation) must not
    prefetch them anyway: every Janus request of a batched run is one the comparison reads, the same count as the
    unbatched run, with byte-identical run files."""
    kw = dict(janus_preset="recommended", janus={"warmup": 5}, stream_size=30, test_size=2, speculate=False)
    sent_b, sum_b, files_b = _run(tmp_path, "batched", monkeypatch, batch=True, **kw)
    sent_u, sum_u, files_u = _run(tmp_path, "plain", monkeypatch, batch=False, **kw)
    assert files_b == files_u
    assert sum_b["usage"]["janus"]["calls"] == sum_u["usage"]["janus"]["calls"] == 141
    assert "eval_batch" not in sum_b  # nothing sent ahead went unread
    assert len([r for r, _ in sent_b if r == "janus"]) < len([r for r, _ in sent_u if r == "janus"])
