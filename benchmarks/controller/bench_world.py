"""The default memory-world grid (issue 14 §1): 20 seeds x 300 steps x 13 policies, hashing encoder, 2 processes.

Usage::

    PYTHONPATH=src python benchmarks/controller/bench_world.py [--seeds 20] [--steps 300] [--workers 2] [--out runs/bench-world]
        [--set KEY=VALUE ...] [--mix ...]          # same world options as `janus bench world`

Prints the report (table with mean ± 95% CI per policy, paired comparisons for the paper's three claims, Fig. 4
checkpoints) and the wall time plus the CPU seconds of the worker processes: on a shared machine the CPU seconds / 2 is
the wall time the grid takes on 2 idle cores.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time

from janus_memory.bench.cli import add_world_parser, policies_from_args, world_config_from_args
from janus_memory.bench.grid import run_grid
from janus_memory.bench.report import write_report


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench_world")
    sub = p.add_subparsers(dest="cmd")
    add_world_parser(sub)
    args = p.parse_args(["world", *(argv if argv is not None else sys.argv[1:])])
    config = world_config_from_args(args)
    specs = policies_from_args(args)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    t0 = time.time()
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    s0 = resource.getrusage(resource.RUSAGE_SELF)
    result = run_grid(config, seeds, specs, workers=args.workers)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    s1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) + (s1.ru_utime + s1.ru_stime - s0.ru_utime - s0.ru_stime)
    rep = write_report(result, args.out, plots=not args.no_plots)
    print(rep["markdown"])
    print(f"grid: {len(seeds)} seeds x {config.n_steps} steps x {len(specs)} policies; wall {time.time() - t0:.1f} s; "
          f"CPU {cpu:.1f} s (= {cpu / 2:.1f} s on 2 idle cores)")
    print(f"report: {rep['report']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
