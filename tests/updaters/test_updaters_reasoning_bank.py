"""ReasoningBank: item parsing (malformed, truncated, over the limit), self-judgment parsing, retrieval order, memory
text round trip, Janus replay = the method's retrieval, rollback, snapshots, fake-backend e2e."""

from __future__ import annotations

import json

import numpy as np
import pytest

from janus_memory.updaters import make_updater
from janus_memory.updaters.reasoning_bank import parse_bank_text, parse_items, parse_status, sanitize
from janus_memory.values import ChatResult
from test_updaters_ace import check_run, run_fake
from updater_fakes import ExactFamily, HashEncoder, ScriptedLLM, task


def make(script=None, **config):
    llm = ScriptedLLM(script or {})
    return make_updater("reasoning_bank", llm=llm, family=ExactFamily(), encoder=HashEncoder(),
                        config=config or None), llm


def item(n, title, desc="One line.", content="Do it."):
    return f"# Memory Item {n}\n## Title {title}\n## Description {desc}\n## Content {content}"


# ------------------------------------------------------------------------------------------------- parsing
def test_parse_items_exact_and_drops():
    reply = (
        "The attempt worked because it checked units.\n```\n"
        + item(1, "Check units", content="Write units on\nevery quantity.\n\nThat is my reasoning, trailing.")
        + "\n" + item(2, "No content", content="")
        + "\n" + item(3, "check units", content="Write units on every quantity.").replace("check units", "Check units")
        + "\n# memory item 4\n## Title: Estimate\n## Description\nGuess the size first.\n## Content Compare.\n"
        + item(5, "Fifth") + "\n" + item(6, "Sixth") + "\n```"
    )
    items, dropped = parse_items(reply, 3)
    assert items == [
        ["Check units", "One line.", "Write units on every quantity."],
        ["Estimate", "Guess the size first.", "Compare."],
        ["Fifth", "One line.", "Do it."],
    ]
    assert [d["reason"] for d in dropped] == ["missing field", "duplicate item", "over the item limit"]
    assert parse_items("no items, just prose", 3) == ([], [])


def test_parse_items_truncated_reply_drops_last_block():
    text = item(1, "A") + "\n" + item(2, "B", content="Half a sent")
    assert parse_items(text, 3, truncated=True)[0] == [["A", "One line.", "Do it."]]
    assert parse_items(text, 3, truncated=True)[1][0]["reason"] == "cut off"
    assert len(parse_items(text, 3)[0]) == 2


@pytest.mark.parametrize("text,strict,faithful", [
    ("Thoughts: fine\nStatus: success", "success", "success"),
    ('Thoughts: x\nStatus: "failure"', "failure", "failure"),
    ("**Status:** Success", "success", "failure"),           # faithful needs the line to start with "Status:"
    ("Status: success\nWait, no.\nStatus: failure", "failure", "success"),
    ("It looks right to me.", None, "failure"),
    ("", None, "failure"),
    ("Status: unsuccessful", None, "success"),              # faithful: the line contains "success"
])
def test_parse_status(text, strict, faithful):
    assert parse_status(text, False) == strict and parse_status(text, True) == faithful


def test_bank_text_round_trip_with_hostile_content():
    upd, _ = make()
    bodies = ["", sanitize("<<entry {\"id\": \"x\"}>>\nline two  \n"), "# Memory Item 1\n## Title T", "a\n\n\nb"]
    for n, body in enumerate(bodies):
        rec = {"id": f"t{n}", "question": f"q {n}\nwith \"quotes\" >> and <<entry", "status": "success", "body": body}
        upd.bank.add(rec, np.ones(256, dtype=np.float32) / 16)
    text = upd.memory_text()
    assert [e["body"] for e in parse_bank_text(text)] == [r["body"] for r in upd.bank.records]
    assert [e["question"] for e in parse_bank_text(text)][1] == 'q 1\nwith "quotes" >> and <<entry'
    assert bodies[1] == ' <<entry {"id": "x"}>>\nline two'
    assert parse_bank_text("(empty)") == []
    with pytest.raises(ValueError, match="not a ReasoningBank memory text"):
        parse_bank_text("1. some rule")


# ------------------------------------------------------------------------------------------------- the step
def answer(a):
    return f"reasoning\nANSWER: {a}"


def test_step_success_and_failure_distillation_exact_bank():
    upd, llm = make()
    t1, t2 = task(1, "add two and three", "5"), task(2, "add two and four", "6")
    llm.push("solver", answer("5"), answer("7"))
    llm.push("reflection", "Thoughts: ok\nStatus: success", "Thoughts: looks fine\nStatus: success")
    llm.push("curator", "Why: careful.\n" + item(1, "Add stepwise"), item(1, "Recheck sums", content="Re-add."))
    out1 = upd.step(t1)
    assert out1.old_memory == "(empty)" and out1.info["retrieved"] == [] and out1.candidate_rejected is None
    assert "## MEMORY ITEMS FROM EARLIER ATTEMPTS\n(none yet)" in llm.calls[0]["messages"][1]["content"]
    assert "success" in llm.calls[2]["messages"][0]["content"] and "solved it" in llm.calls[2]["messages"][0]["content"]
    out2 = upd.step(t2)
    # t2 is wrong but the model judged itself a success: the success prompt distils it (no labels are used)
    assert not out2.score.correct and out2.info["judged"] == "success"
    assert out2.info["judge_agrees_with_ground_truth"] is False
    assert out2.info["retrieved"][0]["id"] == "t1"
    assert item(1, "Add stepwise") in llm.calls[3]["messages"][1]["content"]
    assert [(r["id"], r["status"], r["body"]) for r in upd.bank.records] == [
        ("t1", "success", item(1, "Add stepwise")), ("t2", "success", item(1, "Recheck sums", content="Re-add."))]
    assert "correct answer" not in json.dumps([c["messages"] for c in llm.calls]).lower()  # never shown the gold


def test_failure_prompt_ground_truth_judge_and_rejections():
    upd, llm = make(judge="ground_truth")
    llm.push("solver", answer("9"))
    llm.push("curator", item(1, "Avoid guessing"))
    out = upd.step(task(1, "add two and three", "5"))
    assert llm.roles() == ["solver", "curator"] and out.info["judged"] == "failure"
    assert "did not solve it" in llm.calls[1]["messages"][0]["content"]
    upd2, llm2 = make()
    llm2.push("solver", answer("5"), answer("5"))
    llm2.push("reflection", "I think it is right.", "Status: success")
    llm2.push("curator", "## Title only a title")
    a = upd2.step(task(1, "add two and three", "5"))
    b = upd2.step(task(2, "add two and three", "5"))
    assert (a.candidate_rejected, b.candidate_rejected) == ("unparseable judgment", "no memory items")
    assert a.candidate_memory == a.old_memory == b.candidate_memory == "(empty)"
    assert upd2.stats["candidates_rejected"] == {"unparseable judgment": 1, "no memory items": 1}


def test_faithful_stores_raw_reply():
    upd, llm = make(faithful=True)
    llm.push("solver", answer("5"))
    llm.push("reflection", "no status line at all")
    llm.push("curator", ChatResult(text="", reasoning="Thinking...\n# Memory Item 1\n## Title Cut", finish_reason="length"))
    out = upd.step(task(1, "add two and three", "5"))
    assert out.info["judged"] == "failure" and upd.bank.records[0]["body"] == "Thinking...\n# Memory Item 1\n## Title Cut"


def test_retrieval_order_top_k_and_replay_equals_stream_prompt():
    upd, llm = make(top_k=2, judge="ground_truth")
    qs = ["apples and pears", "apples and plums", "bananas only", "apples pears and plums"]
    for i, q in enumerate(qs[:3], start=1):
        llm.push("solver", answer("1"))
        llm.push("curator", item(1, f"Lesson {i}"))
        upd.step(task(i, q, "1"))
    t4 = task(4, qs[3], "1")
    llm.push("solver", answer("1"))
    llm.push("curator", item(1, "Lesson 4"))
    out = upd.step(t4)
    # cos(q4, q1) = cos(q4, q2) = 3/sqrt(12) (a tie: insertion order), q3 shares no word
    assert [r["id"] for r in out.info["retrieved"]] == ["t1", "t2"]
    assert out.info["retrieved"][0]["similarity"] == out.info["retrieved"][1]["similarity"] == round(3 / 12 ** 0.5, 6)
    stream_msgs = llm.calls[-2]["messages"]
    assert stream_msgs[1]["content"].index("Lesson 1") < stream_msgs[1]["content"].index("Lesson 2")
    # Janus's replay of the old memory on this task sends the very same request (a cache hit in the runner)
    llm.calls.clear()
    llm.push("janus", answer("1"))
    upd.solve_with_memory(out.old_memory, [t4])
    assert llm.calls[0]["messages"] == stream_msgs
    # replay="full" instead puts the whole bank text in the prompt
    upd.config["replay"] = "full"
    llm.push("janus", answer("1"))
    upd.solve_with_memory(out.old_memory, [t4])
    assert out.old_memory in llm.calls[1]["messages"][1]["content"]


def test_replay_takes_the_evaluators_sample_index():
    upd, llm = make(judge="ground_truth")
    llm.push("solver", answer("5"))
    llm.push("curator", item(1, "First"))
    out = upd.step(task(1, "add two and three", "5"))
    t = task(2, "add two and four", "6")
    llm.push("janus", answer("6"), answer("6"))
    upd.solve_with_memory(out.candidate_memory, [t])
    upd.solve_with_memory(out.candidate_memory, [t], sample=3)  # a fresh draw (runner/evaluator.py)
    first, fresh = llm.calls[-2:]
    assert "sample" not in first["params"] and fresh["params"]["sample"] == 3
    assert first["messages"] == fresh["messages"] and item(1, "First") in fresh["messages"][1]["content"]


def test_rollback_removes_the_entry_and_snapshots_round_trip():
    upd, llm = make(judge="ground_truth")
    llm.push("solver", answer("5"), answer("5"))
    llm.push("curator", item(1, "First"), item(1, "Second"))
    upd.step(task(1, "add two and three", "5"))
    snap = upd.snapshot()
    out = upd.step(task(2, "add one and one", "5"))
    assert len(upd.bank) == 2 and out.candidate_memory != out.old_memory
    upd.rollback(snap)
    assert upd.memory_text() == out.old_memory and len(upd.bank) == 1 and upd.stats["rollbacks"] == 1
    blob = json.dumps(upd.snapshot(), sort_keys=True)
    fresh, fl = make(judge="ground_truth")
    fresh.load_snapshot(json.loads(blob))
    assert json.dumps(fresh.snapshot(), sort_keys=True) == blob
    t = task(3, "add two and three", "5")
    for u, lm in ((upd, llm), (fresh, fl)):
        lm.push("solver", answer("5"))
        lm.push("curator", item(1, "Third"))
        u.step(t)
    assert llm.calls[-2]["messages"] == fl.calls[-2]["messages"]
    assert json.dumps(upd.snapshot(), sort_keys=True) == json.dumps(fresh.snapshot(), sort_keys=True)


def test_bad_config():
    for bad in ({"judge": "oracle"}, {"replay": "some"}, {"max_items": 0}):
        with pytest.raises(ValueError):
            make(**bad)


def test_fake_end_to_end_both_and_resume(tmp_path, monkeypatch):
    ref = run_fake(tmp_path, monkeypatch, "reasoning_bank", out_name="ref")
    summary, dec = check_run(ref, "reasoning_bank")
    assert summary["methods"]["reasoning_bank"]["updater_stats"]["judged"]["success"] >= 1
    out = run_fake(tmp_path, monkeypatch, "reasoning_bank", stop=5, out_name="stopped")
    for m in ("reasoning_bank", "reasoning_bank+janus"):
        for f in ("decisions.jsonl", "steps.jsonl", "final_memory.txt", "test.jsonl"):
            assert (out / m / f).read_bytes() == (ref / m / f).read_bytes(), f"{m}/{f}"


def test_load_memory_text_round_trip():
    upd, llm = make(judge="ground_truth")
    for i, q in enumerate(["add two and three", "add one and one"], start=1):
        llm.push("solver", answer("5"))
        llm.push("curator", item(1, f"Lesson {i}"))
        upd.step(task(i, q, "5"))
    other, _ = make()
    other.load_memory_text(upd.memory_text())
    assert json.dumps(other.snapshot()["state"], sort_keys=True) == json.dumps(upd.snapshot()["state"], sort_keys=True)
    with pytest.raises(ValueError):
        other.load_memory_text("not a bank")
