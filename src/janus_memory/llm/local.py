"""Embedded llama.cpp backend (``xllamacpp``, a GGUF file), same request/response shape as the HTTP backend.

* The model is loaded lazily on the first call (``xllamacpp.Server``), with llama.cpp logging silenced
  (``CommonParams.verbosity = -1``); ``load_s`` sums the seconds spent loading (inside that first call).
* Requests set ``cache_prompt = True``: llama.cpp keeps the KV cache of the previous prompt in its slot and only
  evaluates the new suffix. Put the memory BEFORE the task in prompts (system message = memory), so Janus's
  evaluation of many tasks against one memory pays for the memory tokens once (measured with SmolLM2-135M:
  a 526-token prompt re-sent took 0.25 s instead of 8.2 s, ``cached_tokens`` 525).
* Parallel slots (``n_parallel > 1``): llama.cpp's server engine runs up to ``n_parallel`` requests at once with
  continuous batching (one forward pass advances every active request by a token), and ``xllamacpp.Server`` is
  thread-safe, so up to ``n_parallel`` calls enter the engine concurrently. ``n_ctx`` is the context of ONE slot:
  the engine is given ``n_ctx * n_parallel`` tokens of KV cache. Each slot keeps its own KV cache, so a memory
  prefix is re-read once per slot that serves it (measured: llama.cpp does not share a prefix across slots, with
  or without ``kv_unified``); ``n_parallel`` equal to the number of distinct memories in a batch wastes least.
* Calls enter the engine in the order they were issued (a FIFO gate, not a bare lock, whose wake-up order is
  arbitrary): ``LLMClient.chat_many`` issues a batch grouped by shared prefix (``prefix_cache = True`` below),
  so requests that share a memory run back to back and reuse its KV cache.
* Seeds: a request without ``seed`` gets a fixed one derived from its body and sample index, so every request's
  sampling is reproducible whatever slot or order it runs in. At temperature 0 a batched step can still pick a
  different token than a single-stream step on an exact near-tie (the batched kernels sum in another order);
  the response cache freezes whatever was answered first.
* ``xllamacpp.Server`` also serves llama.cpp's own HTTP API on a random 127.0.0.1 port while loaded
  (``listening_address``); we do not use it here (tests/llm/test_llamacpp_server.py talks to it as a real server).
* ``stats`` accumulates llama.cpp ``timings``: prompt and generation tokens/s (``stats.prompt_tok_s``,
  ``stats.gen_tok_s``), cached prompt tokens; ``stats.last`` is the last call's raw timings.

Source of the recipe: docs/research-notes.md, the offline stack (xllamacpp 2026.10, Qwen2.5-Coder-1.5B Q4_K_M).
"""
from __future__ import annotations

import asyncio
import glob
import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from janus_memory.llm.base import (
    BackendStats,
    ChatRequest,
    FatalLLMError,
    TransientLLMError,
)
from janus_memory.llm.live import LIVE
from janus_memory.llm.reasoning import normalise_response
from janus_memory.values import ChatResult

DEFAULT_MODEL_DIR = Path("~/.cache/janus-memory/models").expanduser()


def _delta_text(chunk: Any) -> bool:
    """Whether a streamed chunk carries generated text (answer or reasoning): one generated token each."""
    if not isinstance(chunk, dict):
        return False
    for ch in chunk.get("choices") or []:
        d = ch.get("delta") if isinstance(ch, dict) else None
        if isinstance(d, dict) and (d.get("content") or d.get("reasoning_content")):
            return True
    return False


def assemble_stream(chunks: list) -> dict:
    """The streamed chunks of one llama.cpp chat completion as the one-piece response dict.

    An ``error`` chunk is returned as it is (llama.cpp sends a refused request as one such chunk). The text pieces are
    joined in order; the finish reason, usage, timings and model come from the last chunk that has them. No chunk with
    ``choices`` gives ``{}`` (normalise_response then calls the body malformed, a retryable error)."""
    for c in chunks:
        if isinstance(c, dict) and c.get("error"):
            return c
    content: list[str] = []
    reasoning: list[str] = []
    finish = usage = timings = model = None
    seen = False
    for c in chunks:
        if not isinstance(c, dict):
            continue
        for ch in c.get("choices") or []:
            if not isinstance(ch, dict):
                continue
            seen = True
            d = ch["delta"] if isinstance(ch.get("delta"), dict) else {}
            content.append(d.get("content") or "")
            reasoning.append(d.get("reasoning_content") or "")
            finish = ch.get("finish_reason") or finish
        usage = c.get("usage") or usage
        timings = c.get("timings") or timings
        model = c.get("model") or model
    if not seen:
        return {}
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
    if any(reasoning):
        msg["reasoning_content"] = "".join(reasoning)
    out: dict[str, Any] = {"choices": [{"index": 0, "message": msg, "finish_reason": finish}]}
    for k, v in (("usage", usage), ("timings", timings), ("model", model)):
        if v is not None:
            out[k] = v
    return out


def gguf_fingerprint(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Fast stable fingerprint of a GGUF file: sha256 of (size, first MiB, last MiB), 16 hex chars."""
    p = Path(path)
    size = p.stat().st_size
    h = hashlib.sha256(str(size).encode())
    with open(p, "rb") as f:
        h.update(f.read(chunk))
        if size > chunk:
            f.seek(max(chunk, size - chunk))
            h.update(f.read(chunk))
    return h.hexdigest()[:16]


def default_gguf() -> Path:
    """The embedded model path: env ``JANUS_LOCAL_GGUF``, else the single/first ``*.gguf`` in
    ``~/.cache/janus-memory/models/``. Raises FileNotFoundError with instructions when absent."""
    env = os.environ.get("JANUS_LOCAL_GGUF")
    if env:
        return Path(env).expanduser()
    found = sorted(glob.glob(str(DEFAULT_MODEL_DIR / "*.gguf")))
    if not found:
        raise FileNotFoundError(
            f"no GGUF model: set JANUS_LOCAL_GGUF or run `janus model fetch` (looked in {DEFAULT_MODEL_DIR})")
    return Path(found[0])


class _FifoGate:
    """At most ``n`` holders at a time, admitted strictly in ticket order; a ticket that is abandoned before it
    enters (a cancelled call) is skipped, so it cannot block the ones behind it."""

    def __init__(self, n: int):
        self._cv = threading.Condition()
        self._n = n
        self._next = 0
        self._head = 0
        self._active = 0
        self._skipped: set[int] = set()
        self._started: set[int] = set()

    def ticket(self) -> int:
        with self._cv:
            t = self._next
            self._next += 1
            return t

    def _advance(self) -> None:
        while self._head in self._skipped:
            self._skipped.discard(self._head)
            self._head += 1

    def enter(self, t: int) -> None:
        with self._cv:
            self._started.add(t)
            if t < self._head or t in self._skipped:
                # abandoned, yet running anyway (the cancel came too late): admit out of order
                self._skipped.discard(t)
                self._cv.wait_for(lambda: self._active < self._n)
            else:
                self._advance()
                self._cv.wait_for(lambda: self._head == t and self._active < self._n)
                self._head += 1
            self._started.discard(t)
            self._active += 1
            self._advance()
            self._cv.notify_all()

    def leave(self) -> None:
        with self._cv:
            self._active -= 1
            self._cv.notify_all()

    def abandon(self, t: int) -> None:
        with self._cv:
            if t >= self._head and t not in self._started:
                self._skipped.add(t)
                self._advance()
                self._cv.notify_all()


class LocalBackend:
    """In-process llama.cpp chat backend.

    Args:
        model_path: path to a ``.gguf`` file (must exist; FileNotFoundError otherwise).
        n_ctx: context window of one slot, in tokens. n_threads: CPU threads for prompt and generation.
        n_parallel: llama.cpp slots = requests decoded together (1 = one at a time). Calls beyond it wait, FIFO.
    identity: ``"local:<file name>:<size>:<fingerprint>"`` (independent of n_parallel: a cached answer stays valid).
    """

    prefix_cache = True  # LLMClient.chat_many groups a batch by shared prefix for this backend

    def __init__(self, model_path: str | os.PathLike, n_ctx: int = 4096, n_threads: int = 2, *,
                 n_parallel: int = 1, verbosity: int = -1):
        p = Path(model_path).expanduser()
        if not p.is_file():
            raise FileNotFoundError(f"GGUF model file not found: {p}")
        self.model_path = p
        self.n_ctx = int(n_ctx)
        self.n_threads = int(n_threads)
        self.n_parallel = int(n_parallel)
        if self.n_ctx < 1 or self.n_parallel < 1 or self.n_threads < 1:
            raise ValueError(f"n_ctx, n_threads and n_parallel must be >= 1 (got {n_ctx}, {n_threads}, {n_parallel})")
        self.verbosity = int(verbosity)
        self.model = p.stem
        self.identity = f"local:{p.name}:{p.stat().st_size}:{gguf_fingerprint(p)}"
        self.stats = BackendStats()
        self._srv: Any = None
        self.load_s = 0.0  # seconds spent loading the model (inside the first call; run/timing.py leaves it out)
        self._lock = threading.Lock()  # guards loading/closing and the stats
        self._gate = _FifoGate(self.n_parallel)

    def _load(self) -> Any:
        if self._srv is None:
            try:
                import xllamacpp as xlc
            except ImportError as e:  # pragma: no cover - depends on the optional extra
                raise FatalLLMError("LocalBackend needs xllamacpp: pip install 'janus-memory[local]'") from e
            p = xlc.CommonParams()
            p.model.path = str(self.model_path)
            p.n_ctx = self.n_ctx * self.n_parallel  # llama.cpp splits the KV cache evenly over the slots
            p.cpuparams.n_threads = self.n_threads
            p.cpuparams_batch.n_threads = self.n_threads
            p.n_parallel = self.n_parallel
            p.cont_batching = True
            p.cache_prompt = True
            p.verbosity = self.verbosity
            t0 = time.perf_counter()
            LIVE.note = f"loading the model ({self.model_path.name})"  # the console's still-running line says so
            try:
                self._srv = xlc.Server(p)
            finally:
                LIVE.note = ""
            self.load_s += time.perf_counter() - t0
        return self._srv

    def request_body(self, req: ChatRequest) -> dict:
        """The llama.cpp request body: OpenAI body + ``cache_prompt`` + a fixed seed when none was given."""
        body = req.body()
        body["cache_prompt"] = True
        if body.get("seed") is None:
            # llama.cpp draws a random seed per request otherwise: derive a fixed one from the request, so a
            # temperature > 0 run is reproducible even without the response cache
            from janus_memory.llm.base import canonical_json

            digest = hashlib.sha256(canonical_json([body, getattr(req, "sample", 0)]).encode("utf-8")).digest()
            body["seed"] = int.from_bytes(digest[:4], "little") & 0x7FFFFFFF
        return body

    def complete_sync(self, req: ChatRequest, *, ticket: int | None = None) -> ChatResult:
        """Blocking single call; at most ``n_parallel`` run at once, admitted in ticket (issue) order."""
        body = self.request_body(req)
        t = self._gate.ticket() if ticket is None else ticket
        self._gate.enter(t)
        try:
            with self._lock:
                srv = self._load()
            r = self._call(srv, body)
        finally:
            self._gate.leave()
        try:
            return normalise_response(r, list(req.messages), model=self.model)
        except ValueError as e:
            raise TransientLLMError(f"malformed llama.cpp response: {e}") from e

    def _call(self, srv: Any, body: dict) -> Any:
        # streamed, so the tokens of a call still running show in the progress line (llm/live.py); the reply is
        # assembled back into the one-piece shape (generation is the same: the stream flag only changes delivery)
        chunks: list = []
        handle = LIVE.open()
        generated = None  # the reply's generated tokens: what the measured speed is made of (llm/live.py)

        def on_chunk(chunk: Any) -> None:
            chunks.append(chunk)
            if _delta_text(chunk):
                LIVE.add(handle)

        try:
            srv.handle_chat_completions(dict(body, stream=True, stream_options={"include_usage": True}), on_chunk)
            r = assemble_stream(chunks)
            if isinstance(r, dict) and not r.get("error") and r.get("choices"):
                got = r.get("usage")
                usage = got if isinstance(got, dict) else {}
                n = usage.get("completion_tokens")
                generated = n if isinstance(n, int) and not isinstance(n, bool) else sum(map(_delta_text, chunks))
        except (ValueError, TypeError) as e:
            raise FatalLLMError(f"llama.cpp rejected the request: {e}") from e
        except RuntimeError as e:
            raise TransientLLMError(f"llama.cpp runtime error: {e}") from e
        finally:
            LIVE.close(handle, generated)
        if isinstance(r, dict) and r.get("error"):
            err = r["error"]
            msg = err.get("message") if isinstance(err, dict) else str(err)
            code = err.get("code") if isinstance(err, dict) else None
            if isinstance(code, int) and code >= 500:
                raise TransientLLMError(f"llama.cpp error {code}: {msg}", status=code)
            raise FatalLLMError(f"llama.cpp error: {msg}", status=code if isinstance(code, int) else None)
        if isinstance(r, dict) and isinstance(r.get("timings"), dict):
            with self._lock:
                self.stats.add(r["timings"])
        return r

    async def acomplete(self, req: ChatRequest) -> ChatResult:
        # a daemon thread (not asyncio.to_thread): llama.cpp generation cannot be aborted, and Ctrl-C must not wait for
        # it; cancelling this coroutine returns at once and the abandoned generation dies with the process
        t = self._gate.ticket()  # taken on the event loop: tickets follow the order the calls were issued
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()

        def settle(value, error) -> None:
            if not fut.done():
                fut.set_exception(error) if error is not None else fut.set_result(value)

        def work() -> None:
            try:
                value, error = self.complete_sync(req, ticket=t), None
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting coroutine
                value, error = None, e
            try:
                loop.call_soon_threadsafe(settle, value, error)
            except RuntimeError:  # the loop is gone (interrupted run): nobody waits for this result
                pass

        threading.Thread(target=work, name="janus-llama-call", daemon=True).start()
        try:
            return await fut
        except asyncio.CancelledError:
            self._gate.abandon(t)  # no-op if the call already entered the engine
            raise

    async def aclose(self) -> None:
        return None

    def close(self) -> None:
        """Free the engine (the next call reloads it)."""
        with self._lock:
            self._srv = None

    def __repr__(self) -> str:
        return f"LocalBackend({str(self.model_path)!r}, n_ctx={self.n_ctx}, n_parallel={self.n_parallel})"
