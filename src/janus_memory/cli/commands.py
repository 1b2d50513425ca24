"""The other commands of `janus`: model fetch / path, sweep, grid, report, view, memory diff and bench world (each
`_name(args, console) -> exit code`).
"""
from __future__ import annotations

import sys
import time

from ..errors import ConfigError
from .run_command import _config_from_args, _plain, warnings_only


def _model_fetch(args, console) -> int:
    from ..llm.model_fetch import ModelFetchError, fetch_model, fetch_test_model

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


def _sweep(args, console) -> int:
    from ..run.experiment import validate_names
    from ..sweep.sweep import load_grid_cells, run_sweep

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
    from ..run.experiment import validate_names
    from ..sweep.grid import paper_grid, run_grid, stream_order_grid

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
    from .checks import grid_preflight

    grid_preflight(base, seeds)  # data of every seed and a writable --out root, before any cell starts
    cells = paper_grid(base.dataset, base, updaters, seeds, baselines=not args.no_baselines,
                       trigger_ablation=not args.no_trigger_ablation, evalset_ablation=not args.no_evalset_ablation)
    if args.stream_order:
        cells += stream_order_grid(base.dataset, base, updaters[:1])
    try:
        res = run_grid(cells=cells, executor=args.executor, workers=args.workers, address=args.address,
                       log=warnings_only(_plain(console)) if args.quiet else _plain(console))
    except (ValueError, ImportError) as e:
        raise ConfigError(str(e)) from e
    rc = _print_results(res["results"], console)
    console.print(f"grid root: {res['root']}  (janus report {res['root']})", markup=False)
    return rc


def _report(args, console) -> int:
    from ..report.console import print_report
    from ..report.report import build_report

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
    from ..view.page import existing_page, view_path, write_view

    before = existing_page(view_path(args.dirs, args.out))
    path, data = write_view(args.dirs, args.out)
    steps = sum(m["n"] for r in data["runs"] for m in r["methods"])
    console.print(f"view: {path}  ({len(data['runs'])} run(s), {steps:,} method steps, "
                  f"{path.stat().st_size / 1024:,.0f} KiB; open it in a browser)", markup=False, soft_wrap=True)
    from ..errors import printable

    if before:
        console.print(printable(f"replaced the page that was there ({before}); --out FILE writes another"),
                      markup=False, soft_wrap=True)
    for line in data["unfinished"]:
        console.print(printable(f"not in the view: {line}"), markup=False, soft_wrap=True)
    for run in data["runs"]:
        if run.get("models_warning"):
            console.print(printable(f"warning: {run['path']}: {run['models_warning']}"), markup=False, soft_wrap=True)
    for d in data.get("unchecked", []):
        console.print(printable(f"unchecked in the view: {d} has no run.sqlite; its numbers are its files', not "
                                "checked against the run's database"), markup=False, soft_wrap=True)
    if args.serve:
        from ..view.serve import serve

        return serve(path, args.port, say=lambda m: console.print(m, markup=False, soft_wrap=True))
    return 0


def _memory(args, console) -> int:
    """Memory texts are a model's: their control characters are shown escaped (errors.printable)."""
    from ..errors import printable
    from ..report.memdiff import cross_method_diff, memory_diff

    if args.methods:
        if args.step_b is not None or args.method:
            raise ConfigError("--methods compares two methods at one step: give one step and no --method")
        print(printable(cross_method_diff(args.run_dir, args.step_a, tuple(args.methods), context=args.context)),
              end="")
        return 0
    if args.step_b is None:
        raise ConfigError("give two steps (janus memory diff RUN STEP_A STEP_B) or one step and --methods BASE OTHER")
    print(printable(memory_diff(args.run_dir, args.step_a, args.step_b, args.method, context=args.context)))
    return 0


def _model_path(args, console) -> int:
    from ..llm.model_fetch import resolve_model_path

    print(resolve_model_path(None))
    return 0


def _bench_world(args, console) -> int:
    from ..bench.cli import run_world

    return run_world(args)
