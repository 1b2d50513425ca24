"""LLMClient over the scripted FakeBackend: cache, retries, concurrency, usage, C22-B, C23."""
import asyncio
import json
import multiprocessing as mp
import threading

import pytest

from janus_memory.llm import (
    ContextTruncated,
    FakeBackend,
    FatalLLMError,
    LLMClient,
    NoRuleMatched,
    ResponseCache,
    RetriesExhausted,
    TransientLLMError,
    request_key,
)
from janus_memory.llm.base import ChatRequest


def user(text):
    return [{"role": "user", "content": text}]


def add_backend(**kw):
    return FakeBackend(rules=[(r"What is (\d+) \+ (\d+)\?", lambda m, req, i: _add(m))], **kw)


def _add(msgs):
    import re

    a, b = map(int, re.search(r"What is (\d+) \+ (\d+)\?", msgs[-1]["content"]).groups())
    return f"<think>{a}+{b}</think>The answer is {a + b}."


class SleepRecorder:
    def __init__(self):
        self.delays = []

    async def __call__(self, d):
        self.delays.append(d)


# ---------------------------------------------------------------- FakeBackend
def test_fake_rules_regex_groups_and_determinism():
    fb = FakeBackend(rules=[(r"capital of (\w+)", r"The capital of \1 is X."), (lambda msgs: True, "fallback")])
    c = LLMClient(fb)
    assert c.chat(user("What is the capital of Peru?")).text == "The capital of Peru is X."
    assert c.chat(user("What is the capital of Peru?")).text == "The capital of Peru is X."
    assert c.chat(user("hello")).text == "fallback"
    assert fb.calls == 3 and fb.identity == "fake:default"


def test_fake_transcript_list_and_jsonl(tmp_path):
    recs = [{"messages": user("q1"), "response": "a1"},
            {"messages": user("q2"), "response": {"content": "a2", "reasoning": "r2"}}]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in recs), encoding="utf-8")
    for tr in (recs, p):
        c = LLMClient(FakeBackend(transcript=tr))
        r1, r2 = c.chat_many([user("q1"), user("q2")])
        assert (r1.text, r2.text, r2.reasoning) == ("a1", "a2", "r2")


def test_fake_no_rule_is_fatal_not_retried():
    fb = FakeBackend(rules=[("only this", "x")])
    with pytest.raises(NoRuleMatched, match="no rule matched"):
        LLMClient(fb, backoff_base_s=0).chat(user("something else"))
    assert fb.calls == 1


def test_fake_bad_rule_shape():
    with pytest.raises(ValueError, match="pair"):
        FakeBackend(rules=["not a pair"])


# ---------------------------------------------------------------- cache
def test_cache_hit_counts_no_tokens_and_no_call(tmp_path):
    fb = add_backend()
    c = LLMClient(fb, cache=ResponseCache(tmp_path))
    r1 = c.chat(user("What is 2 + 3?"))
    r2 = c.chat(user("What is 2 + 3?"))
    assert (r1.text, r1.reasoning, r1.cached) == ("The answer is 5.", "2+3", False)
    assert (r2.text, r2.reasoning, r2.cached) == ("The answer is 5.", "2+3", True)
    assert fb.calls == 1
    s = c.usage.snapshot()["solver"]
    assert (s["calls"], s["cache_hits"]) == (1, 1)
    assert s["prompt_tokens"] == r1.usage.prompt_tokens and s["completion_tokens"] == r1.usage.completion_tokens
    assert (tmp_path / "responses.sqlite").is_file()


def test_cache_persists_across_instances_and_is_keyed_on_everything(tmp_path):
    fb = add_backend()
    c = LLMClient(fb, cache=ResponseCache(tmp_path / "c.sqlite"))
    c.chat(user("What is 1 + 1?"), temperature=0.7, sample=0)
    c.chat(user("What is 1 + 1?"), temperature=0.7, sample=1)
    c.chat(user("What is 1 + 1?"), temperature=0.0, sample=0)
    c.chat(user("What is 1 + 1?"), temperature=0.0, sample=0, extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    assert fb.calls == 4
    c2 = LLMClient(add_backend(), cache=ResponseCache(tmp_path / "c.sqlite"))
    r = c2.chat(user("What is 1 + 1?"), temperature=0.7, sample=1)
    assert r.cached and r.text == "The answer is 2." and c2.backend.calls == 0
    assert len(c2.cache) == 4


def test_request_key_covers_identity_params_and_sample():
    req = ChatRequest(messages=user("x"))
    base = request_key("fake:a", req, 0)
    assert base == request_key("fake:a", ChatRequest(messages=user("x")), 0)
    variants = [request_key("fake:b", req, 0), request_key("fake:a", req, 1),
                request_key("fake:a", ChatRequest(messages=user("y")), 0)]
    for k, v in [("temperature", 0.5), ("max_tokens", 100), ("top_p", 0.9), ("stop", ["\n"]), ("seed", 1),
                 ("presence_penalty", 0.1), ("frequency_penalty", 0.1), ("extra_body", {"a": 1})]:
        variants.append(request_key("fake:a", ChatRequest(messages=user("x"), **{k: v}), 0))
    assert len(set(variants)) == len(variants) and base not in variants


def _writer(path, start):
    from janus_memory.llm.cache import ResponseCache
    from janus_memory.values import ChatResult, Usage

    rc = ResponseCache(path)
    for i in range(start, start + 40):
        rc.put(f"k{i}", ChatResult(text=f"t{i}", usage=Usage(i, 1)))
    rc.close()


def test_cache_safe_under_concurrent_process_writers(tmp_path):
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), s)) for s in (0, 40, 80)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    rc = ResponseCache(tmp_path)
    assert len(rc) == 120
    r = rc.get("k117")
    assert (r.text, r.usage.prompt_tokens, r.cached) == ("t117", 117, True)


def test_failures_are_not_cached(tmp_path):
    fb = add_backend(fail_every=1)
    c = LLMClient(fb, cache=ResponseCache(tmp_path), max_retries=2)
    c._sleep = SleepRecorder()
    with pytest.raises(RetriesExhausted) as ei:
        c.chat(user("What is 2 + 2?"))
    assert ei.value.attempts == 3 and fb.calls == 3
    assert "after 3 attempts" in str(ei.value) and "injected failure" in str(ei.value)
    assert len(c.cache) == 0
    s = c.usage.snapshot()["solver"]
    assert (s["calls"], s["retries"], s["errors"], s["prompt_tokens"]) == (0, 2, 1, 0)


# ---------------------------------------------------------------- retries
def test_retry_backoff_honours_retry_after_then_succeeds():
    fb = add_backend(failures=[TransientLLMError("429", status=429, retry_after=0.25),
                               TransientLLMError("500", status=500), None])
    c = LLMClient(fb, backoff_base_s=0.01)
    rec = c._sleep = SleepRecorder()
    r = c.chat(user("What is 4 + 4?"))
    assert r.text == "The answer is 8." and fb.calls == 3
    assert len(rec.delays) == 2
    assert rec.delays[0] >= 0.25                      # Retry-After is a lower bound
    assert 0.01 <= rec.delays[1] <= 0.02              # base * 2**1 with jitter in [0.5, 1]


def test_backoff_grows_exponentially_and_is_capped():
    c = LLMClient(FakeBackend(), backoff_base_s=0.5, backoff_max_s=4.0, max_retry_after_s=10)
    for attempt, hi in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (6, 4.0)]:
        d = c.backoff_delay(attempt)
        assert hi / 2 <= d <= hi
    assert c.backoff_delay(0, retry_after=3600) == 10  # Retry-After capped


def test_fatal_error_fails_fast_with_server_message():
    fb = add_backend(failures=[FatalLLMError("HTTP 401 from x: Incorrect API key", status=401)])
    c = LLMClient(fb)
    with pytest.raises(FatalLLMError, match="Incorrect API key") as ei:
        c.chat(user("What is 1 + 2?"))
    assert ei.value.status == 401 and fb.calls == 1


# ---------------------------------------------------------------- C22 / C23
def test_c22_b_silently_truncated_prompt_raises_and_is_not_cached(tmp_path):
    cheatsheet = " ".join(f"step{i} check" for i in range(2000))     # 4,000 words
    fb = FakeBackend(rules=[(lambda m: True, {"content": "The answer is 5.",
                                              "usage": {"prompt_tokens": 2048, "completion_tokens": 5}})])
    c = LLMClient(fb, cache=ResponseCache(tmp_path))
    msgs = [{"role": "system", "content": cheatsheet}, {"role": "user", "content": "What is 2 + 3?"}]
    with pytest.raises(ContextTruncated) as ei:
        c.chat(msgs)
    assert (ei.value.reported, ei.value.expected_min) == (2048, 4005)
    assert ei.value.result.text == "The answer is 5."
    assert len(c.cache) == 0
    assert c.usage.snapshot()["solver"]["prompt_tokens"] == 2048   # the tokens were still spent


def test_c22_a_missing_usage_is_flagged_estimated():
    c = LLMClient(FakeBackend(rules=[(lambda m: True, "ok")], usage=False))
    r = c.chat(user("one two three"))
    assert r.usage.estimated and r.usage.prompt_tokens == 10 and r.usage.completion_tokens == 1
    s = c.usage.total()
    assert s["estimated_tokens"] is True and s["prompt_tokens"] == 10  # ceil(13 chars / 4) + 4 + 2


def test_c23_alternating_server_is_frozen_by_the_cache(tmp_path):
    # the endpoint answers 6 on odd calls and 5 on even calls for the same body
    fb = FakeBackend(rules=[(lambda m: True, lambda m, req, i: "The answer is 6" if i % 2 else "The answer is 5")])
    c = LLMClient(fb, cache=ResponseCache(tmp_path))
    mem = {"role": "system", "content": "MEMORY M"}
    first = c.chat([mem, {"role": "user", "content": "task 1"}], role="janus")
    second = c.chat([mem, {"role": "user", "content": "task 1"}], role="janus")
    assert first.text == second.text == "The answer is 6" and second.cached
    # endpoint calls == distinct (memory, task, params) triples
    batch = [[mem, {"role": "user", "content": f"task {i % 3}"}] for i in range(9)]
    c.chat_many(batch, role="janus")
    assert fb.calls == 3


# ---------------------------------------------------------------- batching, usage, API hygiene
def test_chat_many_in_order_with_bounded_concurrency():
    fb = add_backend(latency_s=0.02)
    c = LLMClient(fb, concurrency=3)
    out = c.chat_many([user(f"What is {i} + 1?") for i in range(12)])
    assert [r.text for r in out] == [f"The answer is {i + 1}." for i in range(12)]
    assert fb.max_inflight == 3


def test_chat_many_return_exceptions_and_first_error():
    fb = FakeBackend(rules=[("ok", "fine")])
    c = LLMClient(fb)
    out = c.chat_many([user("ok"), user("boom"), user("ok 2")], return_exceptions=True)
    assert out[0].text == "fine" and isinstance(out[1], NoRuleMatched) and out[2].text == "fine"
    with pytest.raises(NoRuleMatched):
        c.chat_many([user("ok"), user("boom")])


def test_usage_per_role_and_price():
    fb = FakeBackend(rules=[(lambda m: True, {"content": "x", "usage": {"prompt_tokens": 1000, "completion_tokens": 500}})])
    c = LLMClient(fb, prices={"fake-model": (1.0, 2.0)})
    c.chat(user("a"), role="solver")
    c.chat_many([user("b"), user("c")], role="curator")
    snap = c.usage.snapshot()
    assert snap["solver"]["calls"] == 1 and snap["curator"]["calls"] == 2
    assert snap["solver"]["cost_usd"] == pytest.approx(0.002)
    assert snap["curator"]["cost_usd"] == pytest.approx(0.004)
    tot = c.usage.total()
    assert (tot["calls"], tot["prompt_tokens"], tot["completion_tokens"]) == (3, 3000, 1500)
    assert tot["cost_usd"] == pytest.approx(0.006)
    assert LLMClient(fb).usage.total()["cost_usd"] is None


@pytest.mark.parametrize("call, exc", [
    (lambda c: c.chat("not a list"), ValueError),
    (lambda c: c.chat([{"role": "user"}]), ValueError),
    (lambda c: c.chat([{"role": "wizard", "content": "x"}]), ValueError),
    (lambda c: c.chat(user("x"), sample=-1), ValueError),
    (lambda c: c.chat(user("x"), max_tokens=0), ValueError),
    (lambda c: c.chat(user("x"), temperature=3.0), ValueError),
    (lambda c: c.chat_many([user("x")], bogus=1), TypeError),
    (lambda c: c.chat_many("x"), ValueError),
])
def test_bad_input_clear_errors(call, exc):
    c = LLMClient(FakeBackend(default="x"))
    with pytest.raises(exc):
        call(c)
    assert c.backend.calls == 0


def test_bad_client_args():
    with pytest.raises(ValueError):
        LLMClient(FakeBackend(), concurrency=0)
    with pytest.raises(ValueError):
        LLMClient(FakeBackend(), max_retries=-1)


def test_sync_api_leaves_no_threads_and_works_inside_a_running_loop():
    c = LLMClient(add_backend(), concurrency=4)
    before = threading.active_count()
    c.chat_many([user(f"What is {i} + 2?") for i in range(10)])
    assert threading.active_count() == before

    async def inside():
        return c.chat(user("What is 3 + 3?")).text, (await c.achat(user("What is 1 + 3?"))).text

    assert asyncio.run(inside()) == ("The answer is 6.", "The answer is 4.")
    assert threading.active_count() == before


def test_identical_requests_in_one_batch_are_sent_once_and_count_as_cache_hits(tmp_path):
    """In flight together, a repeated request waits for the first one: the backend sees it once, and the usage is
    what sending them one after the other would give (1 call + 2 cache hits), with identical results."""
    fb = add_backend(latency_s=0.05)
    c = LLMClient(fb, cache=ResponseCache(tmp_path), concurrency=4)
    out = c.chat_many([user("What is 2 + 3?"), user("What is 4 + 4?"), user("What is 2 + 3?"), user("What is 2 + 3?")])
    assert [o.text for o in out] == ["The answer is 5.", "The answer is 8.", "The answer is 5.", "The answer is 5."]
    assert fb.calls == 2
    s = c.usage.snapshot()["solver"]
    assert (s["calls"], s["cache_hits"]) == (2, 2)
    assert c._inflight == {}
    # without a cache nothing is shared: every request is its own call
    fb2 = add_backend(latency_s=0.05)
    c2 = LLMClient(fb2, concurrency=4)
    c2.chat_many([user("What is 2 + 3?")] * 3)
    assert (fb2.calls, c2.usage.snapshot()["solver"]["calls"]) == (3, 3)
