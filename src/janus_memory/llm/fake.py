"""Scripted deterministic backend for tests and CI (no network, no weights).

Responses come from rules ``(pattern, response)`` tried in order, or from a recorded transcript:

* pattern: a regex string searched (``re.search``, DOTALL) in the LAST user message, or a callable
  ``(messages) -> bool``.
* response: a string (the assistant ``content``), a dict (an OpenAI ``message`` such as
  ``{"content": "...", "reasoning": "..."}``, optionally with ``"finish_reason"`` and ``"usage"`` keys), or a
  callable ``(messages, request, call_index) -> str | dict``. A regex rule's string may use ``\\1``/``\\g<name>``
  group references (expanded with ``match.expand``).
* transcript: a list of ``{"messages": [...], "response": str|dict}`` (or a JSONL path with those objects);
  an exact messages match wins over rules.

Responses go through the same normalisation as real servers (reasoning split, usage estimate), so fake results
look exactly like real ones. Determinism: a given request gives the same response unless a callable decides
otherwise. Failure injection: ``fail_every=N`` makes every N-th call (1-based) raise a transient error with
``fail_status`` (default 500); ``failures`` lists exceptions raised by the first calls, in order.
``calls`` counts every call (including failed ones); ``requests`` keeps the received requests;
``max_inflight`` is the peak number of concurrent calls (to check bounded concurrency).
"""
from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from janus_memory.llm.base import (
    ChatRequest,
    FatalLLMError,
    TransientLLMError,
    canonical_json,
)
from janus_memory.llm.reasoning import (
    estimate_prompt_tokens,
    estimate_text_tokens,
    normalise_response,
)
from janus_memory.values import ChatResult

Rule = tuple[Any, Any]


class NoRuleMatched(FatalLLMError):
    """No rule or transcript entry matched the request (a test-setup error, never retried)."""


class FakeBackend:
    """Deterministic scripted backend. See the module docstring for rules, transcripts and failure injection.

    Args:
        rules: ordered ``[(pattern, response), ...]``.
        transcript: list of records or a JSONL path.
        default: response when nothing matches (None -> raise :class:`NoRuleMatched`).
        latency_s: simulated latency per call (``asyncio.sleep``), seconds.
        fail_every: every N-th call raises ``TransientLLMError(status=fail_status)``.
        failures: exceptions raised by the first ``len(failures)`` calls, in order (None entries = no failure).
        name: identity suffix (``"fake:<name>"``); change it when rules change to avoid stale cache hits.
        model: model name reported in results and used for prices.
    """

    def __init__(self, rules: Iterable[Rule] | None = None, transcript: list[dict] | str | Path | None = None,
                 latency_s: float = 0.0, fail_every: int | None = None, *, failures: list | None = None,
                 fail_status: int = 500, default: Any = None, name: str = "default", model: str = "fake-model",
                 usage: bool = True):
        self.rules: list[Rule] = []
        for i, r in enumerate(rules or []):
            if not (isinstance(r, (tuple, list)) and len(r) == 2):
                raise ValueError(f"rules[{i}] must be a (pattern, response) pair")
            pat, resp = r
            if isinstance(pat, str):
                pat = re.compile(pat, re.DOTALL)
            elif not (callable(pat) or isinstance(pat, re.Pattern)):
                raise ValueError(f"rules[{i}] pattern must be a regex string or a callable")
            self.rules.append((pat, resp))
        self.transcript: dict[str, Any] = {}
        if transcript is not None:
            recs: Any = transcript
            if isinstance(transcript, (str, Path)):
                recs = [json.loads(line) for line in Path(transcript).read_text(encoding="utf-8").splitlines() if line.strip()]
            for rec in recs:
                self.transcript[canonical_json(rec["messages"])] = rec["response"]
        if fail_every is not None and int(fail_every) < 1:
            raise ValueError("fail_every must be >= 1")
        self.latency_s = float(latency_s)
        self.fail_every = fail_every
        self.fail_status = int(fail_status)
        self.failures = list(failures or [])
        self.default = default
        self.model = model
        self.usage = usage
        self.identity = f"fake:{name}"
        self.calls = 0
        self.inflight = 0
        self.max_inflight = 0
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()

    def _respond(self, req: ChatRequest, idx: int) -> Any:
        msgs = [dict(m) for m in req.messages]
        key = canonical_json(msgs)
        if key in self.transcript:
            return self.transcript[key]
        last_user = next((m["content"] for m in reversed(msgs) if m.get("role") == "user"), "")
        for pat, resp in self.rules:
            m = None
            if isinstance(pat, re.Pattern):
                m = pat.search(last_user)
                if not m:
                    continue
            elif not pat(msgs):
                continue
            if callable(resp):
                return resp(msgs, req, idx)
            if isinstance(resp, str) and m is not None and "\\" in resp:
                return m.expand(resp)
            return resp
        if self.default is not None:
            return self.default(msgs, req, idx) if callable(self.default) else self.default
        raise NoRuleMatched(f"FakeBackend {self.identity}: no rule matched last user message {last_user[:120]!r}")

    async def acomplete(self, req: ChatRequest) -> ChatResult:
        with self._lock:
            self.calls += 1
            idx = self.calls
            self.requests.append(req)
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            if self.latency_s > 0:
                await asyncio.sleep(self.latency_s)
        finally:
            with self._lock:
                self.inflight -= 1
        if idx <= len(self.failures) and self.failures[idx - 1] is not None:
            raise self.failures[idx - 1]
        if self.fail_every and idx % int(self.fail_every) == 0:
            raise TransientLLMError(f"injected failure on call {idx}", status=self.fail_status)
        out = self._respond(req, idx)
        if isinstance(out, str):
            out = {"content": out}
        if not isinstance(out, dict):
            raise FatalLLMError(f"FakeBackend response must be str or dict, got {type(out).__name__}")
        msg = {k: v for k, v in out.items() if k not in ("finish_reason", "usage")}
        msg.setdefault("role", "assistant")
        finish = out.get("finish_reason", "stop")
        resp: dict[str, Any] = {"model": self.model, "choices": [{"index": 0, "message": msg, "finish_reason": finish}]}
        if "usage" in out:
            resp["usage"] = out["usage"]
        elif self.usage:
            resp["usage"] = {
                "prompt_tokens": estimate_prompt_tokens(req.messages),
                "completion_tokens": max(1, estimate_text_tokens((msg.get("content") or "")
                                                                  + (msg.get("reasoning") or ""))),
            }
        return normalise_response(resp, list(req.messages), model=self.model)

    async def aclose(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"FakeBackend({self.identity!r}, rules={len(self.rules)}, calls={self.calls})"
