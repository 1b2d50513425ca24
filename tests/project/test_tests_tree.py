"""The tests tree mirrors the package: every test file lives in tests/<folder>/, where the folder is a package of
janus_memory (or ``plugins`` for plugins.py and the registry seen from outside) or one of the cross-cutting folders
(``project``: the repository as a whole; ``e2e``: golden and differential runs of the whole pipeline). Test file names
are unique (pytest imports them by name) and carry no issue or round numbers; the slow-files list names real files."""
from __future__ import annotations

import re
from pathlib import Path

from conftest import SLOW_FILES_FIRST

TESTS = Path(__file__).resolve().parents[1]
PKG = TESTS.parent / "src" / "janus_memory"
CROSS_CUTTING = {"project", "e2e", "plugins"}
TEST_FILES = sorted(TESTS.rglob("test_*.py"))
HISTORY = re.compile(r"issue|round|_r?\d|\d(_|\.py$)")  # a number of its own (e2e is a word)


def test_every_test_file_is_in_the_folder_of_a_package():
    packages = {p.parent.name for p in PKG.glob("*/__init__.py")}
    loose = [p.name for p in TESTS.glob("test_*.py")]
    assert not loose, f"test files directly in tests/: {loose}"
    folders = {p.relative_to(TESTS).parts[0] for p in TEST_FILES}
    assert folders - packages - CROSS_CUTTING == set()
    assert all(len(p.relative_to(TESTS).parts) == 2 for p in TEST_FILES), "one folder level below tests/"
    assert {"controller", "llm", "tasks", "store", "cli", "run", "updaters", "project", "e2e"} <= folders


def test_test_file_names_are_unique_and_carry_no_history():
    names = [p.name for p in TEST_FILES]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert [n for n in names if HISTORY.search(n)] == []
    samples = ["test_mc_round2.py", "test_issue_lines.py", "test_x_r3.py", "test_store_v2.py", "test_x_2_y.py",
               "test_cli_e2e.py"]
    assert [n for n in samples if HISTORY.search(n)] == samples[:-1]


def test_the_slow_files_list_names_test_files():
    assert SLOW_FILES_FIRST and len(SLOW_FILES_FIRST) == len(set(SLOW_FILES_FIRST))
    assert [f for f in SLOW_FILES_FIRST if not (TESTS / f).is_file()] == []
