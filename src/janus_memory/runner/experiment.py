"""The run lifecycle: validate -> build -> (resume checks) -> each method's stream loop -> summary.

One way through: settings (config.py) -> build (build.py) -> stream loop (loop.py, emitting events.py events) ->
store (store.py, a subscriber) -> reader (reader.py) -> report (report.py).
"""
from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable

from ..errors import ConfigError, StorageError
from .build import Context, build_context, resolve_config, validate_names  # noqa: F401  (public re-exports)
from .config import RunConfig, migrate_stored, preset_summary
from .events import EventBus, MethodStarted, StepFinished
from .loop import Stopped, run_method
from .provenance import environment_info, prompts_used, split_record, to_yaml
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

    data = RunReader(run_dir).meta("config")
    if data is None:
        raise ConfigError(f"{run_dir} has no stored config; cannot resume")
    return RunConfig.parse(migrate_stored(data))  # a config from before the presets resumes as it ran


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
        return RunStore.open_existing(cfg.out)
    RunStore.check_new(cfg.out, overwrite=overwrite)  # fail before any work; nothing is created yet
    return None


def _run_methods(ctx: Context, store: RunStore, bus: EventBus, log, stop_after) -> dict:
    from .reader import RunReader

    reader = RunReader(store.root)
    methods = {}
    for method, with_janus in ctx.settings.methods():
        done = reader.method_result(method)
        if done is not None:
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
    store = _open_store(cfg, resume, overwrite)
    try:
        ctx = build_context(cfg, log=log)
        store = store or RunStore.create(cfg.out, overwrite=overwrite)
        splits = {s.split: split_record(s) for s in (ctx.stream, ctx.test)}
        env = {**environment_info(), "backend": ctx.backend_info, "janus_memory": __version__}
        if resume:
            _check_resumable(store, cfg, splits, __version__)
            log(f"resuming {store.root}")
        else:
            _write_provenance(store, cfg, ctx, splits, env)
        bus = EventBus(store.on_event, _legacy_on_step(on_step), on_event)
        methods = _run_methods(ctx, store, bus, log, stop_after)
        stats = getattr(ctx.client.backend, "stats", None)
        engine = {**stats.as_dict(), "n_parallel": getattr(ctx.client.backend, "n_parallel", 1)} \
            if hasattr(stats, "as_dict") else None
        summary = {"run_dir": str(store.root.resolve()), "engine": engine,
                   "dataset": cfg.dataset, "updater": cfg.updater, "backend": ctx.backend_info, "methods": methods,
                   "usage_total": sum_method_usage(methods), "wall_s": round(time.time() - t0, 2)}
        store.finish(summary)
        return summary
    except (OSError, sqlite3.OperationalError) as e:
        if _is_storage_error(e):
            raise StorageError(getattr(e, "strerror", None) or str(e)) from e
        raise
    finally:
        if store is not None:
            store.close()


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
