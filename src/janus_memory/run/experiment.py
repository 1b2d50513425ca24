"""The run lifecycle: validate -> build -> (resume checks) -> each method's stream loop -> summary.

One way through: settings (config.py) -> build (build.py) -> stream loop (loop.py, emitting events.py events) ->
store (store.py, a subscriber) -> reader (reader.py) -> report (report.py).
"""
from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import ConfigError, JanusError, OutputError, StorageError
from ..killpoints import kill_point
from ..settings.config import RunConfig, preset_summary
from ..store.events import EventBus, MethodStarted, StepFinished
from ..store.lock import RunLock, RunLocked
from ..store.store import RunStore
from .build import Context, build_context, resolve_config, validate_names  # noqa: F401  (public re-exports)
from .estimate import log_estimate, record_timing
from .loop import Stopped, run_method
from .provenance import environment_info, prompts_used, split_record, to_yaml
from .resume import check_before_resume, check_resumable, check_resume_state, load_run_config  # noqa: F401  (load_run_config: re-export)
from .usage import sum_method_usage

_Stopped = Stopped  # older name (tests)

_STORAGE_ERRNOS = {"ENOSPC", "EROFS", "EDQUOT", "EACCES", "EPERM"}


def _write_provenance(store: RunStore, cfg: RunConfig, ctx: Context, splits: dict | None, env: dict | None, *,
                      resume: bool = False, stored: dict | None = None, prompts: dict | None = None) -> None:
    """config.json/yaml, prompts/, environment.json, splits.json (the stored values: run.sqlite's meta holds them
    from its creation). ``resume``: every one is written again from the database (a kill or a user may have
    deleted or edited it; each is checked against the database: store/records.py), config.json only when missing
    (an edited one was refused before: resume.check_before_resume); prompts/ holds the stored prompts and nothing
    else (a folder set up before prompts were stored: the package's, where missing)."""
    import shutil

    dump = {**(stored or cfg.model_dump()), "preset_summary": preset_summary(cfg)}  # the settings + preset
    if not (resume and (store.root / "config.json").exists()):
        store.write_json("config.json", dump)
    store.write_text("config.yaml", to_yaml(dump))
    folder = store.root / "prompts"
    if prompts is not None and folder.is_dir() and not folder.is_symlink():  # never delete outside the run folder
        for p in folder.iterdir():
            if p.name not in prompts:
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    for name, text in (prompts if prompts is not None else prompts_used(_updater_class(cfg), ctx.family)).items():
        if prompts is not None or not (resume and (folder / name).exists()):
            store.write_text(f"prompts/{name}", text)
    for name, value in (("environment.json", env), ("splits.json", splits)):
        if value is not None:  # (a folder that never stored it: its file, if any, is left as it is)
            store.write_json(name, value)


def _updater_class(cfg: RunConfig):
    from ..registry import UPDATERS

    return UPDATERS[cfg.updater]


def _lock(cfg: RunConfig, resume: bool) -> RunLock:
    """The run folder's lock, taken before anything in it is read for writing, created or deleted."""
    if resume and not Path(cfg.out).expanduser().is_dir():
        raise OutputError(f"{cfg.out} does not exist; nothing to resume")
    lock = RunLock(cfg.out)
    try:
        return lock.acquire()
    except RunLocked as e:
        raise OutputError(str(e)) from None
    except OSError as e:
        raise OutputError(f"output folder {cfg.out} is not writable ({e.strerror or e}); "
                          "choose another with --out") from None


def _preflight(ctx: Context) -> None:
    """Refuse before the run folder is written: an empty stream, invalid sampling or updater settings (a run
    refused after its folder was created would leave a folder that looks resumable but never finishes)."""
    from ..llm.client import LLMClient

    if not ctx.stream.tasks:
        files = ", ".join(f["path"] for f in ctx.stream.info.get("files", [])) or ctx.stream.dataset
        raise ConfigError(f"the stream split of {ctx.stream.dataset} has no tasks ({files}); check the data file")
    s = ctx.settings.updater_settings()
    try:
        for key in ("solver_max_tokens", "curator_max_tokens"):
            LLMClient._request([{"role": "user", "content": "."}],
                               {"temperature": s.get("temperature"), "max_tokens": s.get(key)})
        ctx.make_updater()  # (updater_config keys and types were checked once: build.validate_names)
    except (ValueError, TypeError, KeyError) as e:
        raise ConfigError(f"invalid setting: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None


def _run_methods(ctx: Context, store: RunStore, bus: EventBus, log, stop_after) -> dict:
    """Every method of the run that is not finished yet, in helper threads: side by side when
    :func:`~janus_memory.run.build.methods_side_by_side` says so, else one after another (run/streams.py); this thread
    delivers their events (the store writes each step) and returns their summaries in run order."""
    from ..store.reader import RunReader
    from .build import methods_side_by_side
    from .streams import EventRelay

    reader = RunReader(store.root)
    methods: dict[str, dict | None] = {}
    jobs: list = []
    for rank, (method, with_janus) in enumerate(ctx.settings.methods()):
        done = reader.method_result(method)
        if done is not None:
            store.rebuild_exports(method)  # a resumed folder: its files are rewritten from the database
            methods[method] = done
            continue
        ck = reader.checkpoint(method)
        methods[method] = None
        jobs.append((method, with_janus, ck, rank))
    side_by_side = len(jobs) > 1 and methods_side_by_side(ctx)
    if side_by_side:
        log(f"methods side by side: {', '.join(j[0] for j in jobs)} (at most {ctx.client.concurrency} LLM requests "
            "in flight for all of them)")
    relay = EventRelay(bus)

    def job(method, with_janus, ck, rank):
        def go():
            if not side_by_side:
                line = _stream_line(ctx, method, ck)
                relay.here(lambda: log(line))
            return run_method(ctx, method, with_janus, relay, resume=ck, stop_after=stop_after, rank=rank)
        return method, go

    if side_by_side:
        for method, _, ck, _ in jobs:
            log(_stream_line(ctx, method, ck))
    with ctx.client.session():
        done = relay.serve([job(*j) for j in jobs], side_by_side=side_by_side, on_stop=ctx.client.stop_session)
    methods.update(done)
    return methods


def _stream_line(ctx: Context, method: str, ck) -> str:
    where = f" (continuing after step {ck[0]})" if ck else ""
    return f"[{method}] stream of {len(ctx.stream.tasks)} tasks, then test on {len(ctx.test.tasks)} held-out tasks{where}"


def _legacy_on_step(on_step):
    if on_step is None:
        return None
    return lambda ev: on_step(ev.progress()) if isinstance(ev, StepFinished) else None


def run_experiment(cfg: RunConfig, *, log: Callable[[str], None] = print, on_step=None, on_event=None,
                   overwrite: bool = False, resume: bool = False, stop_after: int | None = None,
                   splits=None, shared_budget=None, lock: RunLock | None = None, started: float | None = None) -> dict:
    """Validate, build, run every method of ``cfg`` and write the run folder. Returns the summary dict.

    ``on_event(ev)`` receives every typed event (store/events.py); ``on_step(dict)`` the older progress dicts. With
    ``resume=True`` the folder ``cfg.out`` must hold an unfinished run with the same config (apart from
    out/concurrency/cache settings), package version and split hashes; each method continues after its last step.

    ``splits``: the (stream, test) splits of ``cfg`` already loaded by build.load_splits (the CLI loads them before
    printing anything); None loads them here. ``shared_budget``: a llm.budget.SharedBudget whose slots every LLM
    request also takes (the worker processes of a sweep sharing one endpoint).
    ``started``: the time.time() the command started (`janus run` passes it): the summary's ``wall_s`` then counts
    from there, so the CLI's closing line and `janus view` give one wall time; None counts from this call.
    ``lock``: the folder's RunLock when the caller already holds it (the
    CLI takes it before it reads a folder to resume: resume.held_for_resume); it is left to the caller to release.

    A resume changes nothing in the folder before every check that can refuse it has passed (resume.py): a refused
    resume leaves it as it was, COMPLETE included.

    A new run that stops before it wrote anything (an error or an interrupt while the model, encoder or cache is
    set up) leaves no folder behind: the folder this call created is removed with its lock file.

    Raises:
        JanusError subclasses (ConfigError, OutputError, StorageError, ...): user-facing problems (CLI: exit 2).
    """
    from .. import __version__

    t0 = started if started is not None else time.time()
    validate_names(cfg)
    cfg = resolve_config(cfg)
    created = None if resume else _top_missing(Path(cfg.out).expanduser())
    own_lock = lock is None or not lock.held
    lock = _lock(cfg, resume) if own_lock else lock
    store = None
    ok = False
    try:
        if resume:  # every refusal first, reading only (resume.py); then the folder may change
            repair = check_before_resume(cfg.out)
        else:
            # fail before any work; nothing is created yet
            RunStore.check_new(cfg.out, overwrite=overwrite, methods=[m for m, _ in cfg.methods()])
            kill_point("run_started")
        ctx = _build(cfg, log, splits, shared_budget)
        if resume:
            check_resumable(cfg.out, cfg, {s.split: split_record(s) for s in (ctx.stream, ctx.test)}, __version__)
            check_resume_state(ctx, cfg.out)
            store = RunStore.open_existing(cfg.out, repair=repair)
            _restore_provenance(store, ctx)
            log(f"resuming {store.root}")
        else:
            _preflight(ctx)
            splits_rec = {s.split: split_record(s) for s in (ctx.stream, ctx.test)}
            env = {**environment_info(), "backend": ctx.backend_info, "janus_memory": __version__}
            prompts = prompts_used(_updater_class(cfg), ctx.family)
            store = RunStore.create(cfg.out, overwrite=overwrite,
                                    meta={"config": cfg.model_dump(), "splits": splits_rec, "environment": env,
                                          "prompts": prompts}, log=log)
            _write_provenance(store, cfg, ctx, splits_rec, env, prompts=prompts)
            kill_point("provenance_written")
        log_estimate(ctx, store.root, resume, log)  # LLM calls ahead (and time, embedded model): run/estimate.py
        summary = _finish(ctx, store, EventBus(store.on_event, _legacy_on_step(on_step), on_event), log, stop_after,
                          cfg, t0, resumed=resume)
        ok = True
        return summary
    except (OSError, sqlite3.OperationalError) as e:
        if _is_storage_error(e):
            raise StorageError(getattr(e, "strerror", None) or str(e)) from e
        _discard_unstarted(store, resume)
        raise
    except (KeyboardInterrupt, JanusError) as e:
        if not isinstance(e, (KeyboardInterrupt, StorageError)) and not _is_llm_error(e):
            _discard_unstarted(store, resume)
        raise
    except BaseException as e:  # a MemoryError, a native library's panic (a BaseException) ...
        if not isinstance(e, SystemExit):
            _discard_unstarted(store, resume)
        raise
    finally:
        if store is not None:
            store.close()
        if own_lock:
            if not ok and not resume:  # a folder made for nothing, or the lock file left in a folder of yours
                lock.release_and_remove(created)  # type: ignore[union-attr]  # own_lock: _lock gave one
            lock.release()  # type: ignore[union-attr]


def _top_missing(path: Path) -> Path | None:
    """The highest folder of ``path`` (itself or a parent) that does not exist yet: what creating it makes."""
    if path.exists():
        return None
    top = path
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    return top


def _build(cfg: RunConfig, log, splits=None, shared_budget=None) -> Context:
    from ..llm.cache import CacheError

    try:
        return build_context(cfg, log=log, splits=splits, shared_budget=shared_budget)
    except CacheError as e:  # the cache, not the run folder: its own one-line message
        raise ConfigError(str(e).splitlines()[0]) from None


def _restore_provenance(store: RunStore, ctx: Context) -> None:
    """A resumed folder gets its provenance files written again from the stored values: those a kill (during
    set-up) or a user removed or edited (config.json only when missing; at the end, as before)."""
    from ..store.reader import RunReader
    from ..store.records import stored_prompts

    reader = RunReader(store.root)
    stored = reader.meta("config")
    if stored is None:
        return
    _write_provenance(store, ctx.settings, ctx, reader.meta("splits"), reader.meta("environment"),
                      resume=True, stored=stored, prompts=stored_prompts(reader))


def _finish(ctx: Context, store: RunStore, bus: EventBus, log, stop_after, cfg: RunConfig, t0: float, *,
            resumed: bool = False) -> dict:
    methods = _run_methods(ctx, store, bus, log, stop_after)
    if not (store.root / "config.json").exists():  # deleted to continue with the stored config: put it back
        from ..store.reader import RunReader

        store.write_json("config.json", {**(RunReader(store.root).meta("config") or cfg.model_dump()),
                                         "preset_summary": preset_summary(cfg)})
    stats = getattr(ctx.client.backend, "stats", None)
    engine = {**stats.as_dict(), "n_parallel": getattr(ctx.client.backend, "n_parallel", 1),  # type: ignore[union-attr]
              "load_s": round(float(getattr(ctx.client.backend, "load_s", 0.0) or 0.0), 2)} \
        if hasattr(stats, "as_dict") else None
    summary = {"run_dir": str(store.root.resolve()), "engine": engine,
               "dataset": cfg.dataset, "updater": cfg.updater, "backend": ctx.backend_info, "methods": methods,
               "usage_total": sum_method_usage(methods), "wall_s": round(time.time() - t0, 2)}
    if resumed:  # "calls paid" then leaves out what an interrupted attempt paid for uncommitted steps (cache hits)
        summary["resumed"] = "no_cache" if cfg.no_cache else True
    answered = getattr(ctx.client, "answered", None)
    if answered:  # which model answered this process's responses (as the server reported it), live or from the cache
        summary["answered_by"] = {m: dict(c) for m, c in sorted(answered.items())}
    store.finish(summary)
    record_timing(ctx)  # the measured speed of the embedded model on this machine, for the next run's estimate
    return summary


def _is_llm_error(e: BaseException) -> bool:
    from ..llm.base import LLMError

    return isinstance(e, LLMError)


def _discard_unstarted(store: RunStore | None, resume: bool) -> None:
    """A new run that failed before committing its first step leaves no run files (it would look resumable but
    fail the same way on every resume): the folder is left as check_new accepts it."""
    if store is None or resume:
        return
    try:
        started = store.db.execute("SELECT 1 FROM steps LIMIT 1").fetchone() is not None
    except sqlite3.Error:
        started = True
    if not started:
        store.close()
        RunStore._remove_run_files(store.root)


def _is_storage_error(e: BaseException) -> bool:
    import errno

    if isinstance(e, StorageError):
        return False
    if isinstance(e, OSError) and e.errno is not None:
        return errno.errorcode.get(e.errno) in _STORAGE_ERRNOS
    if isinstance(e, sqlite3.OperationalError):
        msg = str(e).lower()
        return "disk" in msg or "readonly" in msg or "read-only" in msg
    return False


__all__ = ["ConfigError", "Context", "MethodStarted", "Stopped", "build_context", "load_run_config", "resolve_config",
           "run_experiment", "validate_names"]
