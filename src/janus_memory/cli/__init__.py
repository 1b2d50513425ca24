"""The `janus` command line: the parser (parser.py, its shared flags in flags.py), the commands (app.py and
commands.py), checks before a run starts (checks.py), the progress bar (progress.py), signal handling (signals.py),
closing stdout cleanly (closing.py) and `janus demo` (demo.py). The top of the layering: may import every package;
nothing imports it. ``janus = "janus_memory.cli:main"``; ``python -m janus_memory.cli`` runs __main__.py.
"""
from __future__ import annotations


def __getattr__(name: str):
    if name == "main":  # imported on first use, so ``import janus_memory.cli.signals`` stays cheap
        from .app import main

        return main
    raise AttributeError(f"module 'janus_memory.cli' has no attribute {name!r}")
