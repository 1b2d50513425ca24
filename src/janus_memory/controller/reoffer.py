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

* a line is offered at most ``seq_reoffer`` times after its first roll-back, counted per line (a harmless line
  proposed beside it does not restart the count; the updater proposing the line again counts as an offer); a line
  rolled back once more is *blocked*: a later candidate that adds it (the updater's own, or an attacker's) is no
  longer held innocent and must lead, as any other update. Each such candidate is a fresh comparison, so under a
  noisy evaluator a blocked line proposed again and again can still win a lead by chance;
* lines are told apart by their words and numbers (:func:`line_key`: Unicode-normalised, format characters such as
  zero-width spaces and bidi controls removed, case and punctuation ignored), so a cosmetic variant of a blocked
  line is the same line; a reworded one is a new line;
* a line the deployed memory holds leaves the book for good (the updater added it itself), so a line that a later
  update removed on purpose is never brought back;
* at most one content is offered per step, the oldest first.

The unit offered is a line by default. An updater whose memory is a bank of records (ExpRAG: a record is a
question, an answer and its feedback, over several lines) gives its own units (``Janus(units=...)``, an object
with ``split(text) -> list[str]`` and ``join(text, units) -> str``; :class:`Lines` is the default): then a unit is a
record, keyed by its lines' words, offered, counted and blocked whole.

Pure: no I/O; the comparison runs through the controller's evaluator. State: ``state_dict`` / ``load_state_dict``
(stored by ``Janus.state_dict`` when ``seq_reoffer`` is on).
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any

from .changes import memory_items, only_adds
from .equivalence import COUNTER_BOOKKEEPING, _is_bookkeeping
from .step import Decision

GAP = 2  # steps between a roll-back and the next offer of its lines (new tasks reach the panel meanwhile)
_TOKENS = re.compile(r"\w+|[<>=\u2264\u2265\u2260^+/\u00d7\u00f7%]|(?<!\w)-(?=\s*\d)")
_SUPERSCRIPTS = str.maketrans({ch: f"^{d}" for d, ch in
                               enumerate("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")})


def line_key(line: str) -> str:
    """A line's identity for offers and blocks: NFKC-normalised (a superscript digit kept apart as ``^n``), format
    characters (zero-width space, bidi controls, tag characters) removed and control characters (a tab) read as
    spaces, case-folded; its words and numbers, comparison and arithmetic signs (``< > = + / x % ^``, a minus before a
    number; not ``*``, which is Markdown emphasis) ("" for a line without any). So a bullet, emphasis or punctuation is
    cosmetic, and ``-5`` / ``5``, ``> 50`` / ``< 50`` are other lines."""
    text = unicodedata.normalize("NFKC", line.translate(_SUPERSCRIPTS))
    text = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in text
                   if unicodedata.category(ch) != "Cf").replace("\u2212", "-")
    return " ".join(_TOKENS.findall(text.casefold()))


def unit_key(unit: str) -> str:
    """A unit's identity: the :func:`line_key` of each of its lines, joined by newlines (a line's own key for a
    one-line unit)."""
    return "\n".join(k for k in map(line_key, unit.splitlines()) if k)


class Lines:
    """The default units of offering: a memory's lines (:func:`added_lines`, :func:`with_lines`)."""

    name = "lines"

    @staticmethod
    def split(text: str) -> list[str]:
        return [ln for ln in text.splitlines() if ln.strip()]

    @staticmethod
    def join(text: str, units: list[str]) -> str:
        return with_lines(text, units)


LINES = Lines()


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


def checked_units(units: Any) -> Any:
    """``units`` (None: :data:`LINES`), or TypeError when it cannot ``split`` and ``join``."""
    if units is None:
        return LINES
    if not (callable(getattr(units, "split", None)) and callable(getattr(units, "join", None))):
        raise TypeError(f"memory_units() must return None or an object with split(text) and join(text, units); got "
                        f"{type(units).__name__}")
    return units


def units_name(units: Any) -> str:
    return str(getattr(units, "name", None) or type(units).__name__)


def unit_keys(units: Any, text: str) -> set[str]:
    """The keys of the units (:class:`Lines` or an updater's) that ``text`` holds."""
    return {k for k in map(unit_key, units.split(text)) if k}


def added_units(units: Any, old_text: str, new_text: str) -> list[str]:
    """The units of ``new_text`` that ``old_text`` does not hold (lines: :func:`added_lines`), in order, without
    repeats, as written."""
    if units is LINES:
        return added_lines(old_text, new_text)
    have, out = unit_keys(units, old_text), []
    for u in units.split(new_text):
        k = unit_key(u)
        if k and k not in have:
            have.add(k)
            out.append(u)
    return out


def with_lines(memory: str, lines: list[str]) -> str:
    """``memory`` with ``lines`` appended, one a line (what an offer compares and what the caller deploys)."""
    return "\n".join(([memory.rstrip("\n")] if memory.strip() else []) + lines)


class ReofferBook:
    """The rolled-back additions waiting to be offered again, each line's roll-backs so far, and the lines blocked
    for good (module docstring). ``units``: what a line is (:class:`Lines`, or an updater's records)."""

    def __init__(self, limit: int, units: Any = None):
        self.limit = limit
        self.units = checked_units(units)
        self.items: list[dict] = []  # {"lines": [...], "since": step of the last roll-back}
        self.counts: dict[str, int] = {}  # line_key -> roll-backs so far (the first one and every offer after it)
        self.blocked: set[str] = set()  # line keys no longer held innocent
        self.expect: dict | None = None  # the offer deployed last step: {"step", "lines"}, checked on the next old memory

    def keys(self, text: str) -> set[str]:
        """The keys of the units ``text`` holds."""
        return unit_keys(self.units, text)

    def added(self, old_text: str, new_text: str) -> list[str]:
        return added_units(self.units, old_text, new_text)

    def blocks(self, old_text: str, new_text: str) -> bool:
        """The candidate adds a blocked line."""
        return bool(self.blocked) and any(unit_key(u) in self.blocked for u in self.added(old_text, new_text))

    def offer_number(self, lines: list[str]) -> int:
        """Which offer of these lines the next one is (1 = the first after the first roll-back)."""
        return max((self.counts.get(unit_key(ln), 0) for ln in lines), default=0)

    def rolled_back(self, step: int, lines: list[str]) -> None:
        """An innocent addition of ``lines`` was rolled back (at its own step, or as an offer): one more roll-back
        of each line; a line past ``limit`` offers is blocked, the others wait for their next offer (taken out of
        any older content that held them)."""
        waiting: list[str] = []
        gone: set[str] = set()  # the keys of these lines: taken out of older contents
        for ln in lines:
            k = unit_key(ln)
            new = k not in gone
            gone.add(k)
            if not k or k in self.blocked or not new:
                continue
            self.counts[k] = self.counts.get(k, 0) + 1
            if self.counts[k] > self.limit:
                self.blocked.add(k)
            else:
                waiting.append(ln)
        self._keep_only(lambda k: k not in gone)
        if waiting:
            self.items.append({"lines": waiting, "since": step})

    def prune(self, *memories: str) -> None:
        """Drop every waiting line one of ``memories`` holds: it is in a deployed memory, and once there a later
        removal is the updater's choice, not a loss to repair."""
        have = set().union(*(self.keys(m) for m in memories)) if memories else set()
        self._keep_only(lambda k: k not in have)

    def _keep_only(self, keep) -> None:
        items = []
        for it in self.items:
            lines = [ln for ln in it["lines"] if keep(unit_key(ln))]
            if lines:
                items.append(dict(it, lines=lines))
        self.items = items

    def due(self, step: int) -> dict | None:
        """The oldest content whose last roll-back is ``GAP`` or more steps back (taken out of the book)."""
        for i, it in enumerate(self.items):
            if step - it["since"] >= GAP:
                return self.items.pop(i)
        return None

    def state_dict(self) -> dict:
        kind = {} if self.units is LINES else {"units": units_name(self.units)}  # what the keys and items are
        return {**kind, "items": [dict(it, lines=list(it["lines"])) for it in self.items], "blocked": sorted(self.blocked),
                "counts": dict(sorted(self.counts.items())),
                **({"expect": {"step": self.expect["step"], "lines": list(self.expect["lines"])}} if self.expect else {})}

    def load_state_dict(self, state: dict | None) -> None:
        state = state or {}
        saved = state.get("units", "lines")
        if saved != "lines" and saved != units_name(self.units):  # its keys would not match: a blocked one unblocked
            raise ValueError(f"state reoffer holds {saved}, not {units_name(self.units)}: build the controller with "
                             "units=updater.memory_units() of the updater it guarded")
        items = state.get("items", [])
        ok = isinstance(items, list) and all(
            isinstance(it, dict) and isinstance(it.get("lines"), list) and all(isinstance(x, str) for x in it["lines"])
            and type(it.get("since")) is int for it in items)
        blocked, counts = state.get("blocked", []), state.get("counts", {})
        if (not ok or not isinstance(blocked, list) or not all(isinstance(x, str) for x in blocked)
                or not isinstance(counts, dict)
                or not all(isinstance(k, str) and type(v) is int and v >= 0 for k, v in counts.items())):
            raise ValueError("state reoffer must hold items (lines, since), blocked lines and per-line counts")
        self.items = [{"lines": list(it["lines"]), "since": it["since"]} for it in items]
        self.blocked = set(blocked)
        self.counts = dict(counts)
        expect = state.get("expect")
        if expect is not None and not (isinstance(expect, dict) and type(expect.get("step")) is int
                                       and isinstance(expect.get("lines"), list)
                                       and all(isinstance(x, str) for x in expect["lines"])):
            raise ValueError("state reoffer's expect must hold a step and lines")
        self.expect = {"step": expect["step"], "lines": list(expect["lines"])} if expect else None


def offer_deployed(reoffer: dict | None) -> bool:
    """A Decision's ``reoffer`` (as a dict, also read back from a decision log) was accepted and applied: the
    memory after its step holds the content offered again (``applied`` absent: a caller of its own applied it)."""
    return isinstance(reoffer, dict) and bool(reoffer.get("accept")) and reoffer.get("applied", True) is not False


def use_units(janus: Any, units: Any) -> None:
    """Offer ``units`` (an updater's ``memory_units()``; None: lines) again from now on (GuardedUpdate does this for
    an updater that has them)."""
    janus._book.units = checked_units(units)


def after_step(janus: Any, d: Decision, old_text: str, new_text: str, innocent: bool) -> None:
    """``seq_reoffer``: after the step's own decision, note an innocent addition it rolled back, then offer the
    oldest due content once on the memory deployed now (module docstring)."""
    book: ReofferBook = janus._book
    step = janus._step
    if book.expect is not None:  # the offer deployed at the last step: the caller was to add its lines
        held = book.keys(old_text)
        missing = [ln for ln in book.expect["lines"] if unit_key(ln) not in held]
        if missing:
            d.warnings.append(f"the lines re-offered and deployed at step {book.expect['step']} are not in the old "
                              f"memory given now ({len(missing)} of {len(book.expect['lines'])} missing): deploy "
                              "decision.reoffer['memory'] after an accepted offer (GuardedUpdate does, through "
                              "updater.load_memory_text)")
        book.expect = None
    if (d.triggered and not d.accept and innocent and d.new_correct and not d.reason.startswith("evaluation_failed")
            and only_adds(old_text, new_text)):
        book.rolled_back(step, book.added(old_text, new_text))
    deployed = new_text if d.accept else old_text
    book.prune(old_text, deployed)
    item = book.due(step)
    if item is None:
        return
    lines = item["lines"]  # prune took out every line the deployed memory holds
    offer = book.offer_number(lines)
    try:
        cand = book.units.join(deployed, lines)
    except ValueError as exc:  # content these units cannot hold (a book kept in lines before, resumed with records)
        d.warnings.append(f"re-offer dropped: {len(lines)} waiting item(s) are not {units_name(book.units)} ({exc})")
        return
    r = Decision(step=d.step, task_id=d.task_id, phase="reoffer", triggered=True, accept=True, reason="")
    _offer(janus, r, deployed, cand)
    d.evaluator_calls += r.evaluator_calls
    d.reoffer = {"lines": lines, "offer": offer, "accept": r.accept, "reason": r.reason,
                 "memory": cand if r.accept else None, "eval_ids": r.eval_ids, "old_correct": r.old_correct,
                 "new_correct": r.new_correct, "evaluator_calls": r.evaluator_calls}
    if r.accept:
        book.expect = {"step": d.step, "lines": list(lines)}
    else:
        book.rolled_back(step, lines)


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
