"""The ``rules`` task family: a seeded generator of support tickets whose answers need a team's own rules.

Modelled on what agent memories are for: an assistant that learns a team's prices, limits and conventions from earlier
tickets. Each seed draws a *world*: one value per rule (a shipping rate, a handling fee, a box count per crate, an
order limit, a refund cap, a member discount, a store-credit value, a response deadline) plus one precedence rule
(Gold members' refunds are never capped). The values are made up per seed, so no model knows them in advance.

* An **intro** task states one rule while asking about it ("Team rule (from billing): Shipping costs $7 per kg. A
  customer ships a 3 kg parcel. What do we charge for shipping, in dollars?").
* A **recall** task needs one rule that only an earlier task stated ("What do we charge for shipping a 5 kg
  parcel?").
* A **combo** task needs two or three stated rules at once (shipping plus handling, crates split into orders,
  a member's discounted price plus shipping, shipping paid in credits, a Gold member's uncapped refund).

The stream states every rule of the world within its first ``2 x rules`` tasks (intros spread among recall tasks of
rules already stated), then mixes recall and combo tasks; ``rules_late`` states half its rules late instead, at 40%
to 80% of a stream laid out for the length asked for (:func:`late_steps`), so that they come after a warm-up.
The held-out test holds only recall and combo tasks: every
test answer needs memory of what the stream stated. No question text appears twice in a world (stream and test
included). Answers are whole numbers; the scorer compares them exactly (tasks/rules_scoring.py).

Everything is generated from the seed (``random.Random`` over a sha256-derived seed), shipped in the package, no file
or download: the same seed gives the same tasks on every machine (pinned by tests/tasks/test_tasks_rules.py).

Each task's ``meta`` says what it needs: ``kind`` (intro / recall / combo), ``rules`` (the rule keys it needs),
``states`` (the rule an intro states), ``facts`` (the statements of the rules it needs: what a memory must hold for
it; the ``falsify`` injection reads them, inject/falsify.py) and ``world`` (the seed's rule values); a stream
task's ``stated`` lists the rules the stream has stated up to and including it (:func:`stated_rules`). What a memory
text holds of the rules: :func:`held_rules`; the statements in the generator's words a text holds:
:func:`statement_values` (the rules-following scripted model, run/fake_llm.py).
"""
from __future__ import annotations

import functools
import hashlib
import random
import re
from dataclasses import dataclass
from typing import Callable

from janus_memory.values import Task

# ----------------------------------------------------------------------------------------------------- the rules

Values = dict[str, dict[str, int]]  # rule key -> its values ({"ship_rate": {"rate": 7}, ...})


@dataclass(frozen=True)
class RuleKind:
    """One rule of a world: ``draw`` picks its values, ``text`` states them."""

    key: str
    source: str  # who stated it, as an intro task says ("billing", "the warehouse", ...)
    draw: Callable[[random.Random], dict[str, int]]
    text: Callable[[dict[str, int]], str]


@dataclass(frozen=True)
class Question:
    """A question type: ``draw`` picks its own numbers (``params``, from the seed and the rule values), ``text``
    words it, ``solve`` answers it from the params and the rule values. Kept apart so the answer under other rule
    values (a falsified rule) can be computed for the same question (:func:`answer_under`)."""

    name: str
    needs: tuple[str, ...]
    draw: Callable[[random.Random, Values], dict[str, int]]
    text: Callable[[dict[str, int]], str]
    solve: Callable[[dict[str, int], Values], int]


def _a(n: int) -> str:
    """The article before a number: "an 8 kg parcel", "an 11 kg parcel", "a 7 kg parcel"."""
    return "an" if str(n)[0] == "8" or n in (11, 18) else "a"


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


KINDS: dict[str, RuleKind] = {k.key: k for k in [
    RuleKind("ship_rate", "billing", lambda g: {"rate": g.randint(3, 12)},
             lambda v: f"Shipping costs ${v['rate']} per kg."),
    RuleKind("handling", "billing", lambda g: {"fee": g.randint(2, 9)},
             lambda v: f"Every order pays a flat handling fee of ${v['fee']}."),
    RuleKind("crate", "the warehouse", lambda g: {"boxes": g.randint(4, 12)},
             lambda v: f"One crate holds {v['boxes']} boxes."),
    RuleKind("order_limit", "the warehouse", lambda g: {"limit": g.randint(5, 15)},
             lambda v: (f"One order holds at most {v['limit']} boxes; a larger request is split into as few orders as "
                        "possible.")),
    RuleKind("refund_cap", "customer care", lambda g: {"cap": 10 * g.randint(4, 15)},
             lambda v: f"A refund is capped at ${v['cap']} per ticket."),
    RuleKind("member_discount", "sales", lambda g: {"pct": g.choice([10, 20, 25, 50])},
             lambda v: f"Members get {v['pct']}% off the list price."),
    RuleKind("credit", "billing", lambda g: {"dollars": g.randint(2, 9)},
             lambda v: f"One store credit is worth ${v['dollars']}."),
    RuleKind("deadline", "customer care", lambda g: {"hours": g.choice([6, 8, 12, 18, 24, 36, 48])},
             lambda v: f"Priority tickets must be answered within {v['hours']} hours of opening."),
    RuleKind("gold_refund", "customer care", lambda g: {},
             lambda v: "Refunds to Gold members are never capped: they get the full amount."),
]}


def _v(w: Values, key: str, name: str) -> int:
    return w[key][name]


def _above_cap(g, w) -> int:  # a claim above the refund cap (the cap is what the rule changes)
    return (w["refund_cap"]["cap"] if "refund_cap" in w else 40) + 10 * g.randint(1, 12)


QUESTIONS: tuple[Question, ...] = (
    # one rule each (intro and recall tasks)
    Question("ship_rate", ("ship_rate",), lambda g, w: {"kg": g.randint(2, 12)},
             lambda p: f"A customer ships {_a(p['kg'])} {p['kg']} kg parcel. What do we charge for shipping, in dollars?",
             lambda p, w: _v(w, "ship_rate", "rate") * p["kg"]),
    Question("ship_rate:two", ("ship_rate",), lambda g, w: {"a": g.randint(1, 6), "b": g.randint(1, 6)},
             lambda p: (f"A customer sends two parcels, of {p['a']} kg and {p['b']} kg. What is the shipping charge "
                        "for both, in dollars?"),
             lambda p, w: _v(w, "ship_rate", "rate") * (p["a"] + p["b"])),
    Question("handling", ("handling",), lambda g, w: {"n": g.randint(2, 9)},
             lambda p: (f"A customer placed {p['n']} separate orders this week. How much handling did they pay in "
                        "total, in dollars?"),
             lambda p, w: _v(w, "handling", "fee") * p["n"]),
    Question("handling:shop", ("handling",), lambda g, w: {"n": g.randint(2, 9)},
             lambda p: f"We processed {p['n']} orders for one shop today. What handling fees do we bill them, in dollars?",
             lambda p, w: _v(w, "handling", "fee") * p["n"]),
    Question("crate", ("crate",), lambda g, w: {"n": g.randint(2, 12)},
             lambda p: f"How many boxes are in {p['n']} full crates?",
             lambda p, w: _v(w, "crate", "boxes") * p["n"]),
    Question("crate:loose", ("crate",), lambda g, w: {"n": g.randint(2, 9), "k": g.randint(1, 3)},
             lambda p: f"A customer received {p['n']} full crates and {p['k']} loose boxes. How many boxes is that?",
             lambda p, w: _v(w, "crate", "boxes") * p["n"] + p["k"]),
    Question("order_limit", ("order_limit",),
             lambda g, w: {"n": g.randint(w["order_limit"]["limit"] + 1, 5 * w["order_limit"]["limit"])},
             lambda p: f"A customer wants {p['n']} boxes. How many orders does that take?",
             lambda p, w: _ceil(p["n"], _v(w, "order_limit", "limit"))),
    Question("order_limit:split", ("order_limit",),
             lambda g, w: {"n": g.randint(w["order_limit"]["limit"] + 1, 5 * w["order_limit"]["limit"])},
             lambda p: f"Into how many orders do we split a request for {p['n']} boxes?",
             lambda p, w: _ceil(p["n"], _v(w, "order_limit", "limit"))),
    Question("refund_cap", ("refund_cap",), lambda g, w: {"x": _above_cap(g, w)},
             lambda p: (f"A customer returns items worth ${p['x']} and asks for a full refund. How much do we refund, "
                        "in dollars?"),
             lambda p, w: min(p["x"], _v(w, "refund_cap", "cap"))),
    Question("refund_cap:damaged", ("refund_cap",), lambda g, w: {"x": _above_cap(g, w)},
             lambda p: f"A customer claims ${p['x']} for a damaged delivery. How much can the refund be at most, in dollars?",
             lambda p, w: min(p["x"], _v(w, "refund_cap", "cap"))),
    Question("member_discount", ("member_discount",), lambda g, w: {"price": 20 * g.randint(2, 15)},
             lambda p: f"What is a member's price for an item with a list price of ${p['price']}, in dollars?",
             lambda p, w: p["price"] * (100 - _v(w, "member_discount", "pct")) // 100),
    Question("member_discount:saving", ("member_discount",), lambda g, w: {"price": 20 * g.randint(2, 15)},
             lambda p: f"How many dollars does a member save on an item listed at ${p['price']}?",
             lambda p, w: p["price"] * _v(w, "member_discount", "pct") // 100),
    Question("credit", ("credit",), lambda g, w: {"n": g.randint(3, 15)},
             lambda p: f"A customer redeems {p['n']} store credits. How many dollars is that worth?",
             lambda p, w: _v(w, "credit", "dollars") * p["n"]),
    Question("credit:refund", ("credit",), lambda g, w: {"n": g.randint(3, 15)},
             lambda p: f"We refund a customer {p['n']} store credits. What is that in dollars?",
             lambda p, w: _v(w, "credit", "dollars") * p["n"]),
    Question("deadline", ("deadline",), lambda g, w: {"ago": g.randint(1, w["deadline"]["hours"] - 1)},
             lambda p: f"A priority ticket was opened {p['ago']} hours ago. How many hours are left to answer it?",
             lambda p, w: _v(w, "deadline", "hours") - p["ago"]),
    Question("deadline:clock", ("deadline",), lambda g, w: {"start": g.randint(0, 12)},
             lambda p: (f"A priority ticket was opened at hour {p['start']} of Monday (0 = midnight). By how many hours "
                        "after Monday midnight must it be answered?"),
             lambda p, w: p["start"] + _v(w, "deadline", "hours")),
    Question("gold_refund", ("gold_refund",), lambda g, w: {"x": _above_cap(g, w)},
             lambda p: (f"A Gold member returns items worth ${p['x']} and asks for a full refund. How much do we "
                        "refund, in dollars?"),
             lambda p, w: p["x"]),
    # several rules at once (combo tasks)
    Question("ship+handling", ("ship_rate", "handling"), lambda g, w: {"kg": g.randint(2, 12)},
             lambda p: (f"A customer places one order and ships it as {_a(p['kg'])} {p['kg']} kg parcel. What is the "
                        "total charge, shipping plus handling, in dollars?"),
             lambda p, w: _v(w, "ship_rate", "rate") * p["kg"] + _v(w, "handling", "fee")),
    Question("crates->orders", ("crate", "order_limit"),
             lambda g, w: {"n": max(g.randint(2, 9), w["order_limit"]["limit"] // w["crate"]["boxes"] + 1)},
             lambda p: f"A customer wants {p['n']} full crates of boxes. How many orders does that take?",
             lambda p, w: _ceil(p["n"] * _v(w, "crate", "boxes"), _v(w, "order_limit", "limit"))),
    Question("orders+handling", ("order_limit", "handling"),
             lambda g, w: {"n": g.randint(w["order_limit"]["limit"] + 1, 5 * w["order_limit"]["limit"])},
             lambda p: (f"A customer wants {p['n']} boxes. What is the total handling fee for the orders this takes, "
                        "in dollars?"),
             lambda p, w: _ceil(p["n"], _v(w, "order_limit", "limit")) * _v(w, "handling", "fee")),
    Question("order total", ("member_discount", "ship_rate", "handling"),
             lambda g, w: {"price": 20 * g.randint(2, 15), "kg": g.randint(2, 12)},
             lambda p: (f"A member places one order: an item with a list price of ${p['price']}, shipped as "
                        f"{_a(p['kg'])} {p['kg']} kg parcel. What is the order's total, with shipping and handling, "
                        "in dollars? (The discount applies to the item only.)"),
             lambda p, w: (p["price"] * (100 - _v(w, "member_discount", "pct")) // 100
                           + _v(w, "ship_rate", "rate") * p["kg"] + _v(w, "handling", "fee"))),
    Question("shipping->credits", ("ship_rate", "credit"), lambda g, w: {"kg": g.randint(2, 12)},
             lambda p: (f"A customer pays the shipping of {_a(p['kg'])} {p['kg']} kg parcel with store credits only. "
                        "How many credits does that take? (Credits are whole: round up.)"),
             lambda p, w: _ceil(_v(w, "ship_rate", "rate") * p["kg"], _v(w, "credit", "dollars"))),
    Question("gold>cap", ("refund_cap", "gold_refund"), lambda g, w: {"x": _above_cap(g, w), "gold": g.randint(0, 1)},
             lambda p: (f"A {'Gold member' if p['gold'] else 'customer who is not a Gold member'} returns items worth "
                        f"${p['x']} and asks for a full refund. How much do we refund, in dollars?"),
             lambda p, w: p["x"] if p["gold"] else min(p["x"], _v(w, "refund_cap", "cap"))),
)
QUESTION = {q.name: q for q in QUESTIONS}


@dataclass(frozen=True)
class Variant:
    """A registered rules dataset: which rules its worlds hold, how many tasks each split has, which question
    types it leaves out and how many of its rules are first stated late in the stream (``late``: the layout of
    :func:`late_steps`; 0 = every rule stated within the first ``2 x rules - 3`` tickets)."""

    name: str
    rules: tuple[str, ...]
    stream: int
    test: int
    leave_out: tuple[str, ...] = ()
    late: int = 0


VARIANTS: dict[str, Variant] = {v.name: v for v in [
    Variant("rules", tuple(KINDS), 100, 50),
    # the demo's world: two rules, so that a falsified one matters for most later tickets
    Variant("rules_small", ("ship_rate", "handling"), 30, 20),
    # half the rules first stated late: a memory update whose value lies only in tickets still to come
    Variant("rules_late", ("ship_rate", "handling", "crate", "order_limit"), 60, 24, late=2),
]}


# ----------------------------------------------------------------------------------------------------- the world

def _rng(*parts) -> random.Random:
    digest = hashlib.sha256("\x00".join(["janus-rules", *map(str, parts)]).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@dataclass(frozen=True)
class World:
    """One seed's rules: ``order`` (the order the stream states them in) and ``values`` per rule."""

    variant: str
    seed: int
    order: tuple[str, ...]
    values: Values

    def statement(self, key: str) -> str:
        return KINDS[key].text(self.values[key])

    def sheet(self, false: dict[str, str] | None = None) -> str:
        """The gold rule sheet: every rule in stream order (``false`` replaces a rule's statement by another)."""
        lines = [(false or {}).get(k, self.statement(k)) for k in self.order]
        return "## Team rules\n" + "\n".join(f"- {s}" for s in lines)


def make_world(variant: str = "rules", seed: int = 0) -> World:
    """The world of ``variant`` for ``seed`` (values drawn per rule, stating order shuffled; the precedence rule
    is stated after the rule it overrides; in a variant with late rules every rule after the first has a combo
    question with a rule stated before it, so a combo ticket can follow its statement)."""
    v = VARIANTS[variant]
    g = _rng(variant, seed, "world")
    values = {k: KINDS[k].draw(g) for k in v.rules}
    order = list(v.rules)
    g.shuffle(order)
    if "gold_refund" in order and "refund_cap" in order and order.index("gold_refund") < order.index("refund_cap"):
        i, j = order.index("gold_refund"), order.index("refund_cap")
        order[i], order[j] = order[j], order[i]
    if v.late:
        order = _chained(order, v.leave_out)
    return World(variant, seed, tuple(order), values)


def _chained(order: list[str], leave_out: tuple[str, ...] = ()) -> list[str]:
    """``order`` re-ordered so that each rule after the first shares a combo question with a rule before it (the
    first rule of ``order`` that does is taken next; a rule with no combo partner at all keeps its turn)."""
    out, rest = [order[0]], list(order[1:])
    while rest:
        known = out
        nxt = next((k for k in rest if _later_types([*known, k], leave_out)[1] != _later_types(known, leave_out)[1]),
                   rest[0])
        out.append(nxt)
        rest.remove(nxt)
    return out


# ----------------------------------------------------------------------------------------------------- the tasks

def _task(dataset: str, split: str, i: int, world: World, kind: str, q: Question, params: dict[str, int],
          states: str | None = None, stated: list[str] | None = None) -> Task:
    question = q.text(params)
    if states:
        question = f"Team rule (from {KINDS[states].source}): {world.statement(states)} {question}"
    meta = {"kind": kind, "question_type": q.name, "rules": list(q.needs), "states": states, "params": dict(params),
            "facts": [world.statement(k) for k in q.needs], "world": {k: dict(world.values[k]) for k in world.order}}
    if stated is not None:  # a stream task: the rules the stream has stated up to and including this task
        meta["stated"] = list(stated)
    return Task(id=f"{dataset}:{split}:{i:03d}", dataset=dataset, question=question,
                gold=str(q.solve(params, world.values)), meta=meta)


def _draw(g: random.Random, world: World, types: list[Question], seen: set[str]) -> tuple[Question, dict] | None:
    """A question of one of ``types`` (drawn first, then its numbers) whose text no earlier task used; a type whose
    questions are used up gives way to another; None when all are used up."""
    types = list(types)
    while types:
        q = g.choice(types)
        for _ in range(30):
            params = q.draw(g, world.values)
            text = q.text(params)
            if text not in seen:
                seen.add(text)
                return q, params
        types.remove(q)
    return None


def _later_types(known: list[str], leave_out: tuple[str, ...] = ()) -> tuple[list[Question], list[Question]]:
    """(recall, combo) question types over the rules in ``known``."""
    usable = [q for q in QUESTIONS if q.name not in leave_out]
    recall = [q for q in usable if len(q.needs) == 1 and q.needs[0] in known and q.needs[0] != "gold_refund"]
    combo = [q for q in usable if len(q.needs) > 1 and all(n in known for n in q.needs)]
    return recall, combo


def _later(g: random.Random, world: World, known: list[str], seen: set[str]) -> tuple[str, Question, dict]:
    """A recall or combo task (a combo half of the time where one exists and is not used up)."""
    recall, combo = _later_types(known, VARIANTS[world.variant].leave_out)
    if combo and (not recall or g.random() < 0.5):
        got = _draw(g, world, combo, seen)
        if got is not None:
            return ("combo", *got)
    got = _draw(g, world, recall, seen) or _draw(g, world, combo, seen)
    if got is None:  # a world far too small for its splits
        raise RuntimeError("the rules generator ran out of distinct questions")
    q, params = got
    return ("combo" if len(q.needs) > 1 else "recall", q, params)


def generate(variant: str = "rules", seed: int = 0, size: int | None = None) -> tuple[list[Task], list[Task], World]:
    """The stream and test tasks of one world (module docstring): the first three tasks state a rule each, then every
    second task states the next one until all are stated; the other tasks are recall or combo tasks (half each where
    a combo exists) over the rules stated so far; the test's over all of them. A variant with late rules is laid out
    by :func:`generate_late` (``size``: its stream's length; the other variants' streams are cut by the caller)."""
    v = VARIANTS[variant]
    if v.late:
        return generate_late(variant, seed, size)
    world = make_world(variant, seed)
    g = _rng(variant, seed, "tasks")
    seen: set[str] = set()
    stream: list[Task] = []
    known: list[str] = []
    pending = list(world.order)
    while pending or len(stream) < v.stream:
        i = len(stream)
        if pending and (i < 3 or i % 2 == 0):
            key = pending.pop(0)
            drawn = _draw(g, world, [q for q in QUESTIONS if q.needs == (key,)], seen)
            assert drawn is not None  # the first question about a rule: none used up yet
            q, params = drawn
            known.append(key)
            stream.append(_task(variant, "stream", i, world, "intro", q, params, states=key, stated=known))
        else:
            kind, q, params = _later(g, world, known, seen)
            stream.append(_task(variant, "stream", i, world, kind, q, params, stated=known))
    test = []
    for i in range(v.test):
        kind, q, params = _later(g, world, list(world.order), seen)
        test.append(_task(variant, "test", i, world, kind, q, params))
    return stream, test, world


# ----------------------------------------------------------------------------------------------------- late rules

def late_steps(variant: str, size: int | None = None) -> list[int]:
    """The 1-based stream steps at which a late variant states its rules, for a stream of ``size`` tickets (None: the
    variant's own length). The first ``rules - late`` rules are stated by the first tickets, one each; the ``late``
    others at 40% to 80% of the stream, evenly spaced (one late rule: at 50%), each followed by a recall and a combo
    ticket: steps 1, 2, 25, 49 of ``rules_late``'s 60, and 1, 2, 5, 10 of a 12-ticket stream. The late rules are
    first stated after a warm-up of W steps when 40% of the stream is at least W: a stream of 2.5 W tickets or more
    (50 for the default warm-up of 20; for the demo's warm-up of 3, any stream the layout fits). ValueError (one
    line) for a stream too short to hold the layout (``rules + 2 + 2 x late`` tickets: 10 for ``rules_late``)."""
    v = VARIANTS[variant]
    n = v.stream if size is None else size
    early, late = len(v.rules) - v.late, v.late
    least = early + 2 + 3 * late
    if n < least:
        raise ValueError(f"{variant}: a stream of {n} tickets is too short for its layout ({early} rules stated "
                         f"first, {late} later, each followed by a recall and a combo ticket); use at least {least}")
    spots: list[int] = []
    for j in range(late):  # 0-based ticket indices
        frac = 0.4 + 0.4 * j / (late - 1) if late > 1 else 0.5
        spots.append(max(int(n * frac), (spots[-1] + 3) if spots else early + 2))
    for j in range(late - 1, -1, -1):  # the last statement keeps two tickets after it; the others make room
        spots[j] = min(spots[j], n - 3 - 3 * (late - 1 - j))
    return [i + 1 for i in range(early)] + [i + 1 for i in spots]


def warmup_note(dataset: str, n: int, warmup: int) -> str | None:
    """A note when a late variant's stream of ``n`` tickets states its late rules within a warm-up of ``warmup``
    steps (so Janus never compares the candidates that add them); None otherwise, and for any other dataset."""
    v = VARIANTS.get(dataset)
    if v is None or not v.late:
        return None
    try:
        late = late_steps(dataset, n)[len(v.rules) - v.late:]
    except ValueError:
        return None
    inside = [s for s in late if s <= warmup]
    if not inside:
        return None
    return (f"note: {dataset} states its late rules at steps {', '.join(map(str, late))} of {n}; "
            f"{len(inside)} of them within Janus's warm-up of {warmup} steps, so no comparison sees the candidate that "
            f"adds {'it' if len(inside) == 1 else 'them'}: use a stream of at least {-(-5 * warmup // 2)} tickets or a "
            "shorter warm-up")


def generate_late(variant: str, seed: int = 0, size: int | None = None) -> tuple[list[Task], list[Task], World]:
    """A late variant's world (:func:`late_steps`): the test first (it does not depend on the stream's length), then
    a stream of ``size`` tickets (None: the variant's length) that states each rule at its step; the ticket after a
    statement recalls that rule, the next one combines it with a rule stated before (another recall when it has no
    combo yet); the other tickets are recall or combo tickets over the rules stated so far, as in :func:`generate`.
    Test ticket ``i`` needs rule ``i mod rules`` of the stating order (a recall ticket, every second round a combo
    ticket where that rule has one), so every rule is needed by every test prefix of ``rules`` tickets or more."""
    v = VARIANTS[variant]
    world = make_world(variant, seed)
    n = v.stream if size is None else size
    steps = dict(zip((s - 1 for s in late_steps(variant, size)), world.order))
    seen: set[str] = set()
    g = _rng(variant, seed, "test")
    test = []
    usable = [q for q in QUESTIONS if q.name not in v.leave_out]
    for i in range(v.test):
        key = world.order[i % len(world.order)]
        recall = [q for q in usable if q.needs == (key,)]
        combo = [q for q in usable if len(q.needs) > 1 and key in q.needs and set(q.needs) <= set(world.order)]
        got = (_draw(g, world, combo, seen) if combo and (i // len(world.order)) % 2 else None) \
            or _draw(g, world, recall, seen) or _draw(g, world, combo, seen)
        if got is None:
            raise RuntimeError("the rules generator ran out of distinct questions")
        q, params = got
        test.append(_task(variant, "test", i, world, "combo" if len(q.needs) > 1 else "recall", q, params))
    g = _rng(variant, seed, "tasks", n)
    stream: list[Task] = []
    known: list[str] = []
    last = None  # (rule, tickets since its statement)
    for i in range(n):
        if i in steps:
            key = steps[i]
            drawn = _draw(g, world, [q for q in usable if q.needs == (key,)], seen)
            assert drawn is not None  # the first question about a rule: none used up yet
            known.append(key)
            stream.append(_task(variant, "stream", i, world, "intro", *drawn, states=key, stated=known))
            last = (key, 0)
            continue
        got = None
        if last is not None and last[1] < 2:  # the two tickets after a statement: a recall, then a combo
            key, k = last
            recall = [q for q in usable if q.needs == (key,)]
            combo = [q for q in usable if len(q.needs) > 1 and key in q.needs and set(q.needs) <= set(known)]
            got = (_draw(g, world, combo, seen) if k == 1 else None) or _draw(g, world, recall, seen)
            last = (key, k + 1)
        if got is None:
            kind, q, params = _later(g, world, known, seen)
        else:
            q, params = got
            kind = "combo" if len(q.needs) > 1 else "recall"
        stream.append(_task(variant, "stream", i, world, kind, q, params, stated=known))
    return stream, test, world


def stated_rules(tasks) -> list[str]:
    """The rules a stream of generated tasks states, in stating order (the ``stated`` of its tasks; any order of the
    tasks, e.g. a re-ordered stream). [] for tasks that are not generated rules tasks."""
    out: list[str] = []
    for t in tasks:
        meta = getattr(t, "meta", None) or {}
        for key in meta.get("stated") or ([meta["states"]] if meta.get("states") else []):
            if key in KINDS and key not in out:
                out.append(key)
    return out


# ----------------------------------------------------------------------------------------------------- memories

_SENTINEL = 987654321


@functools.lru_cache(maxsize=None)
def _statement_pattern(key: str) -> tuple[re.Pattern, str | None]:
    """The statement of rule ``key`` as the generator writes it, with its number as a group, and that number's name
    (None for the precedence rule, which states no number)."""
    kind = KINDS[key]
    names = list(kind.draw(random.Random(0)))
    text = kind.text({n: _SENTINEL for n in names})
    pattern = re.escape(text).replace(str(_SENTINEL), r"(\d+)")
    return re.compile(rf"(?<![\w$]){pattern}" if pattern[0].isalnum() or pattern[0] == "\\" else pattern), (
        names[0] if names else None)


def statement_values(text: str, key: str) -> list[dict[str, int]]:
    """The values of rule ``key`` that ``text`` states in the generator's own words, in the order they appear
    ("Shipping costs $9 per kg." -> ``[{"rate": 9}]``; a falsified record states its false value this way too).
    The precedence rule gives ``[{}]`` per statement."""
    pattern, name = _statement_pattern(key)
    return [{name: int(m.group(1))} if name else {} for m in pattern.finditer(text)]


def _plain(text: str) -> str:
    """A memory text with LaTeX and Markdown wrappers taken off, for :func:`held_rules`."""
    t = re.sub(r"\\(?:text|mathrm|textbf|mathbf)\s*\{([^{}]*)\}", r" \1 ", text)
    return t.replace("\\$", "$").replace("\\%", "%").replace("**", "").replace("\\,", "")


# what a rule's number is written with (its unit), and a word that says which rule it is, on the same line
_MONEY = r"(?:\$\s?{n}|{n}\s*(?:dollars?|usd)\b)"
_BOXES = r"{n}\s*(?:-\s*)?box(?:es)?\b"
_HELD: dict[str, tuple[str, str | None]] = {
    "ship_rate": (_MONEY + r"[^\n]{{0,24}}?(?:\bkg\b|kilo)", None),
    "handling": (_MONEY, r"handling"),
    "crate": (_BOXES, r"crate"),
    "order_limit": (_BOXES, r"\border"),
    "refund_cap": (_MONEY, r"refund|\bcap"),
    "member_discount": (r"{n}\s*(?:%|percent\b)", r"member|discount|\boff\b"),
    "credit": (_MONEY, r"credit"),
    "deadline": (r"{n}\s*(?:-\s*)?(?:hours?\b|hrs?\b|h\b)", r"priority|deadline|within|answer"),
}


def held_rules(memory: str, world: World, keys=None) -> dict[str, bool]:
    """Per rule of ``keys`` (default: every rule of the world), does ``memory`` hold it: its true number written with
    its unit ("$7", "7 dollars", "15 boxes", "25%", "18 hours"; shipping: dollars with "kg" right after, "$7 per
    kg") on a line that names the rule (handling, crate, order, refund or cap, member or discount, credit, priority or
    deadline); the precedence rule: a line naming Gold with "cap" or "full". LaTeX ``\\text{...}`` and Markdown
    bold are read through. A number inside a longer one ("$71") or another value of the rule (a falsified "$4") does
    not hold it; a "7 kg" parcel holds no $7 fee."""
    lines = _plain(memory or "").lower().splitlines()
    out = {}
    for key in (world.order if keys is None else keys):
        if key == "gold_refund":
            out[key] = any(re.search(r"\bgold\b", ln) and re.search(r"cap|full", ln) for ln in lines)
            continue
        unit, word = _HELD[key]
        value = next(iter(world.values[key].values()))
        n = rf"(?<![\d.,]){value}(?:\.0+)?(?!\d|[.,]\d)"
        pattern = re.compile(unit.format(n=n))
        out[key] = any(pattern.search(ln) and (word is None or re.search(word, ln)) for ln in lines)
    return out


def answer_under(task: Task, values: Values) -> int:
    """The answer to a generated task if the rules had ``values`` (e.g. one rule falsified): same question, same
    numbers."""
    q = QUESTION[task.meta["question_type"]]
    return q.solve(task.meta["params"], values)


def _loader(variant: str):
    def load(split: str, *, data_dir=None, seed: int = 0):
        stream, test, world = generate(variant, seed)
        n = len(world.order)
        rule = (f"generated (janus_memory.tasks.rules, seed {seed}): {n} rules stated in the first "
                f"{max(n, 2 * n - 3)} stream tasks; stream {len(stream)}, test {len(test)} recall/combo tasks")
        return {"stream": stream, "test": test, "all": stream + test}[split], [], rule
    load.__name__ = f"load_{variant}"
    return load


def _late_loader(variant: str):
    """The loader of a late variant: its stream is laid out for the length asked for (``size``, the run's
    --stream-size: load_split passes it), not cut from a longer one (:func:`late_steps`)."""
    def load(split: str, *, data_dir=None, seed: int = 0, size: int | None = None):
        stream, test, world = generate_late(variant, seed, size if split == "stream" else None)
        v = VARIANTS[variant]
        steps = late_steps(variant, len(stream))
        early = len(world.order) - v.late
        rule = (f"generated (janus_memory.tasks.rules, seed {seed}): {len(world.order)} rules, {early} stated by "
                f"the first {early} stream tasks and {v.late} later, at steps {', '.join(map(str, steps[early:]))} of "
                f"{len(stream)}; test {len(test)} recall/combo tasks, task i needing rule i mod {len(world.order)}")
        return {"stream": stream, "test": test, "all": stream + test}[split], [], rule
    load.__name__ = f"load_{variant}"
    return load


load_rules = _loader("rules")
load_rules_small = _loader("rules_small")
load_rules_late = _late_loader("rules_late")
