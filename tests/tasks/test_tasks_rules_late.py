"""The ``rules_late`` variant: half its rules first stated late in the stream, laid out for the stream length asked
for (the default warm-up of 20 on the whole stream, the demo's warm-up of 3 on a short one), a recall and a combo
ticket after each statement, a test that needs every rule; the stated rules as a dataset fact; what a memory holds
(``held_rules``) and the statements a scripted model reads (``statement_values``)."""
from __future__ import annotations

import hashlib
import json

import pytest

from janus_memory.errors import ConfigError
from janus_memory.tasks import DATASETS, load_split
from janus_memory.tasks.rules import (
    VARIANTS,
    answer_under,
    generate,
    held_rules,
    late_steps,
    make_world,
    stated_rules,
    statement_values,
)


def _digest(tasks) -> str:
    return hashlib.sha256(json.dumps([[t.id, t.question, t.gold] for t in tasks]).encode()).hexdigest()


def test_the_layout_for_both_warm_ups():
    assert late_steps("rules_late") == [1, 2, 25, 49]  # the whole stream, 60 tickets
    assert late_steps("rules_late", 60) == [1, 2, 25, 49]
    assert late_steps("rules_late", 12) == [1, 2, 5, 10]
    assert late_steps("rules_late", 10) == [1, 2, 5, 8]  # the shortest stream the layout fits
    assert late_steps("rules_late", 30) == [1, 2, 13, 25]
    for n, warmup in ((60, 20), (50, 20), (12, 3), (10, 3), (8 * 3, 8)):
        steps = late_steps("rules_late", n)
        assert sum(s > warmup for s in steps) >= len(steps) / 2, (n, warmup)  # at least half after the warm-up
    with pytest.raises(ValueError, match=r"^rules_late: a stream of 9 tickets is too short for its layout .*use at "
                                         r"least 10$"):
        late_steps("rules_late", 9)


@pytest.mark.parametrize("size", [None, 10, 12, 25, 60])
@pytest.mark.parametrize("seed", range(8))
def test_structure(seed, size):
    stream, test, world = generate("rules_late", seed, size)
    n = len(stream)
    assert n == (60 if size is None else size) and len(test) == 24
    steps = late_steps("rules_late", size)
    intros = [i + 1 for i, t in enumerate(stream) if t.meta["kind"] == "intro"]
    assert intros == steps and [stream[i - 1].meta["states"] for i in intros] == list(world.order)
    stated: list[str] = []
    for t in stream:
        if t.meta["kind"] == "intro":
            stated.append(t.meta["states"])
            assert world.statement(t.meta["states"]) in t.question
        else:
            assert set(t.meta["rules"]) <= set(stated) and "Team rule" not in t.question
        assert t.meta["stated"] == stated  # the dataset fact: what the stream has stated up to here
    for s in steps[2:]:  # after each late statement: a recall of it, then a combo with it (crate waits for its
        key = stream[s - 1].meta["states"]  # partner: the world order gives every rule one stated before it)
        assert stream[s].meta["kind"] == "recall" and stream[s].meta["rules"] == [key]
        assert stream[s + 1].meta["kind"] == "combo" and key in stream[s + 1].meta["rules"]
    for i, t in enumerate(test):  # test ticket i needs rule i mod 4: every prefix of 4 or more needs every rule
        assert t.meta["kind"] in ("recall", "combo") and world.order[i % 4] in t.meta["rules"]
        assert "stated" not in t.meta
    questions = [t.question for t in stream + test]
    assert len(set(questions)) == len(questions)
    for t in stream + test:
        assert int(t.gold) == answer_under(t, world.values) and t.gold == str(int(t.gold))
        json.dumps(t.meta)
    assert stated_rules(stream) == list(world.order) == stated_rules(list(reversed(stream)))


def test_the_test_split_does_not_depend_on_the_stream_length_and_seed_0_is_pinned():
    s60, t60, world = generate("rules_late", 0)
    s12, t12, _ = generate("rules_late", 0, 12)
    assert [(t.question, t.gold) for t in t60] == [(t.question, t.gold) for t in t12]
    assert world.order == ("handling", "order_limit", "crate", "ship_rate")
    assert world.values == {"ship_rate": {"rate": 4}, "handling": {"fee": 2}, "crate": {"boxes": 6},
                            "order_limit": {"limit": 15}}
    assert s12[4].question == ("Team rule (from the warehouse): One crate holds 6 boxes. How many boxes are in 8 full "
                               "crates?") and s12[4].gold == "48"
    assert s12[9].question.startswith("Team rule (from billing): Shipping costs $4 per kg. ")
    assert _digest(s60) == PINNED["stream"] and _digest(t60) == PINNED["test"] and _digest(s12) == PINNED["stream12"]


PINNED = {
    "stream": "6a5e534b6ad83427bf098d38d41c0a46ff639dbc70e7eb72054f18971b9df133",
    "test": "7de9c2076ec3a989b9d1a6bf8439ea7dc1a9570b00c8a8f965e9e23cba3be6b7",
    "stream12": "c1539e78b27ac4182c5f18a7bfa74b4f5a18fa4bbebf9658bdebb7051c2d1345",
}


def test_registered_and_loaded_for_the_length_asked():
    spec = DATASETS["rules_late"]
    assert spec.family == "rules" and not spec.needs_data and spec.sized
    assert spec.display_name == "Rules-late (generated)"
    s = load_split("rules_late", "stream", seed=0, limit=12)
    assert len(s) == 12 and [t.id for t in s.tasks][:2] == ["rules_late:stream:000", "rules_late:stream:001"]
    assert [t.question for t in s.tasks] == [t.question for t in generate("rules_late", 0, 12)[0]]
    assert "at steps 5, 10 of 12" in s.info["rule"] and s.info["size"] == 12
    assert load_split("rules_late", "stream", seed=0, limit=12).sha256 == s.sha256  # a resume sees the same stream
    assert load_split("rules_late", "stream", seed=0, limit=14).sha256 != s.sha256
    whole = load_split("rules_late", "stream", seed=0)
    assert len(whole) == 60 and "at steps 25, 49 of 60" in whole.info["rule"]
    assert len(load_split("rules_late", "test", seed=0, limit=8)) == 8
    with pytest.raises(ValueError, match="too short for its layout"):
        load_split("rules_late", "stream", seed=0, limit=4)


def test_a_stream_too_short_is_one_line_before_the_run(tmp_path):
    from janus_memory.run.build import load_splits
    from janus_memory.settings.config import RunConfig

    cfg = RunConfig(dataset="rules_late", stream_size=6, backend="fake", out=str(tmp_path / "r"))
    with pytest.raises(ConfigError, match=r"^rules_late: a stream of 6 tickets is too short .*use at least 10$"):
        load_splits(cfg)
    assert not (tmp_path / "r").exists()


def test_the_other_variants_carry_the_stated_rules_too():
    stream, test, world = generate("rules_small", 0)
    assert stream[0].meta["stated"] == [world.order[0]] and stream[-1].meta["stated"] == list(world.order)
    assert stated_rules(stream[:1]) == [world.order[0]] and stated_rules(test) == []
    assert VARIANTS["rules"].late == 0 and VARIANTS["rules_late"].late == 2


# ------------------------------------------------------------------------------------------------ held rules
W = make_world("rules", 0)  # ship $10/kg, handling $5, crate 4 boxes, order 15 boxes, refund $100, 50%, credit $5, 18 h


@pytest.mark.parametrize("memory,held", [
    ("- Shipping costs $10 per kg.", {"ship_rate"}),
    ("Shipping: 10 dollars/kg", {"ship_rate"}),
    ("\\[ 3 \\text{ kg} \\times 10 \\text{ dollars/kg} = 30 \\text{ dollars} \\]", {"ship_rate"}),
    ("Shipping costs $101 per kg.", set()),  # a number inside a longer one
    ("A 10 kg parcel costs $30.", set()),  # a weight is no rate
    ("Every order pays a flat handling fee of $5.", {"handling"}),
    ("- **Handling**: $5 per order", {"handling"}),
    ("Handling is $4 per order (falsified)", set()),
    ("One store credit is worth $5.", {"credit"}),
    ("$5", set()),  # a number with its unit but no word that says which rule
    ("One crate holds 4 boxes.", {"crate"}),
    ("One order holds at most 15 boxes; a larger request is split.", {"order_limit"}),
    ("A customer wants 15 boxes.", set()),
    ("A refund is capped at $100 per ticket.", {"refund_cap"}),
    ("Members get 50% off the list price.", {"member_discount"}),
    ("Members: 50 percent discount", {"member_discount"}),
    ("Priority tickets must be answered within 18 hours of opening.", {"deadline"}),
    ("Gold members' refunds are never capped.", {"gold_refund"}),
    ("A Gold member asked something.", set()),
    ("", set()),
])
def test_held_rules(memory, held):
    got = held_rules(memory, W)
    assert set(got) == set(W.order) and {k for k, v in got.items() if v} == held


def test_held_rules_of_given_keys_and_every_rule_at_once():
    sheet = "\n".join(f"- {W.statement(k)}" for k in W.order)
    assert all(held_rules(sheet, W).values())
    assert held_rules(sheet, W, ["crate"]) == {"crate": True}
    assert held_rules(W.sheet(), W) == dict.fromkeys(W.order, True)


def test_statement_values_read_the_generators_words_only():
    text = ("Q: Team rule (from billing): Shipping costs $12 per kg. A customer ships a 3 kg parcel.\n"
            "Q: Team rule (from billing): Shipping costs $9 per kg. Another.\nShipping is $7 per kg.")
    assert statement_values(text, "ship_rate") == [{"rate": 12}, {"rate": 9}]
    assert statement_values(text, "handling") == []
    assert statement_values(W.statement("gold_refund"), "gold_refund") == [{}]
    assert statement_values("Team rule: One crate holds 8 boxes.", "crate") == [{"boxes": 8}]


def test_a_note_when_late_rules_fall_inside_the_warm_up():
    from janus_memory.tasks.rules import warmup_note

    assert warmup_note("rules_late", 60, 20) is None and warmup_note("rules_late", 12, 3) is None
    assert warmup_note("rules_late", 30, 20) == (
        "note: rules_late states its late rules at steps 13, 25 of 30; 1 of them within Janus's warm-up of 20 steps, "
        "so no comparison sees the candidate that adds it: use a stream of at least 50 tickets or a shorter warm-up")
    assert warmup_note("rules_late", 12, 10).startswith("note: rules_late states its late rules at steps 5, 10 of 12; "
                                                        "2 of them within") and "adds them" in warmup_note(
        "rules_late", 12, 10)
    assert warmup_note("rules_small", 30, 20) is None and warmup_note("gsm8k", 30, 20) is None
    assert warmup_note("rules_late", 4, 3) is None  # too short: refused on its own, in one line


def test_the_run_says_it_before_the_first_step(tmp_path, capsys, monkeypatch):
    from janus_memory.cli import main

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    rc = main(["run", "--backend", "fake", "--dataset", "rules_late", "--stream-size", "10", "--test-size", "1",
               "--updater", "dc_cu", "--controller", "janus", "--warmup", "8", "--encoder", "hashing:64",
               "--out", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert ("note: rules_late states its late rules at steps 5, 8 of 10; 2 of them within Janus's warm-up of 8 steps"
            in out)
