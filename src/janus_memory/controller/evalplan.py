"""The evaluation set one trigger replays, as stream indices: which roles take part, in what order, how many.

Source: paper-spec.md §3.2 steps 2-4 (and step 6 for the flips). The role sets themselves (coverage reps,
boundary buffer, fresh sample) are maintained in ``evalset.py``; this module turns them into the planned entries
of one comparison, records them on the :class:`~janus_memory.controller.step.Decision`, and reads the flips back.
"""
from __future__ import annotations

import random

import numpy as np
from dataclasses import dataclass

from .config import JanusConfig
from .decision import Comparison
from .evalset import build_entries, sample_fresh
from .step import Decision


@dataclass
class EvalPlan:
    """Stream indices per role (empty when the role is ablated) and the entries in evaluation order."""

    coverage: list[int]
    boundary: list[int]
    fresh: list[int]
    entries: list[int]

    def record(self, d: Decision, ids: list[str]) -> None:
        """Write the plan's task ids and the full two-memory cost onto ``d``."""
        d.coverage = [ids[i] for i in self.coverage]
        d.boundary = [ids[i] for i in self.boundary]
        d.fresh = [ids[i] for i in self.fresh]
        d.eval_ids = [ids[i] for i in self.entries]
        d.evaluator_calls_full = 2 * len(self.entries)


def plan_trigger(c: JanusConfig, coverage: list[int], boundary: list[tuple[int, str]], fresh: list[int],
                 trigger_count: int) -> EvalPlan:
    """Entries of a post-warm-up trigger: roles kept by use_coverage / use_boundary / use_fresh, concatenated
    (de-duplicated when ``dedup``; ``eval_order="informative"`` puts the boundary first, past flips leading, then
    coverage, then fresh: the order a sequential test reads them), then capped by ``replay_limit`` with ``trigger_count`` already incremented
    (the authors' optional cap, spec §3.2 step 4)."""
    cov = list(coverage) if c.use_coverage else []
    bnd = [i for i, _ in boundary] if c.use_boundary else []
    fr = fresh if c.use_fresh else []
    if c.eval_order in ("informative", "relevant"):  # past flips, the rest of the boundary, coverage, fresh
        tag = dict(boundary)
        first = [i for i in bnd if tag.get(i) == "flip"] + [i for i in bnd if tag.get(i) != "flip"]
        entries = build_entries(first, cov, fr, c.dedup)
    elif c.eval_order == "fresh_first":  # the tasks since the last comparison, then coverage, then the boundary
        entries = build_entries(fr, cov, bnd, c.dedup)
    elif c.eval_order == "interleaved":  # fresh, then coverage and boundary entries taken in turn
        entries = build_entries(fr, interleave(cov, bnd), [], c.dedup)
    else:
        entries = build_entries(cov, bnd, fr, c.dedup)
    if c.replay_limit is not None and len(entries) > c.replay_limit:
        kept = random.Random(c.seed + trigger_count + 17).sample(entries, c.replay_limit)
        if c.eval_order != "paper":  # a reading order was asked for: keep the sampled tasks in it
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


def plan_warmup(c: JanusConfig, n_seen: int, trigger_count: int) -> EvalPlan:
    """Entries of a selective trigger armed during warm-up: a seeded sample of up to K + K_F of the ``n_seen``
    tasks so far, all in the role ``fresh`` (``trigger_count`` before the increment)."""
    entries = sample_fresh(0, n_seen, c.support_size + c.fresh_size, c.seed, trigger_count)
    return EvalPlan([], [], list(entries), entries)


def flips_of(entries: list[int], comp: Comparison, coverage: list[int]) -> list[int]:
    """Entries evaluated under both memories whose outcomes differ, coverage reps excluded. An indeterminate
    outcome (None, e.g. a timeout) under either memory is never a flip (C16-C)."""
    cov_set = set(coverage)
    return [entries[p] for p in range(comp.n_evaluated)
            if comp.old_correct[p] is not None and comp.new_correct[p] is not None
            and comp.old_correct[p] != comp.new_correct[p] and entries[p] not in cov_set]
