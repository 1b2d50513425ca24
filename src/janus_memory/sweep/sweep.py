"""`janus sweep grid.yaml`: expand a grid of run configurations and run them with local processes or on a Ray cluster.

Grid file (YAML)::

    base:                 # any RunConfig keys (settings/config.py); base.out is the sweep root
      backend: fake
      stream_size: 12
      janus: {warmup: 4, coverage_size: 2, boundary_size: 1, fresh_size: 2}
      out: runs/sweep1
    grid:                 # every key maps to a non-empty list; the runs are the cartesian product (in key order)
      dataset: [gsm8k]
      updater: [dc_rs, expel]
      controller: [none, janus]
      seed: [0, 1]
      janus.tau: [0.0, 0.2]     # "janus.<JanusConfig key>", "llm.<key>" and "updater_config.<key>" set one nested key

Each run gets its own folder ``<root>/<dataset>/<cell>/seed<k>`` where the cell name is the method name
("dc_rs", "dc_rs+janus"; controller "both" keeps the updater name) plus the other varied settings, e.g.
``dc_rs+janus[tau=0.2]``. The cell name and its settings are written to ``<run>/cell.json`` so `janus report` labels rows
by cell. A finished run folder (COMPLETE) is skipped and an unfinished one is resumed, so re-running a sweep is safe.

Executors: ``local`` = a process pool of ``workers`` processes (``workers=1`` runs in this process; processes are
spawned, so a calling script needs an ``if __name__ == "__main__":`` guard); ``ray`` = one Ray
task per run (``ray.init(address=...)``; an already initialised Ray is reused). With Ray every run folder and the LLM
cache must live on storage shared by all nodes; LLM serving scales separately (several vLLM replicas behind one
OpenAI-compatible URL given as ``base_url``).
"""
from __future__ import annotations

import itertools
import json
import math
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..controller.config import FLAT, JanusConfig, flat_or_as_given
from ..settings.config import RunConfig
from ..settings.llm_settings import LLM_KEYS, SettingsConflict, lift_llm
from .executors import endpoints, ray_share

TOP_KEYS = ("base", "grid")
_NESTED = ("janus", "updater_config", "llm")
# grid keys that are part of the run's identity (folder layout), not of the cell suffix
_IDENTITY_KEYS = ("dataset", "updater", "controller", "seed")


# ------------------------------------------------------------------------------------------------ YAML with lines
def _key_lines(node) -> dict[str, int]:
    """{key: 1-based line} of a YAML mapping node; raises ValueError on a duplicate key (PyYAML would keep the last)."""
    import yaml

    out: dict[str, int] = {}
    if not isinstance(node, yaml.MappingNode):
        return out
    for k, _ in node.value:
        key = str(k.value)
        if key in out:
            raise ValueError(f"duplicate key '{key}' at line {k.start_mark.line + 1} (first at line {out[key]})")
        out[key] = k.start_mark.line + 1
    return out


def _child(node, key: str):
    import yaml

    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if str(k.value) == key:
                return v
    return None


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _grid_key_ok(key: str) -> bool:
    if "." in key:
        head, _, tail = key.partition(".")
        if head == "janus":
            return tail in FLAT  # a flat key: janus.tau (the grouped form is for the janus section)
        if head == "llm":
            return tail in LLM_KEYS
        return head == "updater_config" and bool(tail)
    return (key in RunConfig.model_fields or key in LLM_KEYS) and key not in ("out",) + _NESTED


def _validation_message(e, prefix: str, lines: dict[str, int]) -> str:
    err = e.errors()[0]
    if not err["loc"]:  # a whole-settings error (a key given flat and in llm): its own line
        return f"{prefix.rstrip('.')}: {err['msg']}" if prefix else err["msg"]
    loc = ".".join(str(x) for x in err["loc"])
    line = lines.get(str(err["loc"][0])) if err["loc"] else None
    where = f" (line {line})" if line else ""
    if err["type"] == "extra_forbidden":
        return f"unknown key '{prefix}{loc}'{where}"
    return f"invalid value for '{prefix}{loc}'{where}: {err['msg']}"


def cell_name(values: dict[str, Any]) -> str:
    """Cell name from one grid point: method name + "[k=v,...]" of the varied non-identity settings (prefix "janus."
    dropped), e.g. {"updater": "dc_rs", "controller": "janus", "janus.tau": 0.2} -> "dc_rs+janus[tau=0.2]"."""
    upd = values.get("updater", "?")
    name = upd + ("+janus" if values.get("controller") == "janus" else "")
    extra = [(k.removeprefix("janus.").removeprefix("llm."), v) for k, v in values.items()
             if k not in _IDENTITY_KEYS]
    if extra:
        name += "[" + ",".join(f"{k}={_fmt(v)}" for k, v in extra) + "]"
    return name


def run_folder(root: str | Path, dataset: str, cell: str, seed: int, *, prefix: str = "seed") -> str:
    """``<root>/<dataset>/<cell>/<prefix><seed>`` (prefix "seed", or "order" for stream-order runs)."""
    return str(Path(root) / dataset / cell / f"{prefix}{seed}")


MAX_CELLS = 10_000  # runs one grid file may expand to


def expand_grid(base: dict, grid: dict, *, lines: dict[str, int] | None = None) -> list[tuple[str, RunConfig]]:
    """Cartesian product of ``grid`` over ``base`` -> [(cell name, RunConfig)] with ``out`` set per run.

    Raises:
        ValueError: unknown grid key, a value that is not a non-empty list, an invalid resulting config, or two runs
            mapping to the same folder.
    """
    from pydantic import ValidationError

    lines = lines or {}
    for k, vals in grid.items():
        where = f" (line {lines[k]})" if k in lines else ""
        if not _grid_key_ok(k):
            raise ValueError(f"unknown grid key '{k}'{where}; use RunConfig keys, 'janus.<key>', 'llm.<key>' or "
                             "'updater_config.<key>'")
        if not isinstance(vals, list) or not vals:
            raise ValueError(f"grid key '{k}'{where} must map to a non-empty list, got {vals!r}")
    keys = list(grid)
    cells = math.prod(len(grid[k]) for k in keys)
    if cells > MAX_CELLS:  # checked before the product is walked (30 keys of 2 values: 2^30 cells)
        raise ValueError(f"the grid has {cells:,} cells (the product of its lists' lengths); at most {MAX_CELLS:,} "
                         "per grid file: split it into several")
    root = base.get("out") or "runs/sweep"
    out: list[tuple[str, RunConfig]] = []
    seen: dict[str, str] = {}
    for combo in itertools.product(*(grid[k] for k in keys)):
        values = dict(zip(keys, combo))
        d = json.loads(json.dumps(base))  # deep copy
        try:
            d = lift_llm(d)  # a base with flat backend keys: the grid's llm.<key> lands next to them
        except SettingsConflict as e:
            raise ValueError(f"base: {e}") from None
        if isinstance(d.get("janus"), dict) and any(k.startswith("janus.") for k in values):
            d["janus"] = flat_or_as_given(d["janus"])  # a grouped base: janus.<key> replaces that one setting
        for k, v in values.items():
            if k in LLM_KEYS:  # a flat backend key varies the llm section's key
                k = f"llm.{k}"
            if "." in k:
                head, _, tail = k.partition(".")
                d[head] = {**(d.get(head) or {}), tail: v}
            else:
                d[k] = v
        full = {"updater": d.get("updater", RunConfig.model_fields["updater"].default),
                "controller": d.get("controller", RunConfig.model_fields["controller"].default), **values}
        name = cell_name(full)
        try:
            cfg = RunConfig(**{**d, "out": "."})
        except ValidationError as e:
            raise ValueError(f"grid point {values}: " + _validation_message(e, "", lines)) from None
        _check_janus(cfg.janus, f"grid point {values}")  # type: ignore[arg-type]  # JanusSettings reads as a dict
        cfg = cfg.model_copy(update={"out": run_folder(root, cfg.dataset, name, cfg.seed)})
        if cfg.out in seen:
            raise ValueError(f"grid points {seen[cfg.out]} and {values} map to the same run folder {cfg.out}")
        seen[cfg.out] = str(values)
        out.append((name, cfg))
    return out


def _check_janus(janus: dict, where: str) -> None:
    try:
        JanusConfig.from_dict(janus)  # (sweep files are checked before any RunConfig exists)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: invalid Janus setting: {e}") from None


def load_grid_cells(path: str | Path, janus_preset: str | None = None) -> list[tuple[str, RunConfig]]:
    """Parse and validate a grid file -> [(cell name, RunConfig)]. See the module docstring for the format.
    ``janus_preset`` (``janus sweep --janus-preset``) replaces ``base.janus_preset``; a grid key ``janus_preset``
    still varies it per cell.

    Raises:
        ValueError: missing file, invalid YAML (with its line), a top-level key other than base/grid, an unknown
            base or grid key (named, with its line), a duplicate key, or an invalid value.
    """
    import yaml
    from pydantic import ValidationError

    from ..settings.yaml_load import load_unique, read_settings_text

    p = Path(path).expanduser()
    text = read_settings_text(p, "grid file")  # a regular file within the size limit (ValueError naming it)
    try:
        data = load_unique(text)  # (an alias bomb is refused before the nodes below are walked)
        node = yaml.compose(text)  # a key given twice at any depth (also inside janus:): YAML error with its lines
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"invalid YAML in {p}{where}: {getattr(e, 'problem', None) or str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{p} must hold a mapping with keys 'base' and 'grid'")
    top = _key_lines(node)
    for k in data:
        if k not in TOP_KEYS:
            raise ValueError(f"unknown top-level key '{k}' (line {top.get(str(k), '?')}) in {p}; allowed: base, grid")
    base = data.get("base") or {}
    grid = data.get("grid") or {}
    if not isinstance(base, dict):
        raise ValueError(f"'base' (line {top.get('base')}) must be a mapping of RunConfig keys")
    if not isinstance(grid, dict) or not grid:
        raise ValueError(f"'grid' must be a non-empty mapping of key -> list of values (line {top.get('grid', '?')})")
    if janus_preset is not None:
        base = {**base, "janus_preset": janus_preset}
    base_lines = _key_lines(_child(node, "base"))
    grid_lines = _key_lines(_child(node, "grid"))
    try:
        RunConfig(**base)
    except ValidationError as e:
        raise ValueError(_validation_message(e, "base.", base_lines)) from None
    _check_janus(base.get("janus") or {}, "base")
    return expand_grid(base, grid, lines=grid_lines)


def load_grid(path: str | Path) -> list[RunConfig]:
    """The run configurations of a grid file (``out`` set to ``<root>/<dataset>/<cell>/seed<k>``). Raises ValueError."""
    return [cfg for _, cfg in load_grid_cells(path)]


# ------------------------------------------------------------------------------------------------ running
def _cell_from_out(out: str) -> str:
    p = Path(out)
    return p.parent.name if p.name.startswith("seed") else p.name


def run_one(cfg_dict: dict, cell: dict | None = None, overwrite: bool = False, *, shared_budget=None) -> dict:
    """Run (or resume, or skip when finished) one configuration. Never raises: failures come back as status "failed".
    ``shared_budget``: the request budget of the run's endpoint shared with the sweep's other workers (llm/budget.py).

    Returns ``{"out", "cell", "status": "done"|"skipped"|"resumed"|"failed", "error", "test_accuracy": {method: acc}}``.
    Writes ``<out>/cell.json`` ({"cell", "suffix", ...cell info}) and appends progress to ``<out>/sweep.log``.
    """
    from ..errors import JanusError, RunFolderError
    from ..run.experiment import run_experiment
    from ..store.reader import RunReader

    cfg = RunConfig(**cfg_dict)
    out = Path(cfg.out)
    cell = dict(cell or {})
    name = cell.get("cell") or _cell_from_out(cfg.out)
    cell.update(cell=name, suffix=name[name.index("["):] if "[" in name and name.endswith("]") else "")
    res: dict[str, Any] = {"out": str(out), "cell": name, "status": None, "error": None, "test_accuracy": {}}
    try:
        if (out / "COMPLETE").exists() and not overwrite:
            res["status"] = "skipped"
            summary = RunReader(out).summary() or {}
        else:
            resume = (out / "run.sqlite").exists() and not (out / "COMPLETE").exists()
            if resume and RunReader(out).meta("config") is None:  # stopped before its settings were stored
                raise RunFolderError("incomplete cell folder: run.sqlite holds no settings (the run stopped before "
                                     "it was set up); delete or rename the folder and run the same command again")
            out.mkdir(parents=True, exist_ok=True)
            with open(out / "sweep.log", "a", encoding="utf-8") as logf:
                summary = run_experiment(cfg, log=lambda m: print(m, file=logf, flush=True), overwrite=overwrite,
                                         resume=resume, shared_budget=shared_budget)
            res["status"] = "resumed" if resume else "done"
        from ..store.store import atomic_write_json

        atomic_write_json(out / "cell.json", cell)
        res["test_accuracy"] = {m: s.get("test_accuracy") for m, s in summary.get("methods", {}).items()}
    except Exception as e:  # noqa: BLE001 - a sweep reports failures per run and carries on
        res["status"] = "failed"
        res["error"] = str(e) if isinstance(e, JanusError) else f"{type(e).__name__}: {e}"
        try:
            out.mkdir(parents=True, exist_ok=True)
            with open(out / "sweep.log", "a", encoding="utf-8") as logf:
                logf.write(traceback.format_exc())
        except OSError:
            pass
    return res


def _acc_text(accs: dict) -> str:
    """"  test acc 0.667" (one method) or "  test acc: dc_rs 0.667, dc_rs+janus 1.000" ("" when none finished)."""
    accs = {m: a for m, a in accs.items() if a is not None}
    if len(accs) == 1:
        return f"  test acc {next(iter(accs.values())):.3f}"
    return ("  test acc: " + ", ".join(f"{m} {a:.3f}" for m, a in accs.items())) if accs else ""


def _items(configs: Iterable) -> list[tuple[dict, dict]]:
    items = []
    for c in configs:
        info: dict = {}
        if isinstance(c, tuple):
            if len(c) == 3:
                name, cfg, info = c
            else:
                name, cfg = c
            info = {**info, "cell": name}
        else:
            cfg = c
        if not isinstance(cfg, RunConfig):
            raise ValueError(f"expected a RunConfig (or (cell, RunConfig)), got {type(cfg).__name__}")
        items.append((cfg.model_dump(), info))
    outs = [str(Path(d["out"]).expanduser().resolve()) for d, _ in items]
    dup = {o for o in outs if outs.count(o) > 1}
    if dup:
        raise ValueError(f"several runs share the output folder {min(dup)}; give each run its own out")
    return items


def run_sweep(configs: Iterable, executor: str = "local", workers: int = 2, address: str | None = None, *,
              overwrite: bool = False, log: Callable[[str], None] = print) -> list[dict]:
    """Run every configuration; return one result dict per run (see :func:`run_one`) in input order.

    ``configs``: RunConfigs, or (cell name, RunConfig[, cell info]) tuples. ``executor``: "local" (``workers``
    processes; 1 = in this process) or "ray" (``address`` of the cluster, e.g. "ray://head:10001" or "auto"; None starts
    a local Ray instance with ``workers`` CPUs unless Ray is already initialised). Finished runs are skipped (unless
    ``overwrite``), unfinished ones resumed. A failed run does not stop the others.

    Runs on one OpenAI-compatible endpoint share its request budget (the smallest ``llm.concurrency`` among them):
    local workers take their slots from one budget shared by the processes (llm/budget.py), so at most that many
    requests are in flight to the endpoint whatever the number of workers, and each finished run's line says how many
    are in flight now; on Ray each worker gets ``concurrency // workers``.

    Raises:
        ValueError: unknown executor, workers < 1, duplicate output folders.
        ImportError: executor "ray" without Ray installed (``pip install 'janus-memory[ray]'``).
    """
    if executor not in ("local", "ray"):
        raise ValueError(f"unknown executor '{executor}'; choose local or ray")
    if workers < 1:
        raise ValueError("workers must be >= 1")
    items = _items(configs)
    results: list[dict | None] = [None] * len(items)
    budgets: dict = {}
    parallel = executor == "local" and workers > 1 and len(items) > 1
    if parallel:
        import multiprocessing as mp

        from ..llm.budget import SharedBudget

        mp_ctx = mp.get_context("spawn")
        budgets = {ep: SharedBudget(limit, mp_ctx) for ep, limit in endpoints(items).items()}
        for ep, b in budgets.items():
            log(f"requests in flight to {ep}: at most {b.limit}, shared by {min(workers, len(items))} worker "
                "processes (each run's methods side by side included)")
    elif executor == "local":
        for ep, limit in endpoints(items).items():
            log(f"requests in flight to {ep}: at most {limit} (one run at a time in this process)")

    def _in_flight() -> str:
        return "".join(f"  [in flight now: {b.in_flight()}/{b.limit} to {ep}]" for ep, b in budgets.items())

    def _done(i: int, r: dict) -> None:
        results[i] = r
        n = sum(x is not None for x in results)
        log(f"[{n}/{len(items)}] {r['status']:<8} {r['cell']} {Path(r['out']).name}{_acc_text(r['test_accuracy'])}"
            f"  ({r['out']})" + (f"  error: {r['error']}" if r["error"] else "") + _in_flight())

    from .executors import run_in_processes, run_on_ray

    if executor == "local" and not parallel:
        for i, (d, info) in enumerate(items):
            _done(i, run_one(d, info, overwrite))
    elif executor == "local":
        run_in_processes(run_one, items, workers, overwrite, _done, budgets=budgets, mp_context=mp_ctx)
    else:
        run_on_ray(run_one, ray_share(items, workers, log), workers, address, overwrite, _done)
    return [r for r in results if r is not None]
