"""Embedding matrices of a checkpoint as rows in a side table (per-step store cost flat in the step count).

A checkpoint in the store's form (run/loop.py) holds its append-only float32 matrices (the controller's task
embeddings, the retrieval banks') as :class:`~janus_memory.rows.RowsRef` handles at key paths (reached through dicts
only). store/ckpt_log.py replaces each by a small placeholder ``{"__janus_rows__": [n, dim, form]}`` in the JSON it
stores, and this module writes the matrix's rows to table ``checkpoint_rows`` (method, path, idx, little-endian float32
bytes), in the same transaction as the step:

* the first commit of a process (a new base): every row of every matrix (once per process and method);
* later commits: the rows appended since the previous commit when the producer's token is unchanged; else (a bank
  restored by a rollback) the rows from the first one that differs from what was stored; rows of a path no longer in
  the checkpoint are deleted.

RunReader.checkpoint rebuilds each placeholder from the rows (:func:`rebuild`) into the plain JSON form, so resuming
reads exactly what ``by_reference=False`` would have stored. Folders written before (format 1, no rows) hold the
plain form and load unchanged.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..rows import FORMS, RowsRef, encode_form
from .delta import SEP

KEY = "__janus_rows__"  # the placeholder's one key: [n rows, dim, form]
STORE_FORMAT = 5        # meta 'store_format': 1 (absent) = matrices inline as base64; 2 = checkpoint_rows;
                        # 3 = memory/candidate texts once each, as deltas (table texts, store/text_log.py);
                        # 4 = a hash chain of each method's committed rows (tables chain, seals: store/chain.py);
                        # 5 = the texts and each checkpoint sealed too (table state_seals), and chains and seals
                        #     required: their absence is damage, not an older folder (store/chain.py)
Path = tuple            # a key path (tuple of dict keys)
Seen = dict             # {key path: (token, n, array)} of the last committed checkpoint


def path_key(path: Path) -> str:
    """The key path as stored (the ``path`` column of checkpoint_ops / checkpoint_rows)."""
    return "".join(k + SEP for k in path)


def find(ck: dict) -> dict[Path, RowsRef]:
    """The RowsRef handles of ``ck`` by key path (walks dicts only: the handles sit in dicts; lists are not entered,
    so the cost does not grow with task or record lists)."""
    out: dict[Path, RowsRef] = {}
    stack: list[tuple[Path, dict]] = [((), ck)]
    while stack:
        path, node = stack.pop()
        for k, v in node.items():
            if isinstance(v, RowsRef):
                out[path + (k,)] = v
            elif isinstance(v, dict):
                stack.append((path + (k,), v))
    return out


def substitute(ck: dict, refs: dict[Path, RowsRef]) -> dict:
    """``ck`` with each handle replaced by its placeholder; only the dicts on the way to a handle are copied."""
    out = dict(ck)
    for path, ref in refs.items():
        node = out
        for k in path[:-1]:
            node[k] = node = dict(node[k])
        node[path[-1]] = {KEY: [ref.n, ref.dim, ref.form]}
    return out


def common_rows(a: np.ndarray, b: np.ndarray) -> int:
    """How many leading rows of ``a`` and ``b`` are bit-identical."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        return 0
    m = min(a.shape[0], b.shape[0])
    same = (np.ascontiguousarray(a[:m], dtype="<f4").view("<u4") ==
            np.ascontiguousarray(b[:m], dtype="<f4").view("<u4")).all(axis=1)
    return m if bool(same.all()) else int(np.argmin(same))


def plan(seen: Seen | None, refs: dict[Path, RowsRef]) -> tuple[list, list]:
    """``(deletes, inserts)`` of one commit: deletes ``[(path key, from idx)]``, inserts ``[(path key, idx, bytes)]``.
    ``seen``: the matrices of the previous commit in this process, None for a new base (every row is written)."""
    deletes: list[tuple[str, int]] = []
    inserts: list[tuple[str, int, bytes]] = []
    for path, ref in refs.items():
        key, old = path_key(path), (seen or {}).get(path)
        if seen is None:
            start = 0
        elif old is None:
            start = 0
            deletes.append((key, 0))
        elif old[0] is ref.token and ref.n >= old[1]:
            start = old[1]  # only grew: the new rows, nothing compared
        else:
            start = common_rows(old[2], ref.array)
            deletes.append((key, start))
        inserts += [(key, i, ref.row_bytes(i)) for i in range(start, ref.n)]
    deletes += [(path_key(p), 0) for p in (seen or {}) if p not in refs]
    return deletes, inserts


def write(db, method: str, new_base: bool, deletes: list, inserts: list) -> int:
    """The row SQL of one commit, inside the caller's transaction. Returns the change of the method's state seal
    (store/chain.py): the digests of the rows written, less those of the rows deleted or replaced (a new base
    deletes every row of the method: its seal starts again, see CheckpointLog.write)."""
    from .chain import row_digest

    acc = 0
    if new_base:
        db.execute("DELETE FROM checkpoint_rows WHERE method=?", (method,))
    for key, start in deletes:
        for row in db.execute("SELECT method, path, idx, data FROM checkpoint_rows "
                              "WHERE method=? AND path=? AND idx>=?", (method, key, start)).fetchall():
            acc -= row_digest("checkpoint_rows", *row)
        db.execute("DELETE FROM checkpoint_rows WHERE method=? AND path=? AND idx>=?", (method, key, start))
    for key, i, data in inserts:
        if not new_base:  # a row replaced (not expected: the deletes above clear the rows from where they differ)
            old = db.execute("SELECT data FROM checkpoint_rows WHERE method=? AND path=? AND idx=?",
                             (method, key, i)).fetchone()
            if old is not None:
                acc -= row_digest("checkpoint_rows", method, key, i, old[0])
        db.execute("INSERT OR REPLACE INTO checkpoint_rows(method, path, idx, data) VALUES (?,?,?,?)",
                   (method, key, i, data))
        acc += row_digest("checkpoint_rows", method, key, i, data)
    return acc


def seen_after(refs: dict[Path, RowsRef]) -> Seen:
    return {p: (r.token, r.n, r.array) for p, r in refs.items()}


def rebuild(state: dict, fetch: Callable[[str, int], list[tuple[int, bytes]]]) -> dict:
    """Replace every placeholder of ``state`` (in place) by its plain JSON form, built from ``fetch(path key, n)``
    (the stored rows ``idx < n`` in order). Raises ValueError naming the path when the rows do not fit."""
    stack: list[tuple[Path, dict]] = [((), state)]
    while stack:
        path, node = stack.pop()
        for k, v in node.items():
            if not isinstance(v, dict):
                continue
            if KEY in v:
                node[k] = _decode(v, path + (k,), fetch)
            else:
                stack.append((path + (k,), v))
    return state


def _decode(ph: dict, path: Path, fetch) -> Any:
    where = "/".join(path)
    spec = ph[KEY]
    if (len(ph) != 1 or not isinstance(spec, list) or len(spec) != 3 or spec[2] not in FORMS
            or not all(type(x) is int and x >= 0 for x in spec[:2])):
        raise ValueError(f"the rows placeholder at {where} is malformed")
    n, dim, form = spec
    got = fetch(path_key(path), n)
    if len(got) != n or any(i != j or not isinstance(data, bytes) or len(data) != 4 * dim
                            for j, (i, data) in enumerate(got)):
        raise ValueError(f"the stored rows of {where} are missing or damaged ({len(got)} of {n} rows readable)")
    return encode_form(b"".join(data for _, data in got), n, dim, form)
