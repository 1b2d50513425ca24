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


def check_endpoint(base_url: str, timeout_s: float = 5.0) -> None:
    """Raise ConfigError if nothing answers at ``base_url`` (any HTTP status counts as reachable)."""
    import httpx

    url = base_url.rstrip("/") + "/models"
    try:
        httpx.get(url, timeout=timeout_s, headers={"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', 'none')}"})
    except httpx.HTTPError as e:
        raise ConfigError(
            f"cannot reach the model endpoint {base_url} ({type(e).__name__}); start the server or fix --base-url"
        ) from e


@BACKENDS.register("fake")
def fake_backend(cfg, tasks: list):
    from .fake_llm import scripted_backend

    return scripted_backend(tasks)


@BACKENDS.register("local")
def local_backend(cfg, tasks: list):
    from ..llm import LocalBackend
    from ..model_fetch import resolve_model_path

    path = resolve_model_path(cfg.llm.model_path)  # ModelNotFound is a JanusError naming the fix
    check_gguf(path)
    try:
        import xllamacpp  # noqa: F401
    except ImportError as e:
        raise ConfigError("the embedded backend needs xllamacpp: pip install -e '.[local]'") from e
    # sized from the request (max tokens + prompt budget) or refused when an explicit n_ctx is too small: an
    # embedded run never truncates silently (issue 13 item 11)
    return LocalBackend(str(path), n_ctx=cfg.context_window(), n_threads=min(os.cpu_count() or 2, 8),
                        n_parallel=cfg.llm.n_parallel)


@BACKENDS.register("openai")
def openai_backend(cfg, tasks: list):
    from ..llm import OpenAIBackend

    llm = cfg.llm
    if not llm.base_url or not llm.model:
        raise ConfigError("--backend openai needs --base-url and --model")
    check_endpoint(llm.base_url)
    return OpenAIBackend(llm.base_url, llm.model, timeout=float(llm.request_timeout))


def make_llm_backend(cfg, tasks: list | None = None):
    """The chat backend named by ``cfg.llm.backend``. Raises ConfigError with the fix when it cannot be used."""
    name = cfg.llm.backend
    BACKENDS.check(name)
    return BACKENDS[name](cfg, list(tasks or []))
