"""A run folder's life on disk, before a store is open: checking that a new run may be created at a path (nothing to
overwrite by accident, writable, not locked), creating its database whole under ``.run.sqlite.setup`` and renaming it
into place, moving an overwritten run aside until then, and checking and opening an existing one to resume (stale
temp files removed). The database schema is here too.

Why a class of its own (:class:`RunFolder`, whose class methods RunStore inherits so that ``RunStore.create`` and
``RunStore.open_existing`` return a store): these decide about a folder, not about an open run. They run before any
database is open, and most of their callers never write (the CLI's checks before it prints anything, the resume's
refusals, ``janus report`` telling an unfinished folder from a damaged one); the writer of an open run (store.py:
steps, checkpoints, texts, exports, one transaction each) is the other concept. Both use the schema and file names
defined here.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Self

from ..errors import OutputError, StorageError
from ..killpoints import kill_point
from . import chain as C
from . import text_log as T
from .ckpt_rows import STORE_FORMAT
from .jsonio import dumps
from .lock import LOCK_NAME

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS steps (method TEXT NOT NULL, step INTEGER NOT NULL, decision TEXT NOT NULL, record TEXT NOT NULL,
                                  PRIMARY KEY (method, step));
CREATE TABLE IF NOT EXISTS memories (method TEXT NOT NULL, step INTEGER NOT NULL, sha256 TEXT NOT NULL, parent TEXT,
                                     text TEXT NOT NULL, PRIMARY KEY (method, step));
CREATE TABLE IF NOT EXISTS candidates (method TEXT NOT NULL, step INTEGER NOT NULL, sha256 TEXT NOT NULL, parent TEXT,
                                       rejected TEXT, text TEXT NOT NULL, PRIMARY KEY (method, step));
CREATE TABLE IF NOT EXISTS checkpoints (method TEXT PRIMARY KEY, step INTEGER NOT NULL, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoint_ops (method TEXT NOT NULL, step INTEGER NOT NULL, seq INTEGER NOT NULL,
                                           path TEXT NOT NULL, op TEXT NOT NULL, PRIMARY KEY (method, step, seq));
CREATE INDEX IF NOT EXISTS checkpoint_ops_path ON checkpoint_ops (method, path);
CREATE TABLE IF NOT EXISTS checkpoint_head (method TEXT PRIMARY KEY, step INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoint_rows (method TEXT NOT NULL, path TEXT NOT NULL, idx INTEGER NOT NULL,
                                            data BLOB NOT NULL, PRIMARY KEY (method, path, idx));
CREATE TABLE IF NOT EXISTS tests (method TEXT NOT NULL, idx INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (method, idx));
CREATE TABLE IF NOT EXISTS method_results (method TEXT PRIMARY KEY, summary TEXT NOT NULL);
""" + T.SCHEMA + C.SCHEMA

SETUP_DB = ".run.sqlite.setup"  # a new run's database while it is written (schema + meta), renamed to run.sqlite
ASIDE = ".janus-overwritten"    # --overwrite: the old run's files, moved here until the new run.sqlite is in place


class RunFolder:
    """Class-level ways to make or open a :class:`~.store.RunStore` (``cls`` is RunStore: ``cls.DB``, ``cls(root)``)."""

    DB = "run.sqlite"

    @staticmethod
    def _check_writable(root: Path, *, resume: bool = False) -> None:
        try:
            root.mkdir(parents=True, exist_ok=True)
            probe = root / ".write-probe"
            probe.write_text("ok")
            probe.unlink()
        except OSError as e:
            if resume:  # the run is there: the fix is space or permissions, then --resume again (StorageError says so)
                raise StorageError(e.strerror or str(e)) from e
            raise OutputError(f"output folder {root} is not writable ({e.strerror or e}); choose another with --out") from e

    @classmethod
    def check_new(cls, root: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Check that a new run can be written to ``root`` without creating anything but the folder.

        A folder whose database never got its config (a run that failed before its first step was set up) counts
        as empty. Raises OutputError like :meth:`create`."""
        root = Path(root).expanduser()
        cls._check_writable(root)
        return cls._check_no_run(root, overwrite)

    @classmethod
    def check_new_uncreated(cls, root: str | os.PathLike, *, overwrite: bool = False, run: bool = True) -> None:
        """:meth:`check_new` without creating the folder (the CLI's check before it prints anything): an existing
        folder gets a probe file written and removed; a missing one a probe folder in its nearest existing parent,
        removed at once. Raises OutputError naming the folder and the fix."""
        import tempfile

        root = Path(root).expanduser()
        if root.exists() and not root.is_dir():
            raise OutputError(f"output folder {root} is a file, not a folder; choose another with --out")
        if root.is_dir():
            from .lock import holder_pid

            pid = holder_pid(root) if run else None
            if pid:  # a run still writing it: not "an unfinished run (continue it with --resume)"
                who = f"process {pid}" if pid > 0 else "another process"
                raise OutputError(f"run folder {root} is in use by {who} (another janus run or resume); wait for it "
                                  "to finish or stop it first")
            cls._check_writable(root)
            if run:  # ``run=False``: a grid root, whose earlier cells are skipped or resumed
                cls._check_no_run(root, overwrite)
            return
        parent = root.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".janus-probe-", dir=parent))
        except OSError as e:
            raise OutputError(f"output folder {root} is not writable: a folder cannot be created in {parent} "
                              f"({e.strerror or e}); choose another with --out") from None

    # what janus itself puts in a run folder before the run starts: its lock, and a grid/sweep cell's cell.json and
    # sweep.log (sweep/sweep.py)
    OWN_FILES = frozenset({LOCK_NAME, "cell.json", "sweep.log", SETUP_DB, SETUP_DB + "-journal", ASIDE})

    @classmethod
    def _check_no_run(cls, root: Path, overwrite: bool) -> Path:
        if (root / cls.DB).exists() and not (root / "COMPLETE").exists() and not overwrite:
            db = sqlite3.connect(root / cls.DB)
            try:
                has_cfg = db.execute("SELECT 1 FROM meta WHERE key='config'").fetchone() is not None
            except sqlite3.OperationalError as e:  # an empty file (killed before its schema): no config either
                has_cfg = "no such table" not in str(e)
            except sqlite3.Error:
                has_cfg = True
            finally:
                db.close()
            if not has_cfg:
                return root
        if ((root / cls.DB).exists() or (root / "COMPLETE").exists()) and not overwrite:
            state = "a finished run" if (root / "COMPLETE").exists() else "an unfinished run (continue it with --resume)"
            raise OutputError(f"output folder {root} already holds {state}; choose another --out or pass --overwrite")
        if not (root / cls.DB).exists() and (root / ASIDE).is_dir():
            return root  # an --overwrite stopped before its new run.sqlite was in place: the folder held a run
        if not (root / cls.DB).exists() and not (root / "COMPLETE").exists():
            # not a run folder: a run writes a dozen files and folders into it, so it must be new or empty (a
            # careless --out . or --out /usr would otherwise mix them into the user's files; --overwrite is for runs)
            others = sorted(p.name for p in root.iterdir() if p.name not in cls.OWN_FILES
                            and not p.name.startswith(".janus-probe-")) if root.is_dir() else []
            if others:
                shown = ", ".join(repr(n) for n in others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
                raise OutputError(f"output folder {root} is not empty and holds no janus run ({shown}); a run needs a "
                                  f"new or empty folder: choose another --out")
        return root

    @classmethod
    def create(cls, root: str | os.PathLike, *, overwrite: bool = False, meta: dict | None = None,
               log=None) -> Self:
        """Create a new run folder whose database holds ``meta`` (config, splits, environment) from its first byte.

        Crash safety: the database is written under a temp name (``.run.sqlite.setup``: schema + ``meta``
        in one transaction) and renamed to ``run.sqlite`` only when whole, so a ``run.sqlite`` always holds its
        config. With ``overwrite`` the old run's files are first moved into ``.janus-overwritten/``, the new
        database is renamed into place, and only then is the old run deleted. A kill before the rename leaves a
        folder holding no run (its leftovers are janus's own files): the same command starts it again. Only what
        the old run's records list is moved; ``log`` (if given) gets one line naming what was kept.

        Raises:
            OutputError: not writable; or it already holds a run (finished, or unfinished: use --resume) and
                ``overwrite`` is False.
        """
        import shutil

        root = cls.check_new(root, overwrite=overwrite)
        cls._clear_setup_leftovers(root)
        setup = root / SETUP_DB
        db = sqlite3.connect(setup, isolation_level=None)
        try:
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(_SCHEMA)
            db.execute("BEGIN IMMEDIATE")
            rows = [(k, dumps(v)) for k, v in {"store_format": STORE_FORMAT, **(meta or {})}.items()]
            db.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                           rows + [(C.SETUP_SEAL, dumps(C.setup_seal(dict(rows))))])
            kill_point("setup_db_begun")
            db.execute("COMMIT")
        finally:
            db.close()
        # SQLite creates files 0644 whatever the umask allows (its default mode): give the database the mode a plain
        # open() would (its -wal/-shm files copy it), so a group that may write the exports may resume the run too
        from .jsonio import _umask

        os.chmod(setup, 0o666 & ~_umask())
        kill_point("setup_db_written")
        if (root / cls.DB).exists() or (root / "COMPLETE").exists():
            kept = cls._move_aside(root)
            kill_point("overwrite_moved_aside")
            if kept and log is not None:
                shown = ", ".join(repr(n) for n in kept[:5]) + (f" and {len(kept) - 5} more" if len(kept) > 5 else "")
                log(f"--overwrite: kept {shown} in {root} (not written by the old run)")
        os.replace(setup, root / cls.DB)
        _fsync_dir(root)
        shutil.rmtree(root / ASIDE, ignore_errors=True)
        kill_point("db_in_place")
        return cls(root)  # type: ignore[call-arg]  # called on RunStore, which takes the root

    # what a run writes into its folder (the rest of the folder is the user's and is never touched); the database
    # last: an interrupted move leaves the old run still recognisable as one (run.sqlite present)
    _RUN_FILES = ("COMPLETE", "summary.json", "config.json", "config.yaml", "environment.json", "splits.json",
                  "prompts", "report")
    _DB_FILES = (DB, DB + "-wal", DB + "-shm")

    @classmethod
    def _move_aside(cls, root: Path) -> list[str]:
        """Move what an earlier run wrote here into ``root/.janus-overwritten/`` (renames only). Its method folders
        are the ones its own records name (:meth:`recorded_methods`), never a folder that merely looks like one (a
        copy ``dc_rs.backup/`` holding a ``decisions.jsonl`` is the user's). Returns the names left in place."""
        aside = root / ASIDE
        aside.mkdir(exist_ok=True)
        methods = sorted(m for m in cls.recorded_methods(root) if (root / m).is_dir() and not (root / m).is_symlink())
        ours = {*cls._RUN_FILES, *methods, *cls._DB_FILES}
        for name in (*cls._RUN_FILES, *methods, *cls._DB_FILES):
            if os.path.lexists(root / name):
                os.replace(root / name, aside / name) if not (aside / name).exists() else _remove(root / name)
        _fsync_dir(root)
        return sorted(p.name for p in root.iterdir() if p.name not in ours and p.name not in cls.OWN_FILES
                      and not p.name.startswith((".janus-probe-", ".run.sqlite")))

    @classmethod
    def recorded_methods(cls, root: Path) -> set[str]:
        """The method names the run in ``root`` records as its own: the methods its stored config runs (``meta``
        config in run.sqlite, else config.json) and every method with rows in its database. Only plain folder names
        count (no separator, not ``.``/``..``); a damaged or unreadable record adds nothing (nothing is guessed)."""
        import json

        names: set[str] = set()
        configs = []
        db_path = root / cls.DB
        if db_path.is_file():
            try:
                db = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True)
            except sqlite3.Error:
                db = None
            if db is not None:
                try:
                    row = _try_rows(db, "SELECT value FROM meta WHERE key='config'")
                    configs += [r[0] for r in row]
                    for table in ("steps", "memories", "candidates", "checkpoints", "checkpoint_head", "method_results",
                                  "tests"):
                        names.update(str(r[0]) for r in _try_rows(db, f"SELECT DISTINCT method FROM {table}"))
                finally:
                    db.close()
        try:
            configs.append((root / "config.json").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            pass
        for text in configs:
            try:
                cfg = json.loads(text)
            except (TypeError, ValueError):
                continue
            if isinstance(cfg, dict) and isinstance(cfg.get("updater"), str):
                ctl = cfg.get("controller", "both")
                if ctl in ("none", "both"):
                    names.add(cfg["updater"])
                if ctl in ("janus", "both"):
                    names.add(f"{cfg['updater']}+janus")
        return {n for n in names if n and n not in (".", "..") and n not in cls.OWN_FILES and "/" not in n and "\\" not in n
                and "\0" not in n}

    @classmethod
    def _clear_setup_leftovers(cls, root: Path) -> None:
        """What a set-up killed before its run.sqlite was in place left: the temp database, an old run moved aside
        by an interrupted --overwrite (the user asked to replace it; the new run now does)."""
        import shutil

        for name in (SETUP_DB, SETUP_DB + "-journal"):
            if (root / name).exists():
                (root / name).unlink()
        if (root / ASIDE).is_dir():
            shutil.rmtree(root / ASIDE)

    @classmethod
    def _remove_run_files(cls, root: Path) -> None:
        """Delete what an earlier run wrote here (only this layout's files; anything else is left alone)."""
        import shutil

        cls._move_aside(root)
        shutil.rmtree(root / ASIDE, ignore_errors=True)

    @classmethod
    def check_resumable(cls, root: str | os.PathLike, *, repair: bool = False) -> None:
        """OutputError if ``root`` holds no run database, or a finished run (COMPLETE; unless ``repair``). Reads
        only: `janus run --resume` asks it before printing anything, open_existing again under the run lock."""
        root = Path(root).expanduser()
        if not (root / cls.DB).exists():
            if cls.stopped_in_setup(root):
                raise OutputError(f"{root} holds no run: it was stopped while its run was being set up (before "
                                  f"{cls.DB} was in place); nothing to resume: start it again with the same command")
            raise OutputError(f"{root} is not a run folder (no {cls.DB}); nothing to resume")
        if (root / "COMPLETE").exists() and not repair:
            raise OutputError(f"{root} holds a finished run; nothing to resume")

    @classmethod
    def stopped_in_setup(cls, root: Path) -> bool:
        """Whether ``root`` (without run.sqlite) holds a run stopped before its run.sqlite was in place: a set-up's
        temp database, an old run moved aside by an --overwrite, or janus's own files and nothing else (its lock,
        a grid cell's cell.json): the same command starts it again (killpoints.RECOVERY)."""
        if any((root / n).exists() for n in (SETUP_DB, ASIDE)):
            return True
        try:
            names = [p.name for p in root.iterdir()] if root.is_dir() else []
        except OSError:  # a folder we may not list: not known to be janus's
            return False
        return bool(names) and all(n in cls.OWN_FILES or n.startswith(".janus-probe-") for n in names)

    @classmethod
    def open_existing(cls, root: str | os.PathLike, *, repair: bool = False) -> Self:
        """Open an unfinished run for resuming. Raises OutputError if it is missing or finished (unless ``repair``:
        a folder marked COMPLETE whose artefacts are not is unmarked and reopened), StorageError if not writable."""
        root = Path(root).expanduser()
        cls.check_resumable(root, repair=repair)
        cls._check_writable(root, resume=True)
        if (root / "COMPLETE").exists():
            (root / "COMPLETE").unlink()
            kill_point("repair_unmarked")
        cls._remove_stale_temp_files(root)
        return cls(root)  # type: ignore[call-arg]  # called on RunStore, which takes the root

    @staticmethod
    def _remove_stale_temp_files(root: Path) -> None:
        """Temp files of atomic writes cut short by a kill (``.<name>.<8 random chars>``, from mkstemp). The caller
        holds the run lock, so no live writer owns them."""
        import re

        pat = re.compile(r"^\..+\.[a-z0-9_]{8}$")
        for d in [root, root / "prompts", *(p for p in root.iterdir() if p.is_dir()),
                  *(p / "memories" for p in root.iterdir() if p.is_dir())]:
            if d.is_dir():
                for f in d.iterdir():
                    if f.is_file() and pat.match(f.name):
                        f.unlink()


def _fsync_dir(path: Path) -> None:
    """Make the renames in ``path`` durable (a power cut after it keeps them)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _try_rows(db: sqlite3.Connection, sql: str) -> list:
    """The rows of ``sql``, or none if the database cannot answer it (no such table, damaged file)."""
    try:
        return db.execute(sql).fetchall()
    except sqlite3.Error:
        return []


def _remove(path: Path) -> None:
    import shutil

    shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
