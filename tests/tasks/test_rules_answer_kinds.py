"""The rules family's own answer forms: an "=" in the justification, a bracket restating the ticket, the ticket's own
bound words, a ticket echoed back, hedges after the value, a reply cut off while revising. Each kind with its
variants and the look-alikes that must not be credited; exact verdicts."""
from __future__ import annotations

import pytest

from janus_memory.tasks.rules_scoring import RulesFamily, read_number
from janus_memory.values import ChatResult, Task

WORLD = {"ship_rate": {"rate": 7}, "handling": {"fee": 5}, "order_limit": {"limit": 15}, "refund_cap": {"cap": 100},
         "deadline": {"hours": 18}, "gold_refund": {}}
SHIP = "A customer ships a 5 kg parcel. What do we charge for shipping, in dollars?"  # 35
TOTAL = ("A customer places one order and ships it as a 5 kg parcel. What is the total charge, shipping plus handling, "
         "in dollars?")  # 40
ORDERS = "A customer wants 58 boxes. How many orders does that take?"  # 4
AT_MOST = "A customer claims $180 for a damaged delivery. How much can the refund be at most, in dollars?"  # 100
CLOCK = ("A priority ticket was opened at hour 4 of Monday (0 = midnight). By how many hours after Monday midnight "
         "must it be answered?")  # 22
LEFT = "A priority ticket was opened 4 hours ago. How many hours are left to answer it?"  # 14
GOLD = "A Gold member returns items worth $120 and asks for a full refund. How much do we refund, in dollars?"  # 120


def score(question, gold, reply):
    s = RulesFamily().score(Task(id="rules:test:000", dataset="rules", question=question, gold=str(gold),
                                 meta={"world": WORLD}), reply)
    return s.correct, s.extracted, s.status


# ------------------------------------------------------------------------- an "=" inside the justification

@pytest.mark.parametrize("reply", [
    "Answer: 40, because 5 kg x $7 = $35 plus the $5 handling fee",
    "Answer: 40 (shipping 5 x $7 = $35, plus $5 handling)",
    "Answer: $40 - shipping is 5 x $7 = $35 and handling adds $5",
    "Answer: 40, since 35 + 5 = 40",
    "Answer: 40; the shipping alone is 5 x 7 = 35",
    "Answer: 5 kg x $7 = $35, plus $5 = $40",  # a worked line: the number after its last "=" is the answer
])
def test_an_equals_sign_in_the_justification_does_not_move_the_read(reply):
    assert score(TOTAL, 40, reply) == (True, "40", "ok")


@pytest.mark.parametrize("reply", [
    "Answer: 40, because 5 kg x $7 = $35 plus the $5 handling fee",  # the answer is 40, not the working's 35
    "Answer: 40 (shipping 5 x $7 = $35)",
])
def test_an_intermediate_value_after_the_answer_is_not_credited(reply):
    assert score(TOTAL, 35, reply) == (False, "40", "ok")


def test_the_order_count_with_a_division_as_its_reason():
    assert score(ORDERS, 4, "Answer: 4, as 58 / 15 = 3.87, rounded up to 4 orders") == (True, "4", "ok")


# ------------------------------------------------------------------------- a bracket restating the ticket

@pytest.mark.parametrize("question,gold,reply", [
    (SHIP, 35, "Answer: 35 (5 kg)"),
    (SHIP, 35, "Answer: $35 ($7 per kg)"),
    (SHIP, 35, "Answer: $35 (for the 5 kg parcel)"),
    (SHIP, 35, "Answer: 35 (i.e. $35)"),
    (ORDERS, 4, "Answer: 4 (at most 15 boxes per order)"),
    (ORDERS, 4, "Answer: 4 orders (58 boxes)"),
])
def test_a_closing_bracket_restating_a_quantity_or_rule_is_no_alternative(question, gold, reply):
    assert score(question, gold, reply) == (True, str(gold), "ok")


@pytest.mark.parametrize("reply", [
    "Answer: 35 (45)", "Answer: 35 ($9 per kg)", "Answer: 35 (40 with handling)", "Answer: 35 (or $5 more)",
])
def test_a_bracket_with_a_number_the_ticket_does_not_give_is_an_alternative(reply):
    assert score(SHIP, 35, reply)[::2] == (False, "unparsed")


def test_read_number_without_the_ticket_keeps_the_bracket_ambiguous():
    assert read_number("35 (5 kg)") is None
    assert read_number("35 (5 kg)", "", frozenset({5})) == 35


# ------------------------------------------------------------------------- the ticket's own bound words

@pytest.mark.parametrize("question,gold,reply", [
    (AT_MOST, 100, "Answer: at most $100"),
    (AT_MOST, 100, "Answer: up to $100"),
    (AT_MOST, 100, "Answer: $100 at most"),
    (AT_MOST, 100, "Answer: no more than $100"),
    (AT_MOST, 100, "Answer: a maximum of $100"),
    (CLOCK, 22, "Answer: no later than hour 22"),
    (CLOCK, 22, "Answer: by hour 22"),
    (CLOCK, 22, "Answer: within 22 hours of Monday midnight"),
])
def test_a_bound_the_ticket_asks_for_is_the_answer(question, gold, reply):
    assert score(question, gold, reply) == (True, str(gold), "ok")


@pytest.mark.parametrize("question,gold,reply", [
    (AT_MOST, 100, "Answer: at least $100"),  # the other direction
    (AT_MOST, 100, "Answer: more than $100"),  # a strict bound is never the value
    (AT_MOST, 100, "Answer: about $100"),
    (SHIP, 35, "Answer: at most 35"),  # the ticket asks for no bound
    (SHIP, 35, "Answer: up to $35"),
    (LEFT, 14, "Answer: within 14 hours"),
    (LEFT, 14, "Answer: no later than 14 hours from now"),
    (ORDERS, 4, "Answer: at most 4"),  # the rule says "at most", the question does not
])
def test_a_bound_the_ticket_does_not_ask_for_is_a_hedge(question, gold, reply):
    assert score(question, gold, reply)[::2] == (False, "unparsed")


# ------------------------------------------------------------------------- the ticket echoed back

@pytest.mark.parametrize("reply", [
    GOLD,
    "Question: " + GOLD + "\nLet me think about this.",
    "**" + GOLD + "**",
    "Ticket: A Gold member returns items worth $120 and asks for a full refund.",
    "Answer: A Gold member returns items worth $120 and asks for a full refund.",
])
def test_a_ticket_echoed_back_is_no_answer(reply):
    assert score(GOLD, 120, reply)[::2] == (False, "unparsed")


@pytest.mark.parametrize("reply,status", [
    ("Gold members are never capped, so we refund $120.", "fallback"),
    ("The Gold member gets the full $120 back.", "fallback"),
    (GOLD + "\nGold members get the full amount: we refund $120.", "fallback"),
    ("Answer: $120", "ok"),
    ("So we refund $120, since Gold members are never capped at $100.", "fallback"),  # the concluding number
])
def test_the_same_number_stated_as_an_answer_counts(reply, status):
    assert score(GOLD, 120, reply) == (True, "120", status)


# ------------------------------------------------------------------------- hedges after the value

@pytest.mark.parametrize("reply", [
    "Answer: 35, give or take", "Answer: 35 or so", "Answer: 35, roughly", "Answer: 35 (approximately)",
    "Answer: 35-ish", "Answer: $35ish", "Answer: 35 or thereabouts", "Answer: 35, more or less", "Answer: 35, I think",
    "Answer: 35?", "Answer: 35 at most", "Answer: 35 or more", "Answer: probably 35", "Answer: maybe $35",
    "Answer: 35 +/- 5", "Answer: 35 ± 2", "Answer: 35 dollars, give or take a few", "Answer: 35 max",
    "Answer: an estimated $35", "Answer: 35, if I'm not mistaken",
])
def test_a_hedge_after_the_value_gets_no_credit(reply):
    assert score(SHIP, 35, reply)[::2] == (False, "unparsed")


@pytest.mark.parametrize("reply", [
    "Answer: 35, since the rate is $7 per kg", "Answer: 35 dollars.", "Answer: 35 (5 kg at $7 per kg)",
    "Answer: 35 exactly", "Answer: $35, which is 5 kg at about the usual rate",
])
def test_words_after_the_value_that_are_no_hedge_still_count(reply):
    assert score(SHIP, 35, reply) == (True, "35", "ok")


# ------------------------------------------------------------------------- cut off while revising

def cut(text):
    return ChatResult(text=text, finish_reason="length")


@pytest.mark.parametrize("text", [
    "5 x 7 = 35\nAnswer: 35\nWait, let me re-check the rate:",
    "Answer: 35\n\nHmm, actually the parcel weighs",
    "Answer: 35. Let me double-check the handling",
    "Answer: 35\nBut wait, does the handling fee",
    "Answer: 35\nOn reflection, the correct total",
])
def test_a_reply_cut_off_while_revising_its_answer_is_truncated(text):
    assert score(SHIP, 35, cut(text)) == (False, None, "truncated")
    assert score(SHIP, 35, text)[0] is True  # the same text, finished: the answer stands


def test_a_cut_reply_whose_answer_is_followed_by_explanation_counts():
    assert score(SHIP, 35, cut("Answer: 35\nThe rate is $7 per kg, so 5 kg")) == (True, "35", "ok")
