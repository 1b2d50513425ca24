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
    def check_new(cls, root: str | os.PathLike, *, overwrite: bool = False, methods=()) -> Path:
        """Check that a new run can be written to ``root`` without creating anything but the folder.

        A folder whose database never got its config (a run that failed before its first step was set up) counts
        as empty. With ``overwrite``, the new run's ``methods`` may not write into a folder the old run's records
        do not name (:meth:`check_overwrite_targets`). Raises OutputError like :meth:`create`."""
        root = Path(root).expanduser()
        cls._check_writable(root)
        return cls._check_no_run(root, overwrite, methods)

    @classmethod
    def check_new_uncreated(cls, root: str | os.PathLike, *, overwrite: bool = False, run: bool = True,
                            methods=()) -> None:
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
                cls._check_no_run(root, overwrite, methods)
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
    def _check_no_run(cls, root: Path, overwrite: bool, methods=()) -> Path:
        cls.check_aside(root)
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
        if (root / cls.DB).exists() or (root / "COMPLETE").exists() or (root / ASIDE).is_dir():
            cls.check_overwrite_targets(root, methods)
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
        folder holding no run (its leftovers are janus's own files): the same command starts it again. Only the
        files the old run's records list are moved (:meth:`owned_files`), the new run never writes into a folder
        they do not name (:meth:`check_overwrite_targets`), and ``log`` (if given) gets one line naming what was
        kept.

        Raises:
            OutputError: not writable; or it already holds a run (finished, or unfinished: use --resume) and
                ``overwrite`` is False.
        """
        import shutil

        root = cls.check_new(root, overwrite=overwrite, methods=cls.config_methods((meta or {}).get("config")))
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

    # what a run writes into the top of its folder (the rest of the folder is the user's and is never touched)
    _RUN_FILES = ("COMPLETE", "summary.json", "config.json", "config.yaml", "environment.json", "splits.json")
    _DB_FILES = (DB, DB + "-wal", DB + "-shm")
    _METHOD_FILES = ("decisions.jsonl", "steps.jsonl", "test.jsonl", "final_memory.txt")
    REPORT_MANIFEST = ".janus-report.json"  # report/: the files `janus report` wrote there (report/report.py)

    @classmethod
    def _records_root(cls, root: Path) -> Path:
        """Where the old run's records are: ``root``, or the move-aside folder of an --overwrite that was stopped
        after it moved them (the same command then reads them there)."""
        if not (root / cls.DB).exists() and not (root / "config.json").exists() and (root / ASIDE).is_dir():
            return root / ASIDE
        return root

    @classmethod
    def owned_files(cls, root: Path) -> list[str]:
        """The files (relative ``/`` paths) the run in ``root`` wrote, as its own records list them: the top files,
        ``prompts/<name>`` for each stored prompt (the package's prompt file names for a folder set up before
        prompts were stored), ``<method>/`` exports and ``memories/<step>_<sha12>.txt`` of every stored version for
        each recorded method (:meth:`recorded_methods`), and ``report/`` files listed in its manifest. Only regular
        files that exist are listed (a symlink or a folder by one of these names is not ours)."""
        import json

        rec = cls._records_root(root)
        rel: list[str] = [*cls._RUN_FILES, *cls._DB_FILES]
        prompts = _stored_meta(rec / cls.DB, "prompts")
        names = sorted(prompts) if isinstance(prompts, dict) else sorted(_shipped_prompt_names())
        rel += [f"prompts/{n}" for n in names if _plain_name(n)]
        methods = cls.recorded_methods(root)
        versions = _memory_files(rec / cls.DB)
        for m in sorted(methods):
            rel += [f"{m}/{f}" for f in cls._METHOD_FILES]
            rel += [f"{m}/memories/{f}" for f in sorted(versions.get(m, ()))]
        try:
            listed = json.loads((root / "report" / cls.REPORT_MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            listed = None
        if isinstance(listed, dict) and isinstance(listed.get("files"), list):
            # a file whose sha256 the manifest records counts only while it still has it (one edited since the
            # report is the user's); a manifest without hashes (older reports) lists names only
            got = listed.get("sha256")
            hashes: dict = got if isinstance(got, dict) else {}
            rel += [f"report/{n}" for n in listed["files"] if isinstance(n, str) and _plain_name(n)
                    and (n not in hashes or _sha256_is(root / "report" / n, hashes[n]))]
            rel.append(f"report/{cls.REPORT_MANIFEST}")
        out = []
        for r in dict.fromkeys(rel):
            p = root / r
            if p.is_file() and not p.is_symlink() and all(not q.is_symlink() for q in list(p.parents)[:r.count("/")]):
                out.append(r)
        return out

    @classmethod
    def owned_dirs(cls, root: Path) -> list[str]:
        """The folders a run makes (``prompts``, ``report``, each recorded method and its ``memories``), deepest
        first: removed by --overwrite only when nothing else is left in them."""
        dirs = []
        for m in sorted(cls.recorded_methods(root)):
            dirs += [f"{m}/memories", m]
        return [*dirs, "prompts", "report"]

    @classmethod
    def check_overwrite_targets(cls, root: Path, methods) -> None:
        """--overwrite: OutputError (one line) if the new run would write into a folder of ``root`` that the old
        run's records do not name as its own (a user's ``dc_rs/`` beside a run that never ran dc_rs), or into a
        symlink or a file by such a name."""
        ours = cls.recorded_methods(root)
        for name in [*methods, "prompts"]:
            p = root / name
            if not os.path.lexists(p):
                continue
            if p.is_symlink() or not p.is_dir():
                what = "a symlink" if p.is_symlink() else "a file"
            elif name != "prompts" and name not in ours:
                what = "a folder the old run's records do not name as its own"
            else:
                continue
            use = "its prompt files" if name == "prompts" else f"the method {name}'s files"
            raise OutputError(f"--overwrite: {p} is {what}, and the new run would write {use} into it; move or "
                              "rename it, or choose another --out")
        # no folder the new run writes into or the move-aside and the exports delete from may lead out of the run
        # folder: a symlink at any depth below it (dc_rs/memories -> a user's folder) is refused, before anything moves
        below = [*(f"{m}/memories" for m in methods), *(f"{m}/memories" for m in sorted(ours)), *sorted(ours), "report"]
        for rel in dict.fromkeys(below):
            p = root / rel
            if p.is_symlink():
                raise OutputError(f"--overwrite: {p} is a symlink (to {os.readlink(p)}), and the run writes and "
                                  "deletes files in it only inside its own folder; replace it with a folder of its "
                                  "own, or choose another --out")
        # files of the user's where the new run keeps nothing else (its exports would remove them as stray): prompts/
        # holds the run's prompts only, memories/ no file named like a version that is not one (store/records.py)
        from .records import MEMORY_FILE

        owned = set(cls.owned_files(root))
        stray = [q for q in ((root / "prompts").iterdir() if (root / "prompts").is_dir() else ())
                 if f"prompts/{q.name}" not in owned]
        for m in methods:
            folder = root / m / "memories"
            if m in ours and folder.is_dir() and not folder.is_symlink():
                stray += [q for q in folder.iterdir() if MEMORY_FILE.match(q.name)
                          and f"{m}/memories/{q.name}" not in owned]
        if stray:
            q = sorted(stray)[0]
            more = f" (+{len(stray) - 1} more)" if len(stray) > 1 else ""
            raise OutputError(f"--overwrite: {q}{more} was not written by the old run, and the new run keeps no "
                              f"other file in {q.parent.name}/; move it out of the folder, or choose another --out")

    @classmethod
    def check_aside(cls, root: Path) -> None:
        """OutputError (one line) if ``root/.janus-overwritten`` exists but is not what an --overwrite stopped short
        left there (janus deletes that folder): a symlink, a file, or a folder holding anything but a run's files
        (regular files at the paths a run writes: its top files, ``prompts/*``, ``report/*``, ``<method>/`` exports
        and ``<method>/memories/<step>_<sha12>.txt``), so that nothing of the user's is moved into or deleted."""
        from .records import MEMORY_FILE

        p = root / ASIDE
        if not os.path.lexists(p):
            return
        what = None
        if p.is_symlink() or not p.is_dir():
            what = "a symlink" if p.is_symlink() else "a file"
        else:
            top = {*cls._RUN_FILES, *cls._DB_FILES, SETUP_DB, SETUP_DB + "-journal"}
            for q in sorted(p.rglob("*")):
                parts = q.relative_to(p).parts
                if q.is_symlink():
                    bad = True
                elif q.is_dir():
                    bad = len(parts) > 2 or (len(parts) == 2 and (parts[0] in ("prompts", "report")
                                                                   or parts[1] != "memories"))
                elif not q.is_file():
                    bad = True
                elif len(parts) == 1:
                    bad = parts[0] not in top
                elif len(parts) == 2:
                    bad = parts[0] not in ("prompts", "report") and parts[1] not in cls._METHOD_FILES
                else:
                    bad = len(parts) > 3 or parts[1] != "memories" or not MEMORY_FILE.match(parts[2])
                if bad:
                    what = f"a folder holding {q.relative_to(p).as_posix()!r}, which no run writes"
                    break
        if what:
            raise OutputError(f"{p} is not the folder where janus moves an overwritten run (and then deletes): it is "
                              f"{what}; move or rename it, then run again")

    @classmethod
    def _move_aside(cls, root: Path) -> list[str]:
        """Move the files an earlier run wrote here (:meth:`owned_files`, nothing else) into
        ``root/.janus-overwritten/`` (renames only; the database last, so an interrupted move leaves the old run
        recognisable as one), then remove the run's folders that are left empty. Returns what was left in place
        that is not janus's: the user's files and folders, also inside the run's own folders (``dc_rs/notes.txt``)."""
        aside = root / ASIDE
        aside.mkdir(exist_ok=True)
        files = cls.owned_files(root)
        dirs = cls.owned_dirs(root)
        db_last = [f for f in files if f not in cls._DB_FILES] + [f for f in files if f in cls._DB_FILES]
        for rel in db_last:
            dest = aside / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(root / rel, dest)
        for rel in dirs:
            p = root / rel
            if p.is_dir() and not p.is_symlink():
                try:
                    p.rmdir()  # only if empty: a file of the user's keeps its folder
                except OSError:
                    pass
        _fsync_dir(root)
        kept = []
        top = [p.name for p in root.iterdir() if p.name not in cls.OWN_FILES
               and not p.name.startswith((".janus-probe-", ".run.sqlite"))]
        inside = {d.split("/")[0] for d in dirs}
        for name in sorted(top):
            p = root / name
            if name in inside and p.is_dir() and not p.is_symlink():
                kept += sorted(q.relative_to(root).as_posix() for q in p.rglob("*") if not q.is_dir() or q.is_symlink())
            else:
                kept.append(name)
        return kept

    @classmethod
    def recorded_methods(cls, root: Path) -> set[str]:
        """The method names the run in ``root`` records as its own: the methods its stored config runs (``meta``
        config in run.sqlite, else config.json) and every method with rows in its database. Only plain folder names
        count (no separator, not ``.``/``..``); a damaged or unreadable record adds nothing (nothing is guessed)."""
        import json

        names: set[str] = set()
        configs = []
        rec = cls._records_root(root)
        db_path = rec / cls.DB
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
            configs.append((rec / "config.json").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            pass
        for text in configs:
            try:
                cfg = json.loads(text)
            except (TypeError, ValueError):
                continue
            names.update(cls.config_methods(cfg))
        return {n for n in names if _plain_name(n) and n not in cls.OWN_FILES}

    @staticmethod
    def config_methods(cfg) -> list[str]:
        """The method folders a run of the config dict ``cfg`` writes (``updater``, ``updater+janus``)."""
        if not isinstance(cfg, dict) or not isinstance(cfg.get("updater"), str):
            return []
        ctl = cfg.get("controller", "both")
        return ([cfg["updater"]] if ctl in ("none", "both") else []) + \
            ([f"{cfg['updater']}+janus"] if ctl in ("janus", "both") else [])

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


def _plain_name(name) -> bool:
    """A name that stays one folder entry: not empty, no separator, not ``.``/``..``, no NUL."""
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\\" not in name
            and "\0" not in name)


def _ro(db_path: Path):
    """A read-only connection to ``db_path``, or None."""
    if not db_path.is_file():
        return None
    try:
        return sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None


def _stored_meta(db_path: Path, key: str):
    """The JSON value of meta ``key`` in ``db_path``, or None (no database, no row, damaged)."""
    import json

    db = _ro(db_path)
    if db is None:
        return None
    try:
        rows = _try_rows(db, f"SELECT value FROM meta WHERE key='{key}'")
    finally:
        db.close()
    try:
        return json.loads(rows[0][0]) if rows else None
    except (TypeError, ValueError):
        return None


def _memory_files(db_path: Path) -> dict[str, set[str]]:
    """method -> the ``memories/`` file names of its stored versions (``SSSSS_<sha12>.txt``, store.py)."""
    db = _ro(db_path)
    if db is None:
        return {}
    out: dict[str, set[str]] = {}
    try:
        for method, step, sha in _try_rows(db, "SELECT method, step, sha256 FROM memories"):
            if isinstance(step, int) and isinstance(sha, str):
                out.setdefault(str(method), set()).add(f"{step:05d}_{sha[:12]}.txt")
    finally:
        db.close()
    return out


def _shipped_prompt_names() -> set[str]:
    """The prompt file names a run of this package can write into ``prompts/`` (``updater_*.txt``, ``task_*.txt``):
    the records of a folder set up before prompts were stored name no prompt files."""
    from importlib import resources

    names = set()
    for pkg, prefix in (("janus_memory.tasks", "task_"), ("janus_memory.updaters", "updater_")):
        names |= {prefix + r.name for r in resources.files(pkg).joinpath("prompts").iterdir() if r.name.endswith(".txt")}
    return names


def _sha256_is(path: Path, want) -> bool:
    """Whether the regular file ``path`` has the sha256 ``want`` (hex)."""
    import hashlib

    try:
        return path.is_file() and not path.is_symlink() and hashlib.sha256(path.read_bytes()).hexdigest() == want
    except OSError:
        return False


def _remove(path: Path) -> None:
    import shutil

    shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
