"""ExpeL retrieval documents: ``retrieval="paper"`` (the default) indexes the authors' fields of
each success case: task, thought, last steps, actions, joined reflections; ``multi_field`` keeps ours."""
from __future__ import annotations

from janus_memory.updaters.expel import paper_case_fields


def test_fields_of_a_plain_solution():
    traj = "  Step one: add.\n\nStep two: carry the 1.\nSo 2+3=5  "
    assert paper_case_fields(traj, ["", " Check sums. ", "Recount."]) == [
        ("thought", "Step one: add.\n\nStep two: carry the 1.\nSo 2+3=5"),  # no thought lines: first 300 characters
        ("step", "Step one: add.\nStep two: carry the 1.\nSo 2+3=5"),
        ("reflection", "Check sums.\nRecount."),
    ]


def test_thoughts_actions_and_the_last_five_steps():
    lines = ["> think: look at units", "> open file", "Think: check the sign", "plain 1", "plain 2",
             "> think about it", "> run tests", "plain 3"]
    got = dict(paper_case_fields("\n".join(lines), []))
    # "> think about it" has no colon: kept whole as a thought; "think:" prefixes are dropped
    assert got["thought"] == "look at units\ncheck the sign\n> think about it"
    assert got["action"] == "open file\nrun tests"
    assert got["step"] == "plain 1\nplain 2\n> think about it\n> run tests\nplain 3"
    assert "reflection" not in got


def test_long_trajectory_thought_is_cut_at_300_and_empty_gives_nothing():
    long = "x" * 500
    assert dict(paper_case_fields(long, []))["thought"] == "x" * 300
    assert paper_case_fields("   \n ", ["  "]) == []


def test_curator_sees_the_raw_question_in_the_paper_preset():
    from test_updaters_paper import T1, expel

    def responder(messages, role, params):
        if role == "reflection":
            return "<reflection>carry</reflection>"
        return "ADD: keep going"

    upd, llm = expel({"solver": ["<final_answer>ANSWER: 0</final_answer>", "<final_answer>ANSWER: 5</final_answer>"]},
                     responder=responder, max_tries=2)
    upd.step(T1)  # wrong, reflect, right: one pair curation
    cur = [c for c in llm.calls if c["role"] == "curator"][0]["messages"][0]["content"]
    prompt = upd.family.prompt(T1)
    assert T1.question in cur and prompt != T1.question and prompt not in cur
    upd2, llm2 = expel({"solver": ["<final_answer>ANSWER: 0</final_answer>", "<final_answer>ANSWER: 5</final_answer>"]},
                       responder=responder, max_tries=2, curator_input="task_prompt")
    upd2.step(T1)
    assert prompt in [c for c in llm2.calls if c["role"] == "curator"][0]["messages"][0]["content"]
