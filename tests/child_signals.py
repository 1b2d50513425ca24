"""Children that tests stop with SIGINT must get SIGINT's default disposition, whatever the test run inherited.

A job started in the background by a non-interactive shell (``nohup python -m pytest ... &``) has SIGINT ignored, and
an ignored signal stays ignored across fork and exec: a child started from it would ignore the test's Ctrl-C (and
Python installs its KeyboardInterrupt handler only where SIGINT is not ignored at start). ``preexec_fn=sigint_default``
resets it in the child before exec, so the test sees what a terminal user's Ctrl-C does."""
from __future__ import annotations

import signal


def sigint_default() -> None:
    """A subprocess.Popen ``preexec_fn``: SIGINT to its default action in the child, before exec."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
