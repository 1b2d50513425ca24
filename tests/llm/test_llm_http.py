"""OpenAIBackend + LLMClient against a real OpenAI-compatible HTTP server on 127.0.0.1 (src/janus_memory/testing/openai_stub.py)
that injects 429s, 500s, 503s, timeouts, truncated JSON and slow responses."""
import socket
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from janus_memory.llm import (
    ContextTruncated,
    FatalLLMError,
    LLMClient,
    OpenAIBackend,
    ResponseCache,
    RetriesExhausted,
)
from janus_memory.llm.openai_backend import parse_retry_after
from janus_memory.testing.openai_stub import OpenAITestServer


def user(text):
    return [{"role": "user", "content": text}]


@pytest.fixture(scope="module")
def faulty_server():
    # generous margins: on a loaded 2-core CI machine an ordinary response can take well over half a second
    with OpenAITestServer(faults=True, timeout_sleep_s=4.0, slow_s=0.2) as srv:
        yield srv


@pytest.fixture()
def clean_server():
    with OpenAITestServer() as srv:
        yield srv


def test_200_requests_through_faults_then_all_from_cache(faulty_server, tmp_path):
    srv = faulty_server
    backend = OpenAIBackend(srv.base_url, "test-model", api_key="sk-test", timeout=2.5)
    client = LLMClient(backend, cache=ResponseCache(tmp_path), concurrency=16, max_retries=6, backoff_base_s=0.02)
    batch = [user(f"What is {i} + 7?") for i in range(200)]
    start = srv.requests
    out = client.chat_many(batch, role="janus")
    assert [r.text for r in out] == [f"The answer is {i + 7}." for i in range(200)]
    assert [r.reasoning for r in out] == [f"add {i} and 7" for i in range(200)]
    assert not any(r.cached for r in out)
    # every fault kind really happened and was retried
    for kind in ("429", "500", "503", "timeout", "truncated", "slow"):
        assert srv.outcomes[kind] > 0, kind
    snap = client.usage.snapshot()["janus"]
    assert snap["calls"] == 200 and snap["retries"] > 0 and snap["errors"] == 0
    assert 200 < srv.requests - start <= 200 + snap["retries"]   # every attempt that reached the server
    tokens = (snap["prompt_tokens"], snap["completion_tokens"])
    # the identical batch again: zero new HTTP requests, all cache hits, no new tokens
    before = srv.requests
    again = client.chat_many(batch, role="janus")
    assert srv.requests == before
    assert [r.text for r in again] == [r.text for r in out] and all(r.cached for r in again)
    snap2 = client.usage.snapshot()["janus"]
    assert snap2["cache_hits"] == 200 and snap2["calls"] == 200
    assert (snap2["prompt_tokens"], snap2["completion_tokens"]) == tokens


def test_401_and_400_fail_fast_with_server_message(clean_server):
    client = LLMClient(OpenAIBackend(clean_server.base_url, "test-model"), backoff_base_s=0.01)
    with pytest.raises(FatalLLMError, match="Incorrect API key provided") as ei:
        client.chat(user("AUTH_FAIL please"))
    assert ei.value.status == 401 and clean_server.requests == 1
    with pytest.raises(FatalLLMError, match="max_tokens is too large") as ei:
        client.chat(user("BAD_REQUEST please"))
    assert ei.value.status == 400 and clean_server.requests == 2


def test_retry_limit_gives_clear_final_error(clean_server):
    client = LLMClient(OpenAIBackend(clean_server.base_url, "test-model"), max_retries=2, backoff_base_s=0.01)
    with pytest.raises(RetriesExhausted, match=r"after 3 attempts.*HTTP 500: injected permanent 500") as ei:
        client.chat(user("ALWAYS_500"))
    assert ei.value.attempts == 3 and clean_server.requests == 3


def test_connection_refused_is_retried_then_reported():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    client = LLMClient(OpenAIBackend(f"http://127.0.0.1:{port}/v1", "m", timeout=2), max_retries=1, backoff_base_s=0.01)
    with pytest.raises(RetriesExhausted, match="connection error") as ei:
        client.chat(user("hi"))
    assert ei.value.attempts == 2


def test_sampling_params_and_extra_body_pass_through(clean_server):
    client = LLMClient(OpenAIBackend(clean_server.base_url, "qwen3"))
    r = client.chat(user("hello"), temperature=0.7, max_tokens=64, top_p=0.9, stop=["\n\n"], seed=3,
                    presence_penalty=0.5, frequency_penalty=0.25,
                    extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    assert r.text == "ECHO: hello"
    body = clean_server.bodies[-1]
    assert body["model"] == "qwen3" and body["messages"] == user("hello")
    assert {k: body[k] for k in ("temperature", "max_tokens", "top_p", "stop", "seed", "presence_penalty",
                                 "frequency_penalty")} == {"temperature": 0.7, "max_tokens": 64, "top_p": 0.9,
                                                           "stop": ["\n\n"], "seed": 3, "presence_penalty": 0.5,
                                                           "frequency_penalty": 0.25}
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


def test_unset_params_are_not_sent(clean_server):
    LLMClient(OpenAIBackend(clean_server.base_url, "m")).chat(user("x"))
    assert set(clean_server.bodies[-1]) == {"model", "messages", "temperature", "max_tokens"}


def test_missing_usage_and_silent_context_cut(clean_server):
    client = LLMClient(OpenAIBackend(clean_server.base_url, "m"))
    r = client.chat(user("NO_USAGE one two"))
    assert r.usage.estimated and r.usage.prompt_tokens > 0
    sheet = " ".join(f"note{i} keep" for i in range(2000))
    with pytest.raises(ContextTruncated) as ei:
        client.chat([{"role": "system", "content": sheet}, {"role": "user", "content": "CAP_CONTEXT What is 1 + 1?"}])
    assert ei.value.reported == 2048


def test_parse_retry_after():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "3"}) == 0.25
    assert parse_retry_after({"retry-after": "garbage"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0


def test_backend_constructor_errors():
    with pytest.raises(ValueError):
        OpenAIBackend("", "m")
    with pytest.raises(ValueError):
        OpenAIBackend("http://x/v1", "")
