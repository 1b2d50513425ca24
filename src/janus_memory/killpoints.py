"""Kill points: named places in a run's life where a test can SIGKILL the process.

``JANUS_TEST_KILL_AT=<stage>`` (or ``<stage>:<n>`` for the per-step stages: the n-th step) makes :func:`kill_point`
send SIGKILL to its own process when the run reaches that stage; unset (always, outside tests) it does nothing but
one environment look-up. tests/run/test_kill_points.py kills a run at every stage of :data:`STAGES` and checks that the
command documented in docs/run-folder.md (:data:`RECOVERY`) continues or restarts it, ending byte-identical to an
uninterrupted run.
"""
from __future__ import annotations

import os
import signal

ENV = "JANUS_TEST_KILL_AT"

# stage -> where it is, in the order a run reaches them
STAGES: dict[str, str] = {
    "run_started": "a new run's folder and lock are in place; the data, model and encoder are being set up, nothing "
                   "else written",
    "setup_db_begun": "the new database is being written under its temp name (.run.sqlite.setup), uncommitted",
    "setup_db_written": "the new database (schema + config, splits, environment) is written, not yet in place",
    "overwrite_moved_aside": "--overwrite: the old run is moved aside (.janus-overwritten/), run.sqlite not yet in place",
    "db_in_place": "run.sqlite (with the config) is in place; no other file written yet",
    "provenance_written": "config.json/yaml, prompts/, environment.json, splits.json written",
    "initial_memory_stored": "a method's initial memory (step 0) is stored",
    "step_commit": "inside a step's transaction, before COMMIT (n = step)",
    "step_committed": "right after a step's COMMIT (n = step)",
    "tests_committed": "a method's held-out test rows are committed",
    "exports_written": "a method's exports (decisions.jsonl, ...) are written, its result not yet stored",
    "method_result_stored": "a method's result is stored",
    "summary_written": "summary.json is written, COMPLETE not yet",
    "repair_unmarked": "--resume of a damaged finished run: COMPLETE removed, nothing rebuilt yet",
}

# the one command that recovers after a kill at each stage: "resume" = `janus run --resume DIR`; "same" = the command
# that was killed, again (before run.sqlite is in place the folder holds no run; its leftovers are cleared)
RECOVERY: dict[str, str] = {s: "resume" for s in STAGES}
RECOVERY.update({"run_started": "same", "setup_db_begun": "same", "setup_db_written": "same",
                 "overwrite_moved_aside": "same"})


def kill_point(stage: str, n: int | None = None) -> None:
    """SIGKILL this process when ``$JANUS_TEST_KILL_AT`` names ``stage`` (and, for ``stage:k``, ``n == k``)."""
    want = os.environ.get(ENV)
    if not want:
        return
    name, _, at = want.partition(":")
    if name == stage and (not at or n is None or at == str(n)):
        os.kill(os.getpid(), signal.SIGKILL)
