"""`janus bench world`: the memory-world benchmark from the command line.

Hook into the main CLI with ``add_world_parser(bench_subparsers)``; the handler is ``run_world(args) -> exit code``.
"""
from __future__ import annotations

import argparse
import sys

from ..errors import printable
from .policies import default_policies, parse_policy
from .world import SETTING_TEXT, SETTINGS, WorldConfig, json_value, parse_mix


def add_world_parser(subparsers) -> argparse.ArgumentParser:
    w = subparsers.add_parser(
        "world", help="memory-world benchmark: policies vs ground-truth memory utility (no LLM)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="named settings (--setting):\n" + "\n".join(f"  {k:8s} {v}" for k, v in SETTING_TEXT.items()))
    w.add_argument("--setting", choices=sorted(SETTINGS), default="default",
                   help="a named world setting (listed below); --mix, --set and --steps apply over it")
    w.add_argument("--seeds", type=int, default=20, help="number of seeds (default 20): first-seed .. first-seed+n-1")
    w.add_argument("--first-seed", type=int, default=0, help="the first world seed (default 0)")
    w.add_argument("--steps", type=int, default=300, help="stream length (default 300)")
    w.add_argument("--policies", default=None,
                   help="comma-separated default policies (default: all of " +
                        ",".join(p.name for p in default_policies()) + ")")
    w.add_argument("--policy", action="append", default=[], metavar="NAME=janus:KEY=VALUE;...",
                   help="extra Janus policy with JanusConfig overrides, e.g. 'tau02=janus:tau=0.2' or "
                        "'rnd=janus:match=\"random\"' (repeatable)")
    w.add_argument("--mix", help="candidate mix, e.g. general=0.45,specific=0.15,overwrite=0.1,dump=0.03,reword=0.27")
    w.add_argument("--encoder", help="encoder spec (default hashing:1024; minilm works but is slower)")
    w.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="any WorldConfig field (value parsed as JSON), e.g. --set drift=0.9 --set eval_noise='\"fresh\"'")
    w.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    w.add_argument("--out", default="runs/bench-world", help="output folder (report.md, results.json, PNGs)")
    w.add_argument("--no-plots", action="store_true")
    return w


def world_config_from_args(args) -> WorldConfig:
    over: dict = {**SETTINGS[getattr(args, "setting", None) or "default"], "n_steps": args.steps}
    for item in args.set:
        k, sep, v = item.partition("=")
        if not sep:
            raise ValueError(f"--set {item!r} is not KEY=VALUE")
        over[k.strip()] = json_value(v)
    if args.mix:
        over["mix"] = parse_mix(args.mix)
    if args.encoder:
        over["encoder"] = args.encoder
    base = WorldConfig().to_dict()
    unknown = set(over) - set(base)
    if unknown:
        raise ValueError(f"unknown world setting(s): {sorted(unknown)}; known: {sorted(base)}")
    return WorldConfig.from_dict({**base, **over})


def policies_from_args(args) -> list:
    specs = default_policies()
    if args.policies:
        specs = [parse_policy(n.strip()) for n in args.policies.split(",") if n.strip()]
    specs += [parse_policy(p) for p in args.policy]
    return specs


def run_world(args) -> int:
    from .grid import run_grid
    from .report import write_report

    try:
        config = world_config_from_args(args)
        specs = policies_from_args(args)
        if args.seeds < 1 or args.workers < 1:
            raise ValueError("--seeds and --workers must be >= 1")
    except (ValueError, TypeError) as e:
        print(printable(f"error: {e}"), file=sys.stderr)
        return 2
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    try:
        def progress(done: int, total: int, seconds: float) -> None:  # stderr: the report on stdout stays clean
            print(f"bench world: seed {done}/{total} done, {seconds:.1f} s", file=sys.stderr, flush=True)

        result = run_grid(config, seeds, specs, workers=args.workers, progress=progress)
    except (ValueError, ImportError, FileNotFoundError) as e:  # bad settings, or an encoder that is not installed
        print(printable(f"error: {e}"), file=sys.stderr)
        return 2
    rep = write_report(result, args.out, plots=not args.no_plots)
    print(rep["markdown"])
    print(f"report: {rep['report']}" + (f"  plots: {', '.join(rep['plots'])}" if rep["plots"] else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (``python -m janus_memory.bench.cli world ...``)."""
    p = argparse.ArgumentParser(prog="janus bench")
    sub = p.add_subparsers(dest="bench_cmd")
    add_world_parser(sub)
    args = p.parse_args(argv)
    if args.bench_cmd != "world":
        p.print_help()
        return 2
    return run_world(args)


if __name__ == "__main__":
    sys.exit(main())
