"""HumanEval answer forms: a pasted REPL transcript, a four-space indented Markdown block (extraction, exact text)."""
from __future__ import annotations

import pytest

from janus_memory.tasks.extract_code import extract_python, without_transcript

FUNC = "def f(x):\n    return x + 1\n"


@pytest.mark.parametrize("reply", [
    # the solution, then a session trying it (prompt lines and their output)
    "```python\ndef f(x):\n    return x + 1\n\n>>> f(1)\n2\n>>> f(2)\n3\n```",
    # the session right after the code, without a blank line
    "```python\ndef f(x):\n    return x + 1\n>>> f(1)\n2\n```",
    # the whole solution typed at the prompt, with continuation lines
    "```python\n>>> def f(x):\n...     return x + 1\n...\n>>> f(1)\n2\n```",
    # untagged block
    "```\ndef f(x):\n    return x + 1\n\n>>> print(f(1))\n2\n```",
    # four-space indented Markdown block (no fence) holding the whole function
    "Here is the function:\n\n    def f(x):\n        return x + 1\n\nIt adds one.",
    # a fenced block whose lines all carry four spaces
    "```python\n    def f(x):\n        return x + 1\n```",
])
def test_transcripts_and_indented_blocks_give_the_function(reply):
    assert extract_python(reply, "f") == FUNC


def test_transcript_keeps_typed_definitions_and_drops_calls():
    body = "import math\n\n>>> def g(y):\n...     return math.sqrt(y)\n>>> g(4)\n2.0\n>>> K = 3\n>>> f(K)\n4\n"
    assert without_transcript(body) == "import math\n\n\ndef g(y):\n    return math.sqrt(y)\n\nK = 3\n"


def test_false_pass_twins_stay_as_they_are():
    # a doctest inside a docstring is part of a string: the block parses and is not changed
    doc = 'def f(x):\n    """\n    >>> f(1)\n    2\n    """\n    return x + 1\n'
    assert extract_python("```python\n" + doc + "```", "f") == doc
    # a session alone (no definition) is output, not code
    assert extract_python("```\n>>> f(1)\n2\n```", "f") is None
    # a completion-style body stays a body (it is nested in the prompt's function on purpose)
    assert extract_python("```python\n    return x + 1\n```", "f") == "    return x + 1\n"
    # an indented body that defines a helper and returns is still a body, not a whole function
    body = "    def helper(y):\n        return y\n    return helper(x) + 1\n"
    assert extract_python("```python\n" + body + "```", "f") == body
    # an indented block defining another function than the entry point stays a body
    other = "    def g(x):\n        return x + 1\n"
    assert extract_python("```python\n" + other + "```", "f") == other
