"""The updater seam: registry/config errors, snapshot round trips for all five, ExpRAG, memory-free, docs example."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from janus_memory.updaters import UPDATERS, Updater, fill, load_prompt, make_updater
from updater_fakes import ExactFamily, HashEncoder, ScriptedLLM, task

ROOT = Path(__file__).resolve().parents[2]
QS = [
    ("add two and three", "5"),
    ("multiply seven and nine", "63"),
    ("subtract ten from twenty", "10"),
    ("add two and four", "6"),
    ("add two and five", "7"),
]
TASKS = [task(i + 1, q, g) for i, (q, g) in enumerate(QS)]


def responder(messages, role, params):
    """Solver: right answer for odd-length questions, else wrong. Curator: a DC sheet or an ExpeL op."""
    last = messages[-1]["content"]
    if role == "curator":
        n = len(last) % 7
        return f"<cheatsheet>\nVersion: {n}\nnote {n}\n</cheatsheet>\nADD: Rule {n} applies here."
    if role == "reflection":
        return "<reflection>check again</reflection>"
    q = re.findall(r"Question: (.*)", last)[-1]
    gold = dict(QS)[q]
    ans = gold if len(q) % 2 else "0"
    return f"<trajectory>t</trajectory><final_answer>ANSWER: {ans}</final_answer>"


def build(name, **config):
    llm = ScriptedLLM(responder=responder)
    return make_updater(name, llm=llm, family=ExactFamily(), encoder=HashEncoder(), config=config or None), llm


def test_registry_and_errors():
    assert set(UPDATERS) >= {"dc_rs", "dc_cu", "expel", "exprag", "memory_free", "ace", "reasoning_bank"}
    with pytest.raises(ValueError, match=r"unknown updater 'nope'.*ace, dc_cu, dc_rs, expel, exprag, memory_free"):
        make_updater("nope", llm=None, family=None, encoder=None)
    with pytest.raises(ValueError, match="unknown config key 'temprature'"):
        build("dc_rs", temprature=0.7)
    with pytest.raises(ValueError, match="unknown config key 'bank_under_controller'"):
        build("dc_cu", bank_under_controller=True)


@pytest.mark.parametrize("name", ["dc_rs", "dc_cu", "expel", "exprag", "memory_free"])
def test_snapshot_load_round_trip_byte_identical(name):
    upd, _ = build(name)
    for t in TASKS:
        out = upd.step(t)
        json.dumps(out.info, sort_keys=True)  # the runner logs info as JSON
        json.dumps([c.to_dict() for c in out.calls], sort_keys=True)
    snap = upd.snapshot()
    blob = json.dumps(snap, sort_keys=True)
    assert json.dumps(upd.snapshot(), sort_keys=True) == blob  # deterministic
    fresh, _ = build(name)
    fresh.load_snapshot(json.loads(blob))
    assert json.dumps(fresh.snapshot(), sort_keys=True) == blob
    assert fresh.memory_text() == upd.memory_text()
    # the restored updater continues exactly like the original
    t = task(9, "add two and three", "5")
    a, b = upd.step(t), fresh.step(t)
    assert [c.messages for c in a.calls] == [c.messages for c in b.calls]
    assert json.dumps(upd.snapshot(), sort_keys=True) == json.dumps(fresh.snapshot(), sort_keys=True)


def test_load_snapshot_rejects_other_updater():
    upd, _ = build("dc_rs")
    other, _ = build("expel")
    with pytest.raises(ValueError, match="not a 'expel' updater snapshot"):
        other.load_snapshot(upd.snapshot())
    with pytest.raises(ValueError, match="format"):
        upd.load_snapshot({**upd.snapshot(), "format": 99})


@pytest.mark.parametrize("name", ["dc_cu", "exprag"])
def test_full_rollback_restores_previous_state(name):
    upd, _ = build(name)
    upd.step(TASKS[0])
    snap = upd.snapshot()
    upd.step(TASKS[1])
    assert upd.snapshot()["state"] != snap["state"]
    upd.rollback(snap)
    assert json.dumps(upd.snapshot()["state"], sort_keys=True) == json.dumps(snap["state"], sort_keys=True)


def test_exprag_prompt_has_top_k_records_with_feedback():
    upd, llm = build("exprag")
    for t in TASKS[:4]:
        upd.step(t)
    out = upd.step(TASKS[4])
    assert [r["id"] for r in out.info["retrieved"]] == ["t1", "t4", "t2"]
    user = out.calls[0].messages[1]["content"]
    assert user.startswith(
        "# PAST EXPERIENCE\n[Experience 1]\nQ: Question: add two and three\nEnd your reply with 'ANSWER: <value>'.\n"
        "A: <trajectory>t</trajectory><final_answer>ANSWER: 5</final_answer>\nFeedback: success\n\n[Experience 2]\n"
        "Q: Question: add two and four"
    )
    assert "Feedback: failure" in user  # "add two and four" (16 chars) was answered wrongly
    assert "subtract ten" not in user
    assert user.endswith("# CURRENT PROBLEM\n" + ExactFamily().prompt(TASKS[4]))
    assert upd.memory_text().count("[Experience ") == 5
    assert out.old_memory.count("[Experience ") == 4


def test_memory_free_is_the_plain_task_prompt():
    upd, llm = build("memory_free")
    out = upd.step(TASKS[0])
    assert out.calls[0].messages == [{"role": "user", "content": ExactFamily().prompt(TASKS[0])}]
    assert upd.memory_text() == "" and out.candidate_memory == "" and upd.snapshot()["state"] == {}
    upd.solve_frozen(TASKS[:2])
    assert [c["messages"] for c in llm.calls[-2:]] == [
        [{"role": "user", "content": ExactFamily().prompt(t)}] for t in TASKS[:2]
    ]
    assert [c["role"] for c in llm.calls[-2:]] == ["test", "test"]


def test_prompt_files_and_fill():
    assert "[[CHEATSHEET]]" in load_prompt("dc_generator_user")
    with pytest.raises(FileNotFoundError):
        load_prompt("nope")
    assert fill("a [[X]] b", X="[[Y]]") == "a [[Y]] b"
    with pytest.raises(KeyError, match=r"\[\[X\]\]"):
        fill("a [[X]]")
    with pytest.raises(ValueError, match="Z"):
        fill("a [[X]]", X="1", Z="2")
    # every prompt file's placeholders are filled somewhere (no typos): each file loads and has balanced brackets
    for f in (ROOT / "src/janus_memory/updaters/prompts").glob("*.txt"):
        text = load_prompt(f.stem)
        assert text.count("[[") == text.count("]]"), f.name


def test_docs_example_user_updater_runs():
    doc = (ROOT / "docs/updaters.md").read_text(encoding="utf-8")
    code = doc.split("<!-- example: user-updater -->\n```python\n", 1)[1].split("```", 1)[0]
    ns: dict = {}
    exec(compile(code, "docs/updaters.md", "exec"), ns)  # our own documentation code, not model output
    try:
        cls = ns["Lessons"]
        assert issubclass(cls, Updater) and UPDATERS["lessons"] is cls
        llm = ScriptedLLM(
            {
                "solver": ["ANSWER: 5", "ANSWER: 1", "ANSWER: 10"],
                "curator": ["Add the units first.", "", "Check signs."],
            }
        )
        upd = make_updater("lessons", llm=llm, family=ExactFamily(), encoder=None, config={"keep": 1})
        o1 = upd.step(TASKS[0])
        assert o1.score.correct and upd.memory_text() == "- Add the units first."
        snap = upd.snapshot()
        o2 = upd.step(TASKS[1])
        assert o2.candidate_rejected == "empty lesson" and upd.memory_text() == "- Add the units first."
        upd.step(TASKS[2])
        assert upd.memory_text() == "- Check signs."
        upd.rollback(snap)
        assert upd.memory_text() == "- Add the units first."
        assert o2.calls[0].messages[0]["content"] == "Use these lessons where they help:\n- Add the units first."
        llm.push("janus", "ANSWER: 63")
        [(res, score)] = upd.solve_with_memory("- Multiply carefully.", [TASKS[1]])
        assert score.correct and llm.calls[-1]["messages"][0]["content"].endswith("- Multiply carefully.")
        with pytest.raises(ValueError, match="unknown config key 'kep'"):
            make_updater("lessons", llm=llm, family=ExactFamily(), encoder=None, config={"kep": 1})
    finally:
        UPDATERS.pop("lessons", None)


def test_retrieval_bank_growth_ties_and_bad_input():
    import numpy as np

    from janus_memory.updaters import RetrievalBank

    bank = RetrievalBank()
    assert bank.top_k(np.ones(4, dtype=np.float32), 3) == []
    for i in range(40):  # past the initial capacity of 16
        e = np.zeros(4, dtype=np.float32)
        e[i % 4] = 1.0
        bank.add({"id": i}, e)
    q = np.array([1, 0, 0, 0], dtype=np.float32)
    assert bank.top_k(q, 3) == [(0, 1.0), (4, 1.0), (8, 1.0)]  # ties: insertion order
    clone = RetrievalBank()
    clone.set_state(bank.state())
    assert clone.state() == bank.state() and clone.top_k(q, 40) == bank.top_k(q, 40)
    with pytest.raises(ValueError, match="embedding dim 3 differs from the bank's 4"):
        bank.add({"id": "bad"}, np.ones(3, dtype=np.float32))
    assert len(bank) == 40


def test_retrieval_updaters_need_an_encoder():
    upd = make_updater("dc_rs", llm=ScriptedLLM(responder=responder), family=ExactFamily(), encoder=None)
    with pytest.raises(ValueError, match="needs an encoder"):
        upd.step(TASKS[0])


def test_extra_body_and_solver_params_reach_every_call():
    body = {"chat_template_kwargs": {"enable_thinking": False}}
    upd, llm = build("expel", extra_body=body, solver_params={"presence_penalty": 0.5}, max_tries=2)
    upd.step(task(1, "add two and four", "6"))  # even length -> wrong twice: solver, reflection, solver
    assert [c["role"] for c in llm.calls] == ["solver", "reflection", "solver"]
    sent = {"top_k": -1, "min_p": 0.0, **body}  # the paper sampling plus the user's extra_body
    assert all(c["params"]["extra_body"] == sent for c in llm.calls)
    assert llm.calls[0]["params"] == {"temperature": 0.0, "max_tokens": 1024, "presence_penalty": 0.5, "top_p": 1.0,
                                      "extra_body": sent}
    upd2, llm2 = build("dc_rs", extra_body=body)
    upd2.step(TASKS[0])
    assert [c["params"]["extra_body"] for c in llm2.calls] == [sent, sent]
    assert build("dc_rs")[0].solver_params()["extra_body"] == {"top_k": -1, "min_p": 0.0}
    assert "extra_body" not in build("dc_rs", sampling="backend")[0].solver_params()
