"""The child of tests/run/test_kill_points.py: one `janus run` in a process forked from a forkserver that imported
janus_memory once (a fork of the multi-threaded pytest process could deadlock), killed by the kill hook."""
from __future__ import annotations

import os

PRELOAD = ["janus_memory.cli", "janus_memory.run.experiment", "janus_memory.report.report", "kill_child"]


def run(argv: list[str], at: str, env: dict) -> None:
    code = 99
    try:
        os.environ.update(env)
        os.environ["JANUS_TEST_KILL_AT"] = at
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        from janus_memory import cli

        code = cli.main(["run", *argv])
    finally:
        os._exit(code)
