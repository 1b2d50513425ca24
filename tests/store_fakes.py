"""A run-store connection whose COMMIT fails at one step (crash safety tests of the store's texts and rows), and the
smallest fake-backend run the run-folder tests make."""
from __future__ import annotations

import sqlite3


class FailingCommit:
    """The connection, except that the COMMIT of step ``fail_at`` fails (rolled back, "disk I/O error") after the
    step's rows were written. The step is read from RunStore.commit_step's insert into ``steps`` (method, step, ...)."""

    def __init__(self, db, fail_at: int):
        self._db, self.fail_at, self.step = db, fail_at, None

    def execute(self, sql, *a):
        if sql.startswith("INSERT OR REPLACE INTO steps"):
            self.step = a[0][1]
        if sql == "COMMIT" and self.step == self.fail_at:
            self._db.execute("ROLLBACK")
            raise sqlite3.OperationalError("disk I/O error")
        return self._db.execute(sql, *a)

    def __getattr__(self, name):
        return getattr(self._db, name)


def tiny_run_config(out, **kw):
    """A three-step fake-backend GSM8K run into ``out`` with Janus on every step after one (the run-folder tests)."""
    from janus_memory.settings.config import RunConfig

    base = dict(backend="fake", dataset="gsm8k", stream_size=3, test_size=1, encoder="hashing", out=str(out),
                janus={"warmup": 1, "coverage_size": 1, "boundary_size": 1, "fresh_size": 1})
    base.update(kw)
    return RunConfig(**base)
