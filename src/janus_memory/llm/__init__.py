"""LLM layer: one client (cache, retries, concurrency, usage) over OpenAI-HTTP, embedded llama.cpp and fake backends.

See docs/llm.md. Public names::

    LLMClient, ResponseCache, UsageMeter, FakeBackend, OpenAIBackend, LocalBackend, make_backend,
    ChatRequest, ChatBackend, LLMError, TransientLLMError, FatalLLMError, RetriesExhausted, ContextTruncated,
    split_reasoning
"""
from __future__ import annotations

from typing import Any

from janus_memory.llm.base import (
    BackendStats,
    ChatBackend,
    ChatRequest,
    ContextTruncated,
    DeadlineExceeded,
    FatalLLMError,
    LLMError,
    RetriesExhausted,
    TransientLLMError,
)
from janus_memory.llm.cache import ResponseCache, request_key
from janus_memory.llm.client import LLMClient
from janus_memory.llm.fake import FakeBackend, NoRuleMatched
from janus_memory.llm.local import LocalBackend, default_gguf
from janus_memory.llm.openai_backend import OpenAIBackend
from janus_memory.llm.reasoning import normalise_response, split_reasoning
from janus_memory.llm.usage import UsageMeter

__all__ = [
    "BackendStats",
    "ChatBackend",
    "ChatRequest",
    "ContextTruncated",
    "DeadlineExceeded",
    "FakeBackend",
    "FatalLLMError",
    "LLMClient",
    "LLMError",
    "LocalBackend",
    "NoRuleMatched",
    "OpenAIBackend",
    "ResponseCache",
    "RetriesExhausted",
    "TransientLLMError",
    "UsageMeter",
    "default_gguf",
    "make_backend",
    "normalise_response",
    "request_key",
    "split_reasoning",
]


def make_backend(spec: str, **kw: Any) -> ChatBackend:
    """Build a backend from a CLI spec.

    * ``"fake"`` / ``"fake:<name>"`` -> :class:`FakeBackend` (``kw`` go to its constructor).
    * ``"local"`` -> :class:`LocalBackend` on :func:`default_gguf` (env ``JANUS_LOCAL_GGUF`` or the model cache);
      ``"local:/path/model.gguf"`` -> that file. ``kw``: n_ctx, n_threads, ...
    * ``"openai:<model>@<base_url>"`` -> :class:`OpenAIBackend` (``kw``: api_key, timeout).

    Raises ValueError for an unknown or malformed spec.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError("backend spec must be a non-empty string: fake | local[:path.gguf] | openai:<model>@<base_url>")
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    if kind == "fake":
        if rest:
            kw.setdefault("name", rest)
        return FakeBackend(**kw)
    if kind == "local":
        return LocalBackend(rest or default_gguf(), **kw)
    if kind == "openai":
        model, at, url = rest.rpartition("@")
        if not at or not model or not url:
            raise ValueError(f"openai backend spec must be 'openai:<model>@<base_url>', got {spec!r}")
        return OpenAIBackend(url, model, **kw)
    raise ValueError(f"unknown backend spec {spec!r}: expected fake | local[:path.gguf] | openai:<model>@<base_url>")
