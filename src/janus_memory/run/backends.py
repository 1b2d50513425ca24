"""Chat backends a run can use, registered in janus_memory.registry.BACKENDS: ``local`` (embedded GGUF), ``openai``
(any OpenAI-compatible server) and ``fake`` (scripted, plumbing only). A factory takes ``(settings, tasks)`` and returns
a ChatBackend, raising ConfigError with the fix when it cannot be used."""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import ConfigError
from ..registry import BACKENDS


def check_gguf(path: Path) -> None:
    """Raise ConfigError unless ``path`` starts with the GGUF magic bytes."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise ConfigError(f"cannot read model file {path}: {e.strerror}") from e
    if magic != b"GGUF":
        raise ConfigError(f"{path} is not a GGUF model file; pass a .gguf with --model-path, or run `janus model fetch`")


def check_endpoint(base_url: str, timeout_s: float = 5.0, *, max_retries: int = 0,
                   deadline_s: float | None = None) -> None:
    """Raise ConfigError if nothing answers ``GET <base_url>/models`` (any HTTP status counts as reachable).

    Every attempt is bounded as a whole (connect, headers, body) by ``timeout_s`` (--request-timeout), not per read:
    a server that drips one byte at a time or accepts and never answers ends the attempt; a timed-out attempt is
    retried up to ``max_retries`` times (--max-retries), all within ``deadline_s`` (--request-deadline) when set.
    A refused connection (nothing listens) is not retried."""
    import asyncio
    import time
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from ..llm.reply_cap import ReplyTooLarge

    url = base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', 'none')}"}

    async def attempt(t: float) -> None:
        from ..llm.reply_cap import cap_response

        async with httpx.AsyncClient(timeout=t, event_hooks={"response": [cap_response]}) as client:
            await asyncio.wait_for(client.get(url, headers=headers), t)  # its body: at most 1 MiB is read

    end = None if deadline_s is None else time.monotonic() + deadline_s
    attempts, last = 0, None
    with ThreadPoolExecutor(1, thread_name_prefix="janus-endpoint-check") as pool:  # its own event loop
        for _ in range(max_retries + 1):
            t = timeout_s if end is None else min(timeout_s, end - time.monotonic())
            if t <= 0:
                break
            attempts += 1
            try:
                pool.submit(asyncio.run, attempt(t)).result()
                return
            except ReplyTooLarge:  # it answered (a body past 1 MiB, not read): reachable; a chat reply is bounded too
                return
            except httpx.ConnectError as e:
                raise ConfigError(f"cannot reach the model endpoint {base_url} ({type(e).__name__}); start the "
                                  "server or fix --base-url") from None
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as e:  # no retry makes such a URL work
                raise ConfigError(f"the model endpoint {base_url} is not an http(s) URL ({e}); fix --base-url, e.g. "
                                  "http://127.0.0.1:8000/v1") from None
            except (TimeoutError, asyncio.TimeoutError, httpx.HTTPError) as e:
                last = e
    limits = f"--request-timeout {timeout_s:g}, --max-retries {max_retries}" + (
        f", --request-deadline {deadline_s:g}" if deadline_s is not None else "")
    raise ConfigError(f"the model endpoint {base_url} did not answer GET /models in {attempts} attempt(s) "
                      f"({type(last).__name__ if last else 'deadline'}; {limits}); check the server, or raise "
                      "those limits")


@BACKENDS.register("fake")
def fake_backend(cfg, tasks: list):
    """Scripted replies; ``--model rules[:NOISE]``: the scripted model that follows the rules its memory states."""
    from .fake_llm import parse_model, rules_follower, scripted_backend

    noise = parse_model(cfg.llm.model)
    return scripted_backend(tasks) if noise is None else rules_follower(tasks, noise)


@BACKENDS.register("local")
def local_backend(cfg, tasks: list):
    from ..llm import LocalBackend
    from ..llm.model_fetch import resolve_model_path

    path = resolve_model_path(cfg.llm.model_path)  # ModelNotFound is a JanusError naming the fix
    check_gguf(path)
    try:
        import xllamacpp  # noqa: F401
    except ImportError as e:
        raise ConfigError("the embedded backend needs xllamacpp: pip install -e '.[local]'") from e
    # sized from the request (max tokens + prompt budget) or refused when an explicit n_ctx is too small: an
    # embedded run never truncates silently
    return LocalBackend(str(path), n_ctx=cfg.context_window(), n_threads=min(os.cpu_count() or 2, 8),
                        n_parallel=cfg.llm.n_parallel)


@BACKENDS.register("openai")
def openai_backend(cfg, tasks: list):
    from ..llm import OpenAIBackend

    llm = cfg.llm
    if not llm.base_url or not llm.model:
        raise ConfigError("--backend openai needs --base-url and --model")
    check_endpoint(llm.base_url, float(llm.request_timeout), max_retries=llm.max_retries,
                   deadline_s=llm.request_deadline)
    return OpenAIBackend(llm.base_url, llm.model, timeout=float(llm.request_timeout),
                         max_connections=max(64, int(llm.concurrency)))  # --concurrency is the bound, not the pool


def make_llm_backend(cfg, tasks: list | None = None):
    """The chat backend named by ``cfg.llm.backend``. Raises ConfigError with the fix when it cannot be used."""
    name = cfg.llm.backend
    BACKENDS.check(name)
    return BACKENDS[name](cfg, list(tasks or []))
