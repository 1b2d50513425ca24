"""The value types' module (janus_memory.values) and its old import path janus_memory.types, which the README showed
before the rename: it still gives the same classes, and warns where the user imports it."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from janus_memory import values


def test_old_path_gives_the_same_classes_and_warns():
    sys.modules.pop("janus_memory.types", None)
    with pytest.warns(DeprecationWarning, match=r"janus_memory\.types is deprecated: import .* from janus_memory\.values"):
        old = importlib.import_module("janus_memory.types")
    assert (old.Task, old.Score, old.ScoreStatus, old.Usage, old.ChatResult) == (
        values.Task, values.Score, values.ScoreStatus, values.Usage, values.ChatResult)
    assert sorted(old.__all__) == ["ChatResult", "Score", "ScoreStatus", "Task", "Usage"]


def test_the_warning_names_the_importing_line():
    """A script importing the old path sees the warning under Python's default filters (shown for __main__ only),
    attributed to its own import line, not to importlib."""
    code = "import warnings\nfrom janus_memory.types import Task\nprint(Task('a', 'd', 'q', 'g').id)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "a\n"
    assert "<string>:2: DeprecationWarning: janus_memory.types is deprecated" in out.stderr


def test_no_module_of_the_package_imports_the_old_path():
    code = "import janus_memory.values, janus_memory.llm.client, janus_memory.tasks.base, janus_memory.updaters.base"
    out = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
