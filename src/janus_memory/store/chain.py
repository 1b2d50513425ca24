"""The database's own integrity check (store formats 4 and 5, issue 28): a per-method hash chain of the committed rows.

Each step commit stores, in the same transaction as the step, ``chain(method, step, hash)`` with

    hash_s = sha256(hash_{s-1} | s | decision line | step record | deployed memory sha256 (a new version) | candidate sha256)

(``hash_0 = ""``), and the held-out test and the method result are sealed the same way in ``seals(method, tests,
result)`` (sha256 of the test rows, and of the result, written with them). :func:`chain_problems` recomputes them from
the rows: a step row edited after its commit (its hash differs), deleted (a chain row without its step), added or
re-numbered (a step without a chain row), test rows edited, deleted or added, an edited result, test rows or a result
whose seal was deleted or set to NULL (once a method has a chain, its tests and result are sealed): each is named.

Store format 5 adds the state seals (below): the memory/candidate texts and each method's checkpoint rows are sealed
too (:func:`state_problems`), and the chain and seals are required: the store format (itself sealed in the setup
seal) says the folder was written with them, so a method whose chain and seal rows are both deleted is damaged, not
old. A folder of an older format is sealed as it stands when it is resumed (:func:`seal_existing`).

Not detected (said in docs/run-folder.md): someone who edits a row *and* recomputes the chain and seals after it (the
hashes are not secret: they find damage and careless edits, not a forger); in a format 4 folder the checkpoint rows
(checked when they load: the resume probes them) and the memory/candidate texts (each checked against its own sha256
when read, store/texts.py), and a method whose chain and seal rows are both deleted; the ``parent``/``rejected``
columns of memories/candidates rows. A folder written before format 4 has no chain: it reads as before, and its rows
are reported "not checked".
"""
from __future__ import annotations

import hashlib
from typing import Callable


SCHEMA = """
CREATE TABLE IF NOT EXISTS chain (method TEXT NOT NULL, step INTEGER NOT NULL, hash TEXT NOT NULL,
                                  PRIMARY KEY (method, step));
CREATE TABLE IF NOT EXISTS seals (method TEXT PRIMARY KEY, tests TEXT, result TEXT);
CREATE TABLE IF NOT EXISTS state_seals (name TEXT PRIMARY KEY, acc TEXT NOT NULL);
"""


def link(prev: str, step: int, decision: str, record: str, memory_sha: str | None, candidate_sha: str | None) -> str:
    """hash_s from hash_{s-1} and step s's stored texts (``decision``/``record``: the stored JSON lines)."""
    h = hashlib.sha256()
    for part in (prev, str(step), decision, record, memory_sha or "", candidate_sha or ""):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def tests_hash(lines: list[str]) -> str:
    """sha256 of a method's stored test rows (their JSON lines, in order)."""
    return hashlib.sha256("".join(x + "\n" for x in lines).encode("utf-8")).hexdigest()


def result_hash(line: str) -> str:
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


SETUP_SEAL = "seal:setup"  # meta key: sha256 of the stored config, splits and environment (written with them)
# (store_format: sealed from format 5; prompts: stored and sealed by runs set up since they are, store/records.py)
SEALED_META = ("config", "splits", "environment", "store_format", "prompts")


def setup_seal(meta: dict[str, str]) -> dict[str, str]:
    """``{key: sha256 of its stored JSON text}`` for the SEALED_META keys present in ``meta`` (key -> stored text)."""
    return {k: result_hash(meta[k]) for k in SEALED_META if k in meta}


def setup_problems(query: Callable[..., list]) -> list[str]:
    """The stored config, splits or environment edited or deleted after the run was set up (a folder set up before
    this seal has none: nothing to check against)."""
    import json

    row = query("SELECT value FROM meta WHERE key=?", (SETUP_SEAL,))
    if not row:
        return []
    try:
        seal = json.loads(row[0][0])
    except (json.JSONDecodeError, TypeError):
        seal = None
    if not isinstance(seal, dict):
        return ["its seal of the stored config, splits and environment is not valid JSON"]
    out = []
    for key in SEALED_META:
        if key not in seal:
            continue
        have = query("SELECT value FROM meta WHERE key=?", (key,))
        if not have or result_hash(have[0][0]) != seal[key]:
            out.append(f"the stored {key} (in run.sqlite) was changed or deleted after the run was set up "
                       "(its seal does not match)")
    return out


def span(steps: list[int]) -> str:
    """``4``, ``2-3`` (a run of steps) or ``2, 5, 7 ...``."""
    return f"{steps[0]}" if len(steps) == 1 else f"{steps[0]}-{steps[-1]}" if steps[-1] - steps[0] == len(steps) - 1 \
        else ", ".join(map(str, steps[:5])) + (" ..." if len(steps) > 5 else "")


def chain_problems(query: Callable[..., list], method: str,
                   count_result: Callable[[str], bool] = lambda m: True, *, required: bool = False
                   ) -> tuple[bool, list[str]]:
    """``(checked, problems)`` for ``method``: ``checked`` is False for rows written before the chain (store format
    < 4, nothing to check against). ``query(sql, args)`` runs on the run database (a missing table reads as []).
    ``count_result(method)``: whether the method's stored result is one a resume would keep (False: it is missing or
    incomplete, the method counts as unfinished and its result is computed again, never copied: not a problem).
    ``required``: the folder's store format writes the chain and seals with every row (STORE_FORMAT_SEALED), so a
    method with rows but neither is damaged, not old."""
    chain = {int(s): h for s, h in query("SELECT step, hash FROM chain WHERE method=?", (method,))}
    seal = query("SELECT tests, result FROM seals WHERE method=?", (method,))
    if not chain and not seal:
        if required and any(query(f"SELECT 1 FROM {t} WHERE method=? LIMIT 1", (method,))
                            for t in ("steps", "tests", "method_results")):
            return True, [f"the hash chain and the seals of {method} were deleted (this folder's store format writes "
                          "them with every step, test and result)"]
        return False, []
    rows = query("SELECT step, decision, record FROM steps WHERE method=? ORDER BY step", (method,))
    mems = {int(s): sha for s, sha in query("SELECT step, sha256 FROM memories WHERE method=? AND step>0", (method,))}
    cands = {int(s): sha for s, sha in query("SELECT step, sha256 FROM candidates WHERE method=?", (method,))}
    out: list[str] = []
    edited, unchained, have, prev_h = [], [], set(), ""
    for step, dec, rec in rows:
        step = int(step)
        have.add(step)
        # the link before: the stored one when there is one (an edited or deleted row is named once, not with
        # every row after it), else the one computed from the row before
        prev = chain.get(step - 1, prev_h) if step > 1 else ""
        h = link(prev, step, dec, rec, mems.get(step), cands.get(step))
        if step not in chain:
            unchained.append(step)
        elif chain[step] != h:
            edited.append(step)
        prev_h = h
    deleted = sorted(set(chain) - have)
    if edited:
        out.append(f"the step row(s) {span(edited)} of {method} were changed after they were committed "
                   "(their hash chain does not match)")
    if deleted:
        out.append(f"it lacks step(s) {span(deleted)} of {method}: deleted after they were committed")
    if unchained:
        out.append(f"the step row(s) {span(unchained)} of {method} were not committed by the run (no hash chain link)")
    # the seal is written in the same transaction as the test rows (tests) and the result (result): test rows or a
    # result without their seal (the row deleted, or set to NULL) is damage, never a reason to trust the rows
    t_hash, r_hash = seal[0] if seal else (None, None)
    lines = [r for (r,) in query("SELECT record FROM tests WHERE method=? ORDER BY idx", (method,))]
    if t_hash is not None:
        if tests_hash(lines) != t_hash:
            out.append(f"the held-out test rows of {method} were changed, deleted or added after they were committed "
                       f"({len(lines)} rows now)")
    elif lines:
        out.append(f"the seal of the held-out test rows of {method} was deleted or emptied after they were committed "
                   f"({len(lines)} rows now, not sealed)")
    if count_result(method):
        res = query("SELECT summary FROM method_results WHERE method=?", (method,))
        if r_hash is not None:
            if not res or result_hash(res[0][0]) != r_hash:
                out.append(f"the stored result of {method} was changed or deleted after it was committed")
        elif res:
            out.append(f"the seal of the stored result of {method} was deleted or emptied after it was committed (not sealed)")
    return True, out


# ------------------------------------------------------------------ state seals (store format 5)
# The memory/candidate texts (tables memories, candidates, texts, text_chunks: rows never changed once written, the
# texts shared by the methods) and each method's checkpoint (tables checkpoints, checkpoint_ops, checkpoint_rows,
# checkpoint_head: rewritten as the run goes, superseded rows deleted) are sealed by an order-free sum of their rows'
# digests, kept in table ``state_seals`` (``texts``; ``checkpoint:<method>``) and updated in the transaction that
# writes or deletes the rows (store/store.py, store/texts.py, store/ckpt_log.py): an add per written row, a
# subtraction per deleted one, so a step's cost stays flat. Recomputing the sum from the rows (:func:`texts_acc`,
# :func:`checkpoint_acc`: one pass over the tables) finds a row edited, deleted or added after its commit.
STORE_FORMAT_SEALED = 5  # from this store format on, chains, seals and state seals are written with every row, so
                         # their absence is damage (before it, a method without them reads "not checked")
TEXTS_SEAL = "texts"
MOD = 1 << 256


def ckpt_seal_name(method: str) -> str:
    return f"checkpoint:{method}"


def row_digest(table: str, *values) -> int:
    """The digest of one stored row (its table and column values, types included), as an integer mod 2^256."""
    h = hashlib.sha256(table.encode("utf-8"))
    for v in values:
        if v is None:
            h.update(b"\x00n")
            continue
        if isinstance(v, bool) or not isinstance(v, (int, str, bytes, float)):
            raise TypeError(f"cannot seal a {type(v).__name__}")
        tag, data = ((b"i", str(v).encode()) if isinstance(v, int) else (b"f", repr(v).encode())
                     if isinstance(v, float) else (b"s", v.encode("utf-8")) if isinstance(v, str) else (b"b", v))
        h.update(b"\x00" + tag + len(data).to_bytes(8, "little"))
        h.update(data)
    return int.from_bytes(h.digest(), "big")


def acc_hex(acc: int) -> str:
    return f"{acc % MOD:064x}"


def acc_value(text) -> int | None:
    try:
        return int(text, 16) if isinstance(text, str) and len(text) == 64 else None
    except ValueError:
        return None


# the sealed columns of each table, in the order they are digested (every column: none is left out)
TEXT_ROWS = {"texts": "sha256, base, prefix, suffix, middle, chunks, depth", "text_chunks": "id, sha256, text",
             "memories": "method, step, sha256, parent, text",
             "candidates": "method, step, sha256, parent, rejected, text"}
CKPT_ROWS = {"checkpoints": "method, step, state", "checkpoint_ops": "method, step, seq, path, op",
             "checkpoint_rows": "method, path, idx, data", "checkpoint_head": "method, step"}


def texts_acc(query: Callable[..., list]) -> int:
    """The seal of tables texts, text_chunks, memories and candidates computed from their rows (one pass)."""
    acc = 0
    for table, cols in TEXT_ROWS.items():
        for row in query(f"SELECT {cols} FROM {table}", ()):
            acc += row_digest(table, *row)
    return acc % MOD


def checkpoint_acc(query: Callable[..., list], method: str) -> int:
    """The seal of ``method``'s checkpoint rows computed from them (one pass)."""
    acc = 0
    for table, cols in CKPT_ROWS.items():
        for row in query(f"SELECT {cols} FROM {table} WHERE method=?", (method,)):
            acc += row_digest(table, *row)
    return acc % MOD


def stored_acc(query: Callable[..., list], name: str) -> tuple[bool, int | None]:
    """``(present, value)`` of the state seal ``name`` (value None: present but not a seal)."""
    row = query("SELECT acc FROM state_seals WHERE name=?", (name,))
    return (False, None) if not row else (True, acc_value(row[0][0]))


def bump_acc(db, name: str, delta: int, *, reset: bool = False) -> None:
    """Add ``delta`` to the state seal ``name`` (``reset``: start from 0), inside the caller's open transaction."""
    row = None if reset else db.execute("SELECT acc FROM state_seals WHERE name=?", (name,)).fetchone()
    have = acc_value(row[0]) if row else 0
    if have is None:  # not a seal: left as it is, so the damage is still named
        return
    db.execute("INSERT OR REPLACE INTO state_seals(name, acc) VALUES (?,?)", (name, acc_hex(have + delta)))


def store_format(query: Callable[..., list]) -> int:
    """The stored store format (1 when absent; 0 when not an integer: named by the reader)."""
    import json

    row = query("SELECT value FROM meta WHERE key='store_format'", ())
    try:
        v = json.loads(row[0][0]) if row else 1
    except (json.JSONDecodeError, TypeError):
        return 0
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def state_problems(query: Callable[..., list], methods: list[str],
                   explain: Callable[..., str] | None = None) -> list[str]:
    """The memory/candidate texts and the methods' checkpoints against their state seals (store format >= 5; an
    older folder has none: not checked). A seal that is missing while its rows exist is damage."""
    out: list[str] = []
    present, want = stored_acc(query, TEXTS_SEAL)
    has_texts = any(query(f"SELECT 1 FROM {t} LIMIT 1", ()) for t in TEXT_ROWS)
    if present and want is None:
        out.append("its seal of the memory and candidate texts is malformed")
    elif present and texts_acc(query) != want or not present and has_texts:
        what = (f": {where}" if explain and (where := explain(query, methods)) else "")
        out.append("the memory and candidate texts (tables memories, candidates, texts, text_chunks) were changed, "
                   f"deleted or added after they were committed{what}" if present else
                   "the seal of the memory and candidate texts was deleted after they were committed (not sealed)")
    for method in methods:
        name = ckpt_seal_name(method)
        present, want = stored_acc(query, name)
        has_rows = any(query(f"SELECT 1 FROM {t} WHERE method=? LIMIT 1", (method,)) for t in CKPT_ROWS)
        if present and (want is None or checkpoint_acc(query, method) != want):
            out.append(f"the saved state (checkpoint rows) of {method} was changed, deleted or added after it was "
                       "committed (its seal does not match)")
        elif not present and has_rows:
            out.append(f"the seal of the saved state (checkpoint rows) of {method} was deleted after it was committed "
                       "(not sealed)")
    return out


def seal_existing(db) -> None:
    """Bring a folder written by an older store format up to the sealed format, inside the caller's transaction:
    the hash chain of every method stored before it, the seals of its test rows and result, the state seals of the
    texts and of each method's checkpoint. They vouch for the rows as they are now (an older folder had no check of
    its own for them: damage done before this resume is not detectable)."""
    import json

    q = lambda sql, args=(): db.execute(sql, args).fetchall()  # noqa: E731
    methods = sorted({m for t in ("steps", "tests", "method_results", "checkpoints", "memories")
                      for (m,) in q(f"SELECT DISTINCT method FROM {t}")})
    for method in methods:
        if not q("SELECT 1 FROM chain WHERE method=? LIMIT 1", (method,)):
            mems = dict(q("SELECT step, sha256 FROM memories WHERE method=? AND step>0", (method,)))
            cands = dict(q("SELECT step, sha256 FROM candidates WHERE method=?", (method,)))
            prev = ""
            for s, d, r in q("SELECT step, decision, record FROM steps WHERE method=? ORDER BY step", (method,)):
                prev = link(prev if s > 1 else "", s, d, r, mems.get(s), cands.get(s))
                db.execute("INSERT OR REPLACE INTO chain(method, step, hash) VALUES (?,?,?)", (method, s, prev))
        db.execute("INSERT OR IGNORE INTO seals(method) VALUES (?)", (method,))
        lines = [r for (r,) in q("SELECT record FROM tests WHERE method=? ORDER BY idx", (method,))]
        if lines:
            db.execute("UPDATE seals SET tests=? WHERE method=? AND tests IS NULL", (tests_hash(lines), method))
        res = q("SELECT summary FROM method_results WHERE method=?", (method,))
        if res:
            db.execute("UPDATE seals SET result=? WHERE method=? AND result IS NULL", (result_hash(res[0][0]), method))
        db.execute("INSERT OR REPLACE INTO state_seals(name, acc) VALUES (?,?)",
                   (ckpt_seal_name(method), acc_hex(checkpoint_acc(q, method))))
    db.execute("INSERT OR REPLACE INTO state_seals(name, acc) VALUES (?,?)", (TEXTS_SEAL, acc_hex(texts_acc(q))))
    row = q("SELECT value FROM meta WHERE key=?", (SETUP_SEAL,))
    fmt = q("SELECT value FROM meta WHERE key='store_format'")
    if row and fmt:
        try:
            seal = json.loads(row[0][0])
        except (json.JSONDecodeError, TypeError):
            seal = None
        if isinstance(seal, dict):
            seal["store_format"] = result_hash(fmt[0][0])
            from .jsonio import dumps

            db.execute("UPDATE meta SET value=? WHERE key=?", (dumps(seal), SETUP_SEAL))
