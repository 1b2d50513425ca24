"""Build step of a run: validate the settings once, then load splits, task family, LLM client and encoder.

settings (config.py) -> build (here) -> stream loop (loop.py) -> store (store.py) -> reader (reader.py) -> report
"""
from __future__ import annotations

import copy
import hashlib
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..settings.config import RunConfig, check_updater_config
from ..settings.stored import resolve_config  # noqa: F401  (re-exported: the runner's name for it)


@dataclass
class Context:
    """Shared, method-independent pieces of one run."""

    settings: RunConfig
    family: Any
    stream: Any
    test: Any
    client: Any
    encoder: Any
    backend_info: dict = field(default_factory=dict)

    @property
    def cfg(self) -> RunConfig:  # older name
        return self.settings

    def make_updater(self, namespace: str = ""):
        """A fresh updater of this run (the stream's, or a probe for checkpoint tests). ``namespace``: the method's
        sample namespace (:meth:`namespace_of`); "" = the shared client."""
        from ..updaters import make_updater

        llm = NamespacedClient(self.client, namespace) if namespace else self.client
        upd = make_updater(self.settings.updater, llm=llm, family=self.family, encoder=self.encoder,  # type: ignore[arg-type]  # NamespacedClient has chat/chat_many
                           config=self.settings.updater_settings())
        if hasattr(upd, "allow_weak_sandbox"):  # an updater that runs generated code (DC's "EXECUTE CODE!")
            upd.allow_weak_sandbox = bool(self.settings.allow_weak_sandbox)
        return upd

    def namespace_of(self, with_janus: bool) -> str:
        """The +Janus twin's own sample namespace under ``twin_cache: separate`` (the paper preset): its requests
        never share an answer with the base method's (the authors run the two as separate, independent runs); the
        base method keeps the plain requests, so a base-only run is unchanged. "" otherwise."""
        return "janus" if with_janus and self.settings.twin_cache_mode() == "separate" else ""

    def make_evaluator(self, updater):
        """The Janus evaluator callback of one method: the run's replay mode (paper preset: fresh draws), salted so
        runs with another split seed or stream order never share replay answers."""
        from .eval_batch import PairedEvaluator

        s = self.settings
        # a server, or an embedded engine with several slots, runs a batch in parallel: entries x {old, new} are sent
        # as one batch (run/eval_batch.py); a sequential engine still gets them grouped by memory
        # (RunConfig.batch_eval: None = this automatic choice, True/False force batching with prefetch / no batching)
        backend = self.client.backend
        parallel = int(getattr(backend, "n_parallel", self.client.concurrency)) > 1
        batch = True if s.batch_eval is None else s.batch_eval
        parallel = parallel if s.batch_eval is None else s.batch_eval
        # speculation (every read a sequential comparison may make, in its first batch): RunConfig.speculate, auto =
        # when the backend serves requests in parallel (a server or several engine slots; not the instant fake)
        speculate = serves_in_parallel(backend, self.client.concurrency) if s.speculate is None else s.speculate
        return PairedEvaluator(updater, batch=batch, parallel=parallel, speculate=batch and speculate,
                               replay=s.replay_mode(), salt=f"seed={s.seed};order={s.stream_order_seed}",
                               failures=s.replay_failure_mode())


def serves_in_parallel(backend: Any, concurrency: int) -> bool:
    """Whether ``backend`` answers several requests at once, so that requests sent together overlap: an engine with
    slots (``n_parallel``, the embedded llama.cpp) when it has more than one; any other backend when it declares
    ``parallel_requests = True`` (an OpenAI-compatible server) and the client may send more than one request. The
    scripted fake backend answers at once and declares nothing."""
    slots = getattr(backend, "n_parallel", None)
    if slots is not None:
        return int(slots) > 1
    return bool(getattr(backend, "parallel_requests", False)) and int(concurrency) > 1


def methods_side_by_side(ctx: Context) -> bool:
    """Whether the run's methods run as side-by-side streams (RunConfig.parallel_methods; None = when the backend
    serves requests in parallel, :func:`serves_in_parallel`)."""
    choice = ctx.settings.parallel_methods
    if choice is not None:
        return bool(choice)
    return serves_in_parallel(ctx.client.backend, ctx.client.concurrency)


def twin_sample(namespace: str, sample: int) -> int:
    """The sample index that stands for ``sample`` in ``namespace`` (>= 1: never a plain request's 0); the LLM client
    keys its cache by it and the embedded backend derives its seed from it, so the draws are independent."""
    key = f"janus-twin|{namespace}|{int(sample)}".encode("utf-8")
    return 1 + int.from_bytes(hashlib.sha256(key).digest()[:5], "big")


class NamespacedClient:
    """The run's LLM client seen by one method: every request's sample index is moved into ``namespace``
    (:func:`twin_sample`), so the method's answers are independent of another method's identical requests. Replays
    keep their structure: a frozen replay (sample 0) still equals the method's own stream request."""

    def __init__(self, client, namespace: str):
        self.client, self.namespace = client, namespace

    def __getattr__(self, name):
        return getattr(self.client, name)

    def _moved(self, sample):
        if isinstance(sample, (list, tuple)):
            return [twin_sample(self.namespace, s) for s in sample]
        return twin_sample(self.namespace, sample)

    def chat(self, messages, *, sample: int = 0, **params):
        return self.client.chat(messages, sample=self._moved(sample), **params)

    def chat_many(self, batch, *, sample=0, **params):
        return self.client.chat_many(batch, sample=self._moved(sample), **params)

    async def achat(self, messages, *, sample: int = 0, **params):
        return await self.client.achat(messages, sample=self._moved(sample), **params)

    async def achat_many(self, batch, *, sample=0, **params):
        return await self.client.achat_many(batch, sample=self._moved(sample), **params)


def default_cache_dir() -> Path:
    base = os.environ.get("JANUS_CACHE_DIR")
    return (Path(base) if base else Path.home() / ".cache" / "janus-memory") / "llm-cache"


def validate_names(cfg: RunConfig) -> None:
    """Fail fast (before any model load or folder creation) on unknown plugin names or invalid Janus settings."""
    from ..plugins import ensure_builtins
    from ..registry import BACKENDS, DATASETS, UPDATERS, load_plugins
    from . import backends  # noqa: F401  (registers the built-in backends)

    ensure_builtins()
    load_plugins()
    for key, check in (("dataset", lambda: DATASETS.check(cfg.dataset)), ("updater", lambda: UPDATERS.check(cfg.updater)),
                       ("llm.backend", lambda: BACKENDS.check(cfg.llm.backend)),
                       ("encoder", lambda: check_encoder(cfg.encoder))):
        try:  # ConfigError with the closest name ("did you mean") and the choices
            check()
        except ConfigError as e:
            raise (e if e.key else ConfigError(str(e), key=key)) from None  # the key: the CLI names the file's line
    cfg.janus_config()  # ConfigError naming the bad Janus setting
    check_updater_config(UPDATERS[cfg.updater], cfg.updater_config)
    if cfg.llm.backend == "local":
        cfg.context_window()  # ConfigError when an explicit n_ctx cannot hold one request
    upd = UPDATERS[cfg.updater]
    from ..updaters.base import COMMON_DEFAULTS

    if cfg.controller != "none" and not upd.janus_supported({**COMMON_DEFAULTS, **upd.DEFAULTS,
                                                             **cfg.updater_settings()}):
        hint = getattr(upd, "janus_hint", "")
        raise ConfigError(
            f"'{cfg.updater}' is a baseline without a rewritable text memory: Janus does not wrap it; "
            f"use --controller none{hint}")
    from .injection import validate as validate_injection

    validate_injection(cfg)  # --inject: supported updater, steps within --stream-size


def check_encoder(spec: str | None) -> None:
    """ConfigError for an encoder spec whose kind (before ':') is not registered, or whose argument the kind's
    factory refuses (its optional ``check(arg)``, e.g. a hashing dimension out of range)."""
    import janus_memory.encoders  # noqa: F401  (registers the built-in encoder kinds)

    from ..registry import ENCODERS

    kind, _, arg = str(spec or "").partition(":")
    if spec and kind not in ENCODERS:
        raise ConfigError(ENCODERS.unknown(str(spec), ENCODER_FORMS))
    check = getattr(ENCODERS[kind], "check", None) if spec else None
    if check is not None:  # the kind's own argument check (a dimension in range ...), nothing loaded
        try:
            check(arg)
        except ValueError as e:
            raise ConfigError(f"encoder '{spec}': {e}", key="encoder") from None


ENCODER_FORMS = " ('minilm', 'hashing[:n]' or 'st:<name-or-path>')"


def load_splits(cfg: RunConfig):
    """The run's (stream, test) splits, the stream re-ordered by ``stream_order_seed``. ConfigError (one line with the
    fix) when the data folder or a dataset file is missing or unreadable, or an --inject step lies past the stream.
    The CLI calls it before printing anything and hands the splits to run_experiment."""
    from ..tasks import load_split
    from .injection import check_stream

    try:
        options = cfg.loader_options()  # the loaders that take them (GPQA, APIBench)
        stream = load_split(cfg.dataset, "stream", data_dir=cfg.data_dir, seed=cfg.seed, limit=cfg.stream_size,
                            options=options)
        test = load_split(cfg.dataset, "test", data_dir=cfg.data_dir, seed=cfg.seed, limit=cfg.test_size,
                          options=options)
    except (OSError, ValueError) as e:  # a missing file, a folder where a file belongs, unparsable records
        raise ConfigError((str(e).splitlines() or [type(e).__name__])[0]) from e
    if not stream.tasks:
        files = ", ".join(f["path"] for f in stream.info.get("files", [])) or stream.dataset
        raise ConfigError(f"the stream split of {stream.dataset} has no tasks ({files}); check the data file")
    if cfg.stream_order_seed is not None:  # same tasks, another order (paper §8.7)
        order = list(stream.tasks)
        random.Random(cfg.stream_order_seed).shuffle(order)
        stream.tasks = order
        stream.ids_sha256 = hashlib.sha256("\n".join(t.id for t in order).encode()).hexdigest()
        stream.info = {**getattr(stream, "info", {}), "stream_order_seed": cfg.stream_order_seed}
    check_stream(cfg, len(stream.tasks))  # --inject steps within the loaded stream (before any model is loaded)
    return stream, test


def _split_notes(cfg: RunConfig, splits, log: Callable[[str], None]) -> None:
    for s, want in zip(splits, (cfg.stream_size, cfg.test_size)):
        if want is not None and len(s.tasks) < want:
            log(f"note: the {s.split} split of {cfg.dataset} has {len(s.tasks)} tasks; using all of them (asked for {want})")
    if cfg.controller != "none":  # rules_late: late rules inside the warm-up are never compared
        from ..tasks.rules import warmup_note

        note = warmup_note(cfg.dataset, len(splits[0].tasks), cfg.janus_config().warmup)
        if note:
            log(note)


def build_context(cfg: RunConfig, *, log: Callable[[str], None] = print, splits=None,
                  shared_budget: Any = None) -> Context:
    """Load the splits (unless ``splits``, :func:`load_splits` of the same settings, are given), the task family,
    the LLM client and the encoder for an already validated config. ``shared_budget``: a
    :class:`~janus_memory.llm.budget.SharedBudget` the client's requests also take a slot of (sweep workers sharing
    one endpoint)."""
    from ..encoders import get_encoder
    from ..llm import LLMClient, ResponseCache
    from ..tasks import get_family
    from .backends import make_llm_backend

    stream, test = splits if splits is not None else load_splits(cfg)
    _split_notes(cfg, (stream, test), log)
    family = get_family(cfg.dataset, faithful=cfg.faithful)
    if cfg.allow_weak_sandbox and hasattr(family, "allow_weak_sandbox"):
        family = copy.copy(family)  # get_family caches one instance per (family, faithful): don't change it
        family.allow_weak_sandbox = True
    from ..tasks.checker_paper import with_checker

    family = with_checker(family, cfg.checker_mode())  # paper: the authors' verdicts, ours kept in Score.detail
    backend = make_llm_backend(cfg, list(stream.tasks) + list(test.tasks))
    cache = None
    if not cfg.no_cache:
        cache = ResponseCache(Path(cfg.cache_dir).expanduser() if cfg.cache_dir else default_cache_dir())
    # at least one request in flight per engine slot, or the slots stay idle (docs/perf.md)
    llm = cfg.llm
    client = LLMClient(backend, cache=cache, concurrency=max(llm.concurrency, llm.n_parallel), max_retries=llm.max_retries,
                       deadline_s=llm.request_deadline, shared_budget=shared_budget)
    try:
        encoder = get_encoder(cfg.encoder)
    except (ValueError, ImportError, FileNotFoundError) as e:
        raise ConfigError(f"encoder '{cfg.encoder}' unavailable: {e}") from e
    info = {"identity": getattr(backend, "identity", cfg.llm.backend)}
    sandbox = sandbox_info(family, bool(cfg.updater_settings().get("execute_code")), bool(cfg.allow_weak_sandbox),
                           say=log)
    if sandbox is not None:
        from ..tasks.sandbox import notice_once

        info["sandbox"] = sandbox["backend"]
        if sandbox["notice"]:
            notice_once(sandbox["notice"], log)
    return Context(settings=cfg, family=family, stream=stream, test=test, client=client, encoder=encoder,
                   backend_info=info)


def sandbox_info(family, updater_runs_code: bool = False, allow_weak: bool = False, say=None) -> dict | None:
    """When the run executes model-written code (a family with a sandbox ``backend`` such as HumanEval, or DC's
    "EXECUTE CODE!" follow-up): the sandbox backend it resolves to, proven by its self-test before the first answer
    (tasks.sandbox.code_sandbox, which says the weak sandbox's warning once through ``say``), and the console notice
    that DC's step is skipped, else None;
    None when no model code runs. A family that cannot run its code raises the sandbox's one-line JanusError
    (WeakSandboxRefused without the opt-in, SandboxUnavailable when the self-test fails): the run stops there. DC's
    step is skipped instead, and the notice says so and why. ``say``: where the weak sandbox's warning goes (once per
    process; the run's console)."""
    from ..errors import JanusError
    from ..tasks.sandbox import code_sandbox

    wanted = getattr(family, "backend", None)
    if isinstance(wanted, str) and hasattr(family, "allow_weak_sandbox"):
        try:
            ensure = getattr(family, "ensure_sandbox", None)
            resolved = (ensure(say=say) if callable(ensure)
                        else code_sandbox(wanted, allow_weak=bool(family.allow_weak_sandbox), say=say))
        except JanusError:
            raise
        except (ValueError, RuntimeError) as e:
            raise ConfigError(str(e)) from None
        return {"backend": resolved, "notice": None}  # the weak sandbox's warning: said by code_sandbox via say
    if not updater_runs_code:
        return None
    from ..updaters.dc import skipped_notice

    try:
        resolved = code_sandbox("auto", allow_weak=allow_weak, say=say)
    except JanusError as e:
        return {"backend": "none (the model's code is not run)", "notice": skipped_notice(str(e))}
    return {"backend": resolved, "notice": None}
