"""Memory and candidate texts stored once, as deltas (store format 3; store/text_log.py): exact round trips
(append, middle edit, shrink, identical, rollback to an older version, empty, unicode, CRLF), a bounded delta chain,
flat bytes for an appending memory, damage named in one line, a killed or failed commit leaves the last committed
step, folders of store format 2 still load and resume byte-identical, and a ReasoningBank run reads back exactly
what it deployed."""
from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from janus_memory.cli import main
from janus_memory.errors import DamagedStoreError, RunFolderError, StorageError
from janus_memory.store import integrity
from janus_memory.store import text_log as T
from janus_memory.store.reader import RunReader
from janus_memory.store.store import RunStore, text_hash
from store_fakes import FailingCommit

TESTS = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ the delta: common prefix and suffix
@pytest.mark.parametrize("base,text,want", [
    ("abc", "abc", (3, 0, "")),                          # identical: all prefix
    ("abc", "abcdef", (3, 0, "def")),                    # append
    ("abcdef", "abc", (3, 0, "")),                       # truncate
    ("abcdef", "abXYef", (2, 2, "XY")),                  # edit in the middle
    ("abcdef", "abef", (2, 2, "")),                      # delete in the middle
    ("abc", "Xabc", (0, 3, "X")),                        # prepend
    ("", "new", (0, 0, "new")),                          # from empty
    ("old", "", (0, 0, "")),                             # to empty
    ("aaaa", "aaaaa", (4, 0, "a")),                      # repeats: the prefix first, never overlapping
    ("x😀y𝄞z", "x😀Qy𝄞z", (2, 3, "Q")),                 # astral characters are one code point each
    ("l1\r\nl2\r\n", "l1\r\nl1.5\r\nl2\r\n", (5, 3, "1.5\r\nl")),  # CRLF kept as it is
])
def test_split_exact(base, text, want):
    assert T.split(base, text) == want
    assert T.apply(base, *want) == text


def test_split_on_long_texts_finds_the_exact_place():
    base = "".join(f"line {i:06d}\n" for i in range(30_000))  # 360,000 characters: many compared slices
    for at in (0, 1, 255, 256, 257, 4095, 180_000, len(base) - 1, len(base)):
        text = base[:at] + "EDIT" + base[at:]
        assert T.split(base, text) == (at, len(base) - at, "EDIT")  # "EDIT" shares no character with the lines
        assert T.apply(base, at, len(base) - at, "EDIT") == text
        cut = base[:at] + base[at + 7:]
        p, s, middle = T.split(base, cut)
        assert T.apply(base, p, s, middle) == cut and middle == "" and p + s == len(cut)


def test_chunks_are_content_defined():
    text = "".join(f"- item {i}: a lesson about units and checks, number {i * 7919 % 1000}\n" for i in range(4000))
    parts = T.chunks(text)
    assert "".join(parts) == text
    assert len(parts) == 45 and all(T.MIN_CHUNK <= len(c) <= T.MAX_CHUNK for c in parts[:-1])
    mid = text.index("\n- item 2000:") + 1
    edited = text[:mid] + "- a new item in the middle\n" + text[mid:]
    new = T.chunks(edited)
    assert "".join(new) == edited and len(set(new) - set(parts)) == 1  # only the chunk holding the edit is new
    assert T.chunks("") == [] and T.chunks("x" * (T.MAX_CHUNK * 2 + 5)) == ["x" * T.MAX_CHUNK] * 2 + ["x" * 5]


# ------------------------------------------------------------------ the store: exact round trips
def _commit(store, i, deployed, cand, parent_text, m="m", reason=None):
    return store.commit_step(m, i, {"step": i}, {"step": i}, deployed, {"i": i},
                             candidate=(cand, text_hash(parent_text), reason))


BIG = "".join(f"rule {i}: keep units, check the sum, state the answer {i}\n" for i in range(2000))  # ~110 KB

# (deployed memory after the step, the step's candidate): append, middle edit, shrink, identical (a rolled-back
# candidate), rollback to an older version, empty text, unicode with astral characters, CRLF, a large text grown twice
VERSIONS = [
    ("A\n", "A\n"),
    ("A\nB\n", "A\nB\n"),                              # append
    ("A\nX\nB\n", "A\nX\nB\n"),                        # middle edit
    ("A\nX\nB\n", "A\nX\nB\nno\n"),                    # rollback: the candidate is stored, the memory stays
    ("A\n", "A\n"),                                    # shrink (back to an older version: stored once)
    ("", ""),                                          # empty
    ("ü 😀 𝄞 ∑\n", "ü 😀 𝄞 ∑\n"),                      # unicode incl. astral characters
    ("ü 😀 𝄞 ∑\r\nline\r\n", "ü 😀 𝄞 ∑\r\nline\r\n"),  # CRLF
    (BIG, BIG),                                        # a large text: a keyframe of several chunks
    (BIG + "new\n", BIG + "new\n"),                    # appended to it
    (BIG[:50_000] + "MID\n" + BIG[50_000:] + "new\n", BIG[:50_000] + "MID\n" + BIG[50_000:] + "new\n"),
    (BIG + "new\n", BIG + "new\n"),                    # back to step 10's version
]


def _store_versions(root: Path) -> list[tuple[str, str]]:
    store = RunStore.create(root)
    store.save_initial_memory("m", "(empty)")
    prev = "(empty)"
    for i, (dep, cand) in enumerate(VERSIONS, 1):
        _commit(store, i, dep, cand, prev)
        prev = dep
    store.close()
    return VERSIONS


def test_every_version_and_candidate_reads_back_exactly(tmp_path):
    root = tmp_path / "run"
    _store_versions(root)
    r = RunReader(root)
    deployed = [(0, "(empty)")] + [(i, d) for i, (d, _) in enumerate(VERSIONS, 1)]
    want = [(s, text_hash(t), t) for n, (s, t) in enumerate(deployed) if n == 0 or t != deployed[n - 1][1]]
    assert [(v["step"], v["sha256"], v["text"]) for v in r.texts("memories")] == want
    assert [v["step"] for v in r.texts("memories")] == [0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12]
    versions, last, _ = r.memory_versions()
    assert [(v["step"], v["text"]) for v in versions["m"]] == [(s, t) for s, _, t in want] and last == {"m": 12}
    cands = r.candidates("m")
    assert [(c["step"], c["text"], c["sha256"], c["parent"]) for c in cands] == [
        (i, c, text_hash(c), text_hash(deployed[i - 1][1])) for i, (_, c) in enumerate(VERSIONS, 1)]
    assert r.last_memory("m")["text"] == BIG + "new\n"
    db = sqlite3.connect(root / "run.sqlite")
    assert db.execute("SELECT COUNT(*) FROM memories WHERE text<>''").fetchone() == (0,)  # texts live in `texts`
    assert db.execute("SELECT COUNT(*) FROM candidates WHERE text<>''").fetchone() == (0,)
    distinct = {"(empty)"} | {t for pair in VERSIONS for t in pair}
    assert db.execute("SELECT COUNT(*) FROM texts").fetchone() == (len(distinct),) == (11,)  # each text once
    rows = {sha: (base, p, s, mid, depth) for sha, base, p, s, mid, depth in
            db.execute("SELECT sha256, base, prefix, suffix, middle, depth FROM texts")}
    h = text_hash
    keyframe = (None, 0, 0, None, 0)
    assert rows[h("(empty)")] == rows[h("A\n")] == rows[h("")] == keyframe  # nothing in common with the parent
    assert rows[h("A\nB\n")] == (h("A\n"), 2, 0, "B\n", 1)
    assert rows[h("A\nX\nB\n")] == (h("A\nB\n"), 2, 2, "X\n", 2)
    assert rows[h("A\nX\nB\nno\n")] == (h("A\nX\nB\n"), 6, 0, "no\n", 3)  # on the candidate's parent
    assert rows[h("ü 😀 𝄞 ∑\n")] == keyframe
    assert rows[h("ü 😀 𝄞 ∑\r\nline\r\n")] == (h("ü 😀 𝄞 ∑\n"), 7, 1, "\r\nline\r", 1)
    assert rows[h(BIG)] == keyframe
    assert rows[h(BIG + "new\n")] == (h(BIG), len(BIG), 0, "new\n", 1)
    assert rows[h(VERSIONS[10][0])] == (h(BIG + "new\n"), 50_000, len(BIG) - 50_000 + 4, "MID\n", 2)
    assert db.execute("SELECT COUNT(*), SUM(LENGTH(text)) FROM text_chunks").fetchone()[1] < len(BIG) + 200


def test_the_delta_chain_stays_bounded_and_bytes_stay_flat(tmp_path):
    store = RunStore.create(tmp_path / "run")
    text = "# bank\n"
    store.save_initial_memory("m", text)
    items = []
    for i in range(1, 201):
        item = "".join(f"- item {i} lesson {k}: restate, compute with units, check the result {k * i}\n" for k in range(12))
        items.append(item)
        old, text = text, text + item
        _commit(store, i, text, text, old)
    store.close()
    db = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    depths = [d for (d,) in db.execute("SELECT depth FROM texts ORDER BY rowid")]
    # step 1 has less than half in common with the initial text: a keyframe; then a keyframe every 64 versions
    assert depths == [0] + [(i - 1) % T.MAX_CHAIN for i in range(1, 201)]
    # the deltas hold exactly the appended items; the keyframes' chunks the text about once (each chunk stored once)
    assert db.execute("SELECT SUM(LENGTH(middle)) FROM texts").fetchone()[0] == sum(
        len(x) for i, x in enumerate(items, 1) if i not in (1, 65, 129, 193))
    assert db.execute("SELECT SUM(LENGTH(text)) FROM text_chunks").fetchone()[0] < 1.25 * len(text)
    reads = []
    reader = T.TextReader(lambda sql, args: reads.append(sql) or db.execute(sql, args).fetchall())
    assert reader.text(text_hash(text)) == text
    assert sum("FROM texts" in q for q in reads) == 8  # 7 deltas + the keyframe at step 193
    reads.clear()
    v192 = "# bank\n" + "".join(items[:192])
    assert T.TextReader(lambda sql, args: reads.append(sql) or db.execute(sql, args).fetchall()).text(
        text_hash(v192)) == v192
    assert sum("FROM texts" in q for q in reads) == T.MAX_CHAIN  # the longest chain: 63 deltas + a keyframe


# ------------------------------------------------------------------ damage: one line naming the row
def _damage(root: Path, *sql: str) -> None:
    db = sqlite3.connect(root / "run.sqlite")
    for q in sql:
        assert db.execute(q).rowcount >= 1, q
    db.commit()
    db.close()


H = text_hash
AB, AXB = H("A\nB\n"), H("A\nX\nB\n")


@pytest.mark.parametrize("sql,expect", [
    (f"UPDATE texts SET middle='Y' WHERE sha256='{AXB}'",
     f"the memory text of m at step 3 does not read back (the rebuilt text does not match its sha256 {AXB[:12]})"),
    (f"DELETE FROM texts WHERE sha256='{AB}'",
     f"the memory text of m at step 2 does not read back (text {AB[:12]} is not stored)"),
    (f"UPDATE texts SET prefix=99 WHERE sha256='{AXB}'",
     "the memory text of m at step 3 does not read back (a delta (prefix 99, suffix 2) does not fit its base of 4 "
     "characters)"),
    ("DELETE FROM text_chunks WHERE id=(SELECT MIN(id) FROM text_chunks WHERE LENGTH(text)>1000)",
     "the memory text of m at step 9 does not read back (1 of the 27 chunks of its keyframe are not stored)"),
    (f"UPDATE texts SET chunks=X'0102' WHERE sha256='{H(BIG)}'",
     "the memory text of m at step 9 does not read back (a keyframe's chunk list is malformed)"),
    ("UPDATE memories SET text='A' || char(10) || 'C' || char(10) WHERE step=2",  # a row written before format 3
     f"the memory text of m at step 2 does not read back (its text does not match its sha256 {AB[:12]})"),
])
def test_a_damaged_text_is_a_one_line_error_naming_the_row(tmp_path, sql, expect):
    root = tmp_path / "run"
    _store_versions(root)
    _damage(root, sql)
    with pytest.raises(DamagedStoreError) as e:
        RunReader(root).memory_versions()
    assert expect in str(e.value) and "\n" not in str(e.value) and str(e.value).endswith("the database is damaged")
    assert isinstance(e.value, StorageError) and isinstance(e.value, RunFolderError)
    assert e.value.user_message(str(root)) == str(e.value)  # not "free space or fix permissions"


def test_a_deleted_base_names_the_chain(tmp_path):
    root = tmp_path / "run"
    _store_versions(root)
    _damage(root, f"DELETE FROM texts WHERE sha256='{H(BIG)}'")
    with pytest.raises(DamagedStoreError) as e:
        RunReader(root).last_memory("m")
    assert str(e.value).endswith(f"the memory text of m at step 12 does not read back (the base {H(BIG)[:12]} of its "
                                 "delta chain is not stored); the database is damaged")
    assert RunReader(root).unstored_texts("m") == [("memories", 9), ("memories", 10), ("memories", 12),
                                                   ("candidates", 9), ("candidates", 10), ("candidates", 12)]


def test_damaged_texts_on_resume_memory_diff_and_report(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    args = ["--backend", "fake", "--dataset", "gsm8k", "--stream-size", "6", "--test-size", "2", "--encoder",
            "hashing:64", "--warmup", "2", "--coverage-size", "1", "--boundary-size", "1", "--fresh-size", "1",
            "--updater", "reasoning_bank", "--controller", "janus", "--quiet"]
    ref = tmp_path / "ref"
    assert main(["run", *args, "--out", str(ref)]) == 0
    capsys.readouterr()
    m = "reasoning_bank+janus"
    sha = RunReader(ref).last_memory(m)["sha256"]

    def one_error(rc):
        err = [x for x in capsys.readouterr().err.splitlines() if x.strip() and not x.startswith("report [")]
        assert rc == 2 and len(err) == 1 and err[0].startswith("error: "), err
        return err[0]

    step = RunReader(ref).last_memory(m)["step"]
    first = min(v["step"] for v in RunReader(ref).texts("memories", m, text=False) if v["sha256"] == sha)
    bad = tmp_path / "bad"
    shutil.copytree(ref, bad)
    (bad / "COMPLETE").unlink()
    db = sqlite3.connect(bad / "run.sqlite")  # a delta's middle or a keyframe's chunk list altered
    assert db.execute("UPDATE texts SET middle=middle || 'x', chunks=CASE WHEN chunks IS NULL THEN NULL ELSE X'01' END "
                      "WHERE sha256=?", (sha,)).rowcount == 1
    db.commit()
    db.close()
    line = one_error(main(["run", "--resume", str(bad)]))
    assert f"the memory text of {m} at step {step} does not read back" in line and "free space" not in line
    line = one_error(main(["memory", "diff", str(bad), "0", str(step), "--method", m]))
    assert f"the memory text of {m} at step {first} does not read back" in line
    gone = tmp_path / "gone"
    shutil.copytree(ref, gone)
    _damage(gone, f"DELETE FROM texts WHERE sha256='{sha}'")
    assert integrity.problems(gone)[:2] == [  # the texts' state seal (store format 5) first, then the row
        "the database itself is damaged: the memory and candidate texts (tables memories, candidates, texts, "
        f"text_chunks) were changed, deleted or added after they were committed: the memory text of {m} at step {first} "
        "is not stored",
        f"{gone}: the database lacks the memory text of {m} at step {first} (rows deleted?); the database is damaged: "
        "start a new run"]
    line = one_error(main(["report", str(gone)]))
    assert "is marked complete but is not: " in line and "--resume" not in line


# ------------------------------------------------------------------ atomicity
def test_a_failed_commit_keeps_the_last_step_and_the_retry_stores_its_texts(tmp_path):
    root = tmp_path / "run"
    store = RunStore.create(root)
    store.save_initial_memory("m", "")
    store.db = store.ckpt.db = store.texts.db = FailingCommit(store.db, fail_at=3)
    _commit(store, 1, "a\n", "a\n", "")
    _commit(store, 2, "a\nb\n", "a\nb\n", "a\n")
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        _commit(store, 3, "a\nb\nc\n", "a\nb\nc\n", "a\nb\n")
    assert [v["text"] for v in RunReader(root).texts("memories")] == ["", "a\n", "a\nb\n"]
    assert sqlite3.connect(root / "run.sqlite").execute("SELECT COUNT(*) FROM texts").fetchone() == (3,)
    store.db.fail_at = None
    _commit(store, 3, "a\nb\nc\n", "a\nb\nc\n", "a\nb\n")  # the same step again: its delta is on step 2's version
    assert [v["text"] for v in RunReader(root).texts("memories")] == ["", "a\n", "a\nb\n", "a\nb\nc\n"]
    assert sqlite3.connect(root / "run.sqlite").execute(
        "SELECT base, prefix, middle FROM texts WHERE sha256=?", (H("a\nb\nc\n"),)).fetchone() == (H("a\nb\n"), 4, "c\n")


_KILLER = """
import os, signal, sys
from janus_memory.store import text_log as texts
from janus_memory.store.store import RunStore, text_hash

real = texts.TextLog.put
def put(self, sha, text, base):
    depth = real(self, sha, text, base)
    if text.endswith("item 6\\n") and "rejected" in text:  # step 6's texts are in the open transaction: die now
        os.kill(os.getpid(), signal.SIGKILL)
    return depth
texts.TextLog.put = put
store = RunStore.create({root!r})
store.save_initial_memory("m", "bank\\n")
mem = "bank\\n"
for i in range(1, 100):
    cand = mem + f"item {{i}}\\n"
    store.commit_step("m", i, {{"step": i}}, {{"step": i}}, mem + f"item {{i}}\\n", {{"i": i}},
                      candidate=(cand + "rejected item 6\\n" if i == 6 else cand, text_hash(mem), None))
    mem = cand
"""


def test_sigkill_while_the_texts_are_written_leaves_the_last_committed_step(tmp_path):
    root = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", _KILLER.format(root=str(root))], env=env, capture_output=True,
                          text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    mems = ["bank\n" + "".join(f"item {j}\n" for j in range(1, i + 1)) for i in range(0, 7)]
    r = RunReader(root)
    assert [v["text"] for v in r.texts("memories")] == mems[:6]  # step 6 (its memory was stored) never committed
    assert [c["step"] for c in r.candidates("m")] == [1, 2, 3, 4, 5] and r.checkpoint("m")[0] == 5
    db = sqlite3.connect(root / "run.sqlite")
    assert db.execute("SELECT COUNT(*) FROM texts").fetchone() == (6,)  # nothing of step 6 is left
    db.close()
    store = RunStore.open_existing(root)  # and the run goes on from there
    for i in range(6, 9):
        _commit(store, i, mems[5] + "".join(f"item {j}\n" for j in range(6, i + 1)),
                mems[5] + "".join(f"item {j}\n" for j in range(6, i + 1)),
                mems[5] + "".join(f"item {j}\n" for j in range(6, i)))
    store.close()
    assert RunReader(root).last_memory("m")["text"] == mems[5] + "item 6\nitem 7\nitem 8\n"
    assert sqlite3.connect(root / "run.sqlite").execute(
        "SELECT base, middle FROM texts WHERE sha256=?", (H(mems[6]),)).fetchone() == (H(mems[5]), "item 6\n")


# ------------------------------------------------------------------ store format 2 folders (texts inline)
# tests/store_v2/reasoning_bank_both_step5: written by the store before format 3 (main at 54e2fa7), with V2_ARGS:
# reasoning_bank finished (8 steps), reasoning_bank+janus interrupted after its step 5 (an on_event subscriber raised
# KeyboardInterrupt after StepFinished); WAL checkpointed into run.sqlite, journal mode DELETE, the lock file removed.
# Next to it (.cache/llm-cache) the response cache that run wrote: the resumed method repeats requests the finished
# one made, so with the run's own cache the usage in summary.json (calls paid vs cache hits) is the uninterrupted one's.
V2_ARGS = ["--backend", "fake", "--dataset", "gsm8k", "--stream-size", "8", "--test-size", "2", "--encoder",
           "hashing:64", "--warmup", "2", "--coverage-size", "1", "--boundary-size", "1", "--fresh-size", "1",
           "--updater", "reasoning_bank", "--controller", "both", "--trigger", "always", "--quiet"]
V2_METHODS = ("reasoning_bank", "reasoning_bank+janus")


def _v2_exports(out: Path) -> dict[str, bytes]:
    sys.path.insert(0, str(TESTS / "golden"))
    import cases

    files = cases.outputs(out)
    for m in V2_METHODS:
        files.update({f"{m}/memories/{p.name}": p.read_bytes() for p in sorted((out / m / "memories").iterdir())})
    return files


def _texts(root: Path) -> dict:
    r = RunReader(root)
    return {m: (r.texts("memories", m), r.candidates(m)) for m in V2_METHODS}


def test_a_store_format_2_folder_loads_and_resumes_byte_identical(tmp_path, monkeypatch):
    shutil.copytree(TESTS / "store_v2" / "reasoning_bank_both_step5.cache", tmp_path / "cache")
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    old = tmp_path / "old"
    shutil.copytree(TESTS / "store_v2" / "reasoning_bank_both_step5", old)
    db = sqlite3.connect(old / "run.sqlite")
    assert db.execute("SELECT value FROM meta WHERE key='store_format'").fetchone() == ("2",)
    assert "texts" not in {n for (n,) in db.execute("SELECT name FROM sqlite_master")}
    assert db.execute("SELECT COUNT(*) FROM candidates WHERE text=''").fetchone() == (0,)
    db.close()
    versions, last, _ = RunReader(old).memory_versions()  # texts inline: read (and checked) as they are
    assert last == {"reasoning_bank": 8, "reasoning_bank+janus": 5}
    for m in V2_METHODS:
        files = sorted((old / m / "memories").iterdir())
        assert [(f.name, f.read_text(encoding="utf-8")) for f in files] == [
            (f"{v['step']:05d}_{v['sha256'][:12]}.txt", v["text"]) for v in versions[m]]
    assert len(versions["reasoning_bank+janus"]) == 6 and len(RunReader(old).candidates("reasoning_bank")) == 8
    assert main(["run", "--resume", str(old)]) == 0
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache-new"))  # its own response cache, as the fixture had
    # the fresh run with the settings the stored run had before the twin cache setting (migrate.before_twin_cache)
    pre27 = ["--clustering", "sklearn", "--checker", "strict", "--replay-failures", "abort", "--twin-cache", "shared",
             "--checkpoint-restore", "exact"]
    assert main(["run", *V2_ARGS, *pre27, "--out", str(tmp_path / "new")]) == 0
    assert _v2_exports(old) == _v2_exports(tmp_path / "new")
    assert _texts(old) == _texts(tmp_path / "new")  # every memory and candidate, inline or stored anew, reads the same
    db = sqlite3.connect(old / "run.sqlite")
    assert db.execute("SELECT value FROM meta WHERE key='store_format'").fetchone() == ("5",)
    inline = db.execute("SELECT method, MAX(step), COUNT(*) FROM candidates WHERE text<>'' GROUP BY method").fetchall()
    assert inline == [("reasoning_bank", 8, 8), ("reasoning_bank+janus", 5, 5)]  # the old rows stay as they were
    assert db.execute("SELECT COUNT(*) FROM candidates WHERE text=''").fetchone() == (3,)  # steps 6-8, format 3 and later
    # the first text stored after the resume has no stored base (the newest old version is inline): a keyframe
    assert db.execute("SELECT depth FROM texts ORDER BY rowid").fetchall()[0] == (0,)


def test_a_newer_store_format_is_refused_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad"
    shutil.copytree(TESTS / "store_v2" / "reasoning_bank_both_step5", bad)
    db = sqlite3.connect(bad / "run.sqlite")
    db.execute("UPDATE meta SET value='6' WHERE key='store_format'")
    db.commit()
    db.close()
    assert main(["run", "--resume", str(bad)]) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and "has store format 6; this janus-memory reads formats 1-5" in err[0]


# ------------------------------------------------------------------ a ReasoningBank run reads back what it deployed
def test_reasoning_bank_run_reads_back_every_deployed_memory_and_candidate(tmp_path, monkeypatch):
    from janus_memory.run.experiment import run_experiment
    from janus_memory.settings.config import RunConfig

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    seen: dict[str, list] = {}

    def on_event(ev):
        if type(ev).__name__ == "StepRecorded":
            seen.setdefault(ev.method, []).append((ev.step, ev.deployed_memory, ev.candidate))
        elif type(ev).__name__ == "MethodStarted":
            seen.setdefault(ev.method, []).append((0, ev.initial_memory, None))

    out = tmp_path / "run"
    cfg = RunConfig(backend="fake", dataset="gsm8k", stream_size=12, test_size=2, encoder="hashing:64",
                    updater="reasoning_bank", controller="both", out=str(out),
                    janus={"warmup": 3, "coverage_size": 2, "boundary_size": 1, "fresh_size": 1})
    run_experiment(cfg, log=lambda m: None, on_event=on_event)
    r = RunReader(out)
    assert integrity.problems(out) == []
    for m, steps in seen.items():
        want, prev = [], None
        for step, mem, _ in steps:
            if mem != prev:
                want.append((step, text_hash(mem), mem))
            prev = mem
        assert [(v["step"], v["sha256"], v["text"]) for v in r.texts("memories", m)] == want
        assert len(want) > 5 and len(want[-1][2]) > 2000  # the bank grew
        assert [(c["step"], c["text"], c["parent"], c["rejected"]) for c in r.candidates(m)] == [
            (step, cand[0], cand[1], cand[2]) for step, _, cand in steps[1:]]
        for v in want:  # the per-version files hold the same texts
            assert (out / m / "memories" / f"{v[0]:05d}_{v[1][:12]}.txt").read_text(encoding="utf-8") == v[2]
    db = sqlite3.connect(out / "run.sqlite")
    assert db.execute("SELECT value FROM meta WHERE key='store_format'").fetchone() == ("5",)
    # most texts are deltas: bytes stored are about the banks' growth, not the sum of their lengths
    stored = db.execute("SELECT SUM(LENGTH(middle)) FROM texts").fetchone()[0] + \
        db.execute("SELECT SUM(LENGTH(text)) FROM text_chunks").fetchone()[0]
    whole = sum(len(t) for steps in seen.values() for _, mem, cand in steps for t in (mem, cand[0] if cand else ""))
    assert stored * 4 < whole
    assert json.loads(db.execute("SELECT value FROM meta WHERE key='store_format'").fetchone()[0]) == 5
