"""The method checkpoints of a run database: a base plus per-step operations. RunStore (store.py) owns the
transaction; this module decides what a step writes. RunReader.checkpoint replays it.

Tables (created by store.py): ``checkpoints`` (method -> base step + whole state, written once per process and method),
``checkpoint_ops`` (method, step, seq, path, op: the leaf operations of store/delta.py) and ``checkpoint_head``
(method -> last committed step). A set/remove op deletes the earlier ops at or below its path, so a value rewritten
every step occupies the database once.

Flat cost. Comparing the whole new checkpoint with the previous one costs time proportional to the state (thousands
of tasks, embedding matrices as base64), so the producers say what only grows: ``hints`` maps a key path of the
checkpoint to ``(token, stable)``, meaning "while ``token`` stays the same, the first ``stable`` items (list) or
characters (string) of this value do not change; ``stable=None``: the whole value does not change". The controller
(Janus.state_hints), the updaters' retrieval banks (Updater.snapshot_hints) and the loop (eval checkpoints) give them.
When the token of a path equals the one of the previous commit, the op for that path is taken from the tail alone
(appended items, or the string after its stable prefix) without comparing the rest; any other path, or a path whose
token changed (a bank restored by a rollback, a resumed controller), is compared as before (delta.diff). The on-disk
format is the same either way. ``JANUS_STORE_VERIFY=1`` (the tests set it) checks after every commit that the kept
state equals the checkpoint (and the stored rows the matrices), so a wrong hint fails loudly instead of being stored.

Embedding matrices handed over as ``RowsRef`` (janus_memory/rows.py) never enter the JSON: each becomes a small
placeholder and its new rows go to ``checkpoint_rows`` in the same transaction (store/ckpt_rows.py).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from . import chain as _C
from . import ckpt_rows as _rows
from . import delta as _delta
from .jsonio import dumps as _dumps

_MISSING = object()
Hints = dict  # {key path tuple: (token, stable items/characters or None)}


@dataclass
class Pending:
    """One step's checkpoint write, computed before the transaction: a new base (``base_json``) or ``ops``."""

    checkpoint: dict  # as stored: embedding matrices replaced by rows placeholders (store/ckpt_rows.py)
    hints: Hints
    base_json: str | None = None
    ops: list = field(default_factory=list)  # [(key path, stored op JSON, in-memory op or None)]
    refs: dict = field(default_factory=dict)  # {key path: RowsRef} of the checkpoint
    row_deletes: list = field(default_factory=list)  # [(path key, from idx)]
    row_inserts: list = field(default_factory=list)  # [(path key, idx, bytes)]


def _resolve(root: Any, path: tuple) -> Any:
    for k in path:
        if not isinstance(root, dict) or k not in root:
            return _MISSING
        root = root[k]
    return root


def pinned_ops(prev: Any, new: Any, hints: Hints, last: Hints) -> dict:
    """``{path: op or None}`` for the hinted paths whose token is unchanged since the previous commit (``last``) and
    whose previous value fits the stable length recorded then; other paths are left to delta.diff."""
    out: dict = {}
    for path, (tok, _stable) in hints.items():
        seen = last.get(path)
        if seen is None or seen[0] != tok:
            continue
        a, b = _resolve(prev, path), _resolve(new, path)
        if a is _MISSING or b is _MISSING:
            continue
        keep = seen[1]
        if keep is None:
            out[path] = None
        elif isinstance(a, list) and isinstance(b, (list, tuple)) and len(a) == keep <= len(b):
            out[path] = {"a": list(b[keep:])} if len(b) > keep else None
        elif isinstance(a, str) and isinstance(b, str) and keep <= min(len(a), len(b)):
            out[path] = None if a[keep:] == b[keep:] else {"k": keep, "t": b[keep:], _delta.NEW: b}
    return out


class CheckpointLog:
    """Writes the checkpoint tables of one open database ``db`` (the caller opens and commits the transaction)."""

    def __init__(self, db, *, verify: bool | None = None):
        self.db = db
        self.verify = os.environ.get("JANUS_STORE_VERIFY") == "1" if verify is None else verify
        self._ck: dict[str, Any] = {}      # method -> last stored checkpoint (JSON round-tripped; strings shared)
        self._hints: dict[str, Hints] = {}  # method -> the hints that came with it
        self._rows: dict[str, _rows.Seen] = {}  # method -> its matrices as last stored (token, n, array)

    def forget(self, method: str | None = None) -> None:
        """Start a new base at the next commit (of ``method``, or of every method)."""
        for d in (self._ck, self._hints, self._rows):
            d.pop(method, None) if method is not None else d.clear()

    def prepare(self, method: str, checkpoint: dict, hints: Hints | None = None) -> Pending:
        refs = _rows.find(checkpoint)
        ck = _rows.substitute(checkpoint, refs) if refs else checkpoint
        p = Pending(ck, dict(hints or {}), refs=refs)
        prev = self._ck.get(method)
        p.row_deletes, p.row_inserts = _rows.plan(None if prev is None else self._rows.get(method, {}), refs)
        if prev is None:
            p.base_json = _dumps(ck)
            return p
        pinned = pinned_ops(prev, ck, p.hints, self._hints.get(method, {})) if p.hints else None
        p.ops = [(keys, _dumps(_delta.stored(op)), _delta.in_memory(op))
                 for keys, op in _delta.ops(_delta.diff(prev, ck, pinned))]
        return p

    def write(self, method: str, step: int, p: Pending) -> None:
        """The SQL of one step, inside the caller's open transaction. The method's state seal (store/chain.py) gets
        the digest of every row written added and of every row deleted subtracted, in the same transaction (a new
        base replaces every row of the method: its seal starts again)."""
        new_base = p.base_json is not None
        acc = 0  # the change of the seal
        if new_base:  # first step this process commits for the method: a new base, older ops dropped
            self.db.execute("INSERT OR REPLACE INTO checkpoints(method, step, state) VALUES (?,?,?)",
                            (method, step, p.base_json))
            self.db.execute("DELETE FROM checkpoint_ops WHERE method=?", (method,))
            acc += _C.row_digest("checkpoints", method, step, p.base_json)
        else:
            old = self.db.execute("SELECT step FROM checkpoint_head WHERE method=?", (method,)).fetchone()
            if old is not None:
                acc -= _C.row_digest("checkpoint_head", method, old[0])
        for seq, (keys, op, _) in enumerate(p.ops):
            path = "".join(k + _delta.SEP for k in keys)
            if op.startswith(('{"s"', '{"x"')):  # a set/remove supersedes the earlier ops at or below its path
                where, args = ("method=? AND path>=? AND path<?", (method, path, path[:-1] + chr(ord(_delta.SEP) + 1))
                               ) if path else ("method=?", (method,))
                for row in self.db.execute(f"SELECT method, step, seq, path, op FROM checkpoint_ops WHERE {where}",
                                           args).fetchall():
                    acc -= _C.row_digest("checkpoint_ops", *row)
                self.db.execute(f"DELETE FROM checkpoint_ops WHERE {where}", args)
            self.db.execute("INSERT INTO checkpoint_ops(method, step, seq, path, op) VALUES (?,?,?,?,?)",
                            (method, step, seq, path, op))
            acc += _C.row_digest("checkpoint_ops", method, step, seq, path, op)
        acc += _rows.write(self.db, method, new_base, p.row_deletes, p.row_inserts)
        self.db.execute("INSERT OR REPLACE INTO checkpoint_head(method, step) VALUES (?,?)", (method, step))
        acc += _C.row_digest("checkpoint_head", method, step)
        _C.bump_acc(self.db, _C.ckpt_seal_name(method), acc, reset=new_base)

    def accept(self, method: str, p: Pending) -> None:
        """After COMMIT: the written checkpoint becomes the base of the next step's delta."""
        if p.base_json is not None:
            prev = json.loads(p.base_json)
        else:
            prev = self._ck[method]
            for keys, op, mem in p.ops:  # JSON round trip: nothing aliases the caller's objects (strings may)
                prev = _delta.apply_op(prev, keys, mem or json.loads(op))
        self._ck[method], self._hints[method], self._rows[method] = prev, p.hints, _rows.seen_after(p.refs)
        if self.verify and (_dumps(prev) != _dumps(p.checkpoint) or not self._rows_match(method, p.refs)):
            self.forget(method)
            raise AssertionError(f"checkpoint of {method}: the stored delta does not rebuild the state (wrong hint?)")
        if self.verify and _C.stored_acc(self._q, _C.ckpt_seal_name(method))[1] != _C.checkpoint_acc(self._q, method):
            raise AssertionError(f"checkpoint of {method}: its state seal does not match its rows")

    def _q(self, sql: str, args: tuple = ()) -> list:
        return self.db.execute(sql, args).fetchall()

    def _rows_match(self, method: str, refs: dict) -> bool:
        """Verify mode: the stored rows of every matrix are its rows (and no more)."""
        for path, ref in refs.items():
            got = self.db.execute("SELECT data FROM checkpoint_rows WHERE method=? AND path=? ORDER BY idx",
                                  (method, _rows.path_key(path))).fetchall()
            if b"".join(d for (d,) in got) != ref.array.astype("<f4").tobytes():
                return False
        return True

