"""atomic_write_text never renames over something that is not a regular file: as root, `--out /dev/null` once replaced
the machine's /dev/null with a regular file (every later sandbox run then failed as early-exit)."""
import os
import stat

import pytest

from janus_memory.cli import main
from janus_memory.store.jsonio import atomic_write_text


def test_a_pipe_is_refused_and_stays_a_pipe(tmp_path):
    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as e:
        atomic_write_text(fifo, "x")
    assert "exists and is not a regular file" in str(e.value)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(tmp_path) == ["page.html"]  # no temp file left


def test_regular_files_and_links_are_still_replaced(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("old")
    atomic_write_text(f, "new")
    assert f.read_text() == "new"
    link = tmp_path / "l.txt"
    link.symlink_to(f)
    atomic_write_text(link, "via link")  # the link itself is replaced by the file, its target is untouched
    assert link.read_text() == "via link" and not link.is_symlink() and f.read_text() == "new"


def test_view_out_to_a_pipe_is_one_line(view_fake_run, tmp_path, capsys):
    fifo = tmp_path / "v.html"
    os.mkfifo(fifo)
    assert main(["view", str(view_fake_run), "--out", str(fifo)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot write the view to {fifo}: ") and err.count("\n") == 1
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("umask,want", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_file_gets_the_umask_mode_not_mkstemps_0600(tmp_path, umask, want):
    """A new user shared a run folder on a cluster and found every export -rw------- (mkstemp's mode)."""
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "summary.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "summary.json").st_mode) == want


def test_a_replaced_file_keeps_its_mode(tmp_path):
    f = tmp_path / "report.md"
    f.write_text("old")
    os.chmod(f, 0o640)
    atomic_write_text(f, "new")
    assert (f.read_text(), stat.S_IMODE(os.stat(f).st_mode)) == ("new", 0o640)


def test_a_run_folders_exports_are_readable_by_others_under_umask_022(tmp_path):
    old = os.umask(0o022)
    try:
        assert main(["run", "--backend", "fake", "--dataset", "gsm8k", "--stream-size", "4", "--test-size", "2",
                     "--out", str(tmp_path / "r"), "-q"]) == 0
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "r").rglob("*")
             if p.is_file() and p.name in ("summary.json", "decisions.jsonl", "config.json", "run.sqlite")}
    assert set(modes) >= {"summary.json", "decisions.jsonl", "config.json", "run.sqlite"}
    assert set(modes.values()) == {0o644}, modes


def test_the_database_and_lock_follow_the_umask_too(tmp_path):
    """The adversary's umask 002 run: exports 664 but run.sqlite and .janus.lock 644, so the group could not resume."""
    old = os.umask(0o002)
    try:
        assert main(["run", "--backend", "fake", "--dataset", "gsm8k", "--stream-size", "4", "--test-size", "2",
                     "--out", str(tmp_path / "r"), "-q"]) == 0
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "r").iterdir()
             if p.name in ("run.sqlite", ".janus.lock", "summary.json", "run.sqlite-wal", "run.sqlite-shm")}
    assert {k: v for k, v in modes.items()} == {k: 0o664 for k in modes}, modes
    assert {"run.sqlite", ".janus.lock", "summary.json"} <= set(modes)
