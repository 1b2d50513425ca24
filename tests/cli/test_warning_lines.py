"""A warning of the package reaches a `janus` user as one `warning: ...` line (no Python source path and line), a
library's keeps Python's format, and `main` puts the previous handler back."""
from __future__ import annotations

import io
import warnings

from janus_memory.cli import app
from janus_memory.llm import cache


def test_a_package_warning_is_one_line_and_a_library_warning_keeps_its_format():
    out = io.StringIO()
    app._show_warning(RuntimeWarning("response cache X has cache format 1"), RuntimeWarning, cache.__file__, 233, out)
    app._show_warning(DeprecationWarning("old call"), DeprecationWarning, "/usr/lib/python3/x.py", 3, out)
    assert out.getvalue().splitlines() == ["warning: response cache X has cache format 1",
                                           "/usr/lib/python3/x.py:3: DeprecationWarning: old call"]


def test_a_path_that_only_starts_like_the_package_is_not_the_package():
    out = io.StringIO()
    app._show_warning(UserWarning("m"), UserWarning, app._PACKAGE + "_evil/x.py", 1, out)
    assert out.getvalue().startswith(app._PACKAGE + "_evil/x.py:1: UserWarning: m")


def test_main_shows_a_warning_of_a_command_as_one_line_and_restores_the_handler(monkeypatch, capsys):
    def command(args, console):
        warnings.warn_explicit("a stored answer was not used (its checksum does not match)", RuntimeWarning,
                               cache.__file__, 238)
        return 0

    monkeypatch.setattr(app, "_dispatch", lambda args, console: command)
    before = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert app.main(["report", "nowhere"]) == 0
    assert warnings.showwarning is before
    assert capsys.readouterr().err == "warning: a stored answer was not used (its checksum does not match)\n"
