"""Persistent response cache: one SQLite file (WAL mode) per cache folder.

Key: ``sha256`` of the canonical JSON of ``{"backend": backend.identity, "messages": messages,
"params": every sampling parameter (None included), "sample": sample index}``. Two runs with the same
memory, task prompt, parameters and sample index get the same stored answer, so a temperature-0.7 run is
reproducible and a re-run costs no calls (this also removes server-side temperature-0 noise, C23).

Value: the normalised result (text, reasoning, finish_reason, usage, model) as JSON. Failures are never stored.
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
SCHEMA = "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL, backend TEXT, created REAL)"


class CacheError(Exception):
    """The response cache cannot be opened or created (a file where the folder should be, no permission, a file
    that is not an SQLite database). One-line message naming the path and the fix."""


def request_key(identity: str, req: ChatRequest, sample: int = 0) -> str:
    """Hex sha256 cache key of (backend identity, messages, all sampling params, sample index)."""
    payload = {
        "backend": identity,
        "messages": [dict(m) for m in req.messages],
        "params": req.params(),
        "sample": int(sample),
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


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
        self.path = cache_file(p, CACHE_FILENAME)
        self._failures = WriteFailures("response cache", self.path,
                                       "an answer could not be stored",
                                       "a rerun asks for such answers again")
        try:
            if self.path != p and p.exists() and not p.is_dir():
                raise CacheError(f"cache folder {p} is a file, not a folder: pass a folder (or a .sqlite file path) "
                                 f"with --cache-dir, or --no-cache")
            self.path.parent.mkdir(parents=True, exist_ok=True)
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
        return con

    def get(self, key: str) -> ChatResult | None:
        """The stored result with ``cached=True``, or None."""
        row = self._conn().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        with self._lock:
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        return result_from_dict(json.loads(row[0]), cached=True)

    def put(self, key: str, result: ChatResult, *, backend: str = "") -> None:
        """Store a successful result (first writer wins)."""
        value = json.dumps(result_to_dict(result), ensure_ascii=False, sort_keys=True)
        con = self._conn()
        try:
            con.execute(
                "INSERT OR IGNORE INTO responses (key, value, backend, created) VALUES (?, ?, ?, ?)",
                (key, value, backend, time.time()),
            )
        except sqlite3.OperationalError as e:  # the answer is paid for and returned; only its reuse is lost
            self._failures.record(e)
            return
        with self._lock:
            self.writes += 1

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
