"""A response cache damaged before the run (cut short: a copy interrupted, a full disk) is moved aside when it is
opened, with one warning naming where it went, and a new cache is started (as llm/cache.py and docs/llm.md say); a
file that is no SQLite database at all is still refused in one line."""
from __future__ import annotations

import os
import warnings

import pytest

from janus_memory.llm.cache import CacheError, ResponseCache
from janus_memory.values import ChatResult


def _filled(folder):
    c = ResponseCache(folder)
    for i in range(40):
        c.put(f"k{i}", ChatResult(text=f"answer {i} " + "x" * 200, model="m"), backend="b")
    c.close()
    f = folder / "responses.sqlite"
    for s in ("-wal", "-shm"):
        if os.path.exists(f"{f}{s}"):
            os.remove(f"{f}{s}")
    return f


@pytest.mark.parametrize("size", ["half", 100])
def test_a_truncated_cache_is_moved_aside_at_open(tmp_path, size):
    f = _filled(tmp_path)
    n = os.path.getsize(f) // 2 if size == "half" else size
    with open(f, "r+b") as fh:
        fh.truncate(n)
    damaged = f.read_bytes()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c = ResponseCache(tmp_path)
    aside = sorted(p.name for p in tmp_path.iterdir() if ".damaged-" in p.name)
    assert len(aside) == 1 and aside[0].startswith("responses.sqlite.damaged-")
    assert [str(x.message) for x in w] == [
        f"response cache {f} is damaged (database disk image is malformed); moved aside to {aside[0]} and a new cache "
        "started: its answers are asked again (--no-cache runs without the cache)"]
    assert (tmp_path / aside[0]).read_bytes() == damaged
    assert c.get("k1") is None and len(c) == 0
    c.put("k1", ChatResult(text="new", model="m"), backend="b")
    c.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = ResponseCache(tmp_path)  # the new cache opens without a word
    assert again.get("k1").text == "new"
    again.close()


def test_two_damaged_files_in_one_second_are_both_kept(tmp_path):
    names = set()
    for _ in range(2):
        f = _filled(tmp_path)
        with open(f, "r+b") as fh:
            fh.truncate(4096)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ResponseCache(tmp_path).close()
        names = {p.name for p in tmp_path.iterdir() if ".damaged-" in p.name}
    assert len(names) == 2


def test_a_file_that_is_no_database_is_still_refused(tmp_path):
    bad = tmp_path / "c.sqlite"
    bad.write_bytes(b"not a database, a user's file" * 100)
    with pytest.raises(CacheError) as e:
        ResponseCache(bad)
    assert str(e.value) == (f"response cache {bad} is unusable (file is not a database): pass another --cache-dir, "
                            "or --no-cache")
    assert bad.read_bytes() == b"not a database, a user's file" * 100
