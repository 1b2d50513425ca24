"""Where the runs of a sweep/grid execute: local worker processes or a Ray cluster (sweep/sweep.py chooses).

Ctrl-C with local processes: a terminal sends SIGINT to the whole process group. A worker that is running a run
stops it (every committed step stays in its run.sqlite, so re-running the sweep resumes it) and reports it as
"interrupted"; an idle worker starts no further run. The parent cancels the runs not started yet, forwards SIGINT to
its workers (for a SIGINT sent to the parent alone), waits for them to leave and re-raises KeyboardInterrupt, so
the CLI prints its one-line hint and no worker prints a traceback.
"""
from __future__ import annotations

import os
import signal
from collections.abc import Callable

from janus_memory.interrupts import raise_interrupt, resent_from_finalizer

_STOP_WAIT_S = 60.0  # how long the parent waits for interrupted workers to leave before killing them
# per worker process; "budgets": {endpoint: llm.budget.SharedBudget} handed over by the parent (sweep.py)
_worker: dict = {"busy": False, "stopping": False, "budgets": {}}


def _worker_sigint(signum, frame) -> None:
    """SIGINT in a worker: stop the run in progress once (KeyboardInterrupt unwinds it: store closed, lock released);
    an idle worker starts no further run (one may already sit in its queue); the parent shuts the pool down."""
    if _worker["stopping"]:
        return
    if resent_from_finalizer(frame, signal.SIGINT):
        return
    _worker["stopping"] = True
    if _worker["busy"]:
        raise_interrupt()  # now, or at the event loop's next callback (interrupts.py)


def _worker_init(budgets: dict | None = None) -> None:
    signal.signal(signal.SIGINT, _worker_sigint)
    _worker["budgets"] = dict(budgets or {})


def endpoint_of(cfg_dict: dict) -> str | None:
    """The server a run sends its requests to (``llm.base_url`` of an ``openai`` run), else None: runs on one endpoint
    share its request budget (sweep.py)."""
    llm = cfg_dict.get("llm") or {}
    if llm.get("backend") != "openai" or not llm.get("base_url"):
        return None
    return str(llm["base_url"]).rstrip("/")


def endpoints(items: list[tuple[dict, dict]]) -> dict[str, int]:
    """{endpoint: its request budget}: the smallest ``llm.concurrency`` among the runs on it."""
    out: dict[str, int] = {}
    for d, _ in items:
        ep = endpoint_of(d)
        if ep is not None:
            c = int((d.get("llm") or {}).get("concurrency") or 1)
            out[ep] = min(out.get(ep, c), c)
    return out


def ray_share(items: list[tuple[dict, dict]], workers: int, log: Callable[[str], None]) -> list[tuple[dict, dict]]:
    """On Ray every worker gets its share of its endpoint's budget: ``llm.concurrency`` // workers (at least 1)."""
    budgets = endpoints(items)
    for ep, limit in budgets.items():
        log(f"requests in flight to {ep}: at most {limit} for the whole sweep; on Ray each of the {workers} workers "
            f"sends at most {max(1, limit // workers)}")
    out = []
    for d, info in items:
        ep = endpoint_of(d)
        if ep is not None:
            d = {**d, "llm": {**d["llm"], "concurrency": max(1, budgets[ep] // workers)}}
        out.append((d, info))
    return out


def _interrupted(d: dict, info: dict) -> dict:
    return {"out": d["out"], "cell": info.get("cell"), "status": "interrupted", "error": None, "test_accuracy": {}}


def _run_in_worker(run_one: Callable, d: dict, info: dict, overwrite: bool) -> dict:
    """``run_one`` in a pool worker, with the request budget of its endpoint shared by all workers (if any); a
    Ctrl-C ends it as status "interrupted" instead of a worker traceback."""
    try:
        if _worker["stopping"]:
            return _interrupted(d, info)  # a run handed over after Ctrl-C is not started
        _worker["busy"] = True
        budget = _worker["budgets"].get(endpoint_of(d))
        return run_one(d, info, overwrite, shared_budget=budget) if budget is not None else run_one(d, info, overwrite)
    except KeyboardInterrupt:
        return _interrupted(d, info)
    finally:
        _worker["busy"] = False


def _stop_pool(pool) -> None:
    """After Ctrl-C in the parent: cancel what has not started, interrupt the workers, wait for them (a second
    Ctrl-C, or a worker still alive after _STOP_WAIT_S, kills them)."""
    procs = [p for p in list((getattr(pool, "_processes", None) or {}).values()) if p.is_alive()]
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets it; joined below
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        try:
            os.kill(p.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
    try:
        for p in procs:
            p.join(_STOP_WAIT_S)
    except KeyboardInterrupt:
        pass
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(5)
    # the pool's manager thread ends now that its workers have left; joined, so the CLI does not see a lingering
    # thread and exit at once (os._exit), which would skip the queues' cleanup and leak their semaphores
    try:
        if manager is not None:
            manager.join(_STOP_WAIT_S)
    except KeyboardInterrupt:
        pass


def run_in_processes(run_one: Callable, items: list, workers: int, overwrite: bool,
                     done: Callable[[int, dict], None], budgets: dict | None = None, mp_context=None) -> None:
    """``run_one(cfg_dict, info, overwrite)`` for every item in ``workers`` spawned processes; ``done(i, result)``.
    ``budgets``: {endpoint: SharedBudget} (made with ``mp_context``) handed to every worker at its start; a run on
    that endpoint takes its request slots from it. KeyboardInterrupt (Ctrl-C) stops the workers (module docstring)
    and is re-raised."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawn: fresh interpreters (a forked child inherits the parent's locks and hung in testing); a calling script
    # needs the usual `if __name__ == "__main__":` guard. Plugins reach the children through $JANUS_PLUGINS.
    ctx = mp_context or mp.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=min(workers, len(items)), mp_context=ctx, initializer=_worker_init,
                               initargs=(budgets or {},))
    try:
        futs = {pool.submit(_run_in_worker, run_one, d, info, overwrite): i for i, (d, info) in enumerate(items)}
        for f in as_completed(futs):
            i = futs[f]
            try:
                r = f.result()
            except Exception as e:  # noqa: BLE001 - a worker process died (killed, out of memory)
                r = {"out": items[i][0]["out"], "cell": items[i][1].get("cell"), "status": "failed",
                     "error": f"worker process failed: {type(e).__name__}: {e}", "test_accuracy": {}}
            done(i, r)
    except KeyboardInterrupt:
        _stop_pool(pool)
        raise
    pool.shutdown(wait=True)


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
