"""HumanEval program assembly (``from __future__`` first, fences indented under a list item, a helper from an earlier
block of the same reply), return values compared as the reference's ``==`` compares them (container subclasses by
content; an always-equal object still refused), and the interpreter that runs the code (the project's own)."""
from __future__ import annotations

import shutil
import sys

import pytest

from janus_memory.tasks import get_family, load_split
from janus_memory.tasks.extract_code import extract_python, fenced_blocks, with_helpers
from janus_memory.tasks.humaneval import build_head
from janus_memory.tasks.sandbox import sandbox_python

pytestmark = [pytest.mark.skipif(not shutil.which("bwrap"), reason="bwrap missing")]


def task(tid):
    return next(t for t in load_split("humaneval", "all").tasks if t.id == tid)


def verdict(tid, reply):
    s = get_family("humaneval").score(task(tid), reply)
    return s.correct, s.detail.get("reason")


TRUNC = "def truncate_number(number: float) -> float:\n    return number % 1.0\n"


# ------------------------------------------------------------------------------------------ assembly

@pytest.mark.parametrize("code", [
    "from __future__ import annotations\n\n" + TRUNC,
    '"""My solution."""\nfrom __future__ import annotations\nfrom __future__ import division\n\n' + TRUNC,
    "from __future__ import (annotations,\n    division)\nimport math\n\n" + TRUNC,
])
def test_future_import_goes_first(code):
    head = build_head(task("HumanEval/2"), code)
    assert head.startswith("from __future__")
    assert "from __future__" not in head.split("\n\n", 1)[1].split("def truncate_number")[0].split('"""')[-1]
    compile(head, "solution.py", "exec")
    assert verdict("HumanEval/2", "```python\n" + code + "```") == (True, "passed")  # before: syntax-error


def test_fence_indented_under_a_list_item():
    reply = ("Steps:\n\n1. Take the remainder modulo 1.\n2. Code:\n\n   ```python\n"
             "   def truncate_number(number: float) -> float:\n       return number % 1.0\n   ```\n\nDone.")
    (lang, body, closed), = fenced_blocks(reply)
    assert (lang, body, closed) == ("python", TRUNC, True)
    assert verdict("HumanEval/2", reply) == (True, "passed")
    tabbed = "- Code:\n\t```python\n\tdef truncate_number(number):\n\t    return number % 1.0\n\t```"
    assert extract_python(tabbed, "truncate_number") == "def truncate_number(number):\n    return number % 1.0\n"


HELPER = "```python\nimport math\n\ndef frac_part(x):\n    return x - math.floor(x)\n\nprint(frac_part(3.5))\n```\n"
MAIN = "```python\ndef truncate_number(number: float) -> float:\n    return frac_part(number)\n```\n"


def test_helper_from_an_earlier_block():
    reply = "First a helper:\n\n" + HELPER + "\nNow the function:\n\n" + MAIN
    code = extract_python(reply, "truncate_number")
    assert code == ("import math\n\ndef frac_part(x):\n    return x - math.floor(x)\n\n\n"
                    "def truncate_number(number: float) -> float:\n    return frac_part(number)\n")
    assert "print(" not in code  # the earlier block's other statements are never taken
    assert verdict("HumanEval/2", reply) == (True, "passed")  # before: exception (NameError)


def test_only_the_helpers_used_are_taken_and_a_draft_entry_point_is_not():
    draft = "```python\ndef truncate_number(number):\n    return 0.25\n\ndef unused():\n    raise SystemExit\n```\n"
    reply = draft + HELPER + "Final:\n" + MAIN
    code = extract_python(reply, "truncate_number")
    assert "return 0.25" not in code and "unused" not in code and "frac_part(x)" in code
    assert verdict("HumanEval/2", reply) == (True, "passed")


def test_a_helper_the_reply_never_defines_still_fails():
    assert verdict("HumanEval/2", MAIN) == (False, "exception")


def test_with_helpers_follows_helpers_of_helpers():
    earlier = ["def a(x):\n    return b(x) + K\n\ndef b(x):\n    return x\n\nK = 1\n", "def c():\n    pass\n"]
    out = with_helpers("def f(x):\n    return a(x)\n", earlier)
    assert out.startswith("def a(x)") and "def b(x)" in out and "K = 1" in out and "def c" not in out


# ------------------------------------------------------------------------------------------ return values

@pytest.mark.parametrize("body", [
    "from collections import Counter\ndef histogram(test):\n    c = Counter(test.split())\n"
    "    m = max(c.values(), default=0)\n    return Counter({k: v for k, v in c.items() if v == m})\n",
    "from collections import defaultdict\ndef histogram(test):\n    d = defaultdict(int)\n"
    "    for w in test.split():\n        d[w] += 1\n    m = max(d.values(), default=0)\n"
    "    out = defaultdict(int)\n    for k, v in d.items():\n        if v == m:\n            out[k] = v\n    return out\n",
    "from collections import OrderedDict\ndef histogram(test):\n    d = OrderedDict()\n"
    "    for w in test.split():\n        d[w] = d.get(w, 0) + 1\n    m = max(d.values(), default=0)\n"
    "    return OrderedDict((k, v) for k, v in d.items() if v == m)\n",
])
def test_dict_subclasses_compare_as_dicts(body):
    assert verdict("HumanEval/111", "```python\n" + body + "```") == (True, "passed")  # before: bad-return


def test_namedtuple_compares_as_a_tuple():
    body = ("from collections import namedtuple\nR = namedtuple('R', 'sum product')\n"
            "def sum_product(numbers):\n    p = 1\n    for n in numbers:\n        p *= n\n"
            "    return R(sum(numbers), p)\n")
    assert verdict("HumanEval/8", "```python\n" + body + "```") == (True, "passed")


@pytest.mark.parametrize("body", [
    # an always-equal dict: compared by what it holds (nothing), so the asserts fail
    "class D(dict):\n    def __eq__(self, o):\n        return True\n    def __ne__(self, o):\n        return False\n"
    "def histogram(test):\n    return D()\n",
    # a dict whose items() lies: read through dict's own methods
    "class D(dict):\n    def items(self):\n        return {'a': 1}.items()\n    def __eq__(self, o):\n        return True\n"
    "def histogram(test):\n    return D(z=9)\n",
    # a tuple subclass that claims equality with everything
    "class T(tuple):\n    def __eq__(self, o):\n        return True\n"
    "def histogram(test):\n    return T()\n",
])
def test_always_equal_containers_are_refused(body):
    assert verdict("HumanEval/111", "```python\n" + body + "```") == (False, "assertion")


def test_always_equal_scalar_is_still_bad_return():
    body = "class F(float):\n    def __eq__(self, o):\n        return True\ndef truncate_number(x):\n    return F(0)\n"
    assert verdict("HumanEval/2", "```python\n" + body + "```") == (False, "bad-return")


def test_list_subclass_with_lying_iteration_is_read_by_content():
    body = ("class L(list):\n    def __iter__(self):\n        return iter([1, 2])\n"
            "def sort_third(l):\n    return L()\n")
    assert verdict("HumanEval/33", "```python\n" + body + "```") == (False, "assertion")


# ------------------------------------------------------------------------------------------ the interpreter

def test_bwrap_sandbox_runs_the_projects_python_and_packages():
    info = sandbox_python("bwrap")
    assert info["version"] == sys.version.split()[0] and info["base_prefix"] == sys.base_prefix
    assert info["same_as_host"] is True
    pytest.importorskip("numpy")
    body = ("import numpy as np\ndef truncate_number(number: float) -> float:\n"
            "    return float(np.float64(number) - np.floor(number))\n")
    s = get_family("humaneval").score(task("HumanEval/2"), "```python\n" + body + "```")
    assert (s.correct, s.detail["reason"], s.detail["python"]) == (True, "passed", sys.version.split()[0])
