"""Embedding matrices stored as rows (store format 2; runner/ckpt_rows.py): the store form encodes to the
plain state, each step writes only its new rows, restores rewrite from the first differing row, a failed or killed
commit leaves the last committed step, damage is one line, and folders of store format 1 still resume."""
from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from janus_memory.cli import main
from janus_memory.controller import Janus, JanusConfig
from janus_memory.errors import RunFolderError
from janus_memory.rows import RowsRef, by_reference
from janus_memory.store import ckpt_rows
from janus_memory.store.reader import RunReader
from janus_memory.store.store import RunStore, dumps
from janus_memory.updaters import make_updater
from janus_memory.updaters.bank import RetrievalBank
from janus_memory.values import Task
from store_fakes import FailingCommit
from updater_fakes import ExactFamily, HashEncoder, ScriptedLLM, task

TESTS = Path(__file__).resolve().parents[1]
S = ckpt_rows.SEP
BANK, EMB = f"updater{S}bank{S}emb_b64{S}", f"janus{S}embeddings{S}data{S}"


class _Producers:
    """A controller and a retrieval bank fed one seeded row per step (what the stream loop hands the store)."""

    def __init__(self, dim: int = 6, seed: int = 0):
        self.rng, self.dim = np.random.default_rng(seed), dim
        self.janus = Janus(JanusConfig(warmup=2), lambda mem, tasks: [True] * len(tasks))
        self.bank = RetrievalBank()

    def step(self, i: int) -> None:
        v = self.rng.standard_normal(self.dim).astype(np.float32)
        self.janus._store.append(v)
        self.janus._tasks.append(Task(id=f"t{i}", dataset="gsm8k", question=f"q{i}", gold=str(i)))
        self.janus._ids.append(f"t{i}")
        self.bank.add({"id": i, "text": f"record {i}"}, -v)

    def checkpoint(self, by_ref: bool = True) -> dict:
        with by_reference(by_ref):
            bank = self.bank.state()
        return {"updater": {"bank": bank}, "janus": self.janus.state_dict(by_reference=by_ref), "n": len(self.bank)}


def _rows(root: Path) -> dict[str, list[int]]:
    db = sqlite3.connect(root / "run.sqlite")
    out: dict[str, list[int]] = {}
    for path, idx in db.execute("SELECT path, idx FROM checkpoint_rows ORDER BY path, idx"):
        out.setdefault(path, []).append(idx)
    db.close()
    return out


def _commit(store: RunStore, i: int, ck: dict) -> None:
    store.commit_step("m", i, {"step": i}, {"step": i}, "mem", ck)


def _prepared(store: RunStore) -> list:
    """Record what every prepare() plans (row deletes, row inserts by (path, idx))."""
    seen: list = []
    real = store.ckpt.prepare

    def prepare(*a, **kw):
        p = real(*a, **kw)
        seen.append((sorted(p.row_deletes), sorted((k, i) for k, i, _ in p.row_inserts)))
        return p

    store.ckpt.prepare = prepare
    return seen


# ------------------------------------------------------------------ the store's form is the plain state
def test_by_reference_state_encodes_to_the_plain_state_and_serialises_each_task_once():
    p = _Producers()
    for i in range(1, 4):
        p.step(i)
    calls = []
    real = p.janus._task_entry
    p.janus._task_entry = lambda t: (calls.append(t.id), real(t))[1]
    ref = p.checkpoint(by_ref=True)
    assert isinstance(ref["janus"]["embeddings"]["data"], RowsRef) and isinstance(ref["updater"]["bank"]["emb_b64"],
                                                                                   RowsRef)
    p.step(4)
    p.checkpoint(by_ref=True)
    assert calls == ["t1", "t2", "t3", "t4"]  # the by-reference form serialises a task once
    assert dumps(ref) != dumps(p.checkpoint(by_ref=False))
    ref = p.checkpoint(by_ref=True)
    assert dumps(ref) == dumps(p.checkpoint(by_ref=False))  # jsonio.dumps encodes a RowsRef as its plain form
    back = Janus.from_state_dict(json.loads(dumps(ref["janus"])), p.janus.evaluator)
    assert dumps(back.state_dict()) == dumps(ref["janus"])


def _updater(name: str):
    def responder(messages, role, params):
        if role == "curator":
            return "<cheatsheet>\nVersion: 1\nnote\n</cheatsheet>\nADD: Rule 1 applies here."
        return "<trajectory>t</trajectory><final_answer>ANSWER: 5</final_answer>"

    return make_updater(name, llm=ScriptedLLM(responder=responder), family=ExactFamily(), encoder=HashEncoder())


@pytest.mark.parametrize("name", ["dc_rs", "expel", "exprag"])
def test_updater_snapshot_by_reference_restores_like_the_plain_one(name):
    upd = _updater(name)
    for i, q in enumerate(["add two and three", "add one and four", "add five and zero"], 1):
        upd.step(task(i, q, "5"))
    snap, plain = upd.snapshot(by_reference=True), upd.snapshot()
    assert dumps(snap) == dumps(plain) == json.dumps(plain, sort_keys=True, ensure_ascii=False)
    upd.step(task(4, "add three and two", "5"))
    other = _updater(name)
    other.load_snapshot(snap)  # a snapshot taken by reference restores exactly
    assert json.dumps(other.snapshot(), sort_keys=True) == json.dumps(plain, sort_keys=True)


def test_a_bank_record_that_is_not_json_fails_when_added():
    bank = RetrievalBank()
    with pytest.raises(TypeError, match="not JSON serializable"):
        bank.add({"x": np.float32(1.0)}, np.ones(3, dtype=np.float32))
    assert len(bank) == 0


# ------------------------------------------------------------------ rows: written once, rebuilt exactly
def test_each_step_writes_only_its_new_rows_and_reads_back_the_plain_state(tmp_path):
    p, store = _Producers(), RunStore.create(tmp_path / "run")
    plans = _prepared(store)
    for i in range(1, 13):
        p.step(i)
        _commit(store, i, p.checkpoint())
        step, got = RunReader(tmp_path / "run").checkpoint("m")
        assert step == i and dumps(got) == dumps(p.checkpoint(by_ref=False))
    assert plans[0] == ([], [(EMB, 0), (BANK, 0)])
    assert plans[1:] == [([], [(EMB, i), (BANK, i)]) for i in range(1, 12)]  # one new row per matrix and step
    assert _rows(tmp_path / "run") == {BANK: list(range(12)), EMB: list(range(12))}
    db = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    assert db.execute("SELECT value FROM meta WHERE key='store_format'").fetchone() == ("5",)
    ops = {path: op for path, op in db.execute("SELECT path, op FROM checkpoint_ops")}
    assert ops[f"{BANK}__janus_rows__{S}"] == '{"s": [12, 6, "b64"]}'
    assert ops[f"{EMB}__janus_rows__{S}"] == '{"s": [12, 6, "array"]}'


def test_a_restored_bank_rewrites_its_rows_from_the_first_difference(tmp_path):
    p, store = _Producers(), RunStore.create(tmp_path / "run")
    plans = _prepared(store)
    states = {}
    for i in range(1, 7):
        p.step(i)
        states[i] = p.bank.state()
        _commit(store, i, p.checkpoint())
    p.bank.set_state(states[4])  # a rollback to step 4 (new token): rows 4 and 5 are dropped
    _commit(store, 7, p.checkpoint())
    assert plans[-1] == ([(BANK, 4)], [])
    changed = json.loads(json.dumps(states[4]))
    emb = np.frombuffer(__import__("base64").b64decode(changed["emb_b64"]), dtype="<f4").reshape(4, 6).copy()
    emb[2] += 1.0
    changed["emb_b64"] = __import__("base64").b64encode(emb.tobytes()).decode()
    p.bank.set_state(changed)  # a bank whose row 2 differs: rewritten from row 2
    _commit(store, 8, p.checkpoint())
    assert plans[-1] == ([(BANK, 2)], [(BANK, 2), (BANK, 3)])
    assert dumps(RunReader(tmp_path / "run").checkpoint("m")[1]) == dumps(p.checkpoint(by_ref=False))
    assert _rows(tmp_path / "run")[BANK] == [0, 1, 2, 3]
    with by_reference():
        rollback_snap = p.bank.state()
    p.step(9)
    p.bank.set_state(rollback_snap)  # the stream loop's in-process rollback: from a RowsRef
    _commit(store, 9, p.checkpoint())
    assert plans[-1] == ([(BANK, 4)], [(EMB, 6)])
    assert dumps(RunReader(tmp_path / "run").checkpoint("m")[1]) == dumps(p.checkpoint(by_ref=False))


def test_a_new_process_rewrites_every_row_once(tmp_path):
    p = _Producers()
    store = RunStore.create(tmp_path / "run")
    for i in range(1, 4):
        p.step(i)
        _commit(store, i, p.checkpoint())
    store.close()
    store = RunStore.open_existing(tmp_path / "run")
    plans = _prepared(store)
    p.step(4)
    _commit(store, 4, p.checkpoint())
    assert plans == [([], [(EMB, i) for i in range(4)] + [(BANK, i) for i in range(4)])]
    assert dumps(RunReader(tmp_path / "run").checkpoint("m")[1]) == dumps(p.checkpoint(by_ref=False))


# ------------------------------------------------------------------ crash safety
def test_a_failed_commit_keeps_the_last_step_and_the_retry_writes_its_rows(tmp_path):
    p, store = _Producers(), RunStore.create(tmp_path / "run")
    store.db = store.ckpt.db = FailingCommit(store.db, fail_at=3)
    for i in range(1, 3):
        p.step(i)
        _commit(store, i, p.checkpoint())
    want2 = dumps(p.checkpoint(by_ref=False))
    p.step(3)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        _commit(store, 3, p.checkpoint())
    step, got = RunReader(tmp_path / "run").checkpoint("m")
    assert (step, dumps(got)) == (2, want2) and _rows(tmp_path / "run") == {BANK: [0, 1], EMB: [0, 1]}
    store.db.fail_at = None
    _commit(store, 3, p.checkpoint())  # the same step again: its rows are planned from step 2, not lost
    assert dumps(RunReader(tmp_path / "run").checkpoint("m")[1]) == dumps(p.checkpoint(by_ref=False))
    assert _rows(tmp_path / "run") == {BANK: [0, 1, 2], EMB: [0, 1, 2]}


_KILLER = """
import os, signal, sys
sys.path[:0] = {tests!r}  # this file's folder and tests/ (the helpers it imports)
from test_store_rows import _Producers, _commit
from janus_memory.store import ckpt_rows
from janus_memory.store.store import RunStore

real = ckpt_rows.write
def write(db, method, new_base, deletes, inserts):
    out = real(db, method, new_base, deletes, inserts)
    if inserts and inserts[0][1] == {kill_row}:  # the rows of this step are in the open transaction: die now
        os.kill(os.getpid(), signal.SIGKILL)
    return out
ckpt_rows.write = write
p, store = _Producers(), RunStore.create({root!r})
for i in range(1, 100):
    p.step(i)
    _commit(store, i, p.checkpoint())
"""


def test_sigkill_while_the_rows_are_written_leaves_the_last_committed_step(tmp_path):
    root = tmp_path / "run"
    code = _KILLER.format(tests=[str(Path(__file__).resolve().parent), str(TESTS)], root=str(root), kill_row=5)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    p = _Producers()
    for i in range(1, 6):
        p.step(i)
    step, got = RunReader(root).checkpoint("m")
    assert step == 5 and dumps(got) == dumps(p.checkpoint(by_ref=False))  # step 6 (row 5) never committed
    assert _rows(root) == {BANK: list(range(5)), EMB: list(range(5))}
    store = RunStore.open_existing(root)  # and the run goes on from there
    for i in range(6, 9):
        p.step(i)
        _commit(store, i, p.checkpoint())
    assert dumps(RunReader(root).checkpoint("m")[1]) == dumps(p.checkpoint(by_ref=False))


# ------------------------------------------------------------------ damage: one line
def _stored(tmp_path) -> Path:
    p, store = _Producers(), RunStore.create(tmp_path / "run")
    for i in range(1, 4):
        p.step(i)
        _commit(store, i, p.checkpoint())
    store.close()
    return tmp_path / "run"


@pytest.mark.parametrize("sql,expect", [
    ("DELETE FROM checkpoint_rows WHERE idx=1 AND path LIKE 'updater%'",
     "checkpoint of m: the stored rows of updater/bank/emb_b64 are missing or damaged (2 of 3 rows readable); "
     "the database is damaged"),
    ("UPDATE checkpoint_rows SET data=substr(data, 1, 5) WHERE idx=2 AND path LIKE 'janus%'",
     "the stored rows of janus/embeddings/data are missing or damaged (3 of 3 rows readable)"),
    ("UPDATE checkpoint_ops SET op='{\"s\": [3, \"x\", \"b64\"]}' WHERE path LIKE 'updater%__janus_rows__%'",
     "checkpoint of m: the rows placeholder at updater/bank/emb_b64 is malformed; the database is damaged"),
])
def test_damaged_rows_are_a_one_line_error(tmp_path, sql, expect):
    root = _stored(tmp_path)
    db = sqlite3.connect(root / "run.sqlite")
    assert db.execute(sql).rowcount == 1
    db.commit()
    with pytest.raises(RunFolderError) as e:
        RunReader(root).checkpoint("m")
    assert expect in str(e.value) and "\n" not in str(e.value)


# ------------------------------------------------------------------ store format 1 folders (before rows)
# tests/store_v1/dc_rs_janus_step5: written by the store before format 2 (main at d142adb), interrupted after step 5:
#   janus run <ARGS> --out DIR, stopped with run_experiment(stop_after=5); WAL checkpointed into run.sqlite.
V1_ARGS = ["--backend", "fake", "--dataset", "gsm8k", "--stream-size", "8", "--test-size", "2", "--encoder",
           "hashing:64", "--warmup", "2", "--coverage-size", "1", "--boundary-size", "1", "--fresh-size", "1",
           "--updater", "dc_rs", "--controller", "janus", "--trigger", "always", "--checkpoints", "0.25", "--quiet"]
V1_METHOD = "dc_rs+janus"


def _exports(out: Path) -> dict[str, bytes]:
    """decisions/steps/test/final memory, summary numbers (tests/golden/cases.py) and every memory version file."""
    sys.path.insert(0, str(TESTS / "golden"))
    import cases

    files = cases.outputs(out)
    files.update({f"memories/{p.name}": p.read_bytes() for p in sorted((out / V1_METHOD / "memories").iterdir())})
    return files


def test_a_store_format_1_folder_loads_and_resumes_byte_identical(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    old = tmp_path / "old"
    shutil.copytree(TESTS / "store_v1" / "dc_rs_janus_step5", old)
    db = sqlite3.connect(old / "run.sqlite")
    assert "checkpoint_rows" not in {n for (n,) in db.execute("SELECT name FROM sqlite_master")}
    db.close()
    step, ck = RunReader(old).checkpoint(V1_METHOD)  # matrices inline as base64: read as they are
    assert step == 5 and len(ck["janus"]["embeddings"]["data"]["b64"]) == 4 * (5 * 64 * 4 // 3 + 1)
    assert Janus.from_state_dict(ck["janus"]).n_seen == 5
    assert main(["run", "--resume", str(old)]) == 0
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache-new"))  # its own response cache, as the fixture had
    # the fresh run with the settings the stored run had before the twin cache setting (migrate.before_twin_cache)
    pre27 = ["--clustering", "sklearn", "--checker", "strict", "--replay-failures", "abort", "--twin-cache", "shared",
             "--checkpoint-restore", "exact"]
    assert main(["run", *V1_ARGS, *pre27, "--out", str(tmp_path / "new")]) == 0
    assert _exports(old) == _exports(tmp_path / "new")
    db = sqlite3.connect(old / "run.sqlite")
    assert db.execute("SELECT value FROM meta WHERE key='store_format'").fetchone() == ("5",)
    assert db.execute("SELECT COUNT(*) FROM checkpoint_rows").fetchone() == (16,)  # 8 bank rows + 8 controller rows


def test_a_newer_store_format_is_refused_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad"
    shutil.copytree(TESTS / "store_v1" / "dc_rs_janus_step5", bad)
    db = sqlite3.connect(bad / "run.sqlite")
    db.execute("INSERT INTO meta(key, value) VALUES ('store_format', '6')")
    db.commit()
    db.close()
    assert main(["run", "--resume", str(bad)]) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and "has store format 6; this janus-memory reads formats 1-5" in err[0]
