"""Exclusive lock on a run folder, held for the run's whole life (issue 12, item 1).

Two ``janus run`` processes on one folder (a new run and a ``--resume``, two resumes, or two new runs racing to create
the folder) corrupt the memory-version table and can delete each other's database. :class:`RunLock` prevents that:

* The lock is ``fcntl.flock(LOCK_EX | LOCK_NB)`` on ``<run folder>/.janus.lock``. The kernel drops it when the holding
  process exits for any reason (SIGKILL included), so a killed run stays resumable: no stale-lock cleanup exists or
  is needed. The holder writes ``pid <n>`` into the file so a refused process can name it.
* Creation phase: the run folder may not exist yet. ``acquire`` first takes a short blocking ``flock`` on
  ``<parent>/.janus.lock`` (a few milliseconds: mkdir + opening and locking the folder's lock file), so two processes
  cannot both see "no run here" and go on to create (or clear) the same folder; the second one then finds the folder
  locked and refuses. Everything a run writes or deletes in its folder must happen after ``acquire`` returns.
* After locking, the lock file's inode is checked against the path (a folder cleared by ``rm -rf`` while we waited
  would otherwise give two holders of two different files); on a mismatch the lock is retried.
* Forked children (the math-verify worker, ...) inherit the open file description and would keep the lock alive
  after the run dies. An ``os.register_at_fork`` hook closes the inherited descriptor in every child (closing a
  duplicate never releases the parent's lock; only ``LOCK_UN`` or closing the last reference does).
* The lock file itself is never deleted: deleting it would let a third process lock a new inode while the first
  holder still runs. ``RunStore``'s clean-up removes only its own files, so the lock file survives ``--overwrite``.

Usage (the runner holds it from before ``RunStore.check_new/create/open_existing`` until the process ends)::

    with RunLock(out_dir):
        store = RunStore.create(out_dir) ...
"""
from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
import weakref
from pathlib import Path

LOCK_NAME = ".janus.lock"

_LIVE: weakref.WeakSet[RunLock] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


class RunLocked(RuntimeError):
    """Another live process holds the run folder. ``holder_pid`` is its pid (None if it had not written it yet)."""

    def __init__(self, message: str, holder_pid: int | None):
        super().__init__(message)
        self.holder_pid = holder_pid


def _read_pid(fd: int) -> int | None:
    try:
        raw = os.pread(fd, 64, 0).decode("ascii", "replace").split()
    except OSError:
        return None
    if len(raw) >= 2 and raw[0] == "pid" and raw[1].isdigit():
        return int(raw[1])
    return None


def _flock_ex_briefly(fd: int, tries: int = 10, pause_s: float = 0.02) -> None:
    """Non-blocking exclusive flock, retried for ~0.2 s: a :func:`holder_pid` probe holds a shared lock for
    microseconds and must not make a starting run refuse. Raises the last OSError when the lock stays taken."""
    for i in range(tries):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES) or i == tries - 1:
                raise
            time.sleep(pause_s)


def _open_lock_file(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)


class RunLock:
    """Exclusive, process-lifetime lock on one run folder (see the module docstring).

    Args:
        run_dir: the run folder (created, with its parents, if missing).
    Raises (from :meth:`acquire`): :class:`RunLocked` when another process holds it (one-line message naming the
    pid); ``OSError`` when the folder cannot be created or the lock file cannot be opened.
    """

    def __init__(self, run_dir: str | os.PathLike):
        self.run_dir = Path(run_dir).expanduser()
        self.path = self.run_dir / LOCK_NAME
        self._fd: int | None = None
        self._made_parent_lock = False
        self._made_lock = False  # this process created the folder's lock file (release_and_remove may take it away)

    @property
    def _parent(self) -> Path:
        """The folder above the run folder, from its absolute path: the parent of ``.`` is not ``.`` (a run in the
        current folder would otherwise lock its own lock file twice and refuse itself as "in use")."""
        return self.run_dir.absolute().parent

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> RunLock:
        if self._fd is not None:
            return self
        parent = self._parent
        parent.mkdir(parents=True, exist_ok=True)
        try:
            try:  # O_EXCL first: whether this process made the parent's lock file (release_and_remove takes it away)
                pfd: int | None = os.open(parent / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
                self._made_parent_lock = True
            except FileExistsError:
                pfd = _open_lock_file(parent / LOCK_NAME)
        except OSError:
            if not self.run_dir.is_dir():
                raise
            pfd = None  # an existing run folder under a read-only parent: nothing is created, no race to guard
        try:
            if pfd is not None:
                fcntl.flock(pfd, fcntl.LOCK_EX)  # creation phase: short, blocking
            self.run_dir.mkdir(exist_ok=True)
            self._fd = self._lock_folder()
        finally:
            if pfd is not None:
                os.close(pfd)  # releases the parent lock
        with _LIVE_LOCK:
            _LIVE.add(self)
        return self

    def _lock_folder(self) -> int:
        for _ in range(20):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
                self._made_lock = True
            except FileExistsError:
                fd = _open_lock_file(self.path)
            try:
                _flock_ex_briefly(fd)
            except OSError as e:
                pid = _read_pid(fd)
                os.close(fd)
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                who = f"process {pid}" if pid is not None else "another process"
                raise RunLocked(f"run folder {self.run_dir} is in use by {who} (another janus run or resume); "
                                f"wait for it to finish or stop it first", pid) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # the file was deleted/replaced between open and flock: lock the current one
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}\n".encode("ascii"), 0)
            return fd
        raise OSError(f"could not lock {self.path}: the lock file keeps being replaced")

    def release(self) -> None:
        """Release the lock (idempotent). The file stays; its pid line is cleared."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with _LIVE_LOCK:
            _LIVE.discard(self)
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def release_and_remove(self, top: Path | None) -> bool:
        """Release the lock and remove the run folder, and its parents up to ``top`` (the highest folder that this
        process created for it; None: the folder was there before), when the run folder holds nothing but its lock
        file: a run that failed before it wrote anything leaves no folder behind. In a folder that was there (or holds
        other files) a lock file this process created is removed, unless the folder holds a run (run.sqlite): a
        refused run leaves nothing of its own in a folder of yours. The parent lock is held meanwhile (as while
        creating), so no other process is between creating and locking the folder. Returns whether the folder was
        removed; anything left in it (another file, a folder another process made) keeps it, and the lock is
        released either way."""
        if self._fd is None:
            return False
        removed = False
        try:
            pfd: int | None = os.open(self._parent / LOCK_NAME, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            pfd = None
        try:
            if pfd is not None:
                fcntl.flock(pfd, fcntl.LOCK_EX)
            run_dir = self.run_dir.absolute()
            names = {p.name for p in run_dir.iterdir()}
            if top is None or names != {LOCK_NAME}:
                if self._made_lock and not names & {"run.sqlite", ".run.sqlite.setup", ".janus-overwritten"}:
                    self.path.unlink()
                    if self._made_parent_lock and (self._parent / LOCK_NAME).exists():
                        (self._parent / LOCK_NAME).unlink()
                return False
            top = Path(top).expanduser().absolute()
            if names == {LOCK_NAME}:
                self.path.unlink()
                run_dir.rmdir()
                removed = True
                d = run_dir.parent
                while (d == top or top in d.parents) and not {p.name for p in d.iterdir()} - {LOCK_NAME}:
                    if (d / LOCK_NAME).exists():
                        (d / LOCK_NAME).unlink()  # the parent lock made along with the folder
                    d.rmdir()
                    d = d.parent
                if self._made_parent_lock and (run_dir.parent / LOCK_NAME).exists():
                    (run_dir.parent / LOCK_NAME).unlink()  # made by this process in a folder that was there
        except OSError:
            pass  # whatever could not be removed stays; the run's own error is what the user needs to see
        finally:
            if pfd is not None:
                os.close(pfd)
            self.release()
        return removed

    def _forget_in_child(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)  # never LOCK_UN here: that would release the parent's lock too
            except OSError:
                pass

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"RunLock({str(self.run_dir)!r}, held={self.held})"


def holder_pid(run_dir: str | os.PathLike) -> int | None:
    """Pid of the live process holding ``run_dir`` (None when it is free). Does not create anything."""
    path = Path(run_dir).expanduser() / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return _read_pid(fd) or -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _after_fork_in_child() -> None:
    for lk in list(_LIVE):
        lk._forget_in_child()
    _LIVE.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)
