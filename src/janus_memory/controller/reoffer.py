"""Offering again the lines of an addition that was rolled back (``JanusConfig.seq_reoffer``).

An update that only adds lines is held innocent and tested on the tasks it loses (``sequential.InnocentCap``): a
planted instruction that spoils answers is rolled back, and so, now and then, is a harmless line whose tasks a noisy
evaluator happened to get wrong. Rolled back for good, that line is knowledge lost. So the controller keeps the
added lines of every innocent addition it rolls back and, ``GAP`` steps later, compares the memory deployed then
with that memory plus those lines, by the same test (the lines' own changed words read first). Deployed, the
Decision says so (``decision.reoffer``: ``lines``, ``accept``, ``memory``) and the caller adds the lines to its
memory; a caller that cannot add lines ignores it. Each offer is a comparison: its evaluations count in the step's
``evaluator_calls`` and the controller's stats.

Limits, so that repetition cannot get a harmful line in and an offer cannot undo a later update:

* a content is offered at most ``seq_reoffer`` times after its first roll-back (the updater proposing the same lines
  again counts as an offer); when the last offer is rolled back too, its lines are *blocked*: a later candidate
  that adds one of them (the updater's own, or an attacker's) is no longer held innocent and must lead, as any other
  update;
* a content is dropped when the deployed memory already holds all its lines (the updater added them itself), and it
  is never offered again after that, so lines that a later update removed on purpose are not brought back;
* at most one content is offered per step, the oldest first.

Pure: no I/O; the comparison runs through the controller's evaluator. State: ``state_dict`` / ``load_state_dict``
(stored by ``Janus.state_dict`` when ``seq_reoffer`` is on).
"""
from __future__ import annotations

from typing import Any

from .changes import memory_items, only_adds
from .equivalence import COUNTER_BOOKKEEPING, _is_bookkeeping
from .step import Decision

GAP = 2  # steps between a roll-back and the next offer of its lines (new tasks reach the panel meanwhile)


def added_lines(old_text: str, new_text: str) -> list[str]:
    """The lines of ``new_text`` whose normalised form is not in ``old_text`` (bookkeeping lines aside), in order,
    without repeats, as written."""
    have = set(memory_items(old_text))
    out: list[str] = []
    for ln in new_text.splitlines():
        items = memory_items(ln)
        if items and items[0] not in have and not _is_bookkeeping(items[0], COUNTER_BOOKKEEPING):
            have.add(items[0])
            out.append(ln.strip())
    return out


def with_lines(memory: str, lines: list[str]) -> str:
    """``memory`` with ``lines`` appended, one a line (what an offer compares and what the caller deploys)."""
    return "\n".join(([memory.rstrip("\n")] if memory.strip() else []) + lines)


class ReofferBook:
    """The rolled-back additions waiting to be offered again, and the lines blocked for good (module docstring)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.items: list[dict] = []  # {"lines": [...], "offers": rolled-back offers so far, "since": step}
        self.blocked: set[str] = set()  # normalised lines no longer held innocent

    def blocks(self, old_text: str, new_text: str) -> bool:
        """The candidate adds a blocked line."""
        return bool(self.blocked) and any(memory_items(ln)[0] in self.blocked for ln in added_lines(old_text, new_text))

    def rolled_back(self, step: int, lines: list[str], offers: int) -> None:
        """An innocent addition of ``lines`` was rolled back for the ``offers``-th time: keep it, or block it. The
        same lines already waiting (the updater proposed them again) count one offer more."""
        if not lines:
            return
        key = set(memory_items("\n".join(lines)))
        for i, it in enumerate(self.items):
            if set(memory_items("\n".join(it["lines"]))) == key:
                offers = max(offers, self.items.pop(i)["offers"] + 1)
                break
        if offers > self.limit:
            self.blocked.update(memory_items("\n".join(lines)))
        else:
            self.items.append({"lines": list(lines), "offers": offers, "since": step})

    def prune(self, *memories: str) -> None:
        """Drop the contents one of ``memories`` already holds in full."""
        for mem in memories:
            have = set(memory_items(mem))
            self.items = [it for it in self.items if not set(memory_items("\n".join(it["lines"]))) <= have]

    def due(self, step: int) -> dict | None:
        """The oldest content whose last roll-back is ``GAP`` or more steps back (taken out of the book)."""
        for i, it in enumerate(self.items):
            if step - it["since"] >= GAP:
                return self.items.pop(i)
        return None

    def state_dict(self) -> dict:
        return {"items": [dict(it, lines=list(it["lines"])) for it in self.items], "blocked": sorted(self.blocked)}

    def load_state_dict(self, state: dict | None) -> None:
        state = state or {}
        items = state.get("items", [])
        ok = isinstance(items, list) and all(
            isinstance(it, dict) and isinstance(it.get("lines"), list) and all(isinstance(x, str) for x in it["lines"])
            and type(it.get("offers")) is int and type(it.get("since")) is int for it in items)
        blocked = state.get("blocked", [])
        if not ok or not isinstance(blocked, list) or not all(isinstance(x, str) for x in blocked):
            raise ValueError("state reoffer must hold items (lines, offers, since) and blocked lines")
        self.items = [dict(it, lines=list(it["lines"])) for it in items]
        self.blocked = set(blocked)


def after_step(janus: Any, d: Decision, old_text: str, new_text: str, innocent: bool) -> None:
    """``seq_reoffer``: after the step's own decision, note an innocent addition it rolled back, then offer the
    oldest due content once on the memory deployed now (module docstring)."""
    book: ReofferBook = janus._book
    step = janus._step
    if (d.triggered and not d.accept and innocent and d.new_correct and not d.reason.startswith("evaluation_failed")
            and only_adds(old_text, new_text)):
        book.rolled_back(step, added_lines(old_text, new_text), 1)
    deployed = new_text if d.accept else old_text
    book.prune(old_text, deployed)
    item = book.due(step)
    if item is None:
        return
    lines = [ln for ln in item["lines"] if memory_items(ln)[0] not in set(memory_items(deployed))]
    cand = with_lines(deployed, lines)
    r = Decision(step=d.step, task_id=d.task_id, phase="reoffer", triggered=True, accept=True, reason="")
    _offer(janus, r, deployed, cand)
    d.evaluator_calls += r.evaluator_calls
    d.reoffer = {"lines": lines, "offer": item["offers"] + 1, "accept": r.accept, "reason": r.reason,
                 "memory": cand if r.accept else None, "eval_ids": r.eval_ids, "old_correct": r.old_correct,
                 "new_correct": r.new_correct, "evaluator_calls": r.evaluator_calls}
    if not r.accept:
        book.rolled_back(step, lines, item["offers"] + 1)


def _offer(janus: Any, r: Decision, deployed: str, cand: str) -> None:
    """One comparison of ``deployed`` with ``cand`` on the evaluation set (a trigger: counted as one; its accept or
    roll-back is the offer's, not the step's)."""
    from .panel_set import touched_first

    janus._save_evalset()
    janus._trigger_count += 1
    janus._stats["triggers"] += 1
    plan = janus._evalset.plan(janus._store, janus._seen_end, janus._trigger_count, r.warnings)
    if janus.config.eval_set.panel_order == "touched" and janus._evalset.name == "panel":
        plan.entries = touched_first(plan.entries, janus._tasks, deployed, cand, janus._store, None)
    plan.record(r, janus._ids)
    comp = janus._compare(r, plan.entries, deployed, cand)
    janus._evalset.observe(plan, comp, r, janus._ids, janus._trigger_count)
    if comp is None:
        r.accept = False
