"""Run configuration (validated with pydantic; unknown keys are rejected with the key named) and presets."""
from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class RunConfig(BaseModel):
    """Everything that defines one run. Written out in full to ``<run>/config.json``.

    Sizes are task counts; ``None`` means the whole split. Token limits are per LLM call.
    """

    model_config = ConfigDict(extra="forbid")

    dataset: str = "gsm8k"
    data_dir: str | None = None
    stream_size: int | None = Field(default=None, ge=1)
    test_size: int | None = Field(default=None, ge=1)
    seed: int = 0  # split/shuffle seed of the dataset and Janus's sampling seed
    faithful: bool = False  # score with the paper's own checker where it differs (math: exact match of the last box)
    stream_order_seed: int | None = None  # if set, re-orders the stream (same tasks) for the stream-order study (paper §8.7)

    updater: str = "dc_rs"
    updater_config: dict = Field(default_factory=dict)
    controller: Literal["janus", "none", "both"] = "both"
    janus: dict = Field(default_factory=dict)  # JanusConfig overrides (see janus_memory.controller.JanusConfig)

    backend: str = "local"  # a name in janus_memory.registry.BACKENDS: local, openai, fake (or a plugin's)
    model: str | None = None  # model name for OpenAI-compatible servers
    base_url: str | None = None
    model_path: str | None = None  # GGUF for the embedded backend
    n_ctx: int = 4096
    concurrency: int = Field(default=4, ge=1)
    temperature: float = Field(default=0.7, ge=0.0)
    solver_max_tokens: int = Field(default=8192, ge=1)
    curator_max_tokens: int = Field(default=8192, ge=1)
    extra_body: dict | None = None

    # harmful candidates injected at chosen stream steps (issue 15): "KIND@STEP[,KIND@STEP...]" or a YAML list of
    # such strings, kinds wipe / dump / overfit / poison / truncate (janus_memory/inject.py); stored in canonical
    # form ("poison@5,wipe@12"), None = no injection
    inject: str | None = None

    checkpoints: list[float] = Field(default_factory=list)  # stream fractions whose memory is also tested, e.g. [0.2, 0.4, 0.6, 0.8]

    encoder: str = "minilm"
    cache_dir: str | None = None  # LLM response cache folder; None = ~/.cache/janus-memory/llm-cache
    no_cache: bool = False
    out: str = "runs/latest"

    @field_validator("dataset", "updater")
    @classmethod
    def _non_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty")
        return v

    @field_validator("inject", mode="before")
    @classmethod
    def _inject_plan(cls, v):
        from pydantic_core import PydanticCustomError

        from ..inject import InjectSpecError, format_plan, parse_inject

        try:
            return format_plan(parse_inject(v)) or None
        except InjectSpecError as e:  # one line naming the bad item, without pydantic's "Value error," prefix
            raise PydanticCustomError("inject_spec", str(e)) from None

    def inject_plan(self) -> dict[int, str]:
        """The injection plan as {stream step: kind} ({} when none)."""
        from ..inject import parse_inject

        return {i.step: i.kind for i in parse_inject(self.inject)}

    @field_validator("checkpoints")
    @classmethod
    def _fractions(cls, v: list[float]) -> list[float]:
        for f in v:
            if not 0.0 < f <= 1.0:
                raise ValueError(f"checkpoint fraction {f} is not in (0, 1]")
        return sorted(set(v))

    def janus_config(self):
        """The typed controller settings (JanusConfig): the ``janus`` overrides on the paper defaults, validated.

        Raises ConfigError naming the bad setting."""
        from ..controller import JanusConfig
        from ..errors import ConfigError

        try:
            return JanusConfig.from_dict(self.janus)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"invalid Janus setting: {e}") from e

    def updater_settings(self) -> dict:
        """The updater's config: the top-level sampling options, then ``updater_config`` (which wins)."""
        out = {"temperature": self.temperature, "solver_max_tokens": self.solver_max_tokens,
               "curator_max_tokens": self.curator_max_tokens}
        if self.extra_body:
            out["extra_body"] = self.extra_body
        out.update(self.updater_config)
        return out

    def methods(self) -> list[tuple[str, bool]]:
        """(method name, with Janus) pairs in run order: the base updater first, then the Janus-wrapped one."""
        out = []
        if self.controller in ("none", "both"):
            out.append((self.updater, False))
        if self.controller in ("janus", "both"):
            out.append((f"{self.updater}+janus", True))
        return out


def demo_config(**overrides) -> RunConfig:
    """The `janus demo` preset: real GSM8K tasks, the embedded model, DC-RS with and without Janus, scaled down so it
    finishes in about 5 minutes on 2 CPU cores (measured: 284 s; ~35 s per stream step, ~12 s per Janus evaluation call).

    Stream 6 tasks, test 3 held-out tasks; DC-RS retrieves 1 earlier solution (paper: 3) cut to 300 characters.

    Scaled-down Janus sizes (paper: warm-up 20, coverage 12, boundary 8, fresh 5): warm-up 3, coverage 2, boundary 1, fresh 1.
    Greedy decoding (temperature 0) and short outputs keep the small model fast and the demo reproducible.

    One injected harmful candidate (issue 15): ``poison`` (a planted instruction that makes answers wrong) at the last
    stream step. Chosen on principle: the MMT trigger is armed there (its momentum starts at the first post-warm-up
    step, so it can fire from warm-up + 2 on), and the injected candidate is what each method takes to the held-out
    test, so blind deployment's test accuracy shows the poison's effect without a later rewrite diluting it. Both
    methods receive it; the printed table shows what blind deployment deployed and what Janus blocked.
    """
    base = dict(
        dataset="gsm8k",
        stream_size=6,
        test_size=3,
        updater="dc_rs",
        updater_config={"top_k": 1, "retrieved_output_chars": 300},
        controller="both",
        janus={"warmup": 3, "coverage_size": 2, "boundary_size": 1, "fresh_size": 1},
        backend="local",
        temperature=0.0,
        solver_max_tokens=448,
        curator_max_tokens=320,
        out=time.strftime("runs/demo-%Y%m%d-%H%M%S"),  # a new folder per demo run
    )
    base["inject"] = f"poison@{overrides.get('stream_size') or base['stream_size']}"
    base.update(overrides)
    return RunConfig(**base)
