"""Persistent response cache: one SQLite file (WAL mode) per cache folder.

Key: ``sha256`` of the canonical JSON of ``{"backend": backend.identity, "messages": messages,
"params": every sampling parameter (None included), "sample": sample index}``. Two runs with the same
memory, task prompt, parameters and sample index get the same stored answer, so a temperature-0.7 run is
reproducible and a re-run costs no calls (this also removes server-side temperature-0 noise, C23).

Value: the normalised result (text, reasoning, finish_reason, usage, the model the server reported and its
``system_fingerprint``) as JSON, with ``_sha256``, a checksum of the rest. Failures are never stored.

Cache format (the file's SQLite ``user_version``): a new file is marked :data:`CACHE_FORMAT` (2) when it is created.
Its entries must carry the checksum and the model that answered (a non-empty ``model``). A file written before the
format was marked (``user_version`` 0: format 1) may hold entries without them (the fixtures of older run folders do):
those are replayed, and the run is told once that they are unverified; an entry of such a file that has a checksum is
still checked against it. A file of a newer format is refused (:class:`CacheError`, one line).

Read back, an entry is checked (:func:`check_entry`): JSON, an object, each field of its type, the checksum matching,
and in a format 2 file the checksum and model present. A damaged, stripped or hand-edited entry is not used: one
warning naming the file and ``--no-cache``, its request is asked again and the new answer replaces it. A file SQLite itself
calls damaged (truncated, overwritten: ``sqlite3.DatabaseError``), whether found when the cache is opened or later in
the run, is moved aside to ``<name>.damaged-<time>`` with one warning and a new cache is started; the run goes on.

Which model answered: the key holds the backend identity (URL and the model asked for); the entry holds the model
the server reported (``ChatResult.model``, ``fingerprint``). The client (llm/client.py) refuses to replay an entry
whose reported model differs from the one this run's server reports.
Safe under concurrent writers (threads and processes): opened with
:func:`janus_memory.encoders.sqlite_wal.connect_shared`
(WAL journal, ``busy_timeout``, the opening steps that SQLite does not wait on retried) and ``INSERT OR IGNORE``
(the first writer of a key wins; later identical keys are no-ops).
A cache that cannot be opened (``--cache-dir`` naming a file, no permission, not an SQLite file) raises
:class:`CacheError` with one line naming the path, never a traceback from sqlite3 or pathlib.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from janus_memory.encoders.sqlite_wal import WriteFailures, cache_file, connect_shared, open_failure
from janus_memory.llm.base import (
    ChatRequest,
    canonical_json,
    result_from_dict,
    result_to_dict,
)
from janus_memory.values import ChatResult

CACHE_FILENAME = "responses.sqlite"
CACHE_FORMAT = 2  # the file's user_version; 0 = format 1, written before entries had to carry checksum and model
SCHEMA = "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL, backend TEXT, created REAL)"

_SAID: set[tuple[str, str]] = set()  # what this process has said once (several clients open one cache file)
_SAID_LOCK = threading.Lock()


def _say_once(key: tuple[str, str]) -> bool:
    """True the first time this process asks for ``key``."""
    with _SAID_LOCK:
        if key in _SAID:
            return False
        _SAID.add(key)
        return True


class CacheError(Exception):
    """The response cache cannot be opened or created (a file where the folder should be, no permission, a file
    that is not an SQLite database). One-line message naming the path and the fix."""


def answered_by(r: ChatResult) -> str:
    """What identifies the model that gave ``r``: the model name the server reported, with its system_fingerprint
    where it gave one."""
    return r.model + (f" ({r.fingerprint})" if r.fingerprint else "")


def answered_field(result: Any, asked: str) -> dict:
    """``{"model": answered_by(result)}`` when the server reported another model than the one asked for (a swapped
    model, another model's answer), else nothing: a logged response says which model gave it when that is news."""
    got = answered_by(result) if getattr(result, "model", "") else ""
    return {"model": got} if got and got != asked else {}


def _checksum(d: dict) -> str:
    # surrogatepass: a reply holding a lone surrogate escape ("\\ud83d", valid JSON) is stored and checked like any other
    return hashlib.sha256(canonical_json(d).encode("utf-8", "surrogatepass")).hexdigest()


_TEXT_FIELDS = ("text", "reasoning", "finish_reason", "model", "fingerprint")
_COUNTS = ("prompt_tokens", "completion_tokens")


def check_entry(raw: Any, fmt: int = CACHE_FORMAT) -> tuple[dict | None, str]:
    """``(result dict, "")`` for a sound stored value, ``(None, what is wrong)`` otherwise (module docstring); ``fmt``
    is the cache format the file declares."""
    d, problem, _ = _check(raw, fmt)
    return d, problem


def _check(raw: Any, fmt: int) -> tuple[dict | None, str, bool]:
    """:func:`check_entry` plus whether the entry was verified (checksum and model present and right)."""
    try:
        d = json.loads(raw)
    except (TypeError, ValueError, RecursionError) as e:  # RecursionError: nested past Python's limit
        return None, f"not JSON: {(str(e).splitlines() or [type(e).__name__])[0][:80]}", False
    if not isinstance(d, dict):
        return None, f"not a JSON object but {type(d).__name__}", False
    sha = d.pop("_sha256", None)
    if not isinstance(d.get("text"), str):
        return None, f"its text is {type(d.get('text')).__name__}, not a string", False
    for f in _TEXT_FIELDS[1:]:
        if f in d and not isinstance(d[f], str):
            return None, f"its {f} is {type(d[f]).__name__}, not a string", False
    u = d.get("usage", {})
    if not isinstance(u, dict) or any(not isinstance(u.get(f, 0), int) or isinstance(u.get(f, 0), bool)
                                      or u.get(f, 0) < 0 for f in _COUNTS) \
            or not isinstance(u.get("estimated", False), bool):
        return None, "its usage is not two token counts and a flag", False
    if fmt >= 2:
        missing = [w for w, bad in (("checksum", sha is None), ("model", not d.get("model"))) if bad]
        if missing:
            return None, (f"it carries no {' and no '.join(missing)}, which every entry of a cache of format "
                          f"{CACHE_FORMAT} has (stripped or edited)"), False
    if sha is not None and sha != _checksum(d):
        return None, "its checksum does not match its answer (edited or damaged)", False
    return d, "", sha is not None and bool(d.get("model"))


def request_key(identity: str, req: ChatRequest, sample: int = 0) -> str:
    """Hex sha256 cache key of (backend identity, messages, all sampling params, sample index)."""
    payload = {
        "backend": identity,
        "messages": [dict(m) for m in req.messages],
        "params": req.params(),
        "sample": int(sample),
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def _damaged(e: sqlite3.DatabaseError) -> bool:
    """Whether SQLite calls the file a damaged database (``SQLITE_CORRUPT``: a truncated or overwritten cache), not
    a file that is no SQLite database at all (``SQLITE_NOTADB``: not ours, refused) nor a lock or a full disk."""
    return getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_CORRUPT or "malformed" in str(e)


class ResponseCache:
    """SQLite-backed response cache.

    Args:
        path: a folder (the file ``responses.sqlite`` is created inside it) or a ``.sqlite``/``.db`` file path.
        busy_timeout: seconds to wait for another process's write lock (opening, and storing an answer).

    ``hits``, ``misses`` and ``writes`` count this process's lookups; ``write_failures`` the answers it could not
    store (the file locked by another process past ``busy_timeout`` seconds, a full disk: warned once, the run goes on).
    Thread-safe (one connection per thread).
    """

    def __init__(self, path: str | os.PathLike, *, busy_timeout: float = 30.0):
        p = Path(path).expanduser()
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: list[sqlite3.Connection] = []
        self.hits = self.misses = self.writes = 0
        self.damaged = 0  # entries not used: damaged or edited (check_entry); their requests are asked again
        self.moved_aside: Path | None = None  # where a damaged file went (the cache then starts anew)
        self.unverified = 0  # entries of a format 1 file replayed without a checksum or model (said once)
        self.format: int | None = None  # the cache format the file declares (read with the first connection)
        self._stale: set[str] = set()  # keys whose stored entry was not used: the next answer replaces it
        self.path = cache_file(p, CACHE_FILENAME)
        self._failures = WriteFailures("response cache", self.path,
                                       "an answer could not be stored",
                                       "a rerun asks for such answers again")
        try:
            if self.path != p and p.exists() and not p.is_dir():
                raise CacheError(f"cache folder {p} is a file, not a folder: pass a folder (or a .sqlite file path) "
                                 f"with --cache-dir, or --no-cache")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._conn()
            except sqlite3.DatabaseError as e:  # damaged before this run (truncated): moved aside, a new one started
                if not _damaged(e):
                    raise
                self.close()
                self._move_aside(e)
                self._conn()
        except CacheError:
            self.close()
            raise
        except (OSError, sqlite3.Error) as e:
            self.close()
            raise CacheError(open_failure("response cache", self.path, e, busy_timeout)) from e

    @property
    def write_failures(self) -> int:
        return self._failures.count

    def _conn(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = connect_shared(self.path, SCHEMA, timeout=self.busy_timeout)
            self._local.con = con
            with self._lock:
                self._conns.append(con)
            if self.format is None:
                self.format = self._read_format(con)
        return con

    def _read_format(self, con: sqlite3.Connection) -> int:
        """The file's cache format; a file holding no entry yet is marked the current one. CacheError for a newer
        format (written by a newer janus-memory: its entries may mean something this one does not check)."""
        from janus_memory.encoders.sqlite_wal import retry_busy

        def read() -> int:
            con.execute("BEGIN IMMEDIATE")
            try:
                version = int(con.execute("PRAGMA user_version").fetchone()[0])
                if version == 0 and con.execute("SELECT 1 FROM responses LIMIT 1").fetchone() is None:
                    con.execute(f"PRAGMA user_version={CACHE_FORMAT}")
                    version = CACHE_FORMAT
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
            return version

        version = retry_busy(read, timeout=self.busy_timeout)
        if version > CACHE_FORMAT:
            raise CacheError(f"response cache {self.path} has cache format {version}; this janus-memory reads formats "
                             f"1-{CACHE_FORMAT}: pass another --cache-dir, or --no-cache")
        return max(version, 1)

    def get(self, key: str) -> ChatResult | None:
        """The stored result with ``cached=True``, or None (none stored, or the stored one is damaged: warned once,
        and the next :meth:`put` of the key replaces it)."""
        row = self._guarded(lambda: self._conn().execute("SELECT value FROM responses WHERE key = ?",
                                                         (key,)).fetchone())
        d, problem, verified = _check(row[0], self.format or CACHE_FORMAT) if row is not None else (None, "", True)
        first = first_unverified = False
        with self._lock:
            if problem:
                self.damaged += 1
                self._stale.add(key)
                first = self.damaged == 1
            if d is None:
                self.misses += 1
            else:
                self.hits += 1
                if not verified:
                    self.unverified += 1
                    first_unverified = self.unverified == 1
        if d is not None and not verified and first_unverified and _say_once(("unverified", str(self.path))):
            warnings.warn(f"response cache {self.path} has cache format 1 (written before its entries had to carry a "
                          "checksum and the model that answered): its answers without them are replayed unverified "
                          "(an edited one is not noticed); --no-cache or another --cache-dir asks the server again",
                          RuntimeWarning, stacklevel=2)
        if problem and first:
            warnings.warn(f"response cache {self.path}: a stored answer was not used ({problem}); its request is asked "
                          "again and the new answer replaces it (--no-cache runs without the cache)", RuntimeWarning,
                          stacklevel=2)
        return None if d is None else result_from_dict(d, cached=True)

    def forget(self, key: str) -> None:
        """The entry of ``key`` is not to be replayed (another model's answer): the next :meth:`put` replaces it."""
        with self._lock:
            self._stale.add(key)

    def put(self, key: str, result: ChatResult, *, backend: str = "") -> None:
        """Store a successful result (first writer wins; a damaged or forgotten entry is replaced)."""
        d = result_to_dict(result)
        if not d.get("model"):  # every entry names a model: a backend that reports none is the one it was asked for
            d["model"] = backend or "unknown"
        # ASCII escapes: a lone surrogate in a reply cannot be written to SQLite as UTF-8 text, its escape can
        value = json.dumps({**d, "_sha256": _checksum(d)}, ensure_ascii=True, sort_keys=True)
        with self._lock:
            verb = "REPLACE" if key in self._stale else "IGNORE"
            self._stale.discard(key)
        try:
            self._guarded(lambda: self._conn().execute(
                f"INSERT OR {verb} INTO responses (key, value, backend, created) VALUES (?, ?, ?, ?)",
                (key, value, backend, time.time())))
        except sqlite3.OperationalError as e:  # the answer is paid for and returned; only its reuse is lost
            self._failures.record(e)
            return
        with self._lock:
            self.writes += 1

    def _guarded(self, op):
        """``op()``; when SQLite calls the file damaged (``DatabaseError`` other than a lock or a full disk), the file
        is moved aside once, with a warning, a new cache is started and ``op`` runs again on it."""
        try:
            return op()
        except sqlite3.OperationalError:
            raise
        except sqlite3.DatabaseError as e:
            self._move_aside(e)
            return op()

    def _move_aside(self, e: BaseException) -> None:
        """Move the damaged file (and its -wal/-shm) aside, once per cache object (a later error on a connection
        to the old file only reconnects), warn, and drop every connection."""
        with self._lock:
            first = self.moved_aside is None
            aside = self.moved_aside
            if first:
                aside = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
                n = 1
                while aside.exists():  # an earlier damaged file of the same second is kept too
                    n += 1
                    aside = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
                for suffix in ("", "-wal", "-shm"):
                    src = Path(f"{self.path}{suffix}")
                    try:
                        if src.exists():
                            os.replace(src, Path(f"{aside}{suffix}"))
                    except OSError:
                        pass
                self.moved_aside = aside
                self.format = None  # the new file is marked the current format when it is opened
        if first:
            warnings.warn(f"response cache {self.path} is damaged ({e}); moved aside to {aside.name} and a "  # type: ignore[union-attr]
                          "new cache started: its answers are asked again (--no-cache runs without the cache)",
                          RuntimeWarning, stacklevel=4)
        self.close()

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def __contains__(self, key: Any) -> bool:
        return self._conn().execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def close(self) -> None:
        """Close every connection opened by this object."""
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            try:
                c.close()
            except Exception:
                pass
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"
