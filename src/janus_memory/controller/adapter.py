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

A re-offer the controller deployed (``JanusConfig.seq_reoffer``: lines of an addition rolled back earlier, offered
again and deployed; ``decision.reoffer``) is applied by ``GuardedUpdate`` through the updater's
``load_memory_text(text)`` when it has one and the updater then renders exactly that text (:func:`apply_reoffer`);
otherwise nothing changes and ``decision.reoffer["applied"]`` is False.

A rollback is checked, not trusted: ``GuardedUpdate`` reads the updater's ``memory_text()`` after ``rollback`` and
compares it with the memory before the step (``verify_rollback``). A ``snapshot()`` that returns a reference to the
live state instead of a copy "restores" the candidate itself; that raises :class:`RollbackError` by default.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .janus import Decision, Janus, StepInput
from .reoffer import LINES, use_units

VERIFY_ROLLBACK = ("raise", "warn", "off")


class RollbackError(RuntimeError):
    """A rollback left the updater holding another memory than the one before the step (a ``snapshot()`` that
    returned a reference to its live state, or a ``rollback`` that restores nothing)."""


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
    if vecs.ndim != 2 or vecs.shape[0] != len(texts):
        raise ValueError(f"embed(texts) must return one row per text, shape ({len(texts)}, d); got shape "
                         f"{tuple(vecs.shape)}")
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
    ``verify_rollback``: after a rollback, the updater's ``memory_text()`` must equal the memory before the step
    (``outcome.old_memory``): ``raise`` (default) raises :class:`RollbackError`, ``warn`` adds a line to the
    decision's warnings, ``off`` trusts the rollback. An updater without ``memory_text()`` cannot be checked: a
    warning says so (``off``: nothing).
    """

    def __init__(self, janus: Janus, updater: Any, embed: Callable[[list[str]], np.ndarray],
                 question: Callable[[Any], str] = lambda t: t.question, *, verify_rollback: str = "raise"):
        if verify_rollback not in VERIFY_ROLLBACK:
            raise ValueError(f"verify_rollback must be one of {', '.join(VERIFY_ROLLBACK)}, got {verify_rollback!r}")
        self.janus = janus
        self.updater = updater
        units = getattr(updater, "memory_units", None)  # seq_reoffer: an updater whose memory is records, not lines
        if janus.config.decision.reoffers and janus.units is LINES and callable(units):
            use_units(janus, units())
        self.embed = embed
        self.question = question
        self.verify_rollback = verify_rollback

    def step(self, task: Any, snapshot: Any = None) -> tuple[Any, Decision]:
        """Propose, decide, roll back when the old memory wins. ``snapshot``: the updater state before this step when
        the caller already holds it (e.g. the previous step's checkpoint), else taken here."""
        snap = self.updater.snapshot() if snapshot is None else snapshot
        outcome = self.updater.step(task)
        _check_outcome(self.updater, outcome)
        decision = guarded_step(self.janus, task=task, task_text=self.question(task),
                                old_text=outcome.old_memory, new_text=outcome.candidate_memory,
                                embed=self.embed, snapshot=snap, restore=self.updater.rollback)
        if not decision.accept and self.verify_rollback != "off":
            self._verify(outcome.old_memory, decision)
        if decision.reoffer.get("accept"):
            apply_reoffer(self.updater, decision)
        return outcome, decision

    def _verify(self, old_memory: str, decision: Decision) -> None:
        read = getattr(self.updater, "memory_text", None)
        if not callable(read):
            decision.warnings.append(f"rollback not verified: {type(self.updater).__name__} has no memory_text()")
            return
        now = read()
        if now == old_memory:
            return
        got = f"{len(now)} characters" if isinstance(now, str) else f"a {type(now).__name__}"
        msg = (f"rollback failed at step {decision.step}: after {type(self.updater).__name__}.rollback(snapshot) the "
               f"memory ({got}) is not the one before the step ({len(old_memory)} characters); snapshot() must "
               f"return a copy of the state, not a reference to it")
        if self.verify_rollback == "raise":
            raise RollbackError(msg)
        decision.warnings.append(msg)


def _check_outcome(updater: Any, outcome: Any) -> None:
    """One clear error when an updater's ``step`` does not return what GuardedUpdate reads (texts, not a bare string)."""
    missing = [a for a in ("old_memory", "candidate_memory") if not isinstance(getattr(outcome, a, None), str)]
    if missing:
        raise TypeError(f"{type(updater).__name__}.step(task) must return an object whose .old_memory and "
                        f".candidate_memory are the memory texts before and after the update (str); got "
                        f"{type(outcome).__name__} without str {', '.join('.' + m for m in missing)} "
                        "(janus_memory.updaters.base.StepOutcome is one such type)")


def apply_reoffer(updater: Any, decision: Decision) -> bool:
    """Make the re-offered memory ``decision.reoffer["memory"]`` the updater's memory through its optional
    ``load_memory_text(text)``, checked: when the updater has no such method, refuses the text, or then renders
    another text (a format that cannot hold the lines), its state before is put back. Sets and returns
    ``decision.reoffer["applied"]``; a warning says why not."""
    text = decision.reoffer.get("memory")
    load, read = getattr(updater, "load_memory_text", None), getattr(updater, "memory_text", None)
    why = ""
    if not isinstance(text, str) or not callable(load) or not callable(read):
        why = f"{type(updater).__name__} cannot load a memory text"
    else:
        snap = updater.snapshot()
        try:
            load(text)
            if read() != text:
                why = f"{type(updater).__name__} renders the loaded memory as another text"
        except (NotImplementedError, ValueError) as exc:
            why = f"{type(updater).__name__} refused it ({exc})"
        if why:
            restore = getattr(updater, "load_snapshot", None) or updater.rollback
            restore(snap)
    decision.reoffer["applied"] = not why
    if why:
        decision.warnings.append(f"re-offered lines not applied: {why}")
    return not why
