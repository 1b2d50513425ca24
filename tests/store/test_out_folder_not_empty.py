"""A run never writes into an existing folder that holds other files and no janus run (a fresh-user pass wrote a whole
run into /usr with `--out /usr`, and `--out /` failed with a wrong "in use by another process" error): the folder
must be new or empty; the error is one line before anything is printed or created, with or without --overwrite."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from janus_memory.errors import OutputError
from janus_memory.store.store import RunStore

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _run(tmp: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC, "JANUS_CACHE_DIR": str(tmp / "cache")}
    return subprocess.run([sys.executable, "-m", "janus_memory.cli", "run", "--backend", "fake", "--stream-size", "3",
                           "--test-size", "1", "--encoder", "hashing", "--out", str(out), *extra],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp)


@pytest.mark.parametrize("extra", [(), ("--overwrite",)])
def test_cli_refuses_a_folder_with_other_files(tmp_path, extra):
    out = tmp_path / "mine"
    (out / "data").mkdir(parents=True)
    for name in ("notes.txt", "b.csv", "c.md"):
        (out / name).write_text("keep me")
    r = _run(tmp_path, out, *extra)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == (f"error: output folder {out} is not empty and holds no janus run ('b.csv', 'c.md', 'data' and 1 "
                        f"more); a run needs a new or empty folder: choose another --out\n")
    assert sorted(p.name for p in out.iterdir()) == ["b.csv", "c.md", "data", "notes.txt"]
    assert not (tmp_path / ".janus.lock").exists()


def test_an_empty_folder_or_one_with_only_a_stale_lock_is_fine(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    (out / ".janus.lock").write_text("")
    r = _run(tmp_path, out)
    assert r.returncode == 0, r.stderr
    assert (out / "COMPLETE").exists()


def test_python_api_refuses_too(tmp_path):
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(OutputError, match=r"^output folder .* is not empty and holds no janus run \('x.txt'\); a run "
                                          r"needs a new or empty folder: choose another --out$"):
        RunStore.check_new(tmp_path)
    with pytest.raises(OutputError, match="is not empty and holds no janus run"):
        RunStore.check_new_uncreated(tmp_path, overwrite=True)
