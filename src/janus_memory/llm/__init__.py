"""LLM layer: one client (cache, retries, concurrency, usage) over OpenAI-HTTP, embedded llama.cpp and fake backends,
and fetching the embedded model (model_fetch.py). May import the foundation modules (errors, values, interrupts)
and the SQLite opening the embedding cache shares (encoders/sqlite_wal.py); nothing above it.

See docs/llm.md. Public names::

    LLMClient, ResponseCache, UsageMeter, FakeBackend, OpenAIBackend, LocalBackend,
    ChatRequest, ChatBackend, LLMError, TransientLLMError, FatalLLMError, RetriesExhausted, ContextTruncated,
    split_reasoning
"""
from __future__ import annotations

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
    "normalise_response",
    "request_key",
    "split_reasoning",
]
