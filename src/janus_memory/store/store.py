"""Run folder: a SQLite database holding every committed step, plus human-readable exports.

Layout (one folder per run)::

    <run>/run.sqlite                the source of truth (WAL mode); one transaction per stream step
    <run>/config.json, config.yaml  resolved configuration (every default written out)
    <run>/prompts/                  the prompt files used (updater + task family), as shipped in the package
    <run>/splits.json               dataset name, source file sha256, ordered task ids and their sha256, per split
    <run>/environment.json          package and model versions
    <run>/<method>/memories/SSSSS_<sha12>.txt   every deployed memory version (written when the deployed text changes)
    <run>/<method>/decisions.jsonl  exported at the end: one line per stream step (decision log)
    <run>/<method>/steps.jsonl      exported at the end: one line per stream step with the model output
    <run>/<method>/test.jsonl       exported at the end: frozen-memory test results
    <run>/<method>/final_memory.txt
    <run>/summary.json              accuracies, trigger/accept/rollback counts, LLM usage per role, wall time
    <run>/COMPLETE                  written last; a folder without it is an unfinished (resumable) run

Atomicity: a step's record and the method's checkpoint (updater + controller state) are written in ONE SQLite
transaction, so after a crash or SIGKILL the database holds either the whole step or none of it. Every JSON/text file
is written to a temp file and renamed.

Crash safety of set-up and --overwrite (docs/run-folder.md): a new run's database is written whole under
``.run.sqlite.setup`` (schema + config, splits, environment) and renamed to ``run.sqlite``, so a run.sqlite always
holds its config; --overwrite moves the old run into ``.janus-overwritten/`` first and deletes it only after the new
database is in place. Each step also stores its link of the per-method hash chain (store format 4, store/chain.py),
and keeps the state seals of the texts and of its method's checkpoint rows (store format 5, the same transaction).
Named kill points (janus_memory/killpoints.py) let tests SIGKILL the process at each stage.

Flat growth: the checkpoint is stored whole once per process and method (table ``checkpoints``, the base),
then per step as the leaf operations of its structural delta (table ``checkpoint_ops``, store/delta.py): appended
list items and string tails are kept (they are the state's growth); a value set or removed at a path deletes the
earlier operations at or below that path, so a value rewritten every step occupies the database once. What a step
writes is decided by store/ckpt_log.py (from the parts the producers declare grown, without comparing the whole
state); RunReader.checkpoint replays base + operations in (step, seq) order. The embedding matrices (controller and
retrieval banks) arrive by reference (janus_memory/rows.py) and are stored as rows in table ``checkpoint_rows``, only
the new rows per step (store/ckpt_rows.py; store format 2, meta ``store_format``; format 1 folders, with the matrices
inline as base64, still load).

Memory and candidate texts (store format 3, store/text_log.py): the rows of ``memories`` (one per deployed version)
and ``candidates`` (one per step) hold sha256 and parent, their ``text`` is ``''``; each distinct text is stored once
in table ``texts``, as a delta on the version it came from (common prefix and suffix lengths + the new middle) or,
every 64 versions along a chain, as a keyframe: a list of content-defined chunks (table ``text_chunks``, each chunk
stored once). So an appending memory costs its new item per step, not its whole length, and any version reads back
from one keyframe and at most 63 deltas. Every reader goes through texts.read_versions (RunReader.texts), which
checks each text against its sha256 (DamagedStoreError naming the row otherwise). Rows of format 1 and 2 folders
keep their text inline and read as they are; a resumed old folder is marked format 3 and writes new rows this way.
The newest memory (sha256, text) is kept in memory, so a step runs no query whose cost grows with the run; what
still grows with the memory's length is hashing it (sha256, as before) and finding the common prefix/suffix with
its parent (~0.1 ms per MB), plus the per-version export file (written whole). Measured with a memory growing ~1 KB
per step (benchmarks/performance/bench_store.py --only-text; docs/measurements.md, "Memory and candidate texts"): database
2.7 KiB/step at step 10 and 2.8 at step 10,000 (format 2: 70.7 and 16,494.5); at 9 MB the two sha256 cost 16 ms per
step, the store's own work 3.6 ms, the export file 7.2 MiB and 88 ms (the non-flat cost left).
"""
from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ..errors import RunFolderError
from ..killpoints import kill_point
from . import chain as C
from . import text_log as T
from .ckpt_log import CheckpointLog, Hints
from .ckpt_rows import STORE_FORMAT
from .folder import _SCHEMA, ASIDE, SETUP_DB, RunFolder, _fsync_dir, _remove  # noqa: F401  (re-exported)
from .jsonio import atomic_write_json, atomic_write_text, dumps, text_hash  # noqa: F401  (re-exported)

Memory = tuple  # (sha256, text, depth in table texts or None when the text is stored inline, before format 3)


class RunStore(RunFolder):
    """The only writer of a run folder (``run.sqlite`` + exports). Use :meth:`create` for a new run and
    :meth:`open_existing` to resume; reading is store/reader.py's job (the store reads its own rows only to export)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.db = sqlite3.connect(self.root / self.DB, isolation_level=None)  # autocommit; explicit BEGIN per step
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(_SCHEMA)
        self._set_format()
        self.ckpt = CheckpointLog(self.db)  # the checkpoint base + per-step operations (store/ckpt_log.py)
        self.texts = T.TextLog(self.db)  # memory and candidate texts, once each, as deltas (store/text_log.py)
        self._mem: dict[str, Memory | None] = {}  # method -> its newest stored memory (loaded once per process)
        self._chain: dict[str, str] = {}  # method -> hash of its newest committed step (store/chain.py)

    # ----------------------------------------------------------------- opening (create, open_existing: folder.py)
    def _set_format(self) -> None:
        """Record the store format (ckpt_rows.STORE_FORMAT); a folder written by a newer format is refused."""
        row = self.db.execute("SELECT value FROM meta WHERE key='store_format'").fetchone()
        have = json.loads(row[0]) if row else 1
        if not isinstance(have, int) or have > STORE_FORMAT:
            self.db.close()
            raise RunFolderError(f"{self.root / self.DB} has store format {have!r}; this janus-memory reads formats "
                                 f"1-{STORE_FORMAT}: continue it with the version that wrote it")
        if have < STORE_FORMAT:  # an older folder resumed: marked, and sealed as it stands (store/chain.py)
            try:
                with self._transaction():
                    self.set_meta("store_format", STORE_FORMAT)
                    C.seal_existing(self.db)
            except BaseException:
                self.db.close()
                raise

    # ----------------------------------------------------------------- meta
    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, dumps(value)))

    def write_text(self, name: str, text: str) -> Path:
        p = self.root / name
        atomic_write_text(p, text)
        return p

    def write_json(self, name: str, obj: Any) -> Path:
        p = self.root / name
        atomic_write_json(p, obj)
        return p

    # ----------------------------------------------------------------- steps
    def method_dir(self, method: str) -> Path:
        d = self.root / method
        (d / "memories").mkdir(parents=True, exist_ok=True)
        return d

    def last_memory_sha(self, method: str) -> str | None:
        """sha256 of the newest stored memory of ``method`` (kept in memory after the first look-up)."""
        mem = self._last_memory(method)
        return mem[0] if mem else None

    def _query(self, sql: str, args: tuple = ()) -> list:
        return self.db.execute(sql, args).fetchall()

    def _versions(self, table: str, method: str, **kw):
        """The rows of ``table`` with their texts, read back and checked (store/text_log.py read_versions)."""
        return T.read_versions(self._query, table, method=method, on_damage=T.damage_error(self.root / self.DB), **kw)

    def _last_memory(self, method: str) -> Memory | None:
        """The newest stored memory of ``method``: read back once per process (a bounded delta chain), then the one
        each commit deploys (the base of the next version's delta)."""
        if method not in self._mem:
            row = next(iter(self._versions("memories", method, last=True)), None)
            self._mem[method] = None if row is None else (row["sha256"], row["text"], self.texts.depth(row["sha256"]))
        return self._mem[method]

    def commit_step(self, method: str, step: int, decision: dict, record: dict, deployed_memory: str, checkpoint: dict,
                    *, candidate: tuple[str, str, str | None] | None = None, hints: Hints | None = None) -> str | None:
        """Atomically store one step: its decision-log line, its full record, the candidate memory
        (``(text, parent_sha256, rejection_reason)``), the deployed memory (if it changed) and the method checkpoint
        used for resuming (``hints``: what of it only grew, see store/ckpt_log.py). Returns the memory file name when
        a new version was deployed. The texts go to table ``texts`` (store/text_log.py), once each: the deployed one as
        a delta on the previous version, the candidate on its parent when the store has it in hand (else on the
        deployed memory)."""
        sha = text_hash(deployed_memory)
        csha = None if candidate is None else text_hash(candidate[0])
        prev = self._last_memory(method)
        parent = prev[0] if prev else None
        fname = None
        if sha != parent:
            fname = self._write_memory_file(method, step, sha, deployed_memory)
        pending = self.ckpt.prepare(method, checkpoint, hints)
        mem = prev
        dec_line, rec_line = dumps(decision), dumps(record)
        prev_link = self._chain_head(method, step)
        link = C.link(prev_link, step, dec_line, rec_line, sha if sha != parent else None, csha)
        with self._transaction():
            self.db.execute("INSERT OR REPLACE INTO steps(method, step, decision, record) VALUES (?,?,?,?)",
                            (method, step, dec_line, rec_line))
            self.db.execute("INSERT OR REPLACE INTO chain(method, step, hash) VALUES (?,?,?)", (method, step, link))
            if sha != parent:
                mem = (sha, deployed_memory, self.texts.put(sha, deployed_memory, prev))
                self._put_version("memories", (method, step, sha, parent, ""))
            if candidate is not None:
                ctext, cparent, creason = candidate
                base = next((m for m in (mem, prev) if m and m[0] == cparent), mem)
                self.texts.put(csha, ctext, base)  # type: ignore[arg-type]  # a stored candidate has its text
                self._put_version("candidates", (method, step, csha, cparent, creason, ""))
            self.ckpt.write(method, step, pending)
            kill_point("step_commit", step)
        self._mem[method] = mem
        self._chain[method] = link
        self.ckpt.accept(method, pending)
        kill_point("step_committed", step)
        return fname

    def _put_version(self, table: str, row: tuple) -> None:
        """Write one memories/candidates row (its text in table texts, ``text`` ''), inside the open transaction,
        and keep the texts' state seal (store/chain.py: these rows are sealed with the texts): a row it replaces
        (the initial memory stored again by a resume) is taken out of the seal first."""
        cols = C.TEXT_ROWS[table]
        old = self.db.execute(f"SELECT {cols} FROM {table} WHERE method=? AND step=?", row[:2]).fetchone()
        self.db.execute(f"INSERT OR REPLACE INTO {table}({cols}) VALUES ({','.join('?' * len(row))})", row)
        C.bump_acc(self.db, C.TEXTS_SEAL, C.row_digest(table, *row) - (C.row_digest(table, *old) if old else 0))

    def _chain_head(self, method: str, step: int) -> str:
        """The chain link of step ``step - 1`` of ``method`` ("" before step 1). A method stored before the chain
        (store format < 4, resumed) gets its links computed once from its rows; a method whose chain stops short
        of its rows is damaged (RunFolderError: its rows cannot be vouched for)."""
        if method in self._chain:
            return self._chain[method]
        if step <= 1:
            return ""
        row = self.db.execute("SELECT hash FROM chain WHERE method=? AND step=?", (method, step - 1)).fetchone()
        if row is not None:
            return row[0]
        if self.db.execute("SELECT 1 FROM chain WHERE method=? LIMIT 1", (method,)).fetchone() is not None:
            raise RunFolderError(f"{self.root / self.DB}: the hash chain of {method} has no link for step {step - 1}; "
                                 "the database is damaged: restore it from a copy or start a new run")
        mems = dict(self.db.execute("SELECT step, sha256 FROM memories WHERE method=? AND step>0", (method,)))
        cands = dict(self.db.execute("SELECT step, sha256 FROM candidates WHERE method=?", (method,)))
        prev, links = "", []
        for s, d, r in self.db.execute("SELECT step, decision, record FROM steps WHERE method=? AND step<? "
                                       "ORDER BY step", (method, step)).fetchall():
            prev = C.link(prev, s, d, r, mems.get(s), cands.get(s))
            links.append((method, s, prev))
        with self._transaction():
            self.db.executemany("INSERT OR REPLACE INTO chain(method, step, hash) VALUES (?,?,?)", links)
        return prev

    def _write_memory_file(self, method: str, step: int, sha: str, text: str) -> str:
        """``<method>/memories/SSSSS_<sha12>.txt``; named by step and content, so re-writing it on resume is harmless."""
        fname = f"{step:05d}_{sha[:12]}.txt"
        atomic_write_text(self.method_dir(method) / "memories" / fname, text)
        return fname

    def save_initial_memory(self, method: str, text: str) -> str:
        """Record the memory deployed before the first step (step 0). Idempotent."""
        sha = text_hash(text)
        fname = self._write_memory_file(method, 0, sha, text)
        with self._transaction():
            self.texts.put(sha, text, None)
            self._put_version("memories", (method, 0, sha, None, ""))
        self._mem.pop(method, None)
        kill_point("initial_memory_stored")
        return fname

    def steps(self, method: str) -> Iterator[tuple[dict, dict]]:
        for d, r in self.db.execute("SELECT decision, record FROM steps WHERE method=? ORDER BY step", (method,)):
            yield json.loads(d), json.loads(r)

    # ----------------------------------------------------------------- event subscriber
    def on_event(self, ev) -> None:
        """Write what the stream loop emits (store/events.py): the store is one subscriber among others."""
        from . import events as E

        if isinstance(ev, E.MethodStarted) and ev.resumed_after == 0:
            self.save_initial_memory(ev.method, ev.initial_memory)
        elif isinstance(ev, E.StepRecorded):
            self.commit_step(ev.method, ev.step, ev.decision_line, ev.record, ev.deployed_memory, ev.checkpoint,
                             candidate=ev.candidate, hints=ev.hints)
        elif isinstance(ev, E.TestDone):
            self.commit_tests(ev.method, ev.records)
        elif isinstance(ev, E.MethodFinished):
            self.export_method(ev.method, ev.final_memory)
            self.set_method_result(ev.method, ev.summary)

    # ----------------------------------------------------------------- tests and results
    def commit_tests(self, method: str, records: list[dict]) -> None:
        last = self.db.execute("SELECT MAX(step) FROM steps WHERE method=?", (method,)).fetchone()[0]
        if last:
            self._chain_head(method, int(last) + 1)  # a method stored before the chain: its links, once
        with self._transaction():
            self.db.execute("DELETE FROM tests WHERE method=?", (method,))
            lines = [dumps(r) for r in records]
            self.db.executemany("INSERT INTO tests(method, idx, record) VALUES (?,?,?)",
                                [(method, i, x) for i, x in enumerate(lines)])
            self.db.execute("INSERT OR IGNORE INTO seals(method) VALUES (?)", (method,))
            self.db.execute("UPDATE seals SET tests=? WHERE method=?", (C.tests_hash(lines), method))
        kill_point("tests_committed")

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction: BEGIN IMMEDIATE, the block, COMMIT; any exception (a KeyboardInterrupt included)
        rolls it back and goes on."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        """Roll back the open transaction, if SQLite has not already done so (it does on a full disk: a second
        ROLLBACK would raise "no transaction is active" and hide the real error)."""
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def tests(self, method: str) -> list[dict]:
        return [json.loads(r) for (r,) in self.db.execute("SELECT record FROM tests WHERE method=? ORDER BY idx", (method,))]

    def set_method_result(self, method: str, summary: dict) -> None:
        line = dumps(summary)
        with self._transaction():
            self.db.execute("INSERT OR REPLACE INTO method_results(method, summary) VALUES (?, ?)", (method, line))
            self.db.execute("INSERT OR IGNORE INTO seals(method) VALUES (?)", (method,))
            self.db.execute("UPDATE seals SET result=? WHERE method=?", (C.result_hash(line), method))
        kill_point("method_result_stored")

    # ----------------------------------------------------------------- exports
    def export_method(self, method: str, final_memory: str) -> None:
        """Write decisions.jsonl, steps.jsonl, test.jsonl and final_memory.txt from the database (byte-stable), and
        remove from ``memories/`` any file named like a memory version that is not one (records.extra_memory_files:
        a reader without the database would take it for one)."""
        from .records import extra_memory_files

        d = self.method_dir(method)
        through_link = d.is_symlink() or (d / "memories").is_symlink()  # never delete outside the run folder
        for extra in [] if through_link else extra_memory_files(self.root, method,
                                                                 list(self._versions("memories", method, text=False))):
            extra.unlink()
        dec_lines, step_lines = [], []
        for dec, rec in self.steps(method):
            dec_lines.append(dumps(dec))
            step_lines.append(dumps(rec))
        atomic_write_text(d / "decisions.jsonl", "".join(x + "\n" for x in dec_lines))
        atomic_write_text(d / "steps.jsonl", "".join(x + "\n" for x in step_lines))
        atomic_write_text(d / "test.jsonl", "".join(dumps(r) + "\n" for r in self.tests(method)))
        atomic_write_text(d / "final_memory.txt", final_memory)
        kill_point("exports_written")

    def rebuild_exports(self, method: str) -> None:
        """Re-write a finished method's memories/ files and exports from the database (resume of a folder whose
        files were deleted or altered). Byte-identical to what the run wrote."""
        text = ""
        for row in self._versions("memories", method):
            text = row["text"]
            self._write_memory_file(method, row["step"], row["sha256"], text)
        self.export_method(method, text)

    def finish(self, summary: dict) -> None:
        """Write summary.json, then the COMPLETE marker (last, so an interrupted run never looks complete)."""
        self.set_meta("summary", summary)
        self.write_json("summary.json", summary)
        kill_point("summary_written")
        atomic_write_text(self.root / "COMPLETE", "ok\n")

    def close(self) -> None:
        self.db.close()
