"""Run a grid of seeds x policies in the memory world (one process per seed batch) and collect the results.

Within a seed every policy sees the same world (stream, test set, solver luck) and the same proposal stream; the
encoder is built once per process and its LRU is shared by all policies of a seed (embeddings are deterministic, so
sharing changes nothing but the time). Policies with ``match`` run after their reference on the same seed.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from .metrics import aggregate, episode_metrics
from .policies import PolicySpec, run_episode
from .world import World, WorldConfig

_ENCODERS: dict = {}


def _encoder(spec: str):
    enc = _ENCODERS.get(spec)
    if enc is None:
        from janus_memory.encoders import get_encoder

        enc = _ENCODERS[spec] = get_encoder(spec, lru_size=1 << 15)
    return enc


def order_policies(specs: list[PolicySpec]) -> list[PolicySpec]:
    """References first; raises ValueError on duplicate names or a missing/matched reference."""
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate policy names: {names}")
    by = {s.name: s for s in specs}
    for s in specs:
        if s.match:
            ref = by.get(s.reference)
            if ref is None or ref.match:
                raise ValueError(f"policy {s.name!r} matches {s.reference!r}, which is not an unmatched policy here")
    return [s for s in specs if not s.match] + [s for s in specs if s.match]


def run_seed(config: WorldConfig, seed: int, specs: list[PolicySpec], keep_arrays: bool = True) -> dict:
    """All policies on one seed. Returns {"seed", "metrics": {policy: dict}, "traj": {policy: acc array}}.

    BLAS/OpenMP pools are limited to one thread: k-means on a few hundred points gains nothing from threads, and
    spinning OpenMP threads on a busy 2-core machine cost several times the work itself.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return _run_seed(config, seed, specs, keep_arrays)


def _run_seed(config: WorldConfig, seed: int, specs: list[PolicySpec], keep_arrays: bool) -> dict:
    world = World(config, seed)
    enc = _encoder(config.encoder)
    task_emb = enc.encode([t.text for t in world.stream])

    def embed(text: str) -> np.ndarray:
        return enc.encode([text])[0]

    ordered = order_policies(specs)
    if "oracle" not in {s.name for s in ordered}:
        ordered = [PolicySpec("oracle", "oracle")] + ordered
    eps, trig = {}, {}
    for s in ordered:
        ep = run_episode(world, s, embed, task_emb, trig.get(s.reference))
        eps[s.name] = ep
        trig[s.name] = int(ep["triggered"].sum())
    oracle_final = float(eps["oracle"]["acc"][-1])
    wanted = {s.name for s in specs}
    metrics, traj = {}, {}
    for s in ordered:
        if s.name not in wanted:
            continue
        warm = s.config.warmup if s.kind == "janus" else None
        metrics[s.name] = episode_metrics(eps[s.name], oracle_final, warm)
        if keep_arrays:
            traj[s.name] = eps[s.name]["acc"]
    return {"seed": seed, "metrics": metrics, "traj": traj}


def _worker(args):
    config, seed, specs = args
    return run_seed(config, seed, specs)


@dataclass
class GridResult:
    config: WorldConfig
    seeds: list[int]
    policies: list[str]
    per_seed: dict[str, list[dict]]  # policy -> metrics per seed (seed order)
    traj: dict[str, np.ndarray]  # policy -> (n_seeds, n_steps) true accuracy of the deployed memory
    wall_s: float

    @property
    def agg(self) -> dict:
        return aggregate(self.per_seed)


def run_grid(config: WorldConfig, seeds: list[int], specs: list[PolicySpec], workers: int = 2,
             progress=None) -> GridResult:
    """Every policy on every seed; ``workers`` > 1 uses a process pool (one task per seed). ``progress(done, total,
    seconds)`` is called after each seed's result arrives (in seed order), so a long grid is never silent."""
    t0 = time.time()
    order_policies(specs)  # validate before starting workers
    jobs = [(config, int(s), specs) for s in seeds]
    outs = []

    def arrived(out) -> None:
        outs.append(out)
        if progress is not None:
            progress(len(outs), len(jobs), time.time() - t0)

    if workers > 1 and len(jobs) > 1:
        import multiprocessing as mp

        ctx = mp.get_context("fork" if os.name == "posix" else "spawn")
        with ctx.Pool(min(workers, len(jobs))) as pool:
            for out in pool.imap(_worker, jobs, chunksize=1):
                arrived(out)
    else:
        for j in jobs:
            arrived(_worker(j))
    names = [s.name for s in specs]
    per_seed = {n: [o["metrics"][n] for o in outs] for n in names}
    traj = {n: np.stack([o["traj"][n] for o in outs]) for n in names}
    return GridResult(config, [int(s) for s in seeds], names, per_seed, traj, time.time() - t0)
