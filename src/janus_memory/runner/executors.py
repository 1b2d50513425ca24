"""Where the runs of a sweep/grid execute: local worker processes or a Ray cluster (runner/sweep.py chooses)."""
from __future__ import annotations

from collections.abc import Callable


def run_in_processes(run_one: Callable, items: list, workers: int, overwrite: bool,
                     done: Callable[[int, dict], None]) -> None:
    """``run_one(cfg_dict, info, overwrite)`` for every item in ``workers`` spawned processes; ``done(i, result)``."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawn: fresh interpreters (a forked child inherits the parent's locks and hung in testing); a calling script
    # needs the usual `if __name__ == "__main__":` guard. Plugins reach the children through $JANUS_PLUGINS.
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(items)), mp_context=ctx) as pool:
        futs = {pool.submit(run_one, d, info, overwrite): i for i, (d, info) in enumerate(items)}
        for f in as_completed(futs):
            i = futs[f]
            try:
                r = f.result()
            except Exception as e:  # noqa: BLE001 - a worker process died (killed, out of memory)
                r = {"out": items[i][0]["out"], "cell": items[i][1].get("cell"), "status": "failed",
                     "error": f"worker process failed: {type(e).__name__}: {e}", "test_accuracy": {}}
            done(i, r)


def run_on_ray(run_one: Callable, items: list, workers: int, address: str | None, overwrite: bool,
               done: Callable[[int, dict], None]) -> None:
    """The same on Ray (``address`` of a cluster, or a local instance with ``workers`` CPUs)."""
    try:
        import ray
    except ImportError as e:
        raise ImportError("executor 'ray' needs Ray: pip install 'janus-memory[ray]' (ray[default])") from e
    if not ray.is_initialized():
        if address:
            ray.init(address=address)
        else:
            ray.init(num_cpus=workers, include_dashboard=False)
    # resumable runs make retries safe: a retried task continues after the last committed step
    remote = ray.remote(num_cpus=1, max_retries=2)(run_one)
    refs = {remote.remote(d, info, overwrite): i for i, (d, info) in enumerate(items)}
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        for ref in ready:
            done(refs[ref], ray.get(ref))
