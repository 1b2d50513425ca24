"""The paper's method grid on one dataset (docs/research-notes.md §6.1, §8.1, §8.3, §8.4, §8.7).

Cells (each its own run folder ``<base.out>/<dataset>/<cell>/seed<k>``, one method per run):

- ``memory_free``, ``exprag``                         baselines (Table 1)
- ``<u>``, ``<u>+janus``                               each updater without / with Janus (MMT trigger) (Table 1)
- ``<u>+janus[trigger=never|always|random|periodic]``  trigger ablation (Table 2); random and periodic are matched to the
                                                       MMT run's observed trigger count (§8.3)
- ``<u>+janus[use_coverage=false]`` (boundary, fresh)  evaluation-set ablation (Fig. 3)

Matching (§8.3, the authors' ``janus_trigger_ablation.py``): with P = post-warm-up steps and T = MMT triggers,
random rate = T / P and periodic period N = round(P / T) (N = P when T = 0: periodic cannot fire zero times; it then
fires once, at the first post-warm-up step).

The stream-order study (§8.7, Fig. 5) runs ``<u>`` and ``<u>+janus`` under 5 stream shuffles:
:func:`stream_order_grid`.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..settings.config import RunConfig
from .sweep import run_folder, run_sweep

MATCHED_TRIGGERS = ("random", "periodic")


def baseline_updaters() -> list[str]:
    """The registered paper baselines (updaters with ``is_baseline``), in report row order."""
    from ..plugins import ensure_builtins
    from ..registry import UPDATERS, load_plugins

    ensure_builtins()
    load_plugins()
    return sorted(UPDATERS.names(lambda c: c.is_baseline), key=lambda n: (UPDATERS[n].table_rank, n))


def _cell_cfg(base: RunConfig, dataset: str, cell: str, seed: int, *, updater: str, controller: str,
              janus: dict | None = None, updater_configs: dict | None = None, seed_field: str = "seed") -> RunConfig:
    upd_cfg = (updater_configs or {}).get(updater)
    if upd_cfg is None:
        upd_cfg = base.updater_config if updater == base.updater else {}
    update = {"dataset": dataset, "updater": updater, "controller": controller, "updater_config": dict(upd_cfg),
              "janus": {**base.janus, **(janus or {})}, seed_field: seed,
              "out": run_folder(base.out, dataset, cell, seed, prefix="order" if seed_field == "stream_order_seed" else "seed")}
    return RunConfig(**{**base.model_dump(), **update})


def paper_grid(dataset: str, base: RunConfig, updaters=("dc_rs", "expel"), seeds=(0,), *, baselines: bool = True,
               trigger_ablation: bool = True, evalset_ablation: bool = True,
               updater_configs: dict[str, dict] | None = None) -> list[tuple[str, RunConfig]]:
    """The cells of the paper's method grid for one dataset, as [(cell name, RunConfig)] (see the module docstring).

    ``base`` supplies everything else (backend, sizes, Janus sizes, ``out`` = grid root). ``base.updater_config`` is
    used for cells of ``base.updater`` only (updaters reject unknown keys); ``updater_configs`` maps updater -> config
    for the others. Random/periodic cells carry placeholder rates until :func:`run_grid` matches them to MMT.

    Raises:
        ValueError: no updaters or no seeds.
    """
    if not updaters:
        raise ValueError("give at least one updater")
    if not seeds:
        raise ValueError("give at least one seed")
    cells: list[tuple[str, RunConfig]] = []
    kw: dict[str, Any] = dict(updater_configs=updater_configs)
    for seed in seeds:
        if baselines:
            for b in baseline_updaters():
                cells.append((b, _cell_cfg(base, dataset, b, seed, updater=b, controller="none", **kw)))
        for u in updaters:
            cells.append((u, _cell_cfg(base, dataset, u, seed, updater=u, controller="none", **kw)))
            name = f"{u}+janus"
            cells.append((name, _cell_cfg(base, dataset, name, seed, updater=u, controller="janus",
                                          janus={"trigger": "mmt"}, **kw)))
            if trigger_ablation:
                for pol in ("never", "always", "random", "periodic"):
                    name = f"{u}+janus[trigger={pol}]"
                    cells.append((name, _cell_cfg(base, dataset, name, seed, updater=u, controller="janus",
                                                  janus={"trigger": pol}, **kw)))
            if evalset_ablation:
                for role in ("coverage", "boundary", "fresh"):
                    name = f"{u}+janus[use_{role}=false]"
                    cells.append((name, _cell_cfg(base, dataset, name, seed, updater=u, controller="janus",
                                                  janus={"trigger": "mmt", f"use_{role}": False}, **kw)))
    return cells


def stream_order_grid(dataset: str, base: RunConfig, updaters=("dc_rs",), seeds=(0, 1, 2, 3, 4), *,
                      updater_configs: dict[str, dict] | None = None) -> list[tuple[str, RunConfig]]:
    """Fig. 5 cells: ``<u>`` and ``<u>+janus`` for each stream-order seed (paper: 5 shuffles), folders ``order<k>``
    (beside the main grid's ``seed<k>`` folders, so both can run in one grid).

    Uses the RunConfig field ``stream_order_seed`` when the runner has it (order varies, partition fixed, as in the
    paper's ``--train-shuffle-seed``); otherwise ``seed``, which in this runner reshuffles before the split is cut.
    """
    seed_field = "stream_order_seed" if "stream_order_seed" in RunConfig.model_fields else "seed"
    cells = []
    for seed in seeds:
        for u in updaters:
            cells.append((u, _cell_cfg(base, dataset, u, seed, updater=u, controller="none",
                                       updater_configs=updater_configs, seed_field=seed_field)))
            cells.append((f"{u}+janus", _cell_cfg(base, dataset, f"{u}+janus", seed, updater=u, controller="janus",
                                                  janus={"trigger": "mmt"}, updater_configs=updater_configs,
                                                  seed_field=seed_field)))
    return cells


def matched_trigger_settings(triggers: int, stream_tasks: int, warmup: int) -> dict:
    """Random rate and periodic period matched to an MMT run (docs/research-notes.md §8.3).

    >>> matched_trigger_settings(6, 24, 4)
    {'post_warmup_steps': 20, 'mmt_triggers': 6, 'trigger_rate': 0.3, 'trigger_period': 3}
    """
    p = max(0, int(stream_tasks) - int(warmup))
    t = int(triggers)
    rate = min(1.0, t / p) if p else 0.0
    period = max(1, round(p / t)) if t else max(1, p)
    return {"post_warmup_steps": p, "mmt_triggers": t, "trigger_rate": rate, "trigger_period": period}


def _mmt_reference(cfg: RunConfig) -> Path:
    """The MMT cell run folder that a random/periodic cell is matched to (same root, dataset, updater, seed)."""
    run = Path(cfg.out)  # <root>/<dataset>/<cell>/seed<k>
    return run.parent.parent / f"{cfg.updater}+janus" / run.name


def _read_mmt(ref: Path, updater: str) -> dict:
    from ..report.runs import resolved_janus
    from ..store.reader import RunReader

    reader = RunReader(ref)
    summ = reader.summary()
    if summ is None:
        raise FileNotFoundError(ref / "summary.json")
    m = summ["methods"][f"{updater}+janus"]
    cfg = reader.config()

    warmup = int(resolved_janus(cfg.get("janus"))["warmup"])
    return {"triggers": int(m["triggers"] or 0), "stream_tasks": int(m["stream_tasks"]), "warmup": warmup}


def run_grid(dataset: str | None = None, base: RunConfig | None = None, updaters=("dc_rs", "expel"), seeds=(0,), *,
             cells: list[tuple[str, RunConfig]] | None = None, executor: str = "local", workers: int = 2,
             address: str | None = None, log: Callable[[str], None] = print, **grid_kw) -> dict:
    """Run a method grid: first every cell that does not depend on MMT (including MMT itself), then the random and
    periodic cells with rate / period matched to their MMT run's observed trigger count.

    Pass ``dataset`` and ``base`` (cells from :func:`paper_grid` with ``updaters``, ``seeds`` and ``grid_kw``) or ready
    ``cells``. Returns ``{"root", "results": [run_one result per cell], "matched": {run folder: matched settings}}``;
    a matched cell whose MMT run failed is reported as failed without running.
    """
    if cells is None:
        if dataset is None or base is None:
            raise ValueError("give dataset and base, or cells")
        cells = paper_grid(dataset, base, updaters, seeds, **grid_kw)
    first = [(n, c) for n, c in cells if not (c.controller == "janus" and c.janus.get("trigger") in MATCHED_TRIGGERS)]
    second = [(n, c) for n, c in cells if (n, c) not in first]
    log(f"grid: {len(first)} runs, then {len(second)} trigger-matched runs ({executor}, {workers} workers)")
    results = run_sweep(first, executor=executor, workers=workers, address=address, log=log)
    matched: dict[str, dict] = {}
    ready, failed = [], []
    for name, cfg in second:
        ref = _mmt_reference(cfg)
        try:
            info = _read_mmt(ref, cfg.updater)
        except (OSError, KeyError, ValueError) as e:
            failed.append({"out": cfg.out, "cell": name, "status": "failed", "test_accuracy": {},
                           "error": f"no finished MMT reference run at {ref} ({type(e).__name__}: {e})"})
            continue
        m = matched_trigger_settings(info["triggers"], info["stream_tasks"], info["warmup"])
        matched[cfg.out] = {**m, "reference": str(ref)}
        if cfg.janus.get("trigger") == "periodic" and m["trigger_period"] == 1:
            log(f"warning: {name}: MMT fired {m['mmt_triggers']} times in {m['post_warmup_steps']} post-warm-up steps, "
                "so the matched periodic trigger has period 1 (= trigger always)")
        key = "trigger_rate" if cfg.janus.get("trigger") == "random" else "trigger_period"
        cfg = cfg.with_janus(**{key: m[key]})
        ready.append((name, cfg, {"matched": matched[cfg.out]}))
        log(f"{name} seed{cfg.seed}: {key} = {m[key]} (MMT fired {m['mmt_triggers']} times in "
            f"{m['post_warmup_steps']} post-warm-up steps)")
    results += run_sweep(ready, executor=executor, workers=workers, address=address, log=log) if ready else []
    results += failed
    root = str(Path(cells[0][1].out).parents[2]) if cells else None
    return {"root": root, "results": results, "matched": matched}
