"""HumanEval extraction: trailing usage/assert blocks, untagged output fences, `if __name__ == "__main__":`
and completion-style bare bodies. Exact extractions, then exact verdicts in the sandbox (HumanEval/2)."""
from __future__ import annotations

import shutil

import pytest

from janus_memory.tasks import load_split
from janus_memory.tasks.extract_code import defines, extract_python, is_body
from janus_memory.tasks.humaneval import HumanEvalFamily
from janus_memory.tasks.sandbox import SandboxLimits

GOOD = "def truncate_number(number: float) -> float:\n    return number % 1.0\n"
BODY = "    return number % 1.0\n"
EP = "truncate_number"

CASES = [
    # (name, reply, expected extraction)
    ("example usage block after the solution",
     f"```python\n{GOOD}```\n\nExample usage:\n\n```python\nprint(truncate_number(3.5))  # 0.5\n```\n", GOOD),
    ("own asserts after the solution (one of them wrong)",
     f"```python\n{GOOD}```\nTests:\n```python\nassert truncate_number(3.5) == 0.5\n"
     "assert truncate_number(1.25) == 0.3\n```", GOOD),
    ("usage with a main guard in its own block",
     f"```python\n{GOOD}```\n```python\nif __name__ == '__main__':\n    print(truncate_number(2.5))\n```", GOOD),
    ("untagged fence showing the output",
     f"```python\n{GOOD}```\nOutput:\n```\n0.5\n```", GOOD),
    ("untagged output fence with a list", f"```\n{GOOD}```\nwhich prints\n```\n[0.5, 0.25]\n```", GOOD),
    ("untagged doctest-style fence", f"```python\n{GOOD}```\n```\n>>> truncate_number(3.5)\n0.5\n```", GOOD),
    ("unfenced solution, fenced output", f"{GOOD}\nRunning it:\n```\n0.5\n```", GOOD.rstrip("\n")),
    ("draft then final, each defining it",
     "```python\ndef truncate_number(number):\n    return int(number)\n```\nOops, fixed:\n```python\n" + GOOD + "```",
     GOOD),
    ("solution then a test function block",
     f"```python\n{GOOD}```\n```python\ndef test():\n    assert truncate_number(3.5) == 0.5\n```", GOOD),
    ("bare body, unfenced", BODY, BODY),
    ("bare body, unfenced, then prose", BODY + "\nThis keeps only the fractional part.", BODY),
    ("bare body with a docstring and a loop, unfenced",
     '    """Fractional part."""\n    x = number\n    while x >= 1:\n        x -= 1\n    return x\n',
     '    """Fractional part."""\n    x = number\n    while x >= 1:\n        x -= 1\n    return x\n'),
    ("bare body in a python fence", f"```python\n{BODY}```", BODY),
    ("bare body after a line of prose", "Here is the body:\n" + BODY, BODY),
    ("bare body between prose", "Here is the body:\n\n" + BODY + "\nThat is all.", BODY),
    ("bare body in an untagged fence", f"```\n{BODY}```", BODY),
]


@pytest.mark.parametrize("name,reply,expected", CASES, ids=[c[0] for c in CASES])
def test_extraction(name, reply, expected):
    assert extract_python(reply, EP) == expected


def test_helpers():
    assert is_body(BODY) and not is_body(GOOD) and not is_body("return 1\n")
    assert defines(GOOD, EP) and not defines(GOOD, "other") and defines(GOOD)
    assert not defines("print(truncate_number(3.5))\n", EP)
    # no block defines anything: the old rule (last compiling block) still holds
    assert extract_python("```python\nx = 1\n```\n```python\ny = 2\n```", EP) == "y = 2\n"
    # output-only replies have no code
    assert extract_python("```\n0.5\n```") is None
    assert extract_python("```\n>>> f(1)\n2\n```") is None


MAIN_GUARDS = [
    "import unittest\n" + GOOD + "\nif __name__ == '__main__':\n    unittest.main()\n",
    GOOD + '\nif __name__ == "__main__":\n    n = float(input())\n    print(truncate_number(n))\n',
    "import sys\n" + GOOD + "\nif __name__ == '__main__':\n    sys.exit(1)\n",
    GOOD + "\nif __name__ == '__main__':\n    raise SystemExit(0)\n",
    GOOD + "\nif __name__ == '__main__':\n    assert truncate_number(3.5) == 0.7\n",
]

VERDICTS = [(c[1], True) for c in CASES] + [("```python\n" + m + "```", True) for m in MAIN_GUARDS] + [
    # wrong solutions still fail, whatever follows them
    ("```python\ndef truncate_number(number):\n    return 0.25\n```\nExample:\n```python\n"
     "print(truncate_number(3.5))\n```", False),
    ("```python\ndef truncate_number(number):\n    return 0.25\n```\n```\n0.5\n```", False),
    ("    return 0.25\n", False),
]


@pytest.mark.skipif(not (shutil.which("bwrap") or shutil.which("unshare")), reason="no sandbox")
def test_verdicts_in_the_sandbox():
    task = next(t for t in load_split("humaneval", "all").tasks if t.id == "HumanEval/2")
    fam = HumanEvalFamily(limits=SandboxLimits(wall_s=6.0, cpu_s=6), allow_weak_sandbox=True)
    scores = fam.score_many([task] * len(VERDICTS), [r for r, _ in VERDICTS], workers=2)
    got = [(s.correct, s.status) for s in scores]
    assert got == [(want, "ok") for _, want in VERDICTS], [
        (r[:60], s.detail.get("reason"), s.detail.get("stderr_tail", "")[-200:]) for (r, w), s in zip(VERDICTS, scores)
        if s.correct != w]
