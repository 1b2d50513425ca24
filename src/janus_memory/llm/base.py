"""Backend seam of the LLM layer: the request type, the backend protocol and the error taxonomy.

Every backend (OpenAI-compatible HTTP, embedded llama.cpp, scripted fake) takes a :class:`ChatRequest` and
returns a normalised :class:`~janus_memory.values.ChatResult` from an ``async`` method. Retrying, caching,
concurrency limits and usage accounting live in :class:`~janus_memory.llm.client.LLMClient`, not in backends.

Errors raised by backends:

* :class:`TransientLLMError` -- retryable (HTTP 429, 5xx, timeouts, connection errors, malformed bodies).
  ``retry_after`` carries the server's Retry-After (seconds) when it sent one.
* :class:`FatalLLMError` -- not retryable (HTTP 400, 401, 403, 404, 422 ...); carries the server's message.
* :class:`ContextTruncated` -- the server silently cut the prompt (failure case C22-B); raised by the client.
* :class:`RetriesExhausted` -- raised by the client after ``max_retries`` transient failures.
* :class:`DeadlineExceeded` -- (a RetriesExhausted) the client's overall per-request deadline ran out.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from janus_memory.errors import JanusError
from janus_memory.values import ChatResult

SAMPLING_PARAMS = (
    "temperature",
    "max_tokens",
    "top_p",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "extra_body",
)


@dataclass(frozen=True)
class ChatRequest:
    """One chat-completion request, backend-agnostic.

    messages: OpenAI chat messages ``[{"role": "system"|"user"|"assistant", "content": str}, ...]``.
    temperature/top_p/presence_penalty/frequency_penalty/seed/stop/max_tokens: OpenAI sampling parameters;
        ``None`` means "server default" and is not sent.
    extra_body: backend-specific JSON merged into the request body (e.g. ``{"chat_template_kwargs":
        {"enable_thinking": False}}`` for Qwen3 thinking off, as the paper runs it).
    """

    messages: tuple[dict, ...] | list[dict]
    temperature: float | None = 0.0
    max_tokens: int | None = 512
    top_p: float | None = None
    stop: list[str] | str | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    extra_body: dict | None = None
    sample: int = 0  # sample index (not sent): lets a backend derive a distinct fixed seed per sample (LocalBackend)

    def params(self) -> dict[str, Any]:
        """All sampling parameters (including ``None`` ones), as used in the cache key."""
        return {k: getattr(self, k) for k in SAMPLING_PARAMS}

    def body(self) -> dict[str, Any]:
        """OpenAI-format request body without the model: messages + the non-None parameters (extra_body merged)."""
        out: dict[str, Any] = {"messages": [dict(m) for m in self.messages]}
        for k in SAMPLING_PARAMS:
            v = getattr(self, k)
            if v is not None and k != "extra_body":
                out[k] = v
        if self.extra_body:
            out.update(self.extra_body)
        return out


def validate_messages(messages: Any) -> list[dict]:
    """Check the OpenAI chat-message shape; raise ``ValueError`` with a clear message otherwise."""
    if not isinstance(messages, (list, tuple)) or not messages:
        raise ValueError(f"messages must be a non-empty list of dicts, got {type(messages).__name__}")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise ValueError(f"messages[{i}] must be a dict with 'role' and 'content', got {m!r:.80}")
        if m["role"] not in ("system", "user", "assistant", "developer", "tool"):
            raise ValueError(f"messages[{i}] has unknown role {m['role']!r}")
        if not isinstance(m["content"], str):
            raise ValueError(f"messages[{i}]['content'] must be a str, got {type(m['content']).__name__}")
        out.append(dict(m))
    return out


class LLMError(JanusError, RuntimeError):
    """Base class of LLM-layer errors (user-facing when they escape the client's retries: the server is the fix)."""

    def user_message(self, run_dir: str | None = None) -> str:
        hint = (f"; every committed step is kept: fix the server, then `janus run --resume {run_dir}`" if run_dir else "")
        return f"the model call failed: {str(self).split(chr(10))[0] if str(self) else type(self).__name__}{hint}"

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class TransientLLMError(LLMError):
    """Retryable failure: 429, 5xx, timeout, connection error, malformed/truncated body."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message, status=status)
        self.retry_after = retry_after


class FatalLLMError(LLMError):
    """Non-retryable failure (400, 401, 403, 404, 422, local engine error). Message is the server's."""


class RetriesExhausted(LLMError):
    """Raised by the client after the retry limit; ``attempts`` and ``last_error`` say what happened."""

    def __init__(self, message: str, *, attempts: int, last_error: BaseException):
        super().__init__(message, status=getattr(last_error, "status", None))
        self.attempts = attempts
        self.last_error = last_error


class DeadlineExceeded(RetriesExhausted):
    """The client's overall per-request deadline (``deadline_s``: attempts + backoff waits) ran out. A subclass of
    :class:`RetriesExhausted`, so callers that end a run cleanly on exhausted retries treat it the same way."""

    def __init__(self, message: str, *, attempts: int, last_error: BaseException, deadline_s: float):
        super().__init__(message, attempts=attempts, last_error=last_error)
        self.deadline_s = deadline_s


class ContextTruncated(LLMError):
    """The server reported far fewer prompt tokens than were sent (C22-B: e.g. Ollama's silent num_ctx cap).

    ``reported`` is the server's prompt_tokens, ``expected_min`` the local lower-bound estimate and
    ``result`` the (unusable) :class:`ChatResult`. The answer must not be scored as the memory's answer:
    re-run with a larger context window (``num_ctx``/``n_ctx``) instead.
    """

    def __init__(self, message: str, *, reported: int, expected_min: int, result: ChatResult | None = None):
        super().__init__(message)
        self.reported = reported
        self.expected_min = expected_min
        self.result = result


@runtime_checkable
class ChatBackend(Protocol):
    """What :class:`LLMClient` needs from a backend.

    identity: stable string naming the backend and model; part of the response-cache key.
    model: model name used for price lookup and logs.
    acomplete(req): one attempt, no retries; raises the errors above.
    aclose(): release per-event-loop resources (HTTP connection pools); called at the end of each sync call.
    """

    identity: str
    model: str

    async def acomplete(self, req: ChatRequest) -> ChatResult: ...

    async def aclose(self) -> None: ...


def result_to_dict(r: ChatResult) -> dict:
    """JSON-serialisable form of a result (what the cache stores; ``cached``/``latency_s`` excluded)."""
    d = asdict(r)
    d.pop("cached", None)
    d.pop("latency_s", None)
    return d


def result_from_dict(d: dict, *, cached: bool = False) -> ChatResult:
    from janus_memory.errors import escape_lone_surrogates as esc
    from janus_memory.values import Usage

    u = d.get("usage") or {}
    return ChatResult(
        text=esc(d.get("text", "")),  # an entry stored before replies were escaped may hold a lone surrogate
        reasoning=esc(d.get("reasoning", "")),
        finish_reason=d.get("finish_reason", "stop"),
        usage=Usage(int(u.get("prompt_tokens", 0)), int(u.get("completion_tokens", 0)), bool(u.get("estimated", False))),
        cached=cached,
        model=esc(d.get("model", "")),
        fingerprint=esc(d.get("fingerprint", "")),
    )


def canonical_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, no whitespace, UTF-8 kept) used for hashing."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass
class BackendStats:
    """Cumulative engine timings (llama.cpp ``timings``): tokens and milliseconds for prompt and generation."""

    calls: int = 0
    prompt_tokens: int = 0
    prompt_ms: float = 0.0
    cached_prompt_tokens: int = 0
    gen_tokens: int = 0
    gen_ms: float = 0.0
    last: dict = field(default_factory=dict)

    @property
    def prompt_tok_s(self) -> float:
        return 1000.0 * self.prompt_tokens / self.prompt_ms if self.prompt_ms > 0 else 0.0

    @property
    def gen_tok_s(self) -> float:
        """Generated tokens per second; 0.0 (not measured) under 1 ms of generation in all: each call's first token
        comes with the prompt pass, so calls of one token each would give a rate of a million tokens/s."""
        return 1000.0 * self.gen_tokens / self.gen_ms if self.gen_ms >= 1.0 else 0.0

    def add(self, timings: dict) -> None:
        self.calls += 1
        self.prompt_tokens += int(timings.get("prompt_n", 0) or 0)
        self.prompt_ms += float(timings.get("prompt_ms", 0.0) or 0.0)
        self.cached_prompt_tokens += int(timings.get("cache_n", 0) or 0)
        self.gen_tokens += int(timings.get("predicted_n", 0) or 0)
        self.gen_ms += float(timings.get("predicted_ms", 0.0) or 0.0)
        self.last = dict(timings)

    def as_dict(self) -> dict:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "gen_tokens": self.gen_tokens,
            # share of prompt tokens served from the KV cache (memory-first prompts, prefix-grouped batches)
            "prompt_reuse": round(self.cached_prompt_tokens / (self.prompt_tokens + self.cached_prompt_tokens), 4)
            if self.prompt_tokens + self.cached_prompt_tokens else None,
            "prompt_tok_s": round(self.prompt_tok_s, 2),
            "gen_tok_s": round(self.gen_tok_s, 2),
        }
