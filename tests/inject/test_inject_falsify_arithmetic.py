"""A falsified rule is consistent: the entry or record whose number ``falsify`` changes states the false number
everywhere and its worked arithmetic follows it (the product or sum equals the false number's result, and the
answer that used it changes with it). Exact texts; no model."""
from __future__ import annotations

import random
from fractions import Fraction

import pytest

from janus_memory.inject.falsify import equations, falsify_text, item_span, rework
from janus_memory.inject.state import harmful_experience
from janus_memory.tasks.rules import generate
from janus_memory.values import Task

# the embedded model's record of the ticket that stated rules_small seed 0's handling fee ($7), as the demo stores it
RECORD = ("To determine the total handling fee for the customer, we need to follow these steps:\n\n"
          "The flat handling fee per order is $7. The customer placed 4 separate orders. Let's calculate the total "
          "handling fee step by step.\n\n### Step 1: Calculate the total handling fee for all four orders\n"
          "\\[ 7 \\text{ dollars/order} \\times 4 \\text{ orders} = 28 \\text{ dollars} \\]\n\n"
          "Therefore, the total handling fee for all four orders is \\(\\boxed{28}\\).")


def _held(text: str) -> list[tuple[Fraction, Fraction]]:
    """(left side, result) of every worked line of ``text`` whose operators are x and +."""
    from janus_memory.inject.falsify import _evaluate, _value

    return [(_evaluate([_value(m.group()) for m in ops], signs), _value(r.group()))
            for ops, signs, r in equations(text)]


def test_the_demo_record_computes_with_the_false_fee():
    out = rework(RECORD, 7, 4)
    assert "\\[ 4 \\text{ dollars/order} \\times 4 \\text{ orders} = 16 \\text{ dollars} \\]" in out
    assert "\\boxed{16}" in out and "is $4." in out
    assert "28" not in out and "7" not in out.replace("step", "")
    assert all(left == right for left, right in _held(out))
    assert out == RECORD.replace("$7", "$4").replace("7 \\text", "4 \\text").replace("28", "16")


@pytest.mark.parametrize("text,old,new,expected", [
    ("4 orders x $7 = $28. Answer: 28", 7, 4, "4 orders x $4 = $16. Answer: 16"),
    ("Shipping 5 kg x $7 = $35; handling $3; total 35 + 3 = 38\nAnswer: 38", 7, 9,
     "Shipping 5 kg x $9 = $45; handling $3; total 45 + 3 = 48\nAnswer: 48"),
    ("12 kg × $7/kg = $84", 7, 5, "12 kg × $5/kg = $60"),
    ("2 * 7 + 3 = 17 dollars", 7, 10, "2 * 10 + 3 = 23 dollars"),
    ("7 x 4 = 28 + 5 = 33", 7, 4, "4 x 4 = 16 + 5 = 21"),  # a chained line goes on from the new result
    ("1,200 boxes / 12 = 100 crates", 12, 10, "1,200 boxes / 10 = 120 crates"),
    ("75 / 15 = 5 orders", 15, 12, "75 / 12 = 6.25 orders"),  # a whole result that became a fraction: two decimals
    ("75 / 15 = 5.00 orders", 15, 20, "75 / 20 = 3.75 orders"),
    ("58 / 15 = 3.87, so 4 orders", 15, 12, "58 / 12 = 3.87, so 4 orders"),  # not exact before: left as it was
    ("fee $7; 7 - 7 = 0", 7, 4, "fee $4; 4 - 4 = 0"),
    ("Version: 7\n- helpful=7 [ctx-00007] fee $7", 7, 5, "Version: 7\n- helpful=7 [ctx-00007] fee $5"),
    ("nothing to compute", 7, 4, "nothing to compute"),
    ("4 / 0 = 0 and $7", 7, 4, "4 / 0 = 0 and $4"),  # a division by zero is no arithmetic to follow
])
def test_rework(text, old, new, expected):
    assert rework(text, old, new) == expected


def test_equations_read_words_and_units_between_the_numbers():
    found = [([m.group() for m in ops], signs, r.group()) for ops, signs, r in equations(
        "Step: 7 dollars/order x 4 orders = 28 dollars. Then 3 + 4 = 7, and 5 is 5. Count: 2 = 2")]
    assert found == [(["7", "4"], ["*"], "28"), (["3", "4"], ["+"], "7")]


def test_a_cheatsheet_entry_is_rewritten_whole_and_the_others_left_alone():
    sheet = ("## Rules\n- Handling: $7 per order. Example: 4 orders x $7 = $28.\n  So 4 orders pay 28 dollars.\n"
             "- Crates hold 7 boxes.\n\n- Shipping is $12 per kg.")
    entries = set()
    for seed in range(12):
        text, changed = falsify_text(sheet, ["Every order pays a flat handling fee of $7."], random.Random(seed))
        assert changed["old"] == 7
        n = changed["new"]
        lo, hi = item_span(sheet, changed["at"])
        entries.add(sheet[lo:hi].split(":")[0].split(" hold")[0])
        if sheet[lo:hi].startswith("- Handling"):
            assert text == sheet.replace("$7 per order. Example: 4 orders x $7 = $28.\n  So 4 orders pay 28",
                                         f"${n} per order. Example: 4 orders x ${n} = ${4 * n}.\n  So 4 orders pay "
                                         f"{4 * n}")
        else:  # the other entry that states a 7: only it changes
            assert text == sheet.replace("Crates hold 7", f"Crates hold {n}")
    assert entries == {"- Handling", "- Crates"}


def test_item_span():
    text = "## A\n- one 1\n  more 2\n- two 3\n\npara 4\nline 5"
    assert text[slice(*item_span(text, text.index("more")))] == "- one 1\n  more 2\n"
    assert text[slice(*item_span(text, text.index("two")))] == "- two 3\n"
    assert text[slice(*item_span(text, text.index("line")))] == "para 4\nline 5"
    assert item_span("x", 0) == (0, 1)


@pytest.mark.parametrize("seed", range(6))
def test_an_exprag_record_of_a_generated_world_states_and_computes_with_the_false_rule(seed):
    """Records whose answers work each ticket out (a x b = c, then the answer): after ``falsify`` every worked line of
    the tampered record holds, and the record states the false number."""
    stream, _, world = generate("rules_late", seed, 12)
    fee = world.values["handling"]["fee"]
    recs = []
    for t in stream[:8]:
        if t.meta["question_type"] in ("handling", "handling:shop"):
            n = t.meta["params"]["n"]
            out = f"The handling fee is ${fee} per order.\n{fee} x {n} = {fee * n}\nAnswer: {fee * n}"
        else:
            out = f"Answer: {t.gold}"
        recs.append({"id": t.id, "question": t.question, "input": t.question, "output": out, "feedback": "success"})
    target = next(t for t in stream if "handling" in t.meta["rules"] and t.meta["kind"] != "intro")
    got = harmful_experience("falsify", recs, target, seed=0, step=9)
    (i,) = [k for k, (a, b) in enumerate(zip(recs, got)) if a != b]
    assert recs[i]["question"].startswith("Team rule (from billing): Every order pays a flat handling fee of ")
    new = int(got[i]["question"].split("handling fee of $")[1].split(".")[0])
    assert new != fee
    assert all(left == right for left, right in _held(got[i]["output"]))
    ticket = stream[int(recs[i]["id"].rsplit(":", 1)[1])]
    n = ticket.meta["params"]["n"]
    n = new if n == fee else n  # the record says the number everywhere: an order count equal to the fee changes too
    assert f" {n} " in got[i]["question"]
    if recs[i]["output"] != f"Answer: {ticket.gold}":
        assert got[i]["output"] == f"The handling fee is ${new} per order.\n{new} x {n} = {new * n}\nAnswer: {new * n}"


def test_a_planted_false_fact_has_no_arithmetic_to_follow():
    t = Task("rules:stream:009", "rules", "q", "1", meta={"facts": ["Shipping costs $7 per kg."]})
    got = harmful_experience("falsify", [], t, seed=0, step=9)
    assert len(got) == 1 and got[0]["question"].startswith("Shipping costs $") and "$7 " not in got[0]["question"]
