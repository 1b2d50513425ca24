"""What `janus run` / `janus demo` print after the summary tables, and the console every command prints to.

- test answers that could not be scored, per method: their ids and why (``unparsed``: no final answer found,
  ``truncated``: cut at the token limit, ``timeout`` / ``error``: the checker), and those scored only through the
  weak fallback (no final-answer marker);
- the run folder;
- the wall time from the start of the command (process start: interpreter and imports included) to its end, split
  into start-up (everything before the first step) and stream + test.
"""
from __future__ import annotations

import errno
import os
import sys
import time

_IMPORTED = time.time()


def process_started() -> float:
    """The time.time() at which this process started (Linux /proc), so the wall time printed at the end includes the
    interpreter start and imports; elsewhere the time this module was imported."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22 (starttime), counted after "comm)"
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        started = time.time() - (uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return _IMPORTED
    return started if started <= _IMPORTED else _IMPORTED


class OutputClosed(KeyboardInterrupt):
    """Standard output was closed by its reader (``janus run ... | head -3``: head exits after three lines). A run
    stops the way Ctrl-C stops it (every committed step is kept; the resume line goes to stderr; exit code 141,
    what a shell reports for a writer killed by SIGPIPE): a reader that has gone away wants no more output, and a
    run that went on would spend LLM calls for nobody, with the shell waiting for it."""


_STDOUT: dict[str, str | None] = {"problem": None}  # why stdout stopped taking output, when not a closed pipe (stdout_problem)


def stdout_problem() -> str | None:
    """After OutputClosed / BrokenPipeError: the words for what went wrong with stdout when it was not a pipe whose
    reader went away (``stdout is closed``: no file descriptor 1 at start; ``cannot write to stdout (No space left
    on device)``: /dev/full, a full disk); None for a closed pipe."""
    return _STDOUT["problem"]


def reset_stdout_problem() -> None:
    _STDOUT["problem"] = None


class GuardedStdout:
    """What sys.stdout is while a command runs: the real stdout, with its failures turned into the closed-pipe path.

    * Started with file descriptor 1 closed (``janus run ... >&-``: Python then sets sys.stdout to None): fd 1 is
      pointed at /dev/null, so no file the run opens later takes it, and every write raises BrokenPipeError, as a
      pipe whose reader has gone would.
    * A write or flush that fails with any other OSError (``>/dev/full``, a full disk, an I/O error): the error is
      recorded for the stderr line and the command stops as on a closed pipe (output_closed: a run keeps its
      committed steps and can be resumed). Errors of files other than stdout are not touched, as they never pass
      through here.
    """

    def __init__(self, inner):
        self._inner = inner
        self.silenced = False

    @classmethod
    def install(cls) -> "GuardedStdout":
        inner = sys.stdout
        if inner is None:
            _STDOUT["problem"] = "stdout is closed"
            try:
                _devnull_on(1)
            except OSError:
                pass
        guard = cls(inner)
        sys.stdout = guard
        return guard

    def uninstall(self) -> None:
        if sys.stdout is self:
            sys.stdout = self._inner

    def write(self, text: str) -> int:
        if self.silenced:
            return len(text)
        if self._inner is None:
            raise BrokenPipeError(errno.EPIPE, "stdout is closed")
        return self._guarded(self._inner.write, text) or len(text)

    def flush(self) -> None:
        if self._inner is not None and not self.silenced:
            self._guarded(self._inner.flush)

    def _guarded(self, call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as e:
            _STDOUT["problem"] = f"cannot write to stdout ({e.strerror or e})"
            output_closed()  # returns only inside an event loop, where the stop comes at the loop's next callback
            return None

    def fileno(self) -> int:
        return 1 if self._inner is None else self._inner.fileno()

    def isatty(self) -> bool:
        return self._inner is not None and self._inner.isatty()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:
        return getattr(self._inner, "encoding", None) or "utf-8"

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


def silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null, so no later write or the interpreter's last flush fails again
    ("Exception ignored ... BrokenPipeError"); Python's own advice for a closed pipe."""
    if isinstance(sys.stdout, GuardedStdout):
        sys.stdout.silenced = True
    try:
        _devnull_on(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's capture): nothing to redirect
        pass


def _devnull_on(fd: int) -> None:
    """Point file descriptor ``fd`` at /dev/null. When ``fd`` is closed, opening /dev/null takes its number itself."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    if devnull != fd:
        os.dup2(devnull, fd)
        os.close(devnull)


def output_closed() -> None:
    """After a write to a closed stdout: silence it and raise OutputClosed (inside an LLM call's event loop: at the
    loop's next callback, like a signal, interrupts.py)."""
    from ..interrupts import raise_interrupt

    silence_stdout()
    raise_interrupt(OutputClosed)


def make_console():
    """The console of every command. On a terminal: its width (tables are built to fit 80 columns). Not on a
    terminal (``| cat``, ``| tee``, a file): so wide that no table cell, header or line is ever cut or wrapped.
    A closed stdout (``| head``) raises OutputClosed instead of rich's SystemExit(1). No emoji codes: user text such
    as ``--encoder hashing:abc:`` is printed as written (rich turned ``:abc:`` into an emoji)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:  # rich >= 13.4 calls it on BrokenPipeError
            self.quiet = True
            output_closed()

    return _Console(stderr=False, width=None if sys.stdout is not None and sys.stdout.isatty() else 100_000, emoji=False)


def closing_lines(summary: dict, say, t0: float, first_step: float | None) -> None:
    """Test answers that could not be scored (per method, ids and why), the run folder and the wall time."""
    from ..report.summary_table import unscored_answer_lines
    from ..store.reader import RunReader

    reader = RunReader(summary["run_dir"])
    for method in summary["methods"]:
        try:
            records = reader.jsonl(f"{method}/test.jsonl")
        except (OSError, ValueError):  # the summary above is what matters; an unreadable file is named, not fatal
            say(f"[{method}] test: {method}/test.jsonl could not be read to list unscored answers")
            continue
        for line in unscored_answer_lines(method, records):
            say(line)
    say(f"run folder: {summary['run_dir']}")
    # one clock: the summary's wall_s (counted from the command's start to the run's end, run_experiment(started=)),
    # the number `janus view` shows; the tables printed after the run's end are not in it
    total = summary.get("wall_s")
    say(wall_line(float(total) if isinstance(total, (int, float)) else time.time() - t0,
                  None if first_step is None else first_step - t0, (summary.get("engine") or {}).get("load_s")))


def wall_line(total: float, startup: float | None, load_s: float | None = None) -> str:
    """'wall time: ...' from the start of the command to its end, split into start-up (imports, dataset, encoder,
    resume checks: everything before the first step) and stream + test (with the model load, which happens inside
    the first LLM call of the embedded backend)."""
    if startup is None:  # nothing was left to run (a resume of finished methods)
        return f"wall time: {total:.1f} s (start-up and writing the summary; no stream step or test was left)"
    load = f", including the model load {load_s:.1f} s" if load_s else ""
    return (f"wall time: {total:.1f} s from start to end = start-up {startup:.1f} s (imports, dataset, encoder, "
            f"before the first step) + stream and test {total - startup:.1f} s{load}")


