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
