"""The backend section of the run settings: ``RunConfig.llm`` (which chat backend, which model, how it is called).

The ``janus run`` flags stay flat (``--temperature``, ``--base-url`` ...) and so may a YAML/JSON config file and the
config.json of a run folder written before this section existed: :func:`lift_llm` moves such flat keys into the
``llm`` section (``RunConfig`` calls it before validating). The same key given flat and nested with two different
values is refused in one line. config.json is written nested.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ConfigError
from . import limits as L


def checked_path(v):
    """A settings validator's check of a path given as text (janus_memory/paths.py: too long for the file system, a
    symlink loop, a NUL byte): one pydantic error line instead of an OSError mid-run. Other values pass unchanged."""
    from pydantic_core import PydanticCustomError

    from ..paths import check_path

    if isinstance(v, str):
        try:
            check_path(v)
        except ValueError as e:
            raise PydanticCustomError("path", "{text}", {"text": str(e)}) from None
    return v

class LLMSettings(BaseModel):
    """How the chat model is reached and sampled. Token limits are per LLM call."""

    # as RunConfig: no "5" for 5, no inf/nan for a number
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True, allow_inf_nan=False)

    backend: str = "local"  # a name in janus_memory.registry.BACKENDS: local, openai, fake (or a plugin's)
    model: str | None = None  # model name for OpenAI-compatible servers
    base_url: str | None = None
    model_path: str | None = None  # GGUF for the embedded backend
    # upper bounds: settings/limits.py
    n_ctx: int = Field(default=0, ge=0, le=L.MAX_TOKENS)  # embedded backend context window; 0 = sized from the request (presets.check_context)
    n_parallel: int = Field(default=1, ge=1, le=L.MAX_PARALLEL)  # embedded engine slots (docs/perf.md); the client sends >= this many at once
    concurrency: int = Field(default=4, ge=1, le=L.MAX_CONCURRENCY)
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)  # the range every chat call accepts (LLMClient)
    solver_max_tokens: int = Field(default=8192, ge=1, le=L.MAX_TOKENS)
    curator_max_tokens: int = Field(default=8192, ge=1, le=L.MAX_TOKENS)
    extra_body: dict | None = None
    request_timeout: float = Field(default=120.0, gt=0.0, le=L.MAX_TIMEOUT_S)  # seconds per HTTP request (openai backend)
    max_retries: int = Field(default=6, ge=0, le=L.MAX_RETRIES)  # LLM client retries per request (transient errors)
    # seconds for one request including retries (None: no cap)
    request_deadline: float | None = Field(default=None, gt=0.0, le=L.MAX_DEADLINE_S)

    @field_validator("model_path")
    @classmethod
    def _path(cls, v):
        """A config file's model_path too long or in a symlink loop is one line, not an OSError when the model
        loads (:func:`checked_path`, as RunConfig's out, data_dir and cache_dir)."""
        return checked_path(v)

    @field_validator("extra_body", mode="before")
    @classmethod
    def _bounded_body(cls, v):
        """Sent with every call: bounded in values, depth and bytes before it is copied (settings/limits.py)."""
        return L.bounded_json(v)

    @field_validator("backend", "model", "base_url", mode="before")
    @classmethod
    def _bounded_text(cls, v):
        return L.bounded_text(v)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v):
        """An OpenAI-compatible endpoint is spoken to over HTTP: another scheme (ftp://, a bare host) is one line
        here, not seven retries of a request no retry can make work."""
        from pydantic_core import PydanticCustomError

        if v is not None and not v.lower().startswith(("http://", "https://")):
            raise PydanticCustomError("range", "{rule}", {"rule": f"must be an http:// or https:// URL such as "
                                                          f"http://127.0.0.1:8000/v1, got {v!r}"})
        return v


LLM_KEYS: tuple[str, ...] = tuple(LLMSettings.model_fields)


class SettingsConflict(ConfigError):
    """A key given both flat and inside ``llm`` with two different values."""


def _section(value: Any) -> Any:
    """The ``llm`` value as a plain dict where it is one (an LLMSettings counts with the keys that were set)."""
    if isinstance(value, LLMSettings):
        return value.model_dump(exclude_unset=True)
    return dict(value) if isinstance(value, dict) else value


def lift_llm(data: dict) -> dict:
    """``data`` with its flat backend keys moved into the ``llm`` section (a new dict; ``data`` is not changed).

    Raises SettingsConflict when a key is given flat and nested with different values. A non-mapping ``llm`` is left
    as it is (validation names it)."""
    flat = [k for k in LLM_KEYS if k in data]
    if not flat:
        return data
    section = _section(data.get("llm", {}))
    if not isinstance(section, dict):
        return data
    out = {k: v for k, v in data.items() if k not in flat}
    for k in flat:
        if k in section and section[k] != data[k]:
            raise SettingsConflict(f"'{k}' is given twice with different values: {data[k]!r} (flat) and "
                                   f"{section[k]!r} (llm.{k}); give it once")
        section[k] = data[k]
    out["llm"] = section
    return out


def overlay(*layers: dict) -> dict:
    """Settings mappings merged left to right, later layers winning key by key inside ``llm`` too (a flat
    ``--temperature`` over a config file's ``llm: {temperature: ...}``); other keys are replaced whole."""
    out: dict = {}
    for layer in layers:
        layer = lift_llm(layer)
        prev, new = _section(out.get("llm")), _section(layer.get("llm"))
        out.update(layer)
        if isinstance(prev, dict) and isinstance(new, dict):
            out["llm"] = {**prev, **new}
        elif prev is not None and not isinstance(prev, dict):
            out["llm"] = prev  # not a mapping: kept for validation to name, never silently replaced
    return out
