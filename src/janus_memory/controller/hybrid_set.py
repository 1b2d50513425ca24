"""The paper's hybrid evaluation set: coverage (k-means representatives of the seen tasks) + boundary (tasks whose
outcome flipped between memories) + fresh (a sample of the tasks since the last comparison).

Source: paper-spec.md §3 (and §4 pseudo-code, §11 items 5-7). Tasks are referred to by their *stream index* (0-based
position in the stream), which plays the role of the object identity the authors' code uses. Seen tasks are always the
stream prefix ``[0, seen_end)`` and pending tasks the suffix ``[seen_end, n)``, so no per-step list is re-scanned.

* Coverage: the coverage model ``JanusConfig.clustering`` names, refreshed on all seen tasks at every comparison
  (``evalset.py``); on failure the previous coverage is kept (spec §3.2 step 3).
* Boundary: bootstrap = first ``boundary_size`` non-representative warm-up tasks (stream order); after each
  comparison: ``>= size`` flips -> ``random.Random(seed + trigger_count + 101).sample(flips, size)``, else
  flips + older boundary entries not in the flips and not coverage reps, truncated to ``size``.
* Fresh: the pending tasks (current one included); more than ``fresh_size`` ->
  ``random.Random(seed + trigger_count).sample(pending, fresh_size)`` with ``trigger_count`` before the increment.
  ``fresh_size == 0`` means "no cap" as in the authors' code (use ``use_fresh=False`` to drop the role).
* The entries: the roles kept by use_coverage / use_boundary / use_fresh in the order ``eval_order`` names,
  de-duplicated when ``dedup``, capped by ``replay_limit`` (:func:`plan_trigger`).
"""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import numpy as np

from .evalset import EmbeddingStore, bootstrap_boundary, build_entries, coverage_model, refresh_boundary, sample_fresh
from .strategy import EvalPlan, EvalSetStrategy

if TYPE_CHECKING:
    from .config import JanusConfig
    from .decision_rules import Comparison
    from .step import Decision

ROLES = ("coverage", "boundary", "fresh")


class HybridSet(EvalSetStrategy):
    """The paper's coverage + boundary + fresh set (module docstring). State: the coverage model, the coverage
    representatives and the boundary buffer (stored as ``coverage_model``, ``coverage``, ``boundary``)."""

    name = "hybrid"  # its EVAL_SETS name (strategy.py registers it)
    SETTINGS = ("coverage_size", "boundary_size", "fresh_size", "use_coverage", "use_boundary", "use_fresh",
                "clustering", "pool_size", "dedup", "eval_order", "replay_limit")
    PAPER = True

    def __init__(self, config: Any, arg: str | None = None):
        super().__init__(config, arg)
        self.model = coverage_model(config)
        self.coverage: list[int] = []
        self.boundary: list[tuple[int, str]] = []

    # ------------------------------------------------------------------ description
    def size(self) -> int:
        e = self.config.eval_set
        n = e.coverage_size * e.use_coverage + e.boundary_size * e.use_boundary + e.fresh_size * e.use_fresh
        return min(n, e.replay_limit) if e.replay_limit is not None else n

    def sizes(self) -> dict[str, int]:
        e = self.config.eval_set
        return {"K'": e.coverage_size * e.use_coverage, "K_b": e.boundary_size * e.use_boundary,
                "K": e.coverage_size * e.use_coverage + e.boundary_size * e.use_boundary,
                "K_F": e.fresh_size * e.use_fresh}

    def _roles_on(self) -> list[tuple[str, int]]:
        e = self.config.eval_set
        return [(name, n) for name, n, on in (("coverage", e.coverage_size, e.use_coverage),
                                              ("boundary", e.boundary_size, e.use_boundary),
                                              ("fresh", e.fresh_size, e.use_fresh)) if on]

    def text(self) -> str:
        e = self.config.eval_set
        on = self._roles_on()
        roles = " + ".join(f"{name} {n}" for name, n in on) or "no role (every role ablated)"
        total = sum(n for _, n in on)
        cap = (f", {e.replay_limit} of them sampled per comparison" if e.replay_limit is not None
               and e.replay_limit < total else "")
        return f"the paper's hybrid set of {roles} = {total} tasks{cap}"

    def cell(self) -> str:
        return "+".join(str(n) for _, n in self._roles_on()) or "0"

    def roles(self, decision: dict) -> list[str]:
        """The entry's place in coverage + boundary + fresh when the entries are exactly those lists in order (a task
        in two roles is evaluated twice), else every role holding its id (dedup or a replay cap)."""
        ids = [str(x) for x in decision.get("eval_ids") or []]
        held = {k: [str(x) for x in decision.get(k) or []] for k in ROLES}
        if ids == held["coverage"] + held["boundary"] + held["fresh"]:
            return [k for k in ROLES for _ in held[k]]
        return ["+".join(k for k in ROLES if i in held[k]) or "?" for i in ids]

    def where(self, decision: dict) -> str:
        """``(coverage+boundary+fresh 12+8+5)``, and how a task drawn in two roles was solved."""
        roles = [list(decision.get(k) or []) for k in ROLES]
        sizes = "+".join(str(len(r)) for r in roles)
        eval_ids = list(decision.get("eval_ids") or [])
        shared = sum(len(r) for r in roles) - len({t for r in roles for t in r})  # a task drawn in two roles
        if shared:
            # E is de-duplicated (JanusConfig.dedup) or not (the paper preset): eval_ids then holds such a task once
            # per role, and each copy was solved under both memories
            repeats = len(eval_ids) - len(set(eval_ids))
            how = ("solved once" if not repeats else "solved in each role" if repeats >= shared
                   else f"{repeats} of them solved in each role")
            sizes += f"; {shared} task{'s' if shared > 1 else ''} in two roles, {how}"
        return f"(coverage+boundary+fresh {sizes})"

    # ------------------------------------------------------------------ the controller's side
    def start(self, store: EmbeddingStore, n: int) -> list[str]:
        """Coverage via k-means on the warm-up tasks, bootstrap boundary (spec §3.2)."""
        warnings = []
        try:
            reps = self.model.refresh(store, n)
        except Exception as exc:  # clustering failure: leave coverage empty, keep going
            reps = []
            warnings.append(f"coverage initialisation failed: {type(exc).__name__}: {exc}")
        self.coverage = reps
        self.boundary = bootstrap_boundary(n, reps, self.config.eval_set.boundary_size)
        return warnings

    def plan(self, store: EmbeddingStore, seen_end: int, trigger_count: int, warnings: list[str]) -> EvalPlan:
        """Fresh sample of the tasks since ``seen_end``, coverage refresh on every task so far, the planned entries
        (spec §3.2 steps 1-4)."""
        c = self.config
        fresh = sample_fresh(seen_end, store.n, c.eval_set.fresh_size, c.seed, trigger_count - 1)
        try:
            self.coverage = self.model.refresh(store, store.n)
        except Exception as exc:  # spec §3.2 step 3: keep the previous coverage
            warnings.append(f"coverage refresh failed ({type(exc).__name__}: {exc}); previous coverage kept")
        plan = plan_trigger(c, self.coverage, self.boundary, fresh, trigger_count)
        if c.eval_set.order == "relevant":
            plan.entries = order_by_relevance(plan.entries, store, store.n - 1)
        return plan

    def observe(self, plan: EvalPlan, comp: Comparison | None, d: Decision, ids: list[str],
                trigger_count: int) -> None:
        """The boundary refresh from the flips (spec §3.2 step 9), logged on ``d.flips``."""
        if comp is None:
            return
        c = self.config
        flips = flips_of(plan.entries, comp, self.coverage)
        d.flips = [ids[i] for i in flips]
        self.boundary = refresh_boundary(self.boundary, flips, self.coverage, c.eval_set.boundary_size, c.seed,
                                         trigger_count)

    def members(self) -> dict[str, list[int]]:
        return {"coverage": list(self.coverage), "boundary": [i for i, _ in self.boundary]}

    def state_dict(self) -> dict:
        return {"coverage": list(self.coverage), "boundary": [[i, t] for i, t in self.boundary],
                "coverage_model": self.model.state_dict()}

    def load_state_dict(self, state: dict, n_tasks: int, trigger_count: int) -> None:
        if state["coverage_model"]["kind"] != self.model.kind:
            raise ValueError("state coverage model does not match config.eval_set.clustering")
        self.model.load_state_dict(state["coverage_model"])
        cov, bnd = state["coverage"], state["boundary"]
        if not isinstance(cov, list) or not all(type(i) is int and 0 <= i < n_tasks for i in cov):
            raise ValueError(f"state coverage must be task indices in [0, {n_tasks}), got {cov!r}")
        if not isinstance(bnd, list) or not all(
                isinstance(e, list | tuple) and len(e) == 2 and type(e[0]) is int and 0 <= e[0] < n_tasks
                and isinstance(e[1], str) for e in bnd) or len({e[0] for e in bnd}) != len(bnd):
            raise ValueError(f"state boundary must be distinct [task index in [0, {n_tasks}), tag] pairs, got {bnd!r}")
        self.coverage = list(cov)
        self.boundary = [(int(i), str(t)) for i, t in bnd]


# ----------------------------------------------------------------------------- the roles and the entries

def plan_trigger(c: JanusConfig, coverage: list[int], boundary: list[tuple[int, str]], fresh: list[int],
                 trigger_count: int) -> EvalPlan:
    """Entries of a post-warm-up trigger: roles kept by use_coverage / use_boundary / use_fresh, concatenated
    (de-duplicated when ``dedup``; ``eval_order="informative"`` puts the boundary first, past flips leading, then
    coverage, then fresh: the order a sequential test reads them), then capped by ``replay_limit`` with
    ``trigger_count`` already incremented (the authors' optional cap, spec §3.2 step 4)."""
    es = c.eval_set
    cov = list(coverage) if es.use_coverage else []
    bnd = [i for i, _ in boundary] if es.use_boundary else []
    fr = fresh if es.use_fresh else []
    if es.order in ("informative", "relevant"):  # past flips, the rest of the boundary, coverage, fresh
        tag = dict(boundary)
        first = [i for i in bnd if tag.get(i) == "flip"] + [i for i in bnd if tag.get(i) != "flip"]
        entries = build_entries(first, cov, fr, es.dedup)
    elif es.order == "fresh_first":  # the tasks since the last comparison, then coverage, then the boundary
        entries = build_entries(fr, cov, bnd, es.dedup)
    elif es.order == "interleaved":  # fresh, then coverage and boundary entries taken in turn
        entries = build_entries(fr, interleave(cov, bnd), [], es.dedup)
    else:
        entries = build_entries(cov, bnd, fr, es.dedup)
    if es.replay_limit is not None and len(entries) > es.replay_limit:
        kept = random.Random(c.seed + trigger_count + 17).sample(entries, es.replay_limit)
        if es.order != "paper":  # a reading order was asked for: keep the sampled tasks in it
            pos = {e: k for k, e in reversed(list(enumerate(entries)))}
            kept = sorted(kept, key=lambda e: pos[e])
        entries = kept
    return EvalPlan(cov, bnd, fr, entries)


def interleave(a: list[int], b: list[int]) -> list[int]:
    """``a[0], b[0], a[1], b[1], ...``; the longer list's tail follows."""
    out: list[int] = []
    for k in range(max(len(a), len(b))):
        out.extend(x[k] for x in (a, b) if k < len(x))
    return out


def order_by_relevance(entries: list[int], store, current: int) -> list[int]:
    """``eval_order="relevant"``: the planned entries sorted by the cosine of their task embedding with the current
    task's (the task whose update made the candidate), most similar first; ties keep the informative order.

    Why: an update written after task ``t`` mostly changes what the memory says about tasks like ``t``, so the
    discordant pairs concentrate there; reading them first lets a sequential test with a small cap see them
    (the same idea as importance-weighted or targeted test selection)."""
    if len(entries) < 2:
        return list(entries)
    emb = store.view()
    q = emb[current].astype(np.float64)
    rows = emb[entries].astype(np.float64)
    norms = np.linalg.norm(rows, axis=1) * (np.linalg.norm(q) or 1.0)
    sims = rows @ q / np.where(norms > 0, norms, 1.0)
    order = sorted(range(len(entries)), key=lambda k: (-round(float(sims[k]), 9), k))
    return [entries[k] for k in order]


def flips_of(entries: list[int], comp: Comparison, coverage: list[int]) -> list[int]:
    """Entries evaluated under both memories whose outcomes differ, coverage reps excluded. An indeterminate
    outcome (None, e.g. a timeout) under either memory is never a flip (C16-C)."""
    cov_set = set(coverage)
    return [entries[p] for p in range(comp.n_evaluated)
            if comp.old_correct[p] is not None and comp.new_correct[p] is not None
            and comp.old_correct[p] != comp.new_correct[p] and entries[p] not in cov_set]
