"""OpenAI-compatible chat backend (vLLM, SGLang, Ollama, llama.cpp server, OpenRouter, DeepSeek, any base URL).

Uses the official ``openai`` SDK's ``AsyncOpenAI`` with the SDK's own retries disabled (``max_retries=0``):
:class:`~janus_memory.llm.client.LLMClient` owns the retry policy. The raw HTTP body is parsed here, so a
truncated/invalid JSON body becomes a retryable error, and ``reasoning``/``reasoning_content`` fields survive.
One ``AsyncOpenAI`` instance exists per event loop; ``aclose()`` closes the current loop's instance.
"""
from __future__ import annotations

import asyncio
import email.utils
import json
import os
import ssl
import threading
import time
from typing import Any

import httpx
import openai

from janus_memory.llm.base import ChatRequest, FatalLLMError, TransientLLMError
from janus_memory.llm.reasoning import normalise_response
from janus_memory.llm.reply_cap import ACCEPT_ENCODING, ReplyTooLarge, cap_response, limit_replies, reply_limit
from janus_memory.values import ChatResult

RETRYABLE_STATUS = {408, 409, 425, 429}


def parse_retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (delta-seconds or HTTP date); None when absent."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        ra = headers.get("retry-after")
    except Exception:
        return None
    if ra is None:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        try:
            dt = email.utils.parsedate_to_datetime(ra)
            return max(0.0, dt.timestamp() - time.time())
        except Exception:
            return None


def _server_message(e: openai.APIStatusError) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return _short(err["message"])
        if isinstance(err, str):
            return _short(err)
    return _short(getattr(e, "message", "") or e)


def _short(text, limit: int = 500) -> str:
    """A server's message for an error line: at most ``limit`` characters (the CLI escapes its control characters)."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


class OpenAIBackend:
    """Chat completions over HTTP with the OpenAI API shape.

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        model: model name sent in the request.
        api_key: default from env ``OPENAI_API_KEY`` then ``JANUS_API_KEY``; local servers accept ``"EMPTY"``.
        timeout: wall-clock limit of one attempt in seconds (connect + headers + whole body; a timeout is retried
            by the client). Also httpx's per-operation timeout.
        max_connections: HTTP connection-pool size: requests beyond it wait in httpx's pool (the run passes its
            ``--concurrency``, so that bound is the client's, not the pool's).
        max_keepalive: idle connections kept open for reuse. httpcore checks every idle connection each time a
            request is assigned, so a large idle pool costs CPU per request that grows with it (measured with 50
            requests in flight on 127.0.0.1: 7 ms of CPU per request with 64 kept open, 1.7-2 ms with 8-16, and a
            round of 50 requests took 1.2-1.5 s instead of 0.47-0.55 s at 0.2 s latency); 16 keeps enough warm
            connections for a comparison's burst without that cost.
    identity: ``"openai:<base_url>:<model>"``.
    ``parallel_requests``: a server answers many requests at once (a run sends its methods' requests side by side).
    """

    parallel_requests = True

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 120.0,
                 *, max_connections: int = 64, max_keepalive: int = 16, default_headers: dict | None = None):
        if not base_url or not isinstance(base_url, str):
            raise ValueError("OpenAIBackend needs a base_url such as http://127.0.0.1:8000/v1")
        if not model:
            raise ValueError("OpenAIBackend needs a model name")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or os.environ.get("JANUS_API_KEY") or "EMPTY"
        if not float(timeout) > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        self.timeout = float(timeout)
        self.max_connections = int(max_connections)
        self.max_keepalive = min(int(max_keepalive), self.max_connections)
        self.default_headers = default_headers
        self.identity = f"openai:{self.base_url}:{self.model}"
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, openai.AsyncOpenAI]] = {}
        self._lock = threading.Lock()
        # one TLS context for every per-loop HTTP client: loading the CA bundle took ~33 ms a client
        self._ssl: ssl.SSLContext | None = None

    def _client(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._clients.get(id(loop))
            if entry is None or entry[0] is not loop:
                if self._ssl is None:
                    self._ssl = httpx.create_ssl_context()
                http = httpx.AsyncClient(
                    verify=self._ssl,
                    timeout=self.timeout,
                    limits=httpx.Limits(max_connections=self.max_connections,
                                        max_keepalive_connections=self.max_keepalive),
                    # every body read is bounded (llm/reply_cap.py): a reply by its request's max_tokens
                    event_hooks={"response": [cap_response]}, headers={"Accept-Encoding": ACCEPT_ENCODING},
                )
                c = openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout,
                                       max_retries=0, http_client=http, default_headers=self.default_headers)  # type: ignore[arg-type]  # the SDK's stubs name its vendored httpx
                entry = self._clients[id(loop)] = (loop, c)
            return entry[1]

    async def aclose(self) -> None:
        """Close the HTTP client bound to the running event loop (if any)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        with self._lock:
            entry = self._clients.pop(id(loop), None)
        if entry is not None:
            await entry[1].close()

    async def acomplete(self, req: ChatRequest) -> ChatResult:
        messages = [dict(m) for m in req.messages]
        body = {k: v for k, v in req.params().items() if v is not None and k != "extra_body"}
        client = self._client()
        try:
            payload = {"model": self.model, "messages": messages, **body, **(req.extra_body or {})}
            # the SDK's generic POST: auth, base URL, error mapping; skips the typed-params transform (CPU-heavy
            # per request) and returns the raw httpx response so we parse the body ourselves.
            # the whole attempt (connect, headers, body) is bounded by ``timeout``: httpx's own timeouts are per
            # read, so a server dripping one byte at a time would otherwise hold the request indefinitely
            with limit_replies(reply_limit(req.max_tokens)):
                raw = await asyncio.wait_for(client.post("/chat/completions", cast_to=httpx.Response, body=payload),
                                             self.timeout)
            text = raw.text
        except ReplyTooLarge as e:  # not retried: the same request gets the same answer
            raise FatalLLMError(str(e)) from None
        except TimeoutError as e:
            raise TransientLLMError(f"timeout: no complete reply within {self.timeout:g}s") from e
        except openai.APITimeoutError as e:
            raise TransientLLMError(f"timeout after {self.timeout}s: {e}") from e
        except openai.APIConnectionError as e:
            raise TransientLLMError(f"connection error: {e}") from e
        except openai.APIStatusError as e:
            status = e.status_code
            msg = _server_message(e)
            if status in RETRYABLE_STATUS or status >= 500:
                raise TransientLLMError(f"HTTP {status}: {msg}", status=status,
                                        retry_after=parse_retry_after(e.response.headers)) from e
            raise FatalLLMError(f"HTTP {status} from {self.base_url}: {msg}", status=status) from e
        except openai.APIResponseValidationError as e:
            raise TransientLLMError(f"invalid response body: {e}") from e
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise TransientLLMError(f"malformed JSON body ({len(text)} bytes): {e}") from e
        if isinstance(data, dict) and data.get("error") and not data.get("choices"):
            err = data["error"]
            raise TransientLLMError(f"error body with HTTP 200: "
                                    f"{_short(err.get('message') if isinstance(err, dict) else err)}")
        try:
            return normalise_response(data, messages, model=self.model)
        except ValueError as e:
            raise TransientLLMError(f"malformed response: {e}") from e

    async def probe_model(self) -> str:
        """Which model answers now, as the server reports it in a chat reply (its ``model`` and, where given, its
        ``system_fingerprint``): one uncached request for a single token. The response cache compares it with the
        model stored with each answer (llm/cache.py)."""
        from janus_memory.llm.cache import answered_by

        res = await self.acomplete(ChatRequest(messages=({"role": "user", "content": "Reply with OK."},),
                                               max_tokens=1, temperature=0.0))
        return answered_by(res)

    def __repr__(self) -> str:
        return f"OpenAIBackend({self.base_url!r}, {self.model!r})"
