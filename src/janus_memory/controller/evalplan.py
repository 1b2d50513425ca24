"""The evaluation set one trigger replays, as stream indices: which roles take part, in what order, how many.

Source: paper-spec.md §3.2 steps 2-4 (and step 6 for the flips). The role sets themselves (coverage reps,
boundary buffer, fresh sample) are maintained in ``evalset.py``; this module turns them into the planned entries
of one comparison, records them on the :class:`~janus_memory.controller.step.Decision`, and reads the flips back.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

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


def refresh_panel(panel: list[int], stats: dict[int, tuple[int, int]], n_avail: int, c: JanusConfig,
                  trigger_count: int) -> list[int]:
    """``eval_set="panel"``: the panel of the comparison numbered ``trigger_count`` (after the increment), drawn from
    stream indices ``0 .. n_avail - 1`` (the tasks before the current one). ``stats[i] = (reads, discordant)``: how
    many comparisons read member ``i`` and in how many of them the two memories disagreed on it.

    The panel is filled up to ``panel_size`` with a seeded sample of the tasks not in it. Then, with probability
    ``panel_rotate`` and when a task outside it exists, one member is replaced by a seeded task from outside: the
    member with the lowest discordance rate among those read at least ``panel_min_evals`` times (ties by a seeded
    draw), or a seeded member when none has been read that often (or ``panel_min_evals`` is 0). Members keep their
    places: a comparison reads the panel in order, so the first ``seq_max_pairs`` members are read every time and
    the deployed memory's outcomes there are known (``reuse_old_results``); the adaptive cap reads on while tied.

    Why: the paper's coverage, boundary and fresh tasks change at every comparison, so the deployed memory's outcomes
    are rarely known and a pair costs two calls; on a stable panel it costs one. A task on which memories never
    disagree (always solved, never solved) says nothing about any candidate, so it is the one let go: the item
    discrimination of classical test theory, used the same way by adaptive testing. The replacement is drawn at
    random and the drop does not depend on which memory won, so the panel is not fitted to the memories it let
    through (the reusable-holdout problem, Dwork et al., Science 2015). The randomness is a function of (seed,
    trigger_count) alone, so a restored controller draws the same panel.
    """
    r = random.Random(f"janus-panel|{c.seed}|{trigger_count}")
    out = list(panel)
    want = min(c.panel_size, n_avail)
    if len(out) < want:
        taken = set(out)
        out += r.sample([i for i in range(n_avail) if i not in taken], want - len(out))
    if out and n_avail > len(out) and r.random() < c.panel_rotate:
        ranked = [(d / n, r.random(), j) for j, i in enumerate(out)
                  for n, d in [stats.get(i, (0, 0))] if c.panel_min_evals and n >= c.panel_min_evals]
        j = min(ranked)[2] if ranked else r.randrange(len(out))
        taken = set(out)
        out[j] = r.choice([i for i in range(n_avail) if i not in taken])
    return out


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
