"""Checkpoint hints (runner/ckpt_log.py): parts a producer declares grown are written from their tail alone,
without comparing; a changed token falls back to comparing; a wrong hint is caught by the verify check."""
from __future__ import annotations

import base64
import sqlite3

import numpy as np
import pytest

from janus_memory.controller import Janus, JanusConfig
from janus_memory.store import ckpt_log, delta
from janus_memory.store.reader import RunReader
from janus_memory.store.store import RunStore, dumps
from janus_memory.updaters.base import RetrievalBank

S = delta.SEP


def _ops(root) -> list[tuple[int, str, str]]:
    db = sqlite3.connect(root / "run.sqlite")
    return db.execute("SELECT step, path, op FROM checkpoint_ops ORDER BY step, seq").fetchall()


def _commit(store, i, st, hints):
    store.commit_step("m", i, {"step": i}, {"step": i}, "mem", st, hints=hints)


def test_hinted_list_and_string_are_written_from_their_tail(tmp_path):
    tok = object()
    store = RunStore.create(tmp_path / "run")
    store.ckpt.verify = True
    st = {"a": {"items": [1, 2]}, "s": "x" * 10, "n": 0}
    _commit(store, 1, st, {("a", "items"): (tok, 2), ("s",): (tok, 8)})
    st = {"a": {"items": [1, 2, 3]}, "s": "x" * 8 + "yyz", "n": 1}
    _commit(store, 2, st, {("a", "items"): (tok, 3), ("s",): (tok, 8)})
    assert _ops(tmp_path / "run") == [(2, f"a{S}items{S}", '{"a": [3]}'), (2, f"s{S}", '{"k": 8, "t": "yyz"}'),
                                      (2, f"n{S}", '{"s": 1}')]
    assert dumps(RunReader(tmp_path / "run").checkpoint("m")[1]) == dumps(st)


def test_unchanged_hinted_parts_and_frozen_values_write_nothing(tmp_path):
    tok = object()
    store = RunStore.create(tmp_path / "run")
    st = {"l": [1], "s": "abc", "frozen": {"big": [1, 2, 3]}}
    hints = {("l",): (tok, 1), ("s",): (tok, 3), ("frozen",): (("once", 1), None)}
    _commit(store, 1, st, hints)
    _commit(store, 2, dict(st), hints)
    assert _ops(tmp_path / "run") == []
    assert RunReader(tmp_path / "run").checkpoint("m") == (2, st)


def test_changed_token_or_a_new_path_is_compared(tmp_path):
    store = RunStore.create(tmp_path / "run")
    store.ckpt.verify = True
    _commit(store, 1, {"l": [1, 2, 3]}, {("l",): (object(), 3)})
    _commit(store, 2, {"l": [9, 2, 3, 4]}, {("l",): (object(), 4)})    # a new token: compared, not a prefix: set
    _commit(store, 3, {"l": [9, 2, 3, 4], "m": [5]}, {("m",): (object(), 1)})  # a path new to the state: set
    assert _ops(tmp_path / "run") == [(2, f"l{S}", '{"s": [9, 2, 3, 4]}'), (3, f"m{S}", '{"s": [5]}')]


def test_a_wrong_hint_fails_the_verify_check(tmp_path):
    tok = object()
    store = RunStore.create(tmp_path / "run")
    store.ckpt.verify = True
    _commit(store, 1, {"l": [1, 2]}, {("l",): (tok, 2)})
    with pytest.raises(AssertionError, match="checkpoint of m: the stored delta does not rebuild the state"):
        _commit(store, 2, {"l": [7, 2, 3]}, {("l",): (tok, 3)})  # the hint lies: item 0 changed under the same token
    assert store.ckpt._ck == {}  # forgotten: the next commit writes a whole base


def test_pinned_ops_checks_the_recorded_length_and_types():
    tok = object()
    last = {("l",): (tok, 2), ("s",): (tok, 4), ("gone",): (tok, 1)}
    prev = {"l": [1, 2], "s": "abcd", "gone": [1]}
    assert ckpt_log.pinned_ops(prev, {"l": [1, 2, 3], "s": "abcdE"}, {k: (tok, 0) for k in last}, last) == {
        ("l",): {"a": [3]}, ("s",): {"k": 4, "t": "E", delta.NEW: "abcdE"}}
    # shorter than recorded, or another type: left to the comparison
    assert ckpt_log.pinned_ops(prev, {"l": [1], "s": 5}, {("l",): (tok, 1), ("s",): (tok, 0)}, last) == {}
    assert ckpt_log.pinned_ops({"l": [1, 2, 3]}, {"l": [1, 2, 3]}, {("l",): (tok, 3)}, last) == {}


def test_retrieval_bank_hints_follow_appends_and_restores():
    bank = RetrievalBank()
    assert bank.state_hints()[("records",)][1] == 0
    for i in range(5):
        bank.add({"id": i}, np.full(7, i, dtype=np.float32))
    h = bank.state_hints()
    tok = h[("records",)][0]
    assert h == {("records",): (tok, 5), ("emb_b64",): (tok, 4 * (5 * 7 * 4 // 3))}
    st = bank.state()
    bank.add({"id": 5}, np.ones(7, dtype=np.float32))
    assert bank.state()["emb_b64"][:h[("emb_b64",)][1]] == st["emb_b64"][:h[("emb_b64",)][1]]
    assert bank.state()["emb_b64"][:h[("emb_b64",)][1] + 4] != st["emb_b64"][:h[("emb_b64",)][1] + 4]
    bank.set_state(st)
    assert bank.state_hints()[("records",)][0] is not tok


def test_janus_hints_match_its_state():
    j = Janus(JanusConfig(warmup=2), lambda mem, tasks: [True] * len(tasks))
    rng = np.random.default_rng(0)
    for i in range(3):
        j._store.append(rng.standard_normal(384).astype(np.float32))
        j._tasks.append({"id": i})
        j._ids.append(str(i))
    h = j.state_hints()
    tok = h[("tasks",)][0]
    assert h == {("tasks",): (tok, 3), ("ids",): (tok, 3), ("embeddings", "data", "b64"): (tok, 6144)}
    before = j.state_dict()
    j._store.append(rng.standard_normal(384).astype(np.float32))
    j._tasks.append({"id": 3})
    j._ids.append("3")
    after = j.state_dict()
    assert len(base64.b64decode(after["embeddings"]["data"]["b64"])) == 4 * 384 * 4
    assert after["embeddings"]["data"]["b64"][:6144] == before["embeddings"]["data"]["b64"]
    assert after["tasks"][:3] == before["tasks"] and j.state_hints()[("tasks",)] == (tok, 4)
    assert Janus.from_state_dict(j.state_dict(), j.evaluator).state_hints()[("tasks",)][0] is not tok
