"""Opening the shared SQLite caches while other processes open the same new file: the steps SQLite does not wait on
(switching to WAL, creating the table) are retried, so sweep workers starting together never see "database is
locked"; other errors still pass at once."""
from __future__ import annotations

import multiprocessing as mp
import sqlite3

import numpy as np
import pytest

from janus_memory.encoders import sqlite_wal
from janus_memory.encoders.base import EmbeddingDiskCache
from janus_memory.encoders.sqlite_wal import connect_shared, retry_busy
from janus_memory.llm.cache import CacheError, ResponseCache
from janus_memory.values import ChatResult


def test_retry_busy_runs_again_until_the_step_passes():
    calls, pauses = [], []

    def step():
        calls.append(1)
        if len(calls) < 4:
            raise sqlite3.OperationalError("database is locked")
        return "done"

    assert retry_busy(step, timeout=10.0, sleep=pauses.append) == "done"
    assert len(calls) == 4 and len(pauses) == 3
    assert all(0 < p <= 0.25 * 1.5 for p in pauses)


def test_retry_busy_gives_up_at_the_deadline_with_the_last_error():
    def step():
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        retry_busy(step, timeout=0.0, sleep=lambda s: None)


def test_retry_busy_passes_other_errors_at_once():
    calls = []

    def step():
        calls.append(1)
        raise sqlite3.OperationalError("no such table: x")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry_busy(step, timeout=10.0, sleep=lambda s: None)
    assert len(calls) == 1


class _LockedAtFirst:
    """A connection whose first ``n`` journal-mode switches and BEGIN IMMEDIATEs fail as a racing opener makes them."""

    def __init__(self, con: sqlite3.Connection, n: int):
        self.con, self.left = con, {"PRAGMA journal_mode=WAL": n, "BEGIN IMMEDIATE": n}

    def execute(self, sql, *args):
        if self.left.get(sql, 0) > 0:
            self.left[sql] -= 1
            raise sqlite3.OperationalError("database is locked")
        return self.con.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.con, name)


def _racing_connect(monkeypatch, n: int) -> list:
    made: list = []
    real = sqlite3.connect

    def connect(*a, **k):
        made.append(_LockedAtFirst(real(*a, **k), n))
        return made[-1]

    monkeypatch.setattr(sqlite_wal.sqlite3, "connect", connect)
    monkeypatch.setattr(sqlite_wal.time, "sleep", lambda s: None)
    return made


def test_both_caches_open_through_a_race_and_work(tmp_path, monkeypatch):
    made = _racing_connect(monkeypatch, 3)
    cache = ResponseCache(tmp_path / "rc")
    cache.put("k", ChatResult(text="42"))
    assert cache.get("k").text == "42" and len(cache) == 1
    cache.close()
    emb = EmbeddingDiskCache(tmp_path / "ec")
    emb.put_many([("a", np.array([1.0, 2.0], np.float32))])
    assert emb.get_many(["a"])["a"].tolist() == [1.0, 2.0]
    emb.close()
    assert len(made) == 2 and all(c.left == {"PRAGMA journal_mode=WAL": 0, "BEGIN IMMEDIATE": 0} for c in made)
    mode = sqlite3.connect(tmp_path / "rc" / "responses.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_a_file_that_is_not_sqlite_still_fails_at_once_with_one_line(tmp_path):
    bad = tmp_path / "c"
    bad.mkdir()
    (bad / "responses.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(CacheError, match=r"responses.sqlite is unusable \(file is not a database\)"):
        ResponseCache(bad)


def test_connect_shared_closes_its_connection_when_the_schema_is_wrong(tmp_path):
    with pytest.raises(sqlite3.OperationalError, match="syntax error"):
        connect_shared(tmp_path / "x.sqlite", "CREATE TABLE IF NOT EXISTS (", timeout=1.0)


def _open_together(path: str, barrier, q) -> None:
    barrier.wait()
    try:
        c = ResponseCache(path)
        c.put(f"k{len(c)}", ChatResult(text="x"))
        c.close()
        e = EmbeddingDiskCache(path)
        e.put_many([("a", np.zeros(2, np.float32))])
        e.close()
        q.put("ok")
    except Exception as e:  # reported to the parent, which asserts on it
        q.put(f"{type(e).__name__}: {e}")


def test_six_processes_opening_one_new_cache_at_once_all_succeed(tmp_path):
    ctx = mp.get_context("fork")
    outcomes = []
    for trial in range(8):
        b, q = ctx.Barrier(6), ctx.Queue()
        ps = [ctx.Process(target=_open_together, args=(str(tmp_path / f"t{trial}"), b, q)) for _ in range(6)]
        for p in ps:
            p.start()
        outcomes += [q.get(timeout=120) for _ in ps]
        for p in ps:
            p.join(timeout=60)
    assert outcomes == ["ok"] * 48


def _hold_write_lock(path) -> sqlite3.Connection:
    holder = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    return holder


def test_an_answer_that_cannot_be_stored_warns_once_and_the_run_goes_on(tmp_path):
    cache = ResponseCache(tmp_path, busy_timeout=0.2)
    cache.put("a", ChatResult(text="1"))
    holder = _hold_write_lock(tmp_path / "responses.sqlite")
    with pytest.warns(RuntimeWarning, match=r"an answer could not be stored \(database is locked\); the run goes on"):
        cache.put("b", ChatResult(text="2"))
    cache.put("c", ChatResult(text="3"))  # warned once only (pytest would fail on an unexpected second warning below)
    assert cache.get("a").text == "1" and cache.get("b") is None  # reads still work under the writer's lock
    assert (cache.writes, cache.write_failures) == (1, 2)
    holder.execute("COMMIT")
    holder.close()
    cache.put("b", ChatResult(text="2"))
    assert cache.get("b").text == "2" and cache.writes == 2
    cache.close()


def test_a_cache_locked_at_start_says_so(tmp_path):
    ResponseCache(tmp_path).close()
    con = sqlite3.connect(str(tmp_path / "responses.sqlite"), isolation_level=None)
    con.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(CacheError) as e:
            ResponseCache(tmp_path, busy_timeout=0.2)
    finally:
        con.execute("ROLLBACK")
        con.close()
    assert str(e.value) == (f"response cache {tmp_path / 'responses.sqlite'} is locked by another process (waited "
                            "0.2 s): run again when it is done, or pass another --cache-dir, or --no-cache")


@pytest.mark.parametrize("make,why", [
    (lambda d: (d / "embeddings.sqlite").write_bytes(b"text, not a database" * 50), "file is not a database"),
    (lambda d: (d / "embeddings.sqlite").mkdir(), "unable to open database file"),
])
def test_an_unusable_embedding_cache_is_one_line(tmp_path, make, why):
    from janus_memory.errors import ConfigError

    make(tmp_path)
    with pytest.raises(ConfigError) as e:
        EmbeddingDiskCache(tmp_path)
    assert str(e.value) == (f"embedding cache {tmp_path / 'embeddings.sqlite'} is unusable ({why}): pass another "
                            "--cache-dir, or --no-cache")


def test_embeddings_that_cannot_be_stored_warn_once_and_are_not_lost_later(tmp_path):
    emb = EmbeddingDiskCache(tmp_path, busy_timeout=0.2)
    holder = _hold_write_lock(tmp_path / "embeddings.sqlite")
    with pytest.warns(RuntimeWarning, match=r"embeddings could not be stored \(database is locked\); the run goes on"):
        emb.put_many([("a", np.ones(2, np.float32))])
    emb.put_many([("b", np.ones(2, np.float32))])
    assert emb.write_failures == 2 and emb.get_many(["a", "b"]) == {}
    holder.execute("COMMIT")
    holder.close()
    emb.put_many([("a", np.ones(2, np.float32))])
    assert emb.get_many(["a"])["a"].tolist() == [1.0, 1.0] and len(emb) == 1
    emb.close()
