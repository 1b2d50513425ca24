"""Flat run store: checkpoints as a base + per-step operations; exact replay; bounded growth."""
from __future__ import annotations

import base64
import json
import random
import sqlite3

import numpy as np
import pytest

from janus_memory.errors import RunFolderError
from janus_memory.store import delta
from janus_memory.store.reader import RunReader
from janus_memory.store.store import RunStore, dumps


def _roundtrip(x):
    return json.loads(dumps(x))


def _mutate(rng: random.Random, st: dict, i: int) -> dict:
    st = _roundtrip(st)
    st["tasks"].append({"id": f"t{i}", "q": "x" * rng.randint(0, 9)})
    st["emb"] = base64.b64encode(np.arange(i * 5, dtype="<f4").tobytes()).decode()  # grows, padding rewritten
    st["momentum"] = [rng.random() for _ in range(3)]
    st["counters"]["n"] = i
    st["counters"]["wall_s"] = float(i) if i % 3 else i  # int <-> float with the same value must round-trip exactly
    st["flag"] = bool(i % 2) if i % 4 else 1               # True vs 1
    if i % 7 == 0:
        st["tasks"] = st["tasks"][1:]                      # not a prefix: set whole
    if i % 5 == 0:
        st.pop("gone", None)
    else:
        st["gone"] = {"k": i}
    st["nested"] = {"a": {"b": [i] * (i % 4)}, "s": "prefix-" * 20 + str(i)}
    return st


def test_diff_apply_is_exact_over_random_edits():
    rng = random.Random(3)
    old = {"tasks": [], "emb": "", "momentum": [], "counters": {}, "flag": 0, "nested": {}}
    prev = _roundtrip(old)
    for i in range(1, 60):
        new = _mutate(rng, prev, i)
        d = delta.diff(prev, new)
        prev = delta.apply(prev, _roundtrip({"d": d["d"], **({"x": d["x"]} if "x" in d else {})}) if d else None)
        assert dumps(prev) == dumps(new)


def test_scalars_compare_strictly():
    assert delta.diff({"a": 1}, {"a": 1.0}) == {"d": {"a": {"s": 1.0}}}
    assert delta.diff({"a": 1}, {"a": True}) == {"d": {"a": {"s": True}}}
    assert delta.diff({"a": [1, 2]}, {"a": [1, 2]}) is None
    assert delta.diff({"a": [1, 2]}, {"a": [1, 2, 3]}) == {"d": {"a": {"a": [3]}}}
    assert delta.diff({"a": [1, 2]}, {"a": [1.0, 2]}) == {"d": {"a": {"s": [1.0, 2]}}}


def test_growing_string_is_a_tail_and_a_rewritten_one_a_set():
    old = "A" * 100
    op = delta.diff(old, old + "BC")
    assert (op["k"], op["t"]) == (100, "BC")
    op = delta.diff(old + "xy", old + "zwBC")
    assert (op["k"], op["t"]) == (100, "zwBC")
    assert delta.diff("A" * 100, "B" * 100) == {"s": "B" * 100}


def _store_steps(tmp_path, n: int, restart_at: int | None = None):
    rng = random.Random(7)
    store = RunStore.create(tmp_path / "run")
    st = {"tasks": [], "emb": "", "momentum": [], "counters": {}, "flag": 0, "nested": {}}
    for i in range(1, n + 1):
        if restart_at is not None and i == restart_at:  # a resumed process: new base, older ops dropped
            store.close()
            store = RunStore.open_existing(tmp_path / "run")
        st = _mutate(rng, st, i)
        store.commit_step("m", i, {"step": i}, {"step": i}, f"mem{i % 3}", st)
        got = RunReader(tmp_path / "run").checkpoint("m")
        assert got[0] == i and dumps(got[1]) == dumps(st)
    store.close()
    return st


def test_store_replays_base_plus_ops_exactly(tmp_path):
    _store_steps(tmp_path, 40)


def test_store_replay_after_a_new_base(tmp_path):
    _store_steps(tmp_path, 30, restart_at=17)
    db = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    assert db.execute("SELECT step FROM checkpoints").fetchall() == [(17,)]
    assert db.execute("SELECT MIN(step) FROM checkpoint_ops").fetchone()[0] == 18


def test_superseded_ops_are_deleted(tmp_path):
    _store_steps(tmp_path, 40)
    db = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    paths = dict(db.execute("SELECT path, COUNT(*) FROM checkpoint_ops GROUP BY path").fetchall())
    assert paths["momentum" + delta.SEP] == 1        # rewritten every step: only the latest set is kept
    assert paths["counters" + delta.SEP + "n" + delta.SEP] == 1
    assert paths["tasks" + delta.SEP] == 1 + 40 - 35  # the last whole set (step 35) and the appends since


def test_damaged_ops_are_a_one_line_error(tmp_path):
    _store_steps(tmp_path, 5)
    db = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    db.execute("UPDATE checkpoint_ops SET op='{\"a\": [1]}' WHERE step=3 AND path=?", ("emb" + delta.SEP,))
    db.commit()
    with pytest.raises(RunFolderError, match="does not apply"):
        RunReader(tmp_path / "run").checkpoint("m")
    db.execute("DELETE FROM checkpoint_ops WHERE step=3")
    db.execute("UPDATE checkpoint_ops SET op='not json' WHERE step=4")
    db.commit()
    with pytest.raises(RunFolderError, match="not valid JSON"):
        RunReader(tmp_path / "run").checkpoint("m")
