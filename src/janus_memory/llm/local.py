"""Embedded llama.cpp backend (``xllamacpp``, a GGUF file), same request/response shape as the HTTP backend.

* The model is loaded lazily on the first call (``xllamacpp.Server``), with llama.cpp logging silenced
  (``CommonParams.verbosity = -1``).
* Requests set ``cache_prompt = True``: llama.cpp keeps the KV cache of the previous prompt in its slot and only
  evaluates the new suffix. Put the memory BEFORE the task in prompts (system message = memory), so Janus's
  evaluation of many tasks against one memory pays for the memory tokens once (measured with SmolLM2-135M:
  a 526-token prompt re-sent took 0.25 s instead of 8.2 s, ``cached_tokens`` 525).
* The engine is not safe for concurrent calls from several threads when ``n_parallel == 1``: calls are
  serialised with a lock and run in a worker thread (``asyncio.to_thread``), so the event loop stays free.
* ``stats`` accumulates llama.cpp ``timings``: prompt and generation tokens/s (``stats.prompt_tok_s``,
  ``stats.gen_tok_s``), cached prompt tokens; ``stats.last`` is the last call's raw timings.

Source of the recipe: shared/research/offline-stack.md section B (xllamacpp 2026.10, Qwen2.5-Coder-1.5B Q4_K_M).
"""
from __future__ import annotations

import asyncio
import glob
import hashlib
import os
import threading
from pathlib import Path
from typing import Any

from janus_memory.llm.base import (
    BackendStats,
    ChatRequest,
    FatalLLMError,
    TransientLLMError,
)
from janus_memory.llm.reasoning import normalise_response
from janus_memory.types import ChatResult

DEFAULT_MODEL_DIR = Path("~/.cache/janus-memory/models").expanduser()


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


class LocalBackend:
    """In-process llama.cpp chat backend.

    Args:
        model_path: path to a ``.gguf`` file (must exist; FileNotFoundError otherwise).
        n_ctx: context window in tokens. n_threads: CPU threads for prompt and generation.
        n_parallel: llama.cpp slots (1 = one request at a time; calls are serialised).
    identity: ``"local:<file name>:<size>:<fingerprint>"``.
    """

    def __init__(self, model_path: str | os.PathLike, n_ctx: int = 4096, n_threads: int = 2, *,
                 n_parallel: int = 1, verbosity: int = -1):
        p = Path(model_path).expanduser()
        if not p.is_file():
            raise FileNotFoundError(f"GGUF model file not found: {p}")
        self.model_path = p
        self.n_ctx = int(n_ctx)
        self.n_threads = int(n_threads)
        self.n_parallel = int(n_parallel)
        self.verbosity = int(verbosity)
        self.model = p.stem
        self.identity = f"local:{p.name}:{p.stat().st_size}:{gguf_fingerprint(p)}"
        self.stats = BackendStats()
        self._srv: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._srv is None:
            try:
                import xllamacpp as xlc
            except ImportError as e:  # pragma: no cover - depends on the optional extra
                raise FatalLLMError("LocalBackend needs xllamacpp: pip install 'janus-memory[local]'") from e
            p = xlc.CommonParams()
            p.model.path = str(self.model_path)
            p.n_ctx = self.n_ctx
            p.cpuparams.n_threads = self.n_threads
            p.cpuparams_batch.n_threads = self.n_threads
            p.n_parallel = self.n_parallel
            p.cache_prompt = True
            p.verbosity = self.verbosity
            self._srv = xlc.Server(p)
        return self._srv

    def complete_sync(self, req: ChatRequest) -> ChatResult:
        """Blocking single call (serialised by a lock)."""
        body = req.body()
        body["cache_prompt"] = True
        if body.get("seed") is None:
            # llama.cpp draws a random seed per request otherwise: derive a fixed one from the request, so a
            # temperature > 0 run is reproducible even without the response cache
            from janus_memory.llm.base import canonical_json

            digest = hashlib.sha256(canonical_json([body, getattr(req, "sample", 0)]).encode("utf-8")).digest()
            body["seed"] = int.from_bytes(digest[:4], "little") & 0x7FFFFFFF
        with self._lock:
            srv = self._load()
            try:
                r = srv.handle_chat_completions(body)
            except (ValueError, TypeError) as e:
                raise FatalLLMError(f"llama.cpp rejected the request: {e}") from e
            except RuntimeError as e:
                raise TransientLLMError(f"llama.cpp runtime error: {e}") from e
            if isinstance(r, dict) and r.get("error"):
                err = r["error"]
                msg = err.get("message") if isinstance(err, dict) else str(err)
                code = err.get("code") if isinstance(err, dict) else None
                if isinstance(code, int) and code >= 500:
                    raise TransientLLMError(f"llama.cpp error {code}: {msg}", status=code)
                raise FatalLLMError(f"llama.cpp error: {msg}", status=code if isinstance(code, int) else None)
            if isinstance(r, dict) and isinstance(r.get("timings"), dict):
                self.stats.add(r["timings"])
        try:
            return normalise_response(r, list(req.messages), model=self.model)
        except ValueError as e:
            raise TransientLLMError(f"malformed llama.cpp response: {e}") from e

    async def acomplete(self, req: ChatRequest) -> ChatResult:
        # a daemon thread (not asyncio.to_thread): llama.cpp generation cannot be aborted, and Ctrl-C must not wait for
        # it; cancelling this coroutine returns at once and the abandoned generation dies with the process
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()

        def settle(value, error) -> None:
            if not fut.done():
                fut.set_exception(error) if error is not None else fut.set_result(value)

        def work() -> None:
            try:
                value, error = self.complete_sync(req), None
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting coroutine
                value, error = None, e
            try:
                loop.call_soon_threadsafe(settle, value, error)
            except RuntimeError:  # the loop is gone (interrupted run): nobody waits for this result
                pass

        threading.Thread(target=work, name="janus-llama-call", daemon=True).start()
        return await fut

    async def aclose(self) -> None:
        return None

    def close(self) -> None:
        """Free the engine (the next call reloads it)."""
        with self._lock:
            self._srv = None

    def __repr__(self) -> str:
        return f"LocalBackend({str(self.model_path)!r}, n_ctx={self.n_ctx})"
