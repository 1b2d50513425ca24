"""Open an SQLite file shared by several processes at once (the response cache, the embedding cache): WAL journal,
a busy timeout, and a schema created under a write lock.

Two steps of opening do not wait on SQLite's busy handler and fail at once with "database is locked" while another
process is opening the same new file: switching the journal to WAL (it needs an exclusive lock) and a
``CREATE TABLE IF NOT EXISTS`` that reads the schema before it writes. Sweep workers starting together hit exactly
that. :func:`connect_shared` retries those steps until ``timeout`` seconds have passed, then lets the error through.

The two caches built on it (the response cache, the embedding cache) also share how a path names their file
(:func:`cache_file`), the one line an unusable file gets (:func:`open_failure`), and what a write that cannot be made
does (:class:`WriteFailures`: the run goes on, warned once).

It lives in encoders/ (the embedding cache) and the response cache (llm/cache.py) imports it from here: importing
``janus_memory.encoders`` costs about 0.15 s, ``janus_memory.llm`` (its backends, the openai SDK) about 0.8 s, which
`janus replay` and the other encoder-only commands would pay for nothing. Standard library only.
"""
from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def _is_busy(e: sqlite3.OperationalError) -> bool:
    return "locked" in str(e) or "busy" in str(e).lower()


def retry_busy(step: Callable[[], T], *, timeout: float, sleep: Callable[[float], None] = time.sleep) -> T:
    """``step()``, run again after a short randomised pause while it fails with SQLITE_BUSY/"database is locked",
    until ``timeout`` seconds have passed (then the last error is raised). Other errors pass at once."""
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            return step()
        except sqlite3.OperationalError as e:
            if not _is_busy(e) or time.monotonic() >= deadline:
                raise
        sleep(pause * (0.5 + random.random()))
        pause = min(pause * 2, 0.25)


def connect_shared(path: str | Path, schema: str, *, timeout: float = 30.0) -> sqlite3.Connection:
    """A connection to ``path`` in WAL mode with ``busy_timeout`` set and ``schema`` (one ``CREATE TABLE IF NOT
    EXISTS`` statement) applied, safe while other processes open the same file. Autocommit, usable from any thread
    (the caller serialises use of one connection)."""
    con = sqlite3.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
    try:
        con.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        retry_busy(lambda: con.execute("PRAGMA journal_mode=WAL").fetchone(), timeout=timeout)
        con.execute("PRAGMA synchronous=NORMAL")

        def create() -> None:
            con.execute("BEGIN IMMEDIATE")
            try:
                con.execute(schema)
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

        retry_busy(create, timeout=timeout)
    except BaseException:
        con.close()
        raise
    return con


SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")


def cache_file(path: str | os.PathLike, filename: str) -> Path:
    """The SQLite file a cache path names: ``path`` itself when it ends in .sqlite/.sqlite3/.db, else ``filename``
    inside the folder ``path``."""
    p = Path(path).expanduser()
    return p if p.suffix.lower() in SQLITE_SUFFIXES else p / filename


def open_failure(what: str, path: Path, e: BaseException, timeout: float) -> str:
    """The one line for a cache file that cannot be opened: locked by another process past ``timeout`` seconds, or
    unusable (not a database, no permission, a folder in its place), with the fix."""
    why = getattr(e, "strerror", None) or str(e).splitlines()[0]
    if "locked" in why:
        return (f"{what} {path} is locked by another process (waited {timeout:g} s): run again when it is done, or "
                f"pass another --cache-dir, or --no-cache")
    return f"{what} {path} is unusable ({why}): pass another --cache-dir, or --no-cache"


class WriteFailures:
    """Writes a cache could not make (another process holding the file past the busy timeout, a full disk): counted,
    the first warned as a RuntimeWarning saying what was ``lost`` and what a rerun does ``again``; the run goes on.
    Thread-safe."""

    def __init__(self, what: str, path: Path, lost: str, again: str):
        self.what, self.path, self.lost, self.again = what, path, lost, again
        self.count = 0
        self._lock = threading.Lock()

    def record(self, e: BaseException) -> None:
        with self._lock:
            self.count += 1
            first = self.count == 1
        if first:
            warnings.warn(f"{self.what} {self.path}: {self.lost} ({e}); the run goes on, and {self.again}",
                          RuntimeWarning, stacklevel=3)
