"""A tiny seam showing how any agent loop plugs the controller in (no I/O here).

The loop needs, per step: a snapshot of the updater state *before* it proposes the candidate, the old and candidate
memory texts, an ``embed(list[str]) -> (n, d) array`` callback (the same encoder for questions and memories, as in
the paper, spec §2.2), and a ``restore(snapshot)`` callback used on rollback.

    snap = updater.snapshot()
    outcome = updater.step(task)                         # proposes M̂_t internally
    d = guarded_step(janus, task=task, task_text=task.question,
                     old_text=outcome.old_memory, new_text=outcome.candidate_memory,
                     embed=encoder.encode, snapshot=snap, restore=updater.rollback)

or, for objects with ``snapshot() / step(task) / rollback(snap)`` (the ``updaters.base.Updater`` seam),
``GuardedUpdate(janus, updater, embed).step(task) -> (outcome, decision)``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .janus import Decision, Janus, StepInput


def guarded_step(
    janus: Janus,
    *,
    task: Any,
    task_embedding: np.ndarray | None = None,
    old_text: str,
    new_text: str,
    embed: Callable[[list[str]], np.ndarray],
    snapshot: Any,
    restore: Callable[[Any], None],
    task_text: str | None = None,
) -> Decision:
    """Run one controller decision and roll back through ``restore(snapshot)`` when the old memory wins.

    Embeds ``[task_text?, old_text, new_text]`` in one batched ``embed`` call (``task_text`` only when
    ``task_embedding`` is None). Raises ValueError when neither ``task_embedding`` nor ``task_text`` is given.
    """
    texts = [old_text, new_text]
    if task_embedding is None:
        if task_text is None:
            raise ValueError("guarded_step needs task_embedding or task_text")
        texts = [task_text] + texts
    vecs = np.asarray(embed(texts))
    if task_embedding is None:
        task_embedding, old_vec, new_vec = vecs[0], vecs[1], vecs[2]
    else:
        old_vec, new_vec = vecs[0], vecs[1]
    decision = janus.decide(StepInput(task=task, task_embedding=task_embedding, old_memory=old_text,
                                      new_memory=new_text, old_embedding=old_vec, new_embedding=new_vec))
    if not decision.accept:
        restore(snapshot)
    return decision


class GuardedUpdate:
    """Wrap an updater exposing ``snapshot() -> state``, ``step(task) -> outcome`` (with ``old_memory`` and
    ``candidate_memory`` text attributes) and ``rollback(state)``.

    ``question`` maps a task to the text whose embedding is φ(x) (default: ``task.question``).
    """

    def __init__(self, janus: Janus, updater: Any, embed: Callable[[list[str]], np.ndarray],
                 question: Callable[[Any], str] = lambda t: t.question):
        self.janus = janus
        self.updater = updater
        self.embed = embed
        self.question = question

    def step(self, task: Any, snapshot: Any = None) -> tuple[Any, Decision]:
        """Propose, decide, roll back when the old memory wins. ``snapshot``: the updater state before this step when
        the caller already holds it (e.g. the previous step's checkpoint), else taken here."""
        snap = self.updater.snapshot() if snapshot is None else snapshot
        outcome = self.updater.step(task)
        _check_outcome(self.updater, outcome)
        decision = guarded_step(self.janus, task=task, task_text=self.question(task),
                                old_text=outcome.old_memory, new_text=outcome.candidate_memory,
                                embed=self.embed, snapshot=snap, restore=self.updater.rollback)
        return outcome, decision


def _check_outcome(updater: Any, outcome: Any) -> None:
    """One clear error when an updater's ``step`` does not return what GuardedUpdate reads (texts, not a bare string)."""
    missing = [a for a in ("old_memory", "candidate_memory") if not isinstance(getattr(outcome, a, None), str)]
    if missing:
        raise TypeError(f"{type(updater).__name__}.step(task) must return an object whose .old_memory and "
                        f".candidate_memory are the memory texts before and after the update (str); got "
                        f"{type(outcome).__name__} without str {', '.join('.' + m for m in missing)} "
                        "(janus_memory.updaters.base.StepOutcome is one such type)")
