"""RunReader: the one reader of a run folder (layout in store.py). Report, plots, memory diff, grid and resume use it.

Reads ``run.sqlite`` read-only when it is there (a finished or an interrupted run) and the exported files otherwise
(a copied folder without its database). Nothing here writes.
"""
from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import stat
from contextlib import closing
from pathlib import Path
from typing import Any, Iterator

from ..errors import RunFolderError

DB = "run.sqlite"
_MEMORY_FILE = re.compile(r"^(\d{5,})_([0-9a-f]{12})\.txt$")


class RunReader:
    """Read access to one run folder ``root``."""

    def __init__(self, root: str | Path):
        self.root = Path(root).expanduser()

    # ------------------------------------------------------------------ basics
    @property
    def has_db(self) -> bool:
        return (self.root / DB).is_file()

    @property
    def finished(self) -> bool:
        return (self.root / "COMPLETE").exists()

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        return self._with_db(lambda query: query(sql, args), [])

    def _with_db(self, fn, default=None):
        """``fn(query)`` with ``query(sql, args) -> rows`` on one read-only connection (a missing table reads as no
        rows); ``default`` without a database. RunFolderError when the database is not readable."""
        if not self.has_db:
            return default
        self._check_db()

        def query(sql: str, args: tuple = ()) -> list[tuple]:
            try:
                return con.execute(sql, args).fetchall()
            except sqlite3.OperationalError as e:
                if "no such table" in str(e):
                    return []
                raise
        try:
            with closing(sqlite3.connect(f"file:{self.root / DB}?mode=ro", uri=True)) as con:
                return fn(query)
        except sqlite3.DatabaseError as e:  # truncated, not SQLite, or otherwise unreadable
            raise RunFolderError(f"{self.root / DB} is not a readable run database ({e}); "
                                 "restore it or start a new run") from None

    _checked: bool = False

    def _check_db(self) -> None:
        """Refuse, in one line, a database that is not one: 0 bytes (a run.sqlite emptied or truncated: SQLite would
        read it as a database without tables), or a store format from a newer janus-memory."""
        if self._checked:
            return
        from .ckpt_rows import STORE_FORMAT

        path = self.root / DB
        if path.stat().st_size == 0:
            raise RunFolderError(f"{path} is empty (0 bytes): the run database was truncated or replaced; restore it "
                                 "from a copy or start a new run")
        self._checked = True
        try:
            with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
                row = con.execute("SELECT value FROM meta WHERE key='store_format'").fetchone()
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return
            self._checked = False
            raise RunFolderError(f"{path} is not a readable run database ({e}); restore it or start a new run") from None
        except sqlite3.DatabaseError as e:
            self._checked = False
            raise RunFolderError(f"{path} is not a readable run database ({e}); restore it or start a new run") from None
        try:
            have = json.loads(row[0]) if row else 1
        except (json.JSONDecodeError, TypeError):
            have = row[0]
        if not isinstance(have, int) or isinstance(have, bool) or have > STORE_FORMAT:
            self._checked = False
            raise RunFolderError(f"{path} has store format {have!r}; this janus-memory reads formats 1-{STORE_FORMAT}: "
                                 "read it with the version that wrote it")

    def texts(self, table: str, method: str | None = None, *, last: bool = False, text: bool = True) -> list[dict]:
        """The rows of ``table`` ("memories": deployed versions, "candidates") in (method, step) order: ``method,
        step, sha256, parent`` (candidates: + ``rejected``) and, with ``text``, the text, read back through
        store/texts.py and checked against its sha256 (DamagedStoreError naming the row when it does not read back).
        ``last``: only the newest row of ``method``. [] without a database."""
        from .texts import damage_error, read_versions

        return self._with_db(lambda query: list(read_versions(
            query, table, method=method, last=last, text=text, on_damage=damage_error(self.root / DB))), [])

    def candidates(self, method: str) -> list[dict]:
        """Every stored candidate memory of ``method`` (step, sha256, parent, rejected, text), by step."""
        return self.texts("candidates", method)

    def unstored_texts(self, method: str) -> list[tuple[str, int]]:
        """(table, step) of the memory/candidate rows of ``method`` whose text is missing from the database (checked
        without rebuilding texts: store/texts.py unstored)."""
        from .texts import unstored

        return self._with_db(lambda query: unstored(query, method), [])

    def last_memory(self, method: str) -> dict | None:
        """The newest stored memory version of ``method`` (step, sha256, parent, text), read back and checked."""
        rows = self.texts("memories", method, last=True)
        return rows[0] if rows else None

    def json_file(self, name: str, default: Any = None) -> Any:
        """A JSON file of the folder (``summary.json``, ``config.json``, ``cell.json`` ...); ``default`` if absent.
        Raises RunFolderError for invalid JSON."""
        path = self.root / name
        try:
            st = path.stat()
            if not stat.S_ISREG(st.st_mode):  # a FIFO is never opened (its read would wait forever)
                raise RunFolderError(f"{path} is not a regular file; it is not the file the run wrote")
            if st.st_size > self.MAX_JSON_FILE:  # a record the run wrote is far smaller: never read whole
                raise RunFolderError(f"{path} is larger than {self.MAX_JSON_FILE >> 20} MiB; it is not the file the run "
                                     "wrote")
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return default
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise RunFolderError(f"{path} is not valid JSON ({str(e)[:200]})") from None
        except OSError as e:  # a folder, a FIFO, unreadable
            raise RunFolderError(f"{path} cannot be read ({e.strerror or e})") from None

    MAX_JSON_FILE = 256 << 20  # the largest JSON record read (splits.json of a 100,000-task split is ~10 MB)

    _DB_EXPORTS = {"decisions.jsonl": 0, "steps.jsonl": 1}

    def jsonl(self, name: str) -> list[dict]:
        """The lines of ``<root>/<name>`` (e.g. ``dc_rs+janus/decisions.jsonl``); [] if absent. A method's
        decisions.jsonl, steps.jsonl and test.jsonl come from the database when the folder has one (the database is
        the truth; the files are exports of it, checked against it by integrity.problems)."""
        method, _, fname = name.rpartition("/")
        if method and "/" not in method and self.has_db and fname in (*self._DB_EXPORTS, "test.jsonl"):
            if fname == "test.jsonl" and self._query("SELECT 1 FROM tests WHERE method=? LIMIT 1", (method,)):
                return [self._loads(r, f"test row of {method}") for (r,) in
                        self._query("SELECT record FROM tests WHERE method=? ORDER BY idx", (method,))]
            if fname != "test.jsonl":
                return [pair[self._DB_EXPORTS[fname]] for pair in self.steps(method)]
        path = self.root / name
        if not path.exists():
            return []
        # lines end at "\n" only: str.splitlines() would also split inside a record at a U+2028 or \x1c that a
        # model wrote (JSON keeps them raw), breaking the line in two
        return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]

    # ------------------------------------------------------------------ run state (database)
    def meta(self, key: str, default: Any = None) -> Any:
        """The stored value of ``key`` (``config``, ``splits``, ``environment`` ...); ``default`` when absent. A value
        that is not JSON (a damaged database) raises RunFolderError naming the run folder."""
        rows = self._query("SELECT value FROM meta WHERE key=?", (key,))
        if not rows:
            return default
        try:
            value = json.loads(rows[0][0])
        except (json.JSONDecodeError, TypeError) as e:
            raise RunFolderError(f"{self.root}: the stored {key} is damaged (its row in {DB} is not valid JSON: {e})"
                                 ) from None
        if key in self._OBJECT_META and not isinstance(value, dict):
            raise RunFolderError(f"{self.root}: the stored {key} is damaged (its row in {DB} holds a JSON "
                                 f"{type(value).__name__}, not an object)")
        return value

    _OBJECT_META = ("config", "splits", "environment")  # meta rows that the store always writes as JSON objects

    def checkpoint(self, method: str) -> tuple[int, dict] | None:
        """``(last committed step, checkpoint)``: the stored base replayed with its per-step deltas (store.py).
        Raises RunFolderError when the chain is broken (a damaged database)."""
        from .delta import SEP, apply_op

        rows = self._query("SELECT step, state FROM checkpoints WHERE method=?", (method,))
        if not rows:
            return None
        step, state = int(rows[0][0]), self._loads(rows[0][1], f"checkpoint of {method}")
        rows = self._query("SELECT step, path, op FROM checkpoint_ops WHERE method=? AND step>? ORDER BY step, seq",
                           (method, step))
        for s, path, op in rows:
            keys = path.split(SEP)[:-1] if path else []
            try:
                state = apply_op(state, keys, self._loads(op, f"checkpoint op {method}/{s}"))
            except (ValueError, TypeError, KeyError) as e:
                raise RunFolderError(f"{self.root / DB}: checkpoint op of {method} at step {s} does not apply ({e}); "
                                     "the database is damaged") from None
        state = self._rebuild_rows(method, state)
        head = self._query("SELECT step FROM checkpoint_head WHERE method=?", (method,))
        if head:  # absent in databases written before the flat store (their base is the whole checkpoint)
            step = int(head[0][0])
        if not isinstance(state, dict):
            raise RunFolderError(f"{self.root / DB}: checkpoint of {method} is not an object; the database is damaged")
        return step, state

    def _rebuild_rows(self, method: str, state: Any) -> Any:
        """The embedding matrices stored as rows (store format 2, store/ckpt_rows.py) back in their JSON form."""
        from .ckpt_rows import rebuild

        if not isinstance(state, dict):
            return state
        fetch = lambda key, n: self._query(  # noqa: E731
            "SELECT idx, data FROM checkpoint_rows WHERE method=? AND path=? AND idx<? ORDER BY idx", (method, key, n))
        try:
            return rebuild(state, fetch)
        except ValueError as e:
            raise RunFolderError(f"{self.root / DB}: checkpoint of {method}: {e}; the database is damaged") from None

    def _loads(self, text: str, what: str) -> Any:
        try:
            return json.loads(text)
        except (json.JSONDecodeError, TypeError) as e:
            raise RunFolderError(f"{self.root / DB}: {what} is not valid JSON ({e}); the database is damaged") from None

    _RESULT_KEYS = ("method", "stream_tasks", "online_accuracy", "test_tasks", "test_correct", "test_accuracy")

    def method_result(self, method: str) -> dict | None:
        """The stored summary of a finished method; None when the method has not finished, or when its stored
        summary is incomplete (a damaged row: the method then counts as unfinished, and a resume, which finds
        every step committed, runs its test again and stores a complete one)."""
        rows = self._query("SELECT summary FROM method_results WHERE method=?", (method,))
        if not rows:
            return None
        result = self._loads(rows[0][0], f"result of {method}")
        if not isinstance(result, dict) or any(k not in result for k in self._RESULT_KEYS):
            return None
        return result

    def steps(self, method: str) -> Iterator[tuple[dict, dict]]:
        """(decision line, step record) of every committed step; RunFolderError (one line) for a row that is not
        a JSON object."""
        for step, d, r in self._query("SELECT step, decision, record FROM steps WHERE method=? ORDER BY step",
                                      (method,)):
            dec, rec = self._loads(d, f"decision of {method} at step {step}"), self._loads(
                r, f"record of {method} at step {step}")
            if not isinstance(dec, dict) or not isinstance(rec, dict):
                raise RunFolderError(f"{self.root / DB}: the row of {method} at step {step} is not a JSON object; "
                                     "the database is damaged")
            yield dec, rec

    def decisions(self, method: str) -> list[dict]:
        """The decision log of ``method``: from the database, else decisions.jsonl."""
        if self.has_db:
            return [d for d, _ in self.steps(method)]
        return self.jsonl(f"{method}/decisions.jsonl")

    # ------------------------------------------------------------------ results (exported files)
    def summary(self) -> dict | None:
        """The run's summary: the one stored in the database when it holds one (written with summary.json, which
        integrity.problems checks against it), else summary.json."""
        if self.has_db:
            stored = self.meta("summary")
            if isinstance(stored, dict):
                return stored
        return self.json_file("summary.json")

    def config(self) -> dict:
        return self.json_file("config.json", {}) or {}

    # ------------------------------------------------------------------ memory versions
    def memory_versions(self) -> tuple[dict[str, list[dict]], dict[str, int], dict[str, str | None]]:
        """``({method: [{"step", "sha256", "text"}, ...] sorted by step}, {method: last committed step},
        {method: step 1's old_memory_sha256})``; from the database, else the exported
        ``<method>/memories/SSSSS_<sha12>.txt`` files and decisions.jsonl."""
        if self.has_db:
            versions: dict[str, list[dict]] = {}
            for row in self.texts("memories"):
                versions.setdefault(row["method"], []).append(
                    {"step": row["step"], "sha256": row["sha256"], "text": row["text"]})
            last = {m: int(s) for m, s in self._query("SELECT method, MAX(step) FROM steps GROUP BY method")}
            first = {m: json.loads(d).get("old_memory_sha256")
                     for m, d in self._query("SELECT method, decision FROM steps WHERE step=1")}
            return versions, last, first
        return self._memory_versions_from_files()

    def _memory_versions_from_files(self):
        versions: dict[str, list[dict]] = {}
        last: dict[str, int] = {}
        first: dict[str, str | None] = {}
        for mem_dir in sorted(self.root.glob("*/memories")):
            method = mem_dir.parent.name
            for f in sorted(mem_dir.iterdir()):
                m = _MEMORY_FILE.match(f.name)
                if m:
                    versions.setdefault(method, []).append(
                        {"step": int(m.group(1)), "sha256": m.group(2), "text": _checked_memory_file(f, m.group(2))})
            lines = self.jsonl(f"{method}/decisions.jsonl")
            if lines:
                last[method] = max(x["step"] for x in lines)
                if lines[0].get("step") == 1:
                    first[method] = lines[0].get("old_memory_sha256")
        for v in versions.values():
            v.sort(key=lambda r: r["step"])
        return versions, last, first


def _checked_memory_file(path: Path, sha12: str) -> str:
    """The text of a ``memories/SSSSS_<sha12>.txt`` file, whose name promises the first 12 hex digits of its content's
    sha256 (store.py writes it so): RunFolderError when the content does not match (an edited or damaged file), so a
    diff never shows a text under a hash it does not have."""
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if not actual.startswith(sha12):
        raise RunFolderError(f"{path} is damaged: its content's sha256 begins {actual[:12]}, not {sha12} as its name "
                             "says (the file was edited or damaged after the run wrote it)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:  # the store writes UTF-8 only; a file named for non-UTF-8 bytes was put there
        raise RunFolderError(f"{path} is damaged: not UTF-8 text") from None
