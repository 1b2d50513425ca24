"""A warning of the package reaches a `janus` user as one `warning: ...` line (no Python source path and line), a
library's keeps Python's format, and `main` puts the previous handler back."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import pytest

from janus_memory.cli import app
from janus_memory.llm import cache


def test_a_package_warning_is_one_line_and_a_library_warning_keeps_its_format():
    ours = app._format_warning(RuntimeWarning("response cache X has cache format 1"), RuntimeWarning, cache.__file__,
                               233)
    theirs = app._format_warning(DeprecationWarning("old call"), DeprecationWarning, "/usr/lib/python3/x.py", 3)
    assert (ours, theirs) == ("warning: response cache X has cache format 1\n",
                              "/usr/lib/python3/x.py:3: DeprecationWarning: old call\n")


def test_a_path_that_only_starts_like_the_package_is_not_the_package():
    text = app._format_warning(UserWarning("m"), UserWarning, app._PACKAGE + "_evil/x.py", 1)
    assert text.startswith(app._PACKAGE + "_evil/x.py:1: UserWarning: m")


def test_a_warning_inside_main_is_still_recorded_by_pytest_warns(monkeypatch):
    def command(args, console):
        warnings.warn_explicit("recorded", RuntimeWarning, cache.__file__, 1)
        return 0

    monkeypatch.setattr(app, "_dispatch", lambda args, console: command)
    with pytest.warns(RuntimeWarning, match="recorded"):
        assert app.main(["report", "nowhere"]) == 0


def test_main_shows_a_warning_of_a_command_as_one_line_and_restores_the_formatter():
    """In a process of its own (pytest records warnings instead of printing them)."""
    script = textwrap.dedent("""
        import sys, warnings
        from janus_memory.cli import app
        from janus_memory.llm import cache

        def command(args, console):
            warnings.warn_explicit("a stored answer was not used (its checksum does not match)", RuntimeWarning,
                                   cache.__file__, 238)
            return 0

        app._dispatch = lambda args, console: command
        before = warnings.formatwarning
        rc = app.main(["report", "nowhere"])
        sys.exit(rc if warnings.formatwarning is before else 9)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stderr) == (0, "warning: a stored answer was not used (its checksum does not match)\n")
