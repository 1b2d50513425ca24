"""A run-store connection whose COMMIT fails at one step (crash safety tests of the store's texts and rows)."""
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
