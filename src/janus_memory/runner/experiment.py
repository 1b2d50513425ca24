"""The run lifecycle: validate -> build -> (resume checks) -> each method's stream loop -> summary.

One way through: settings (config.py) -> build (build.py) -> stream loop (loop.py, emitting events.py events) ->
store (store.py, a subscriber) -> reader (reader.py) -> report (report.py).
"""
from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import ConfigError, JanusError, OutputError, RunFolderError, StorageError
from .build import Context, build_context, resolve_config, validate_names  # noqa: F401  (public re-exports)
from .config import RunConfig, migrate_stored, preset_summary
from .estimate import log_estimate, record_timing
from .events import EventBus, MethodStarted, StepFinished
from .loop import Stopped, run_method
from .provenance import environment_info, prompts_used, split_record, to_yaml
from .lock import RunLock, RunLocked
from .store import RunStore
from .usage import sum_method_usage

_Stopped = Stopped  # older name (tests)

# keys that may differ on resume without changing results
_RESUME_FREE_KEYS = {"out", "concurrency", "cache_dir", "no_cache", "base_url", "n_parallel"}  # the endpoint may move; the model may not
_STORAGE_ERRNOS = {"ENOSPC", "EROFS", "EDQUOT", "EACCES", "EPERM"}


def _config_diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k), b.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += _config_diff(va, vb, prefix + k + ".")
        elif va != vb:
            out.append(f"{prefix}{k}: {va!r} -> {vb!r}")
    return out


def load_run_config(run_dir: str | os.PathLike) -> RunConfig:
    """The resolved config stored in an existing run folder (for `--resume`)."""
    from .reader import RunReader

    from pydantic import ValidationError

    from .integrity import _first_error

    reader = RunReader(run_dir)
    if not reader.root.is_dir():
        raise OutputError(f"{run_dir} does not exist; nothing to resume")
    data = reader.meta("config")
    if data is None:
        raise ConfigError(f"{run_dir} has no stored config (the run stopped before it was set up); "
                          "start it again without --resume")
    try:
        return RunConfig.parse(migrate_stored(data))  # a config from before the presets resumes as it ran
    except (ConfigError, ValidationError, TypeError) as e:
        ver = (reader.meta("environment") or {}).get("janus_memory", "?")
        why = str(e).splitlines()[0] if isinstance(e, ConfigError) else _first_error(e)
        raise ConfigError(f"cannot resume {run_dir}: its stored config is not valid here ({why}); "
                          f"it was written by janus-memory {ver}") from None


def _with_defaults(stored: dict) -> dict:
    """A stored config with the defaults of settings added after it was written (they had their default then)."""
    defaults = {k: f.get_default(call_default_factory=True) for k, f in RunConfig.model_fields.items()
                if k not in stored and not f.is_required()}
    return {**defaults, **stored}


def _check_resumable(store: RunStore, cfg: RunConfig, splits: dict, version: str) -> None:
    """ConfigError unless the stored run has the same config (apart from _RESUME_FREE_KEYS), package version and
    dataset split hashes (failure case C13)."""
    from .reader import RunReader

    reader = RunReader(store.root)
    stored = migrate_stored(reader.meta("config") or {})
    # a setting added after the run was written (absent from its stored config) had its default then
    defaults = {k: f.get_default(call_default_factory=True) for k, f in RunConfig.model_fields.items()
                if k not in stored and not f.is_required()}
    stored = resolve_config(RunConfig.parse({**defaults, **stored})).model_dump()  # new updater keys: their defaults
    diff = [d for d in _config_diff(stored, cfg.model_dump())
            if d.split(":")[0] not in _RESUME_FREE_KEYS]
    if diff:
        raise ConfigError("cannot resume: the config differs from the stored run: " + "; ".join(diff))
    old_ver = (reader.meta("environment") or {}).get("janus_memory")
    if old_ver != version:
        raise ConfigError(f"cannot resume: run was made by janus-memory {old_ver}, this is {version}")
    old_splits = reader.meta("splits") or {}
    for name, rec in splits.items():
        o = old_splits.get(name, {})
        if (o.get("source_sha256"), o.get("ids_sha256")) != (rec["source_sha256"], rec["ids_sha256"]):
            raise ConfigError(
                f"cannot resume: dataset hash mismatch for the {name} split of {cfg.dataset} "
                f"(stored {o.get('source_sha256', '?')[:12]}…, now {rec['source_sha256'][:12]}…); "
                "the data files changed since the run started")


def _write_provenance(store: RunStore, cfg: RunConfig, ctx: Context, splits: dict, env: dict) -> None:
    from ..registry import UPDATERS

    store.set_meta("config", cfg.model_dump())
    store.set_meta("splits", splits)
    store.set_meta("environment", env)
    dump = {**cfg.model_dump(), "preset_summary": preset_summary(cfg)}  # config.json/yaml: the settings + preset
    store.write_json("config.json", dump)
    store.write_text("config.yaml", to_yaml(dump))
    for name, text in prompts_used(UPDATERS[cfg.updater], ctx.family).items():
        store.write_text(f"prompts/{name}", text)
    store.write_json("environment.json", env)
    store.write_json("splits.json", splits)


def _open_store(cfg: RunConfig, resume: bool, overwrite: bool) -> RunStore | None:
    if resume:
        from .integrity import problems

        repair = (Path(cfg.out).expanduser() / "COMPLETE").exists() and bool(problems(cfg.out))
        return RunStore.open_existing(cfg.out, repair=repair)
    RunStore.check_new(cfg.out, overwrite=overwrite)  # fail before any work; nothing is created yet
    return None


def _lock(cfg: RunConfig, resume: bool) -> RunLock:
    """The run folder's lock, taken before anything in it is read for writing, created or deleted (issue 12 item 1)."""
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
    """Refuse before the run folder is written: an empty stream, invalid sampling or updater settings (issue 12
    item 6: a run refused after its folder was created would leave a folder that looks resumable but never finishes)."""
    from ..llm.client import LLMClient

    if not ctx.stream.tasks:
        files = ", ".join(f["path"] for f in ctx.stream.info.get("files", [])) or ctx.stream.dataset
        raise ConfigError(f"the stream split of {ctx.stream.dataset} has no tasks ({files}); check the data file")
    s = ctx.settings.updater_settings()
    try:
        for key in ("solver_max_tokens", "curator_max_tokens"):
            LLMClient._request([{"role": "user", "content": "."}],
                               {"temperature": s.get("temperature"), "max_tokens": s.get(key)})
        upd = ctx.make_updater()
    except (ValueError, TypeError, KeyError) as e:
        raise ConfigError(f"invalid setting: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    _check_setting_types(upd, ctx.settings.updater_config)


def _check_setting_types(upd, given: dict) -> None:
    """A value of another JSON type than the updater's default (``"15"`` for a number, ``1`` for a flag)."""
    from ..updaters.base import COMMON_DEFAULTS

    defaults = {**COMMON_DEFAULTS, **getattr(type(upd), "DEFAULTS", {})}
    kinds = ((bool,), (int, float), (str,), (list, tuple), (dict,))
    for key, value in given.items():
        default = defaults.get(key)
        if default is None or value is None:
            continue
        want = next((k for k in kinds if isinstance(default, k)), None)
        ok = want is None or (isinstance(value, want) and (isinstance(value, bool) == isinstance(default, bool)))
        if not ok:
            raise ConfigError(f"invalid setting: updater_config.{key} must be {type(default).__name__} like its "
                              f"default {default!r}, got {type(value).__name__} {value!r}")


def _check_resume_state(ctx: Context, store: RunStore) -> None:
    """Refuse a resume that cannot end complete: step rows missing below the checkpoint, a checkpoint that does not
    load, a config.json edited after the run started."""
    from .integrity import gaps_message, missing_steps
    from .reader import RunReader

    reader = RunReader(store.root)
    on_disk = reader.json_file("config.json")
    stored = _with_defaults(reader.meta("config") or {})
    if isinstance(on_disk, dict):  # config.json = the stored settings + the derived preset_summary
        on_disk = {k: v for k, v in on_disk.items() if k != "preset_summary"}
    stored.pop("preset_summary", None)
    diff = _config_diff(stored, _with_defaults(on_disk)) if isinstance(on_disk, dict) else ["not a JSON object"]
    if on_disk is not None and diff:
        raise ConfigError(f"{store.root / 'config.json'} was edited after the run started ({'; '.join(diff[:3])}); "
                          "the run's config is the one stored in run.sqlite: delete config.json to continue with it, "
                          "or start a new run with --config")
    for method, with_janus in ctx.settings.methods():
        ck = reader.checkpoint(method)
        done = reader.method_result(method)
        upto = int(done["stream_tasks"]) if done else (ck[0] if ck else 0)
        gaps = missing_steps(reader, method, upto)
        if gaps:
            raise RunFolderError(gaps_message(store.root, method, gaps))
        if ck is not None and done is None:
            _probe_checkpoint(ctx, store.root, method, with_janus, ck)


def _probe_checkpoint(ctx: Context, root, method: str, with_janus: bool, ck: tuple[int, dict]) -> None:
    from ..controller import Janus

    try:
        ctx.make_updater().load_snapshot(ck[1]["updater"])
        if with_janus:
            Janus.from_state_dict(ck[1]["janus"], lambda *a: [])
        ck[1]["counters"]["n_correct"]  # noqa: B018
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise RunFolderError(f"{root}: the checkpoint of {method} at step {ck[0]} is damaged "
                             f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); "
                             "the run cannot continue from it: start a new run") from None


def _run_methods(ctx: Context, store: RunStore, bus: EventBus, log, stop_after) -> dict:
    from .reader import RunReader

    reader = RunReader(store.root)
    methods = {}
    for method, with_janus in ctx.settings.methods():
        done = reader.method_result(method)
        if done is not None:
            store.rebuild_exports(method)  # a resumed folder: its files are rewritten from the database
            methods[method] = done
            continue
        ck = reader.checkpoint(method)
        where = f" (continuing after step {ck[0]})" if ck else ""
        log(f"[{method}] stream of {len(ctx.stream.tasks)} tasks, then test on {len(ctx.test.tasks)} held-out tasks{where}")
        methods[method] = run_method(ctx, method, with_janus, bus, resume=ck, stop_after=stop_after)
    return methods


def _legacy_on_step(on_step):
    if on_step is None:
        return None
    return lambda ev: on_step(ev.progress()) if isinstance(ev, StepFinished) else None


def run_experiment(cfg: RunConfig, *, log: Callable[[str], None] = print, on_step=None, on_event=None,
                   overwrite: bool = False, resume: bool = False, stop_after: int | None = None) -> dict:
    """Validate, build, run every method of ``cfg`` and write the run folder. Returns the summary dict.

    ``on_event(ev)`` receives every typed event (runner/events.py); ``on_step(dict)`` the older progress dicts. With
    ``resume=True`` the folder ``cfg.out`` must hold an unfinished run with the same config (apart from
    out/concurrency/cache settings), package version and split hashes; each method continues after its last step.

    Raises:
        JanusError subclasses (ConfigError, OutputError, StorageError, ...): user-facing problems (CLI: exit 2).
    """
    from .. import __version__

    t0 = time.time()
    validate_names(cfg)
    cfg = resolve_config(cfg)
    lock = _lock(cfg, resume)
    store = None
    try:
        store = _open_store(cfg, resume, overwrite)
        ctx = _build(cfg, log)
        if resume:
            _check_resumable(store, cfg, {s.split: split_record(s) for s in (ctx.stream, ctx.test)}, __version__)
            _check_resume_state(ctx, store)
            log(f"resuming {store.root}")
        else:
            _preflight(ctx)
            store = RunStore.create(cfg.out, overwrite=overwrite)
            _start_new(store, cfg, ctx, __version__)
        log_estimate(ctx, store.root, resume, log)  # LLM calls ahead (and time, embedded model): runner/estimate.py
        return _finish(ctx, store, EventBus(store.on_event, _legacy_on_step(on_step), on_event), log, stop_after, cfg, t0)
    except (OSError, sqlite3.OperationalError) as e:
        if _is_storage_error(e):
            raise StorageError(getattr(e, "strerror", None) or str(e)) from e
        _discard_unstarted(store, resume)
        raise
    except (KeyboardInterrupt, JanusError) as e:
        if not isinstance(e, (KeyboardInterrupt, StorageError)) and not _is_llm_error(e):
            _discard_unstarted(store, resume)
        raise
    except Exception:
        _discard_unstarted(store, resume)
        raise
    finally:
        if store is not None:
            store.close()
        lock.release()


def _build(cfg: RunConfig, log) -> Context:
    from ..llm.cache import CacheError

    try:
        return build_context(cfg, log=log)
    except CacheError as e:  # the cache, not the run folder: its own one-line message (issue 12 item 8)
        raise ConfigError(str(e).splitlines()[0]) from None


def _start_new(store: RunStore, cfg: RunConfig, ctx: Context, version: str) -> None:
    splits = {s.split: split_record(s) for s in (ctx.stream, ctx.test)}
    env = {**environment_info(), "backend": ctx.backend_info, "janus_memory": version}
    _write_provenance(store, cfg, ctx, splits, env)


def _finish(ctx: Context, store: RunStore, bus: EventBus, log, stop_after, cfg: RunConfig, t0: float) -> dict:
    methods = _run_methods(ctx, store, bus, log, stop_after)
    if not (store.root / "config.json").exists():  # deleted to continue with the stored config: put it back
        from .reader import RunReader

        store.write_json("config.json", {**(RunReader(store.root).meta("config") or cfg.model_dump()),
                                         "preset_summary": preset_summary(cfg)})
    stats = getattr(ctx.client.backend, "stats", None)
    engine = {**stats.as_dict(), "n_parallel": getattr(ctx.client.backend, "n_parallel", 1)} \
        if hasattr(stats, "as_dict") else None
    summary = {"run_dir": str(store.root.resolve()), "engine": engine,
               "dataset": cfg.dataset, "updater": cfg.updater, "backend": ctx.backend_info, "methods": methods,
               "usage_total": sum_method_usage(methods), "wall_s": round(time.time() - t0, 2)}
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
