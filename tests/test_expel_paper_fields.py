"""ExpeL retrieval documents (issue 27 item 6): ``retrieval="paper"`` (the default) indexes the authors' fields of
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
