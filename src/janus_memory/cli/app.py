"""Command-line interface: ``janus demo | run | model fetch|path | memory diff | report | view | grid | sweep``.

User-facing errors (janus_memory.errors.JanusError and its subclasses) print one line ``error: ...`` naming the fix and
exit with code 2 (never a traceback). The parser is in cli/parser.py.

Exit codes: 0 done, 1 a grid/sweep cell failed, 2 a user error, 130 Ctrl-C, 143 SIGTERM, 141 standard output closed
by its reader (``| head``): a run then stops like Ctrl-C at its next line of output, keeping every committed step and
printing the resume line on stderr (cli/closing.OutputClosed says why it stops rather than runs on unseen).
"""
from __future__ import annotations

import os
import sys
import time
import warnings

from ..errors import JanusError, printable
from . import signals as cli_signals
from .closing import (
    GuardedStdout,
    OutputClosed,
    make_console,
    process_started,
    reset_stdout_problem,
    silence_stdout,
    stdout_problem,
)
from .commands import _bench_world, _grid, _memory, _model_fetch, _model_path, _report, _sweep, _view
from .parser import EXIT_USAGE, build_parser
from .run_command import _config_from_args, _run, run_command  # noqa: F401  (re-exported)

__all__ = ["EXIT_USAGE", "build_parser", "main"]


def _exit_if_threads_linger(code: int = 130) -> None:
    """After Ctrl-C, an embedded llama.cpp generation may still run in a worker thread that cannot be aborted; joining it
    at interpreter exit would hang for minutes. Every committed step is in SQLite already (one transaction per step) and
    the run-folder lock is released by the kernel, so leave at once."""
    import threading

    if any(t.is_alive() and t is not threading.main_thread() and not t.daemon for t in threading.enumerate()) or any(
            t.is_alive() and t.name.startswith("janus-llama") for t in threading.enumerate()):
        try:
            sys.stdout.flush()
        except OSError:  # a closed pipe (silenced already): nothing more to say there
            pass
        sys.stderr.flush()
        os._exit(code)


def _dispatch(args, console):
    """The command function for ``args``, or None (print help)."""
    t0 = getattr(args, "started", None)  # main(): when the process (or the in-process call) started
    if args.cmd == "demo":  # two acts: scripted (seconds), then the real model (cli/demo.py)
        from .demo import run_demo

        return lambda a, c: run_demo(a, c, t0)
    if args.cmd == "run":
        return lambda a, c: run_command(a, c, t0)
    if args.cmd == "memory":
        return _memory if args.memory_cmd == "diff" else None
    if args.cmd == "model":
        return {"fetch": _model_fetch, "path": _model_path}.get(args.model_cmd)
    if args.cmd == "replay":
        from ..bench.replay_cli import run_replay

        return lambda a, c: run_replay(a)
    if args.cmd == "bench":
        return _bench_world if args.bench_cmd == "world" else None
    return {"report": _report, "view": _view, "sweep": _sweep, "grid": _grid}.get(args.cmd)


def main(argv: list[str] | None = None) -> int:
    guard = GuardedStdout.install()  # a closed or unwritable stdout ends as a closed pipe does (cli/closing)
    shown = warnings.formatwarning  # not showwarning: catch_warnings(record=True) and pytest.warns still record
    warnings.formatwarning = _format_warning
    try:
        return _main(argv)
    finally:
        warnings.formatwarning = shown
        guard.uninstall()
        reset_stdout_problem()


_PYTHON_FORMAT = warnings.formatwarning
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _format_warning(message, category, filename, lineno, line=None) -> str:
    """A warning of this package is one ``warning: ...`` line (the message is written for the user; the source file
    and line of Python's format are not); a library's warning keeps Python's format."""
    if os.path.abspath(filename).startswith(_PACKAGE + os.sep):
        return f"warning: {message}\n"
    return _PYTHON_FORMAT(message, category, filename, lineno, line)


def _main(argv: list[str] | None) -> int:
    from ..registry import add_plugin_modules

    started = process_started() if argv is None else time.time()  # the `janus` command: from process start
    console = make_console()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        args.started = started
    except (OutputClosed, BrokenPipeError):  # `janus run --help | head`, or `>/dev/full`
        silence_stdout()
        if stdout_problem():
            print(f"error: {stdout_problem()}", file=sys.stderr)
        return _closed_code()
    except KeyboardInterrupt:  # Ctrl-C while the command starts (imports can take seconds on a busy machine)
        print("interrupted before anything was started", file=sys.stderr)
        return 130
    where = getattr(args, "resume", None) or (getattr(args, "out", None) if args.cmd in ("run", "demo", "grid") else None)
    restore_signals = cli_signals.install(args.cmd)
    try:
        add_plugin_modules(args.plugin)
        command = _dispatch(args, console)
        if command is None:  # `janus`, `janus memory`, `janus model` without a subcommand: that level's help
            parser._janus_subparsers.get(args.cmd, parser).print_help()  # type: ignore[attr-defined]  # build_parser gives a Parser
            return EXIT_USAGE
        rc = command(args, console)
        sys.stdout.flush()  # the last buffered output: a closed pipe shows here, not as "Exception ignored" at exit
        return rc
    except (KeyboardInterrupt, BrokenPipeError) as e:
        where = getattr(args, "run_folder", None) or where  # the run folder, also when --out was left at its default
        closed = not isinstance(e, KeyboardInterrupt) or isinstance(e, OutputClosed)
        if closed:
            silence_stdout()  # a plain print() into the closed pipe raises BrokenPipeError itself
        line = _stop_line(args, argv, where, closed)
        if line:
            print(line, file=sys.stderr)
        code = _closed_code() if closed else 143 if cli_signals.terminated() else 130
        _exit_if_threads_linger(code)
        return code
    except JanusError as e:
        where = getattr(args, "run_folder", None) or where
        # a server's error body or a model's text may be in it: control characters shown escaped (errors.printable)
        print(f"error: {printable(e.user_message(where if _resumable(where) else None), one_line=True)}",
              file=sys.stderr)
        return EXIT_USAGE
    finally:
        restore_signals()


EXIT_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a writer stopped by a closed pipe


def _closed_code() -> int:
    """The exit code after stdout stopped taking output: 141 for a closed pipe or a closed stdout (what a shell
    reports for a writer killed by SIGPIPE); 2, an error, when writing to it failed (``>/dev/full``, disk full)."""
    problem = stdout_problem()
    return EXIT_USAGE if problem and problem.startswith("cannot write") else EXIT_PIPE


def _stop_line(args, argv, where: str | None, closed: bool) -> str | None:
    """The stderr line after Ctrl-C/SIGTERM (``closed`` False) or a closed stdout (``| head``: ``closed``)."""
    problem = stdout_problem() if closed else None  # stdout closed from the start, or not writable (disk full)
    why = problem or ("stdout was closed (broken pipe)" if closed else "interrupted")
    if args.cmd in ("grid", "sweep"):
        return _grid_hint(args.cmd, sys.argv[1:] if argv is None else argv, why)
    if args.cmd not in ("run", "demo"):  # report, memory diff ...: nothing to keep or resume
        return f"error: {problem}" if problem else None if closed else "interrupted"
    if _resumable(where):
        return f"{why}: every committed step is kept; continue with `janus run --resume {where}`"
    if closed and _finished(where):
        return f"{why}: the run finished; its results are in {where} (`janus report {where}`)"
    return f"{why} before the run was set up; nothing to resume: start it again"


def _grid_hint(cmd: str, argv: list[str], why: str = "interrupted") -> str:
    """The one line after Ctrl-C in `janus grid` / `janus sweep`: the same command continues the grid."""
    import shlex

    return (f"{why}: every committed step is kept; run the same command again to continue (finished runs are "
            f"skipped, unfinished ones resume): janus {shlex.join(argv)}")


def _finished(where: str | None) -> bool:
    """Whether ``where`` holds a finished run (COMPLETE written)."""
    try:
        from ..store.reader import RunReader

        return bool(where) and RunReader(where).finished  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - an unreadable folder: no claim
        return False


def _resumable(where: str | None) -> bool:
    """Whether ``where`` holds an unfinished run with its config stored (a `--resume` hint would work)."""
    if not where:
        return False
    try:
        from ..store.reader import RunReader

        r = RunReader(where)
        return r.has_db and not r.finished and r.meta("config") is not None
    except Exception:  # an unreadable folder: no hint rather than a second error
        return False


if __name__ == "__main__":
    sys.exit(main())
