"""Resume checks: what a run folder must hold for ``janus run --resume`` to continue it unchanged.

``held_for_resume`` takes the folder's lock before anything in it is read; ``check_before_resume`` makes every
refusal that needs no model or data (not a run, nothing to repair, a damaged database, missing steps, another
version, an edited config.json: the words `janus report` uses too); ``load_run_config`` reads the stored settings
(migrated: a config from before the presets or before the ``llm`` section resumes as it ran); ``check_resumable``
refuses another config, package version or dataset; ``check_resume_state`` refuses a folder that cannot end complete
(missing step rows, a damaged checkpoint). All read only and raise one-line JanusErrors, so a refused resume leaves
the folder as it was; only the RunReader reads the folder.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..controller.config import SEED_MAX
from ..errors import ConfigError, OutputError, RunFolderError
from ..settings.config import RunConfig
from ..settings.stored import resolve_config, stored_config
from ..store.reader import RunReader
from ..store.records import config_diff  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from ..store.store import RunStore
    from .build import Context

# keys that may differ on resume without changing results: the endpoint may move, and how it is called (requests in
# flight, their time limits and retries, methods side by side or not); the model may not
RESUME_FREE_KEYS = {"out", "cache_dir", "no_cache", "llm.concurrency", "llm.base_url", "llm.n_parallel",
                    "llm.request_timeout", "llm.max_retries", "llm.request_deadline", "parallel_methods"}


def load_run_config(run_dir: str | os.PathLike) -> RunConfig:
    """The resolved config stored in an existing run folder (for `--resume`)."""
    from pydantic import ValidationError

    from ..store.integrity import first_error

    reader = RunReader(run_dir)
    if not reader.root.is_dir():
        raise OutputError(f"{run_dir} does not exist; nothing to resume")
    if not reader.has_db:
        from ..store.store import RunStore

        RunStore.check_resumable(run_dir)  # no run.sqlite: one line saying why (set-up killed, or no run folder)
    data = reader.meta("config")  # a row that is not a JSON object: its own one-line error, from the reader
    if data is None:
        raise ConfigError(f"{run_dir} has no stored config (the run stopped before it was set up); "
                          "start it again with the same command, without --resume")
    from ..store.chain import setup_problems

    if reader._with_db(setup_problems, []):  # the stored config was edited: say so before its values are used,
        from ..store.integrity import refuse_damaged  # in the words `janus report` uses (not a config error)

        refuse_damaged(run_dir)
    for key in ("seed", "stream_order_seed"):  # accepted before the range check; random.Random dropped the sign
        v = data.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v < 0:
            flag = "--" + key.replace("_", "-")
            raise ConfigError(f"cannot resume {run_dir}: its stored {key} {v} is no longer accepted (seeds are in "
                              f"[0, {SEED_MAX}]; it ran what {flag} {-v} runs); start a new run with {flag} {-v}",
                              key=key)
    try:
        return stored_config(data, resolve=False)  # a config from before the presets resumes as it ran
    except (ConfigError, ValidationError, TypeError) as e:
        ver = (reader.meta("environment") or {}).get("janus_memory", "?")
        why = str(e).splitlines()[0] if isinstance(e, ConfigError) else first_error(e)
        raise ConfigError(f"cannot resume {run_dir}: its stored config is not valid here ({why}); "
                          f"it was written by janus-memory {ver}") from None


def check_resumable(store: RunStore | str | os.PathLike, cfg: RunConfig, splits: dict, version: str) -> None:
    """ConfigError unless the stored run has the same config (apart from RESUME_FREE_KEYS), package version and
    dataset split hashes (failure case C13). ``store``: the run folder or its RunStore. Reads only."""
    reader = RunReader(getattr(store, "root", store))  # type: ignore[arg-type]
    refuse_changed_config(reader, cfg)
    old_ver = (reader.meta("environment") or {}).get("janus_memory")
    if old_ver != version:
        raise ConfigError(f"cannot resume: run was made by janus-memory {old_ver}, this is {version}")
    old_splits = reader.meta("splits") or {}
    for name, rec in splits.items():
        o = old_splits.get(name, {})
        for key, what in (("source_sha256", "the data files changed since the run started"),
                          ("ids_sha256", "the split holds other task ids (the data files or the stored seed or "
                                         "split settings changed since the run started)")):
            if o.get(key) != rec[key]:  # the full hashes: a prefix may be the same
                raise ConfigError(f"cannot resume: dataset hash mismatch for the {name} split of {cfg.dataset} "
                                  f"({key}: stored {o.get(key, '?')}, now {rec[key]}); {what}")


def refuse_changed_config(reader: RunReader, cfg: RunConfig) -> None:
    """ConfigError naming every setting (apart from RESUME_FREE_KEYS) that differs from the stored run's; ``cfg`` is
    resolved here. Also called by the CLI before it prints anything (cli/checks.preflight)."""
    stored = stored_config(reader.meta("config") or {}).model_dump()  # new settings and updater keys: their defaults
    now = resolve_config(cfg).model_dump()
    diff = [d for d in config_diff(stored, now) if d.split(":")[0] not in RESUME_FREE_KEYS]
    if diff:
        raise ConfigError("cannot resume: the config differs from the stored run: " + "; ".join(diff)
                          + " (a resumed run keeps its stored settings: leave those options out)")


def check_resume_state(ctx: Context, root) -> None:
    """Refuse a resume that cannot end complete: step rows missing below the checkpoint, a checkpoint that does not
    load, a newest memory version that does not read back. Reads only (``root``: the run folder, or its RunStore)."""
    from ..store.integrity import gaps_message, missing_steps

    root = Path(getattr(root, "root", root))
    reader = RunReader(root)
    for method, with_janus in ctx.settings.methods():
        ck = reader.checkpoint(method)
        done = reader.method_result(method)
        upto = int(done["stream_tasks"]) if done else (ck[0] if ck else 0)
        gaps = missing_steps(reader, method, upto)
        if gaps:
            raise RunFolderError(gaps_message(root, method, gaps))
        if ck is not None and done is None:
            _probe_checkpoint(ctx, root, method, with_janus, ck)
        reader.last_memory(method)  # the base of the next stored version reads back (DamagedStoreError if not)


def check_before_resume(run_dir) -> bool:
    """Every refusal of `janus run --resume` that needs no model, data or settings, before anything in the folder
    changes: not a run folder (or stopped in set-up), a finished run with nothing to repair, a damaged database,
    missing steps, another version, an edited config.json (store/integrity.unresumable: `janus report` says the
    same words). Returns whether the resume is a repair (a folder marked COMPLETE whose files are not). Reads only;
    the caller holds the run lock (:func:`held_for_resume`), so a live run is never read half-written."""
    from ..store.integrity import problems, refuse_damaged
    from ..store.store import RunStore

    root = Path(run_dir).expanduser()
    RunStore.check_resumable(root, repair=True)  # no run.sqlite: one line saying why
    refuse_damaged(root)
    repair = (root / "COMPLETE").exists() and bool(problems(root))
    RunStore.check_resumable(root, repair=repair)  # a finished run with nothing to repair: nothing to resume
    return repair


@contextmanager
def held_for_resume(run_dir):
    """The run lock of a folder about to be resumed (store/lock.py), held from before its database is first read
    until the resume ends: while another process runs it, the resume says "in use by process N" and reads nothing
    (a database read mid-commit could look damaged). Yields None for a folder without run.sqlite (nothing is
    created; the checks say why it cannot be resumed)."""
    from ..errors import StorageError
    from ..store.lock import RunLock, RunLocked
    from ..store.store import RunStore

    root = Path(run_dir).expanduser()
    if not (root / RunStore.DB).is_file():
        yield None
        return
    lock = RunLock(root)
    try:
        lock.acquire()
    except RunLocked as e:
        raise OutputError(str(e)) from None
    except OSError as e:
        raise StorageError(f"its lock file {lock.path} cannot be opened: {e.strerror or e}") from None
    try:
        yield lock
    finally:
        lock.release()


def _probe_checkpoint(ctx: Context, root, method: str, with_janus: bool, ck: tuple[int, dict]) -> None:
    from ..controller import Janus

    try:
        upd = ctx.make_updater()
        upd.load_snapshot(ck[1]["updater"])
        if with_janus:  # with the units the run loop gives it (re-offers of records for a bank updater)
            from .loop import reoffer_units

            Janus.from_state_dict(ck[1]["janus"], lambda *a: [], units=reoffer_units(upd, ctx.settings.janus_config()))
        ck[1]["counters"]["n_correct"]  # noqa: B018
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise RunFolderError(f"{root}: the checkpoint of {method} at step {ck[0]} is damaged "
                             f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); "
                             "the run cannot continue from it: start a new run") from None
