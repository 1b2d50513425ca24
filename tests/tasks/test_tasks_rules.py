"""The generated `rules` family: the generator pinned (same seed, same tasks), the structure every world keeps (rules
stated before they are needed, test tasks need only stated rules, no repeated question), exact numeric scoring
(units, malformed, cheating and cut-off answers) and runs through the CLI on the scripted backend with every updater."""
from __future__ import annotations

import hashlib
import json
import random

import pytest

from janus_memory.inject.falsify import falsified_value
from janus_memory.tasks import DATASETS, get_family, load_split
from janus_memory.tasks.rules import KINDS, QUESTIONS, VARIANTS, answer_under, generate, make_world
from janus_memory.tasks.rules_scoring import read_number
from janus_memory.values import ChatResult


def _digest(tasks) -> str:
    return hashlib.sha256(json.dumps([[t.id, t.question, t.gold] for t in tasks]).encode()).hexdigest()


# ------------------------------------------------------------------------------------------------ the generator
def test_seed_0_is_pinned():
    stream, test, world = generate("rules", 0)
    assert world.values == {"ship_rate": {"rate": 10}, "handling": {"fee": 5}, "crate": {"boxes": 4},
                            "order_limit": {"limit": 15}, "refund_cap": {"cap": 100},
                            "member_discount": {"pct": 50}, "credit": {"dollars": 5}, "deadline": {"hours": 18},
                            "gold_refund": {}}
    assert world.order == ("crate", "order_limit", "handling", "refund_cap", "ship_rate", "credit", "member_discount",
                           "deadline", "gold_refund")
    assert stream[0].question == ("Team rule (from the warehouse): One crate holds 4 boxes. A customer received 7 full "
                                  "crates and 2 loose boxes. How many boxes is that?")
    assert stream[0].gold == "30" and stream[0].id == "rules:stream:000"
    assert stream[3].question == ("A customer wants 54 boxes. What is the total handling fee for the orders this "
                                  "takes, in dollars?") and stream[3].gold == "20"
    assert (test[0].id, test[0].gold) == ("rules:test:000", "190")
    assert (len(stream), len(test)) == (100, 50)
    assert _digest(stream) == PINNED["rules", "stream"] and _digest(test) == PINNED["rules", "test"]
    s_stream, s_test, _ = generate("rules_small", 0)
    assert (len(s_stream), len(s_test)) == (30, 20)
    assert _digest(s_stream) == PINNED["rules_small", "stream"] and _digest(s_test) == PINNED["rules_small", "test"]


PINNED = {
    ("rules", "stream"): "350da804fcf620eae470d785d5dd65c22bf43da8cba0ff95298b0ef2441628de",
    ("rules", "test"): "cdf3476cb2bf68dc81f78d117dfb48192df9bf9c6cfd052c1be1ef57d15f90e6",
    ("rules_small", "stream"): "1cb68b06fbbf21834a82975c7174e39d20f2723ed8c697e70726fd275879e277",
    ("rules_small", "test"): "052ab76e9289c59045522c31db2532941e3549c6f043b97d23de525f3c465ce3",
}


def test_same_seed_same_tasks_other_seed_other_world():
    a, b = load_split("rules", "stream", seed=3), load_split("rules", "stream", seed=3)
    assert [(t.id, t.question, t.gold, t.meta) for t in a.tasks] == [(t.id, t.question, t.gold, t.meta) for t in b.tasks]
    assert a.sha256 == b.sha256 and a.ids_sha256 == b.ids_sha256
    c = load_split("rules", "stream", seed=4)
    assert c.ids_sha256 == a.ids_sha256  # same ids ...
    assert c.sha256 != a.sha256  # ... other content: a resume with another generator or seed is refused
    assert make_world("rules", 3).values != make_world("rules", 4).values


@pytest.mark.parametrize("variant", [v for v in VARIANTS if not VARIANTS[v].late])  # late: test_tasks_rules_late.py
@pytest.mark.parametrize("seed", range(12))
def test_structure_of_every_world(variant, seed):
    stream, test, world = generate(variant, seed)
    n = len(world.order)
    intros = [i for i, t in enumerate(stream) if t.meta["kind"] == "intro"]
    assert [stream[i].meta["states"] for i in intros] == list(world.order)  # each rule stated once, in order
    assert intros[-1] < max(n, 2 * n - 3)  # all stated early
    stated: set[str] = set()
    for t in stream:
        if t.meta["kind"] == "intro":
            stated.add(t.meta["states"])
            assert t.question.startswith("Team rule (from ") and world.statement(t.meta["states"]) in t.question
        else:  # a later task needs only rules stated before it and states none
            assert set(t.meta["rules"]) <= stated and "Team rule" not in t.question
            assert not any(world.statement(k) in t.question for k in world.order)
    assert all(t.meta["kind"] in ("recall", "combo") for t in test)
    assert {k for t in test for k in t.meta["rules"]} <= set(world.order)
    questions = [t.question for t in stream + test]
    assert len(set(questions)) == len(questions)  # no question twice, stream and test together
    for t in stream + test:
        assert t.gold == str(int(t.gold)) and int(t.gold) >= 0
        assert int(t.gold) == answer_under(t, world.values)
        assert t.meta["facts"] == [world.statement(k) for k in t.meta["rules"]]
        json.dumps(t.meta)  # stored with the run


def test_both_kinds_of_later_task_and_every_question_type_occur():
    stream, test, _ = generate("rules", 0)
    kinds = {t.meta["kind"] for t in stream[15:] + test}
    assert kinds == {"recall", "combo"}
    types = {t.meta["question_type"] for s in range(5) for t in sum(generate("rules", s)[:2], [])}
    assert types == {q.name for q in QUESTIONS}


def test_answer_under_a_falsified_rule():
    stream, _, world = generate("rules", 0)
    t = next(t for t in stream if t.meta["question_type"] == "ship+handling")
    kg = t.meta["params"]["kg"]
    false = {**world.values, "ship_rate": {"rate": 13}}
    assert answer_under(t, false) == 13 * kg + 5 and int(t.gold) == 10 * kg + 5


def test_falsified_value_always_differs():
    g = random.Random(1)
    for v in list(range(1, 60)) + [100, 150, 400]:
        for _ in range(30):
            f = falsified_value(v, g)
            assert f != v and f >= 1
    assert {falsified_value(7, random.Random(s)) for s in range(40)} == {4, 5, 9, 10}
    assert {falsified_value(100, random.Random(s)) for s in range(60)} <= {60, 70, 80, 120, 130, 140}


def test_registered_like_the_other_datasets():
    assert DATASETS["rules"].family == "rules" and DATASETS["rules_small"].family == "rules"
    s = load_split("rules_small", "test", limit=5)
    assert len(s) == 5 and s.info["files"] == [] and "generated" in s.info["rule"]
    fam = get_family("rules_small")
    p = fam.prompt(s.tasks[0])
    assert p.startswith(s.tasks[0].question + "\n\n") and 'end with a last line "Answer: <number>"' in p
    assert get_family("rules") is fam


# ------------------------------------------------------------------------------------------------ scoring
def _task(gold="35"):
    from janus_memory.values import Task
    return Task("rules:test:000", "rules", "A customer ships a 5 kg parcel. What do we charge?", gold)


@pytest.mark.parametrize("reply,correct,extracted,status", [
    ("5 x 7 = 35\nAnswer: 35", True, "35", "ok"),
    ("Answer: $35", True, "35", "ok"),
    ("Answer: 35 dollars", True, "35", "ok"),
    ("Answer: $35.00.", True, "35", "ok"),
    ("**Answer:** 35", True, "35", "ok"),
    ("Answer: 5 x $7 = $35", True, "35", "ok"),
    ("Answer: 35 (5 kg at $7 per kg)", True, "35", "ok"),
    ("Answer: 35, since shipping is $7 per kg.", True, "35", "ok"),
    ("The answer is 35 dollars.", True, "35", "ok"),
    ("The charge is \\boxed{35}.", True, "35", "ok"),
    ("Answer: \\$35", True, "35", "ok"),
    ("Answer: 36", False, "36", "ok"),
    ("Answer: -35", False, "-35", "ok"),
    ("Answer: 35.5", False, "35.5", "ok"),
    ("So the charge is 35", True, "35", "fallback"),  # no answer line: the last number, counted as a fallback
    ("Answer: 35 or 36", False, None, "unparsed"),  # a hedge is no answer
    ("Answer: 30, 35, 40", False, None, "unparsed"),
    ("Answer: 35k", False, None, "unparsed"),  # a scale word changes the value
    ("Answer: 3.5 thousand", False, None, "unparsed"),
    ("Answer: 7*5", False, None, "unparsed"),  # an expression is not the number
    ("Answer: <not enough information>", False, None, "unparsed"),
    ("We cannot know the rate.", False, None, "unparsed"),
    ("", False, None, "unparsed"),
    ("Answer: 35\nAnswer: 45", False, "45", "ok"),  # the last answer line counts
])
def test_exact_numeric_scoring(reply, correct, extracted, status):
    s = get_family("rules").score(_task(), reply)
    assert (s.correct, s.status) == (correct, status)
    if extracted is not None:
        assert s.extracted == extracted


def test_thousands_groups_and_decimal_zero():
    fam = get_family("rules")
    assert fam.score(_task("1200"), "Answer: 1,200").correct
    assert fam.score(_task("1200"), "Answer: $1,200.00").correct
    assert not fam.score(_task("35"), "Answer: 3,5").correct  # no thousands group: not a number


def test_cut_off_replies():
    fam = get_family("rules")
    cut = lambda text: ChatResult(text=text, finish_reason="length")  # noqa: E731
    assert fam.score(_task(), cut("5 x 7 = 35\nAnswer: 3")).status == "truncated"  # digits may be missing
    assert fam.score(_task(), cut("5 x 7 = 35\nAnswer: 35")).status == "truncated"
    assert fam.score(_task(), cut("5 kg at $7 per kg is")).status == "truncated"  # no answer yet
    s = fam.score(_task(), cut("Answer: 35\nThe rate is $7 per"))  # a complete answer line, then the cut
    assert (s.correct, s.status) == (True, "ok")
    assert fam.score(_task(), cut("Answer: 35.\n")).correct
    assert fam.score(_task(), "The charge is \\boxed{3").status == "truncated"  # ends inside the final box


def test_read_number():
    assert read_number("35") == 35 and read_number("$35") == 35 and read_number("35 florps") == 35
    assert read_number("7 x 5 = 35") == 35 and read_number("\\text{35 dollars}") == 35
    assert read_number("35 or 36") is None and read_number("2 million") is None and read_number("1/2") is None
    assert read_number("words") is None and read_number("") is None


def test_fake_answer_scores_as_intended():
    fam = get_family("rules")
    stream, _, _ = generate("rules_small", 0)
    for t in stream[:10]:
        assert fam.score(t, fam.fake_answer(t, True)).correct
        assert not fam.score(t, fam.fake_answer(t, False)).correct


def test_kinds_catalogue_states_numbers():
    for k in KINDS.values():
        text = k.text(k.draw(random.Random(0)))
        assert text.endswith(".") and (k.key == "gold_refund" or any(c.isdigit() for c in text))


# ------------------------------------------------------------------------------------------------ runs
@pytest.fixture
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize("updater,extra", [
    ("dc_rs", []), ("dc_cu", []), ("expel", []), ("ace", []), ("reasoning_bank", []),
    ("exprag", ["--config", "EXPRAG_YAML"]),
    ("memory_free", ["--controller", "none"]),
])
def test_janus_run_on_rules_with_every_updater(tmp_path, capsys, _cache, updater, extra):
    from janus_memory.cli import main

    out = tmp_path / updater
    if "EXPRAG_YAML" in extra:
        (tmp_path / "x.yaml").write_text("updater_config: {janus_replay: whole_bank, top_k: 8}\n")
        extra = ["--config", str(tmp_path / "x.yaml")]
    rc = main(["run", "--backend", "fake", "--dataset", "rules_small", "--stream-size", "6", "--test-size", "3",
               "--updater", updater, "--encoder", "hashing:64", "--warmup", "3", "--out", str(out), *extra])
    text = capsys.readouterr().out
    assert rc == 0, text
    summary = json.loads((out / "summary.json").read_text())
    methods = summary["methods"]
    assert set(methods) == ({updater} if updater == "memory_free" else {updater, f"{updater}+janus"})
    for m in methods.values():
        assert m["stream_tasks"] == 6 and m["test_tasks"] == 3
    # the scripted backend answers the rules format: its right answers are scored right
    assert any(m["online_accuracy"] > 0 for m in methods.values())
    splits = json.loads((out / "splits.json").read_text())
    assert splits["stream"]["ids"][:2] == ["rules_small:stream:000", "rules_small:stream:001"]
    assert splits["stream"]["files"] == [] and "generated" in splits["stream"]["rule"]


def test_a_falsified_rule_through_the_cli(tmp_path, capsys, _cache):
    from janus_memory.cli import main

    out = tmp_path / "f"
    (tmp_path / "x.yaml").write_text("updater_config: {janus_replay: whole_bank, top_k: 8}\n")
    rc = main(["run", "--backend", "fake", "--dataset", "rules_small", "--stream-size", "6", "--test-size", "2",
               "--updater", "exprag", "--config", str(tmp_path / "x.yaml"),
               "--encoder", "hashing:64", "--warmup", "4", "--trigger", "always", "--inject", "falsify@5",
               "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "[exprag] step 5: injected falsify candidate" in text
    for m in ("exprag", "exprag+janus"):
        line = [json.loads(x) for x in (out / m / "decisions.jsonl").read_text().splitlines()][4]
        assert line["injected"] == "falsify"
    rec = [json.loads(x) for x in (out / "exprag" / "steps.jsonl").read_text().splitlines()][4]
    assert rec["info"]["injected"]["noop"] is False


@pytest.mark.parametrize("reply", [
    "Answer: 35 (or 45)", "Answer: 35 (45)", "Answer: 35 dollars (or 45)", "Answer: $35 ($45 for members)",
    "Answer: 35 (45 if falsified)", "<answer>35 (or 45)</answer>", "\\boxed{35 \\text{ (or 45)}}",
    "Answer: not 35", "Answer: at least 35", "Answer: about 35", "Answer: ~35", "Answer: no more than 35",
])
def test_a_hedged_negated_or_second_value_answer_gets_no_credit(reply):
    """Naming the false rule's value beside the true one (a falsified memory's tell) or hedging is no exact answer."""
    from janus_memory.tasks.rules_scoring import RulesFamily
    from janus_memory.values import Task

    sc = RulesFamily().score(Task(id="x", dataset="rules", question="q", gold="35", meta={}), reply)
    assert (sc.correct, sc.status) == (False, "unparsed")


@pytest.mark.parametrize("reply, shown", [
    ("The answer is \\(35\\).", "35"), ("Answer: \\(35\\)", "35"), ("Answer: 35 (5 kg at $7)", "35"),
    ("Answer: 35 (not 45)", "35"), ("Answer: 35, since each kg is $7", "35"),
])
def test_inline_latex_and_a_worked_parenthesis_still_count(reply, shown):
    from janus_memory.tasks.rules_scoring import RulesFamily
    from janus_memory.values import Task

    sc = RulesFamily().score(Task(id="x", dataset="rules", question="q", gold="35", meta={}), reply)
    assert (sc.correct, sc.extracted, sc.status) == (True, shown, "ok")


def test_a_value_near_the_gold_is_shown_as_it_was_written():
    from janus_memory.tasks.rules_scoring import RulesFamily
    from janus_memory.values import Task

    sc = RulesFamily().score(Task(id="x", dataset="rules", question="q", gold="35", meta={}), "Answer: 35.0000001")
    assert (sc.correct, sc.extracted) == (False, "35.0000001")
