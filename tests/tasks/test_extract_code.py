"""Code extraction from chat/thinking output (C14), checked by running HumanEval/2 in the sandbox."""
from __future__ import annotations

import pytest

from janus_memory.tasks import get_family, load_split
from janus_memory.tasks.extract_code import extract_python, fenced_blocks, strip_reasoning
from janus_memory.values import ChatResult

GOOD = "def truncate_number(number: float) -> float:\n    return number % 1.0\n"


def test_fences_and_selection():
    t = "```python\nx = 1\n```\ntext\n````python\ny = 2\n````\n"
    assert [b for _, b, _ in fenced_blocks(t)] == ["x = 1\n", "y = 2\n"]
    assert extract_python(t) == "y = 2\n"
    # last block does not compile -> longest compiling block
    t2 = "```python\ndef f():\n    return 1\n```\nthen\n```python\ndef g(:\n```"
    assert extract_python(t2) == "def f():\n    return 1\n"
    # non-python fences ignored
    assert extract_python("```bash\nls\n```\n```python\nz = 3\n```") == "z = 3\n"
    assert extract_python("no code here at all") is None
    assert strip_reasoning("<think>def bad(): pass</think>rest") == "rest"
    assert strip_reasoning("draft def x</think>final") == "final"


@pytest.mark.parametrize("reply", [
    # A: reasoning with a draft def, then prose and a fenced block
    "<think>maybe def truncate_number(x): return x % 1 ... no wait</think>\nHere is my solution.\n\n```python\n"
    + GOOD + "```\n",
    # B: unfenced
    "Sure:\n\n" + GOOD + "\nThis returns the decimal part.",
    # C: four-backtick fence
    "````python\n" + GOOD + "````",
])
def test_c14_replies_pass(reply):
    task = next(t for t in load_split("humaneval", "all").tasks if t.id == "HumanEval/2")
    fam = get_family("humaneval")
    s = fam.score(task, reply)
    assert s.correct and s.status == "ok", s.detail
    # the reasoning channel is never used
    assert fam.score(task, ChatResult(text="", reasoning="```python\n" + GOOD + "```")).status == "unparsed"


def test_truncated_code_needs_a_closed_block():
    task = next(t for t in load_split("humaneval", "all").tasks if t.id == "HumanEval/2")
    fam = get_family("humaneval")
    s = fam.score(task, ChatResult(text="```python\n" + GOOD, finish_reason="length"))
    assert (s.correct, s.status) == (False, "truncated")
    s = fam.score(task, ChatResult(text="```python\n" + GOOD + "```\nExplanation: it takes the", finish_reason="length"))
    assert s.correct
