"""The stable panel: a seeded random panel of seen tasks, read in order, that changes by at most one task per
comparison (the recommended controller's evaluation set; docs/controller.md "Recommended controller").

Why: the paper's coverage, boundary and fresh tasks change at every comparison, so the deployed memory's outcomes
are rarely known and a pair costs two calls; on a stable panel it costs one (:func:`refresh_panel` says how the
panel is drawn and which member leaves).
"""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import numpy as np

from .changes import changed_words, text_words
from .evalset import EmbeddingStore, coverage_model
from .strategy import EvalPlan, EvalSetStrategy

if TYPE_CHECKING:
    from .config import JanusConfig
    from .decision_rules import Comparison
    from .step import Decision


class PanelSet(EvalSetStrategy):
    """``eval_set="panel"``: ``panel_size`` seen tasks, one member rotated out with probability ``panel_rotate`` per
    comparison (``panel_min_evals``). No coverage, boundary or fresh sample. State: the members in reading order, each
    with (comparisons that read it, comparisons in which the two memories disagreed on it), stored as ``panel``."""

    name = "panel"  # its EVAL_SETS name (strategy.py registers it)
    SETTINGS = ("panel_size", "panel_rotate", "panel_min_evals", "panel_order")

    def __init__(self, config: Any, arg: str | None = None):
        super().__init__(config, arg)
        self.panel: list[int] = []  # stream indices, in reading order
        self.stats: dict[int, tuple[int, int]] = {}  # member -> (comparisons that read it, discordant)

    def size(self) -> int:
        return self.config.eval_set.panel_size

    def sizes(self) -> dict[str, int]:
        return {"panel": self.config.eval_set.panel_size}

    def text(self) -> str:
        touched = ", those the changed lines touch first" if self.config.eval_set.panel_order == "touched" else ""
        return f"a panel of {self.config.eval_set.panel_size} seen tasks{touched}"

    def cell(self) -> str:
        return f"panel {self.config.eval_set.panel_size}"

    def roles(self, decision: dict) -> list[str]:
        return ["panel"] * len(decision.get("eval_ids") or [])

    def where(self, decision: dict) -> str:
        return "(the panel)"

    def plan(self, store: EmbeddingStore, seen_end: int, trigger_count: int, warnings: list[str]) -> EvalPlan:
        """Refresh the panel from the tasks before the current one; the comparison reads it in its order."""
        self.panel = refresh_panel(self.panel, self.stats, store.n - 1, self.config, trigger_count)
        return EvalPlan([], [], [], list(self.panel))

    def observe(self, plan: EvalPlan, comp: Comparison | None, d: Decision, ids: list[str],
                trigger_count: int) -> None:
        """Count, per member read under both memories, the read and whether the memories disagreed (an
        indeterminate outcome counts neither); a member that left the panel takes its counts with it."""
        stats = {i: self.stats.get(i, (0, 0)) for i in self.panel}
        if comp is not None:
            for p in range(comp.n_evaluated):
                o, n_ = comp.old_correct[p], comp.new_correct[p]
                if o is not None and n_ is not None:
                    reads, disc = stats[plan.entries[p]]
                    stats[plan.entries[p]] = (reads + 1, disc + (o != n_))
        self.stats = stats

    def members(self) -> dict[str, list[int]]:
        return {"panel": list(self.panel)}

    def state_dict(self) -> dict:
        # the paper set's role fields stay in the stored form, empty (the coverage model never fitted), so a panel
        # state reads as it always has
        return {"coverage": [], "boundary": [], "coverage_model": coverage_model(self.config).state_dict(),
                "panel": [[i, *self.stats.get(i, (0, 0))] for i in self.panel]}

    def load_state_dict(self, state: dict, n_tasks: int, trigger_count: int) -> None:
        if "panel" not in state and trigger_count:
            raise ValueError("state of a panel controller (eval_set panel) that has compared holds no 'panel'")
        raw = state.get("panel", [])
        if not isinstance(raw, list) or not all(
                isinstance(e, list) and len(e) == 3 and all(type(x) is int for x in e) for e in raw):
            raise ValueError("state panel entries must be [task index, reads, discordant], whole numbers")
        panel = [tuple(e) for e in raw]
        members = [i for i, _, _ in panel]
        if (any(not 0 <= i < n_tasks for i in members) or len(set(members)) != len(members)
                or any(not 0 <= d_ <= r for _, r, d_ in panel) or len(panel) > self.config.eval_set.panel_size):
            raise ValueError("state panel holds an unknown or repeated task index, or impossible counts (or more "
                             "members than panel_size)")
        self.panel = members
        self.stats = {i: (r, d_) for i, r, d_ in panel}


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
    e = c.eval_set
    want = min(e.panel_size, n_avail)
    if len(out) < want:
        taken = set(out)
        out += r.sample([i for i in range(n_avail) if i not in taken], want - len(out))
    if out and n_avail > len(out) and r.random() < e.panel_rotate:
        ranked = [(d / n, r.random(), j) for j, i in enumerate(out)
                  for n, d in [stats.get(i, (0, 0))] if e.panel_min_evals and n >= e.panel_min_evals]
        j = min(ranked)[2] if ranked else r.randrange(len(out))
        taken = set(out)
        out[j] = r.choice([i for i in range(n_avail) if i not in taken])
    return out


def task_text(task: Any) -> str | None:
    """A task's question text when it has one (``question`` or ``text``, attribute or key), else None."""
    for name in ("question", "text"):
        v = task.get(name) if isinstance(task, dict) else getattr(task, name, None)
        if isinstance(v, str):
            return v
    return None


def touched_first(entries: list[int], tasks: list, old_text: str, new_text: str, store: EmbeddingStore,
                  z: np.ndarray | None) -> list[int]:
    """``panel_order="touched"``: the entries the change touches first, stable otherwise. A task's score is how many
    words of the changed lines (``changes.changed_words``: lines added or removed) its question holds; when no task
    has a question text, |cos(task embedding, z)| with z = φ(new) − φ(old). As given when nothing scores."""
    if not entries:
        return []
    texts = [task_text(tasks[i]) for i in entries]
    if any(t is not None for t in texts):
        words = changed_words(old_text, new_text)
        score = [len(words & text_words(t)) if t is not None else 0 for t in texts]
    elif z is not None and store.dim == z.shape[0] and np.isfinite(zn := float(np.linalg.norm(z))) and zn > 0:
        rows = store.view()[entries].astype(np.float64)
        norms = np.linalg.norm(rows, axis=1)
        score = list(np.abs(rows @ z.astype(np.float64)) / np.where(norms > 0, norms * zn, np.inf))
    else:
        return list(entries)
    order = sorted(range(len(entries)), key=lambda k: -score[k])
    return [entries[k] for k in order]
