"""The one base class of user-facing errors.

Every error a user can fix (a bad option, a missing file, an unusable run folder, an unreachable model server ...)
subclasses :class:`JanusError`; its message is one line naming the fix. The CLI catches ``JanusError`` once and prints
``error: <message>`` with exit code 2; anything else is a bug and keeps its traceback.
"""
from __future__ import annotations


class JanusError(Exception):
    """A problem the user can fix; ``str(e)`` is the one-line message."""

    def user_message(self, run_dir: str | None = None) -> str:
        """The line the CLI prints (``run_dir``: the run folder involved, for a resume hint)."""
        return str(self).split("\n")[0] if str(self) else type(self).__name__  # (a \r inside is escaped, not cut)


class ConfigError(JanusError, ValueError):
    """A configuration problem: unknown name, invalid value, missing file, unreachable endpoint.

    A value out of its allowed range also carries ``key`` (the settings key, e.g. ``llm.temperature`` or
    ``janus.tau``) and ``rule`` (``must be in [0, 2], got 5.0``), so the CLI can name the option that set it."""

    def __init__(self, message: str = "", *, key: str | None = None, rule: str | None = None):
        super().__init__(message)
        self.key = key
        self.rule = rule


class OutputError(JanusError, RuntimeError):
    """The output folder cannot be used (not writable, already finished, or not a resumable run)."""


class RunFolderError(JanusError, ValueError):
    """A folder given to report / memory diff / grid is not a (finished) run folder, or a requested item is absent."""


class StorageError(JanusError, OSError):
    """Writing the run folder failed (disk full, read-only, permissions); committed steps are kept."""

    def user_message(self, run_dir: str | None = None) -> str:
        """``run_dir``: the run folder when it holds a resumable run (config stored), else None."""
        if not run_dir:
            return f"cannot write the run folder ({self}); free space or fix permissions, then start the run again"
        return (f"cannot write {run_dir} ({self}); every committed step is kept: free space or fix permissions, then "
                f"continue with `janus run --resume {run_dir}`")


class DamagedStoreError(StorageError, RunFolderError):
    """A stored row of the run database does not read back (a memory or candidate text whose delta chain is broken
    or whose sha256 does not match): the database is damaged. Also a RunFolderError, so the readers' callers (report,
    memory diff, resume checks) treat it as an unusable folder."""

    def user_message(self, run_dir: str | None = None) -> str:
        return JanusError.user_message(self, run_dir)
