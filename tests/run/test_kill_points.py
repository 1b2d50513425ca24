"""SIGKILL at every named stage of a run's life (janus_memory/killpoints.py): the one command documented for
that stage (killpoints.RECOVERY, docs/run-folder.md) continues or restarts the run, which then ends with the same
exports and numbers as an uninterrupted run, and nothing the user put in the folder is lost.

The killed run is a forked copy of this test process (no interpreter start-up: the kill hook SIGKILLs the child at
the stage); the recovery command runs in-process. The run: fake backend, MMLU-Pro engineering (no math-verify worker),
3 stream + 2 test tasks, dc_rs and dc_rs+janus."""
from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

from janus_memory import cli
from janus_memory.killpoints import RECOVERY, STAGES
from janus_memory.store.integrity import problems

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import cases  # noqa: E402  (outputs(): the compared exports + the summary's numbers)

ARGS = ["--backend", "fake", "--dataset", "mmlu_pro_eng", "--stream-size", "3", "--test-size", "2", "--updater",
        "dc_rs", "--controller", "both", "--encoder", "hashing", "--warmup", "1", "-q"]
AT = {"step_commit": "step_commit:2", "step_committed": "step_committed:2"}  # per-step stages: at step 2


def _outputs(run: Path) -> dict:
    """The golden comparison's files; the summary without the sandbox kind (found on the host at each start)."""
    import json

    got = cases.outputs(run)
    summary = json.loads(got["summary.json"])
    summary.get("backend", {}).pop("sandbox", None)
    got["summary.json"] = json.dumps(summary, sort_keys=True).encode()
    return got


def _run(argv: list[str]) -> int:
    return cli.main(["run", *argv])


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("ref")
    mp = pytest.MonkeyPatch()
    mp.setenv("JANUS_CACHE_DIR", str(root / "cache"))  # this module's own response cache (the children get it too)
    assert _run([*ARGS, "--out", str(root / "cold")]) == 0  # fills the response cache
    out = root / "run"
    assert _run([*ARGS, "--out", str(out)]) == 0  # every reply from the cache, as in every killed and recovered run
    yield out
    mp.undo()


_CTX = None


def _killed(argv: list[str], at: str) -> None:
    """Run ``janus run ARGV`` in a child with the kill hook at ``at``; the child must die of SIGKILL there."""
    import multiprocessing

    import kill_child

    global _CTX
    if _CTX is None:
        _CTX = multiprocessing.get_context("forkserver")
        _CTX.set_forkserver_preload(kill_child.PRELOAD)
    env = {k: v for k, v in os.environ.items() if k.startswith(("JANUS_", "PYTHON"))}
    p = _CTX.Process(target=kill_child.run, args=(argv, at, env))
    p.start()
    p.join(240)
    if p.exitcode is None:
        p.kill()
        p.join()
    assert p.exitcode == -signal.SIGKILL, f"the run was not killed at {at} (exit code {p.exitcode})"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("stage", list(STAGES))
def test_a_kill_at_every_stage_is_recovered_by_its_one_command(stage, reference, tmp_path, capsys):
    out = tmp_path / "run"
    argv = [*ARGS, "--out", str(out)]
    if stage in ("overwrite_moved_aside",):  # an --overwrite of a finished run
        shutil.copytree(reference, out)
        argv.append("--overwrite")
    elif stage == "repair_unmarked":  # a resume that repairs a finished run whose export was deleted
        shutil.copytree(reference, out)
        (out / "dc_rs" / "decisions.jsonl").unlink()
        argv = ["--resume", str(out), "-q"]
    mine = out.exists()  # an existing run folder: the user's own file in it survives everything
    if mine:
        (out / "notes.txt").write_text("mine")
    _killed(argv, AT.get(stage, stage))
    capsys.readouterr()
    if RECOVERY[stage] == "same":
        if stage != "overwrite_moved_aside":  # the folder holds no run: --resume says so in one line
            assert _run(["--resume", str(out), "-q"]) == 2
            err = capsys.readouterr().err
            assert err == (f"error: {out} holds no run: it was stopped while its run was being set up (before "
                           "run.sqlite was in place); nothing to resume: start it again with the same command\n")
        rc = _run(argv)
    else:
        rc = _run(["--resume", str(out), "-q"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "Traceback" not in err
    assert problems(out) == []
    assert _outputs(out) == _outputs(reference)
    assert (out / "COMPLETE").exists()
    left = {p.name for p in out.iterdir()} & {".run.sqlite.setup", ".run.sqlite.setup-journal", ".janus-overwritten"}
    assert left == set()
    if mine:
        assert (out / "notes.txt").read_text() == "mine"
