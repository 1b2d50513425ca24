"""Run settings: one typed object (pydantic), validated once at the edge (CLI, YAML, Python) and passed down typed.

``RunConfig`` holds the top-level run settings, the nested :class:`JanusSettings` (controller overrides on the
preset's JanusConfig), the nested backend section ``llm`` (:class:`~.llm_settings.LLMSettings`; flat keys are lifted
into it) and the updater's own settings (``updater_config``, checked against the updater's declared
defaults by :func:`check_updater_config`). Unknown keys and wrong types raise one-line ConfigErrors naming the key
(:meth:`RunConfig.parse`). ``<run>/config.json`` is the resolved settings' dump (stored.resolve_config).

Presets (settings/presets.py): ``preset: paper`` (default of ``janus run``) reproduces the authors' code;
``preset: small`` (``janus demo``) is our configuration for a 1.5B model. Explicit settings win over the preset.
"""
from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..controller.config import SEED_MAX
from ..errors import ConfigError
from . import limits as L
from . import presets
from .janus_settings import JanusSettings  # noqa: F401
from .llm_settings import LLMSettings, SettingsConflict, checked_path, lift_llm, overlay
from .migrate import before_twin_cache, migrate_stored  # noqa: F401
from .updater_settings import check_updater_config  # noqa: F401


class RunConfig(BaseModel):
    """Everything that defines one run. Written out in full (resolved) to ``<run>/config.json``.

    Sizes are task counts; ``None`` means the whole split. Token limits are per LLM call.
    """

    # strict like the janus section: 5.0 or "5" for an integer, "true" for a boolean are refused with a one-line error
    # (the command line's flags are converted by argparse before they get here)
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True, allow_inf_nan=False)

    preset: Literal["paper", "small"] = "paper"  # paper: the authors' code; small: janus demo (settings/presets.py)
    dataset: str = "gsm8k"
    data_dir: str | None = None
    stream_size: int | None = Field(default=None, ge=1)
    test_size: int | None = Field(default=None, ge=1)
    # dataset split/shuffle seed (presets.SEED_HELP); Janus's own seed is janus.seed. Same range as janus.seed:
    # random.Random drops the sign, so -1 would give seed 1's split and count as a second seed in `janus report`
    seed: int = Field(default=0, ge=0, le=SEED_MAX)
    faithful: bool = False  # score with the paper's own checker where it differs (math: exact match of the last box)
    # if set, re-orders the stream (same tasks) for the stream-order study (paper §8.7)
    stream_order_seed: int | None = Field(default=None, ge=0, le=SEED_MAX)

    updater: str = "dc_rs"
    updater_config: dict = Field(default_factory=dict)  # the updater's own settings (checked: check_updater_config)
    controller: Literal["janus", "none", "both"] = "both"
    janus: JanusSettings = Field(default_factory=JanusSettings)  # JanusConfig overrides on the preset's
    # controller preset; None = the run preset's (paper/fast); recommended = JanusConfig.recommended()
    janus_preset: Literal["paper", "fast", "recommended"] | None = None
    replay: Literal["fresh", "frozen"] | None = None  # Janus replay sampling; None = the preset's (paper fresh, small frozen)
    # answer checker of stream feedback, replays and the test (tasks/checker_paper.py): paper = the authors' (lenient
    # multiple-choice rules, thinking text included), strict = ours; None = the preset's (paper -> paper, small ->
    # strict). With paper, every record carries our strict verdict too (strict_correct)
    checker: Literal["paper", "strict"] | None = None
    # a replay request that fails after the client's retries: zero = that (entry, memory) scores 0 and the comparison
    # goes on (the authors'); abort = the comparison ends and the deployed memory is kept (ours; on_evaluation_error);
    # None = the preset's (paper -> zero, small -> abort)
    replay_failures: Literal["zero", "abort"] | None = None
    # the base method and its +Janus twin: separate = the twin's requests get their own sample indices, so no stream,
    # curator or test answer is shared through the response cache (the authors' runs are independent); shared = the
    # identical requests of the two get the same cached answer (ours: a paired comparison without sampling noise);
    # None = the preset's (paper -> separate, small -> shared)
    twin_cache: Literal["separate", "shared"] | None = None
    # Fig. 4 checkpoint memories: paper = restored as the authors' make_memory_checkpoints.py rebuilds them (DC-RS
    # retrieval pool from successful records only, ExpeL rule counts 2); exact = the exact snapshot of the stream
    # (ours); None = the preset's (paper -> paper, small -> exact)
    checkpoint_restore: Literal["paper", "exact"] | None = None
    # GPQA option order: question = shuffled by the question text alone, the same for every seed (the authors');
    # seeded = by record id and split seed, so each seed shows other positions (ours); None = the preset's
    # (paper -> question, small -> seeded). Other datasets keep their own order
    option_order: Literal["question", "seeded"] | None = None
    # APIBench-HF split: paper = stable shuffle keyed "APIBench:hf:<seed>" (the authors'), registry = "apibench_hf:<seed>";
    # question (prompt, retrieval query, Janus's embedding): code = the row's whole code field as the authors use it,
    # the reference output included, instruction = the instruction alone; None = the preset's (paper/code, small)
    apibench_split: Literal["paper", "registry"] | None = None
    apibench_question: Literal["code", "instruction"] | None = None

    # the backend section (settings/llm_settings.py): flat keys (CLI flags, older config files, old run folders) are
    # lifted into it before validation
    llm: LLMSettings = Field(default_factory=LLMSettings)
    # Janus evaluation as one batch per comparison (entries x {old, new} in one chat_many, run/eval_batch.py):
    # None = automatic (batched; early-stopping rounds prefetched only on a parallel engine), True = batched and
    # always prefetched, False = each memory's replays sent on their own (docs/perf.md: slower batched on a CPU server)
    batch_eval: bool | None = None
    # with a batched evaluation: send every read a sequential (or early-stopping) comparison may make in its first
    # batch, so it costs one round of latency; the reads it never uses are paid (run/eval_batch.py). None = automatic
    # (on when the backend serves requests in parallel), True/False = always / never. Decisions are the same either way
    speculate: bool | None = None
    # the methods of the run (base and +Janus) as side-by-side streams sharing llm.concurrency (run/streams.py):
    # None = automatic (side by side when the backend serves requests in parallel: a server, or an embedded engine
    # with several slots), True/False = always / one method after another. Results are the same either way
    parallel_methods: bool | None = None
    # model-written code (HumanEval, DC's EXECUTE CODE! step) may run in the weak sandbox (unshare) without bubblewrap
    allow_weak_sandbox: bool = False

    # harmful candidates injected at chosen stream steps: "KIND@STEP[,KIND@STEP...]" or a YAML list of
    # such strings, kinds wipe / dump / overfit / poison / truncate (janus_memory/inject/candidates.py); stored in
    # canonical form ("poison@5,wipe@12"), None = no injection
    inject: str | None = None

    # stream fractions whose memory is also tested, e.g. [0.2, 0.4, 0.6, 0.8]
    checkpoints: list[float] = Field(default_factory=list)

    encoder: str = "minilm"
    cache_dir: str | None = None  # LLM response cache folder; None = ~/.cache/janus-memory/llm-cache
    no_cache: bool = False
    out: str = "runs/latest"

    @model_validator(mode="before")
    @classmethod
    def _lift_flat_llm_keys(cls, data):
        """Flat backend keys into ``llm`` (llm_settings.lift_llm); config.json parses back to the same settings."""
        from pydantic_core import PydanticCustomError

        if not isinstance(data, dict):
            return data
        if isinstance(data.get("preset_summary"), dict):  # config.json's derived record: recomputed, not a setting
            data = {k: v for k, v in data.items() if k != "preset_summary"}
        try:
            return lift_llm(data)
        except SettingsConflict as e:  # one line, without pydantic's "Value error," prefix
            raise PydanticCustomError("llm_conflict", "{text}", {"text": str(e)}) from None

    @field_validator("out", "data_dir", "cache_dir")
    @classmethod
    def _path(cls, v):
        """A path that can name a file here: one line instead of an OSError mid-run (llm_settings.checked_path)."""
        return checked_path(v)

    @field_validator("updater_config", mode="before")
    @classmethod
    def _bounded_updater_config(cls, v):
        """Bounded in values, depth and bytes before it is copied (settings/limits.py)."""
        return L.bounded_json(v)

    @field_validator("dataset", "updater", "encoder", "inject", "out", "data_dir", "cache_dir", mode="before")
    @classmethod
    def _bounded_text(cls, v):
        return L.bounded_text(v)

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

        from ..inject.candidates import InjectSpecError, format_plan, parse_inject

        try:
            return format_plan(parse_inject(v)) or None
        except InjectSpecError as e:  # one line naming the bad item, without pydantic's "Value error," prefix
            raise PydanticCustomError("inject_spec", str(e)) from None

    def inject_plan(self) -> dict[int, str]:
        """The injection plan as {stream step: kind} ({} when none)."""
        from ..inject.candidates import parse_inject

        return {i.step: i.kind for i in parse_inject(self.inject)}

    @field_validator("batch_eval", "parallel_methods", "speculate", mode="before")
    @classmethod
    def _auto_on_off(cls, v):
        """The command line's words ``auto`` (None), ``on`` (True) and ``off`` (False); else a boolean or null."""
        from pydantic_core import PydanticCustomError

        words = {"auto": None, "on": True, "off": False}
        if isinstance(v, str):
            if v.strip().lower() not in words:
                raise PydanticCustomError("auto_on_off", "choose auto, on or off (or true, false, null)")
            return words[v.strip().lower()]
        return v

    @field_validator("checkpoints")
    @classmethod
    def _fractions(cls, v: list[float]) -> list[float]:
        from pydantic_core import PydanticCustomError

        if len(v) > L.MAX_CHECKPOINTS:
            raise PydanticCustomError("range", "{rule}", {"rule": f"at most {L.MAX_CHECKPOINTS} fractions, got {len(v)}"})
        for f in v:
            if not 0.0 < f <= 1.0:  # nan and inf fail here too
                raise PydanticCustomError("range", "{rule}", {"rule": f"must be stream fractions in (0, 1], got {f}"})
        return sorted(set(v))

    @classmethod
    def parse(cls, data: dict) -> RunConfig:
        """Validate a settings mapping (YAML, JSON, Python). Raises a one-line ConfigError naming the bad key."""
        try:
            cfg = cls(**data)
        except ValidationError as e:
            raise config_error(e) from None
        cfg.janus_config()  # ranges and names of the Janus settings (ConfigError naming the key)
        return cfg

    def with_janus(self, **overrides) -> RunConfig:
        """A copy with these Janus settings added (validated)."""
        return self.parse({**self.model_dump(), "janus": {**self.janus.overrides(), **overrides}})

    def replay_mode(self) -> str:
        return self.replay or presets.replay_mode(self.preset)

    def checkpoint_restore_mode(self) -> str:
        """``paper`` (Fig. 4 memories restored as the authors do) or ``exact`` (the stream's exact snapshots)."""
        return self.checkpoint_restore or presets.checkpoint_restore(self.preset)

    def option_order_mode(self) -> str:
        """``question`` (GPQA options ordered by the question alone, the authors') or ``seeded`` (by record and seed)."""
        return self.option_order or presets.option_order(self.preset)

    def apibench_split_mode(self) -> str:
        """``paper`` (APIBench split keyed as the authors key it) or ``registry`` (keyed by our dataset name)."""
        return self.apibench_split or presets.apibench_split(self.preset)

    def apibench_question_mode(self) -> str:
        """``code`` (the row's whole code field, reference output included, as the authors) or ``instruction``."""
        return self.apibench_question or presets.apibench_question(self.preset)

    def loader_options(self) -> dict:
        """The run settings dataset loaders take (``DatasetSpec.options``: GPQA's option order, APIBench's split and
        question)."""
        return {"option_order": self.option_order_mode(), "apibench_split": self.apibench_split_mode(),
                "apibench_question": self.apibench_question_mode()}

    def twin_cache_mode(self) -> str:
        """``separate`` (the +Janus twin draws its own answers) or ``shared`` (identical requests share answers)."""
        return self.twin_cache or presets.twin_cache(self.preset)

    def replay_failure_mode(self) -> str:
        """``zero`` (a failed replay request scores 0, the authors') or ``abort`` (the comparison ends, ours)."""
        return self.replay_failures or presets.replay_failures(self.preset)

    def checker_mode(self) -> str:
        """``paper`` (the authors' checkers, strict verdict recorded beside) or ``strict`` (ours only)."""
        return self.checker or presets.checker(self.preset)

    def janus_config(self):
        """The typed controller settings (JanusConfig): the ``janus`` overrides on the preset's JanusConfig.

        Raises ConfigError naming the bad setting."""
        from ..controller import JanusConfig

        janus = self.janus if isinstance(self.janus, JanusSettings) else _janus_settings(self.janus)
        base = self.janus_preset or ("paper" if self.preset == "paper" else "fast")
        try:
            make = {"paper": JanusConfig.paper, "fast": JanusConfig.fast, "recommended": JanusConfig.recommended}[base]
            return make(**janus.overrides())
        except (TypeError, ValueError) as e:
            name, _, rule = str(e).partition(" ")  # JanusConfig's messages: "<key> must be ..., got <value>"
            structured = name in type(janus).model_fields and rule.startswith("must ")
            raise ConfigError(f"invalid Janus setting: {e}", key=f"janus.{name}" if structured else None,
                              rule=rule if structured else None) from e

    def context_window(self) -> int:
        """The embedded backend's context window: ``n_ctx`` when set (ConfigError when below what one request
        needs), else sized from the request: max(solver, curator max tokens) + a 2048-token prompt budget."""
        try:
            llm = self.llm
            return presets.check_context(llm.n_ctx, max(llm.solver_max_tokens, llm.curator_max_tokens))
        except ValueError as e:
            raise ConfigError(f"n_ctx: {e}") from None

    def updater_settings(self) -> dict:
        """The updater's config: the preset's updater settings, the top-level sampling options, then
        ``updater_config`` (which wins)."""
        out = presets.updater_overrides(self.preset, self.updater)
        llm = self.llm
        out.update({"temperature": llm.temperature, "solver_max_tokens": llm.solver_max_tokens,
                    "curator_max_tokens": llm.curator_max_tokens})
        if llm.extra_body:
            out["extra_body"] = llm.extra_body
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


def _janus_settings(data) -> JanusSettings:
    try:
        return JanusSettings(**dict(data))
    except ValidationError as e:
        raise config_error(e, prefix="janus") from None


_RANGE_ERRORS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")


def _model_at(path: tuple) -> tuple[type[BaseModel] | None, str]:
    """The settings model holding the key at ``path`` (RunConfig, its ``llm`` or ``janus`` section) and the key."""
    sections: dict[str, type[BaseModel]] = {"llm": LLMSettings, "janus": JanusSettings}
    if len(path) == 2 and path[0] in sections:
        return sections[path[0]], str(path[1])
    if len(path) == 1:
        return RunConfig, str(path[0])
    return None, str(path[-1]) if path else ""


def allowed_range(model: type[BaseModel], key: str) -> str | None:
    """The whole allowed range of a numeric settings key from its bounds, e.g. ``in [0, 2]`` or ``>= 1``."""
    field = model.model_fields.get(key)
    if field is None:
        return None
    lo = hi = None
    lo_sym, hi_sym = "[", "]"
    for m in field.metadata:
        if getattr(m, "ge", None) is not None:
            lo, lo_sym = m.ge, "["
        if getattr(m, "gt", None) is not None:
            lo, lo_sym = m.gt, "("
        if getattr(m, "le", None) is not None:
            hi, hi_sym = m.le, "]"
        if getattr(m, "lt", None) is not None:
            hi, hi_sym = m.lt, ")"
    num = lambda x: str(x) if isinstance(x, int) else f"{x:g}"  # noqa: E731 - 4294967295, not 4.29497e+09
    if lo is not None and hi is not None:
        return f"in {lo_sym}{num(lo)}, {num(hi)}{hi_sym}"
    if lo is not None:
        return f"{'>=' if lo_sym == '[' else '>'} {num(lo)}"
    if hi is not None:
        return f"{'<=' if hi_sym == ']' else '<'} {num(hi)}"
    return None


def config_error(e: ValidationError, prefix: str = "") -> ConfigError:
    """One line naming the first bad key of a pydantic error (a whole-settings error: its own line). A number out
    of range names the whole allowed range (``must be in [0, 2], got 5.0``; the error's ``key`` and ``rule`` let
    the CLI name the option instead); an unknown key or a name outside a fixed set gets the closest valid one."""
    from ..did_you_mean import did_you_mean

    err = e.errors()[0]
    if not err["loc"] and not prefix:
        return ConfigError(err["msg"])
    path = ((prefix,) if prefix else ()) + tuple(err["loc"])
    loc = ".".join(str(x) for x in path)
    model, key = _model_at(path)
    if err["type"] == "extra_forbidden":
        known = list(model.model_fields) if model is not None else []
        if model is RunConfig:
            known += list(LLMSettings.model_fields)  # flat backend keys are allowed at the top
        return ConfigError(f"unknown config key '{loc}'{did_you_mean(key, known)}", key=loc)
    got = err.get("input")
    rule = None
    if err["type"] in _RANGE_ERRORS and model is not None:
        span = allowed_range(model, key)
        rule = f"must be {span}, got {_shown(got)}" if span else None
    elif err["type"] == "finite_number":
        rule = f"must be a finite number, got {_shown(got)}"
    elif err["type"] == "range":
        rule = err["ctx"]["rule"]
    if rule is not None:
        return ConfigError(f"invalid value for '{loc}': {rule}", key=loc, rule=rule)
    hint = ""
    if err["type"] == "literal_error" and isinstance(got, str):  # "Input should be 'paper' or 'small'"
        import re

        hint = did_you_mean(got, re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", ""))))
    return ConfigError(f"invalid value for '{loc}': {err['msg']} (got {_shown(got)}){hint}", key=loc)


def _shown(value) -> str:
    """``repr(value)`` for an error line, bounded (reprlib: a 10 MB text or a value built from shared references is
    not printed back, nor expanded to be shortened)."""
    import reprlib

    r = reprlib.Repr()
    r.maxstring = r.maxother = 60
    r.maxlevel, r.maxlist, r.maxdict, r.maxtuple, r.maxset = 2, 4, 4, 4, 4
    text = r.repr(value)
    return text if len(text) <= 100 else text[:96] + " ..."


def preset_summary(cfg: RunConfig) -> dict:
    """What config.json records about the preset (presets.preset_summary) and ``janus report`` shows."""
    return presets.preset_summary(cfg.preset, cfg.janus_config(), cfg.encoder, cfg.replay_mode(),
                                  cfg.controller != "none")


def demo_config(**overrides) -> RunConfig:
    """The `janus demo` preset of act 1: real GSM8K tasks, DC-RS with and without Janus, on the scripted backend
    (cli/demo.py; act 2 is :func:`real_demo_config`). Scaled down to a few minutes on 2 CPU cores when run on a real
    model (measured times: docs/measurements.md).

    ``preset: small``: our capped prompts, frozen (cached) replays, JanusConfig.fast(). Stream 5 tasks, test 3
    held-out tasks; DC-RS retrieves 1 earlier solution (paper: 3) cut to 300 characters. Greedy decoding (temperature
    0) and short outputs keep the small model fast and the demo reproducible.

    Scaled-down Janus sizes (paper: warm-up 20, coverage 12, boundary 8, fresh 5): warm-up 4, coverage 2, boundary 1,
    fresh 1, and the trigger ``always`` (the paper's "without MMT" ablation: compare at every post-warm-up step). A
    5-step stream gives the momentum no history: measured on real DC-RS runs, cos(z_t, m_{t-1}) of genuine and
    harmful candidates alike is noise (|cos| < 0.15) until ~6 updates after warm-up and clearly negative for harmful
    kinds only after that (docs/measurements.md, "MMT on the demo's short stream", probe table). `janus run` keeps
    MMT; the demo shows what Janus's comparison does with a harmful candidate, and says that it compares every step.

    One injected harmful candidate: ``poison`` (a planted instruction that makes answers wrong, the
    memory-poisoning attack) at the last stream step, so that both final memories go to the held-out test: blind
    deployment takes the poisoned sheet there, Janus the one it kept. Both methods receive the same candidate.
    """
    base = dict(
        preset="small",
        dataset="gsm8k",
        stream_size=5,
        test_size=3,
        updater="dc_rs",
        updater_config={"top_k": 1, "retrieved_output_chars": 300},
        controller="both",
        # skip_trivially_equal: a candidate that only bumps DC's "Version:" line is accepted unevaluated (the
        # demo's only comparison once was such a pair: 29% of the run); never in the paper preset
        janus={"warmup": 4, "coverage_size": 2, "boundary_size": 1, "fresh_size": 1, "skip_trivially_equal": True,
               "trigger": "always"},
        backend="local",
        temperature=0.0,
        solver_max_tokens=448,
        curator_max_tokens=320,
        out=time.strftime("runs/demo-%Y%m%d-%H%M%S"),  # a new folder per demo run
    )
    base["inject"] = f"poison@{overrides.get('stream_size') or base['stream_size']}"
    return RunConfig.parse(overlay(base, overrides))


def real_demo_config(**overrides) -> RunConfig:
    """The real act of `janus demo`: Janus at work on the embedded model, on memory that carries facts.

    Generated support tickets (``rules_small``: a shipping rate and a handling fee, each stated by one of the first
    two tickets and needed by later ones, tasks/rules.py), 3 for the stream and 5 held out. The updater is ExpRAG,
    the one whose memory keeps the rules on this model: DC-RS and DC-Cu curators write general advice without the
    numbers, ACE records some and costs three calls per step (docs/measurements.md, "The rules family"). Janus wraps
    it with ``janus_replay: whole_bank`` (a replay reads the memory's other tickets) and ``top_k: 8`` (every ticket is
    retrieved: the stream, the replays and the test see the same records).

    At the last stream step, right after both rules were stated, a harmful candidate replaces the updater's:
    ``falsify``, the memory with the ticket that stated one of the rules the step's task needs tampered with (its
    number changed wherever the ticket says it). Janus: warm-up 2, then a comparison at every later step
    (``trigger: always``, as act 1) on 2 coverage + 1 boundary + 1 fresh earlier tickets. Greedy decoding and short
    replies (the rules prompt asks for at most four lines; cap 384 tokens).
    """
    base = dict(
        preset="small",
        dataset="rules_small",
        stream_size=3,
        test_size=5,
        updater="exprag",
        updater_config={"janus_replay": "whole_bank", "top_k": 8},
        controller="both",
        janus={"warmup": 2, "coverage_size": 2, "boundary_size": 1, "fresh_size": 1, "trigger": "always"},
        backend="local",
        temperature=0.0,
        solver_max_tokens=384,
        curator_max_tokens=320,
        out=time.strftime("runs/demo-%Y%m%d-%H%M%S"),
    )
    base["inject"] = f"falsify@{overrides.get('stream_size') or base['stream_size']}"
    return RunConfig.parse(overlay(base, overrides))
