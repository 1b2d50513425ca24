"""Memory and candidate texts in the run store (store format 3; database bytes per step flat).

Before format 3 the tables ``memories`` and ``candidates`` held the whole text of every deployed version and every
candidate, so an updater whose memory grows by appending (ReasoningBank's bank, ExpRAG, ACE ADDs) wrote its whole,
growing memory twice per step. From format 3 their ``text`` column is ``''`` and the text lives once, addressed by its
sha256, in table ``texts``:

* a text whose sha256 is already in ``texts`` is not stored again (a candidate equal to the deployed memory, a
  rollback to an earlier version);
* a new text is stored as a **delta** on a base the store has in hand (the previous deployed memory for a memory, the
  candidate's parent for a candidate): the common prefix and common suffix lengths, in code points, and the middle
  that replaces the base's middle (``text = base[:prefix] + middle + base[len(base) - suffix:]``). A common
  prefix/suffix split costs O(length) memory compares (done in slices by C code: 0.7 ms for 9 MB) and covers
  what the updaters do per step: append (RB, ExpRAG, ACE ADD), edit one place (ACE counters, DC edits), truncate or
  rewrite whole (then it is stored as a keyframe). It does not find two edits far apart in one step: the middle then
  spans both (still exact, only larger). difflib would find them but is quadratic on MB texts;
* every :data:`MAX_CHAIN` stored versions along a delta chain (and whenever the common part is less than half the
  new text) the text is a **keyframe**: the list of its chunks. Chunks are content-defined (a line whose CRC-32 is 0
  mod 16 ends a chunk once it holds :data:`MIN_CHUNK` code points; at most :data:`MAX_CHUNK`) and stored once each in
  table ``text_chunks`` under their sha256, so a keyframe writes only the chunks that changed since any earlier
  keyframe plus its list of chunk ids (8 bytes per ~5 KB). A whole-text snapshot every K deltas would cost
  size/K bytes per step: with a 10 MB memory and K = 64, 160 KB per step for a 1 KB append, the growth this format
  removes. Reading any version applies at most MAX_CHAIN - 1 deltas to one keyframe (never O(steps)).

Every text read back is checked against its sha256 (:class:`TextReader`); a missing or damaged row is
:class:`~janus_memory.errors.DamagedStoreError` naming the table, method and step. Rows written before format 3 keep
their text inline and are read (and checked) as they are. Nothing outside store/store.py writes these tables
(:class:`TextLog`, in the step's transaction); :func:`read_versions` is the one way to read them.
"""
from __future__ import annotations

import os
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import chain as _C
from .delta import common_prefix
from .jsonio import text_hash

MAX_CHAIN = 64           # a stored version is at most MAX_CHAIN - 1 deltas away from a keyframe
MIN_CHUNK = 4096         # code points: a chunk ends at a line end once it holds at least this many ...
MAX_CHUNK = 65536        # ... and at most this many (longer lines are cut at this length)
BOUNDARY_MOD = 16        # ... at a line whose CRC-32 (UTF-8) is 0 mod this (content-defined: edits do not shift them)
EMPTY_SHA = text_hash("")

SCHEMA = """
CREATE TABLE IF NOT EXISTS texts (sha256 TEXT PRIMARY KEY, base TEXT, prefix INTEGER NOT NULL, suffix INTEGER NOT NULL,
                                  middle TEXT, chunks BLOB, depth INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS text_chunks (id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE, text TEXT NOT NULL);
"""

Query = Callable[[str, tuple], list]


class Damaged(ValueError):
    """A stored text cannot be rebuilt (the reason; the caller names the row)."""


# ------------------------------------------------------------------ the delta
def _suffix_len(a: str, b: str, limit: int) -> int:
    """Length of the common suffix of ``a`` and ``b``, at most ``limit``."""
    la, lb = len(a), len(b)
    k, step = 0, 256
    while k < limit:
        j = min(limit, k + step)
        if a[la - j:la - k] != b[lb - j:lb - k]:
            lo, hi = k, j  # the first lo end characters agree, the first hi do not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if a[la - mid:la - lo] == b[lb - mid:lb - lo]:
                    lo = mid
                else:
                    hi = mid
            return lo
        k, step = j, min(step * 2, 1 << 20)
    return limit


def split(base: str, text: str) -> tuple[int, int, str]:
    """``(prefix, suffix, middle)`` with ``text == base[:prefix] + middle + base[len(base) - suffix:]``; prefix and
    suffix are the longest common prefix and then the longest common suffix of what remains (they never overlap)."""
    p = common_prefix(base, text)
    s = _suffix_len(base, text, min(len(base), len(text)) - p)
    return p, s, text[p:len(text) - s]


def apply(base: str, prefix: int, suffix: int, middle: str) -> str:
    if not (0 <= prefix and 0 <= suffix and prefix + suffix <= len(base)):
        raise Damaged(f"a delta (prefix {prefix}, suffix {suffix}) does not fit its base of {len(base)} characters")
    return base[:prefix] + middle + base[len(base) - suffix:]


# ------------------------------------------------------------------ keyframes: content-defined chunks
def chunks(text: str) -> list[str]:
    """``text`` cut into chunks (``"".join(chunks(t)) == t``): a chunk ends at the end of a line whose CRC-32 is 0 mod
    BOUNDARY_MOD once it holds MIN_CHUNK code points, or at MAX_CHUNK. The cuts depend on the lines' content, so an
    edit changes the chunks around it only."""
    out: list[str] = []
    start = pos = 0
    for line in text.splitlines(keepends=True):
        pos += len(line)
        while pos - start > MAX_CHUNK:  # a very long line (or a chunk without a boundary): cut at MAX_CHUNK
            out.append(text[start:start + MAX_CHUNK])
            start += MAX_CHUNK
        if pos - start >= MIN_CHUNK and zlib.crc32(line.encode("utf-8")) % BOUNDARY_MOD == 0:
            out.append(text[start:pos])
            start = pos
    if start < len(text):
        out.append(text[start:])
    return out


def pack_ids(ids: list[int]) -> bytes:
    return np.asarray(ids, dtype="<i8").tobytes()


def unpack_ids(blob: Any) -> list[int]:
    if not isinstance(blob, bytes) or len(blob) % 8:
        raise Damaged("a keyframe's chunk list is malformed")
    return np.frombuffer(blob, dtype="<i8").tolist()


# ------------------------------------------------------------------ writing (store/store.py only)
class TextLog:
    """Writes table ``texts`` (and ``text_chunks``) inside the store's open transaction. ``JANUS_STORE_VERIFY=1``
    (the tests set it) reads every new text back through :class:`TextReader` before the commit."""

    def __init__(self, db, *, verify: bool | None = None):
        self.db = db
        self.verify = os.environ.get("JANUS_STORE_VERIFY") == "1" if verify is None else verify

    def depth(self, sha: str) -> int | None:
        """The stored text's distance from its keyframe; None when ``sha`` is not in ``texts``."""
        row = self.db.execute("SELECT depth FROM texts WHERE sha256=?", (sha,)).fetchone()
        return None if row is None else int(row[0])

    def put(self, sha: str, text: str, base: tuple[str, str, int | None] | None) -> int:
        """Store ``text`` (its sha256 is ``sha``) unless it is stored; as a delta on ``base`` = (sha256, text, depth)
        when the base is stored (depth not None), the chain stays under MAX_CHAIN and at least half of the text (and
        something) is in common with the base; else as a keyframe. Returns the stored text's depth."""
        have = self.depth(sha)
        if have is not None:
            return have
        self._added = 0
        depth = self._put(sha, text, base)
        _C.bump_acc(self.db, _C.TEXTS_SEAL, self._added)  # the texts' state seal (store/chain.py), same transaction
        if self.verify:
            query = lambda q, a: self.db.execute(q, a).fetchall()  # noqa: E731
            if TextReader(query, keep=0).text(sha) != text:
                raise AssertionError(f"text {sha[:12]} does not read back as written")
            if _C.stored_acc(query, _C.TEXTS_SEAL)[1] != _C.texts_acc(query):
                raise AssertionError("the texts' state seal does not match their rows")
        return depth

    def _put(self, sha: str, text: str, base: tuple[str, str, int | None] | None) -> int:
        if base is not None and base[2] is not None and base[2] + 1 < MAX_CHAIN:
            p, s, middle = split(base[1], text)
            if p + s > 0 and 2 * (p + s) >= len(text):
                self._insert(sha, base[0], p, s, middle, None, base[2] + 1)
                return base[2] + 1
        ids = [self._chunk_id(c) for c in chunks(text)]
        self._insert(sha, None, 0, 0, None, pack_ids(ids), 0)
        return 0

    def _insert(self, *row) -> None:
        self.db.execute("INSERT INTO texts(sha256, base, prefix, suffix, middle, chunks, depth) VALUES (?,?,?,?,?,?,?)",
                        row)
        self._added += _C.row_digest("texts", *row)

    def _chunk_id(self, chunk: str) -> int:
        h = text_hash(chunk)
        row = self.db.execute("SELECT id FROM text_chunks WHERE sha256=?", (h,)).fetchone()
        if row is not None:
            return int(row[0])
        cid = int(self.db.execute("INSERT INTO text_chunks(sha256, text) VALUES (?,?)", (h, chunk)).lastrowid)
        self._added += _C.row_digest("text_chunks", cid, h, chunk)
        return cid


# ------------------------------------------------------------------ reading
class TextReader:
    """Rebuilds stored texts by sha256 through ``query(sql, args) -> rows`` (one connection), each checked against
    its sha256. Keeps the last few rebuilt texts, so reading the versions of a run in order applies one delta each."""

    def __init__(self, query: Query, keep: int = 4):
        self.query, self.keep = query, keep
        self.cache: OrderedDict[str, str] = OrderedDict()

    def text(self, sha: str) -> str:
        """The text stored under ``sha``. Raises Damaged (the reason) when it is missing or does not rebuild."""
        if sha in self.cache:
            self.cache.move_to_end(sha)
            return self.cache[sha]
        chain: list[tuple[int, int, str]] = []
        cur = sha
        while cur not in self.cache:
            rows = self.query("SELECT base, prefix, suffix, middle, chunks FROM texts WHERE sha256=?", (cur,))
            if not rows:
                raise Damaged(f"text {cur[:12]} is not stored" if cur == sha else f"the base {cur[:12]} of its delta "
                              "chain is not stored")
            base, p, s, middle, blob = rows[0]
            if base is None:
                text = self._keyframe(blob)
                break
            if len(chain) >= MAX_CHAIN or not isinstance(middle, str):
                raise Damaged("its delta chain is malformed" if isinstance(middle, str) else "a delta has no text")
            chain.append((int(p), int(s), middle))
            cur = base
        else:
            text = self.cache[cur]
        for p, s, middle in reversed(chain):
            text = apply(text, p, s, middle)
        if text_hash(text) != sha:
            raise Damaged(f"the rebuilt text does not match its sha256 {sha[:12]}")
        self.cache[sha] = text
        while len(self.cache) > self.keep:
            self.cache.popitem(last=False)
        return text

    def _keyframe(self, blob) -> str:
        ids = unpack_ids(blob)
        got: dict[int, str] = {}
        for i in range(0, len(ids), 500):
            part = sorted(set(ids[i:i + 500]))
            got.update(self.query(f"SELECT id, text FROM text_chunks WHERE id IN ({','.join('?' * len(part))})",
                                  tuple(part)))
        missing = [i for i in ids if i not in got]
        if missing:
            raise Damaged(f"{len(missing)} of the {len(ids)} chunks of its keyframe are not stored")
        return "".join(got[i] for i in ids)


def read_versions(query: Query, table: str, *, method: str | None = None, last: bool = False, text: bool = True,
                  reader: TextReader | None = None, on_damage: Callable[[str, str, int, str], Exception] | None = None
                  ) -> Iterator[dict]:
    """The rows of ``table`` ("memories" or "candidates") in (method, step) order, each a dict with ``method, step,
    sha256, parent`` (+ ``rejected`` for candidates) and, with ``text``, the text: inline (rows before format 3,
    checked against their sha256) or rebuilt from ``texts``. ``last``: only the newest row of ``method``.
    ``on_damage(table, method, step, reason)`` makes the exception raised for a row that does not read back."""
    if table not in ("memories", "candidates"):
        raise ValueError(table)
    cols = "method, step, sha256, parent, text" + (", rejected" if table == "candidates" else "")
    sql = f"SELECT {cols} FROM {table}"
    args: tuple = ()
    if method is not None:
        sql, args = sql + " WHERE method=?", (method,)
    sql += " ORDER BY step DESC LIMIT 1" if last else " ORDER BY method, step"
    reader = reader or TextReader(query)
    for row in query(sql, args):
        m, step, sha, parent, inline = row[:5]
        out = {"method": m, "step": int(step), "sha256": sha, "parent": parent}
        if table == "candidates":
            out["rejected"] = row[5]
        if text:
            try:
                out["text"] = row_text(reader, sha, inline)
            except Damaged as e:
                if on_damage is None:
                    raise
                raise on_damage(table, m, int(step), str(e)) from None
        yield out


def row_text(reader: TextReader, sha: str, inline: Any) -> str:
    """The text of one memories/candidates row: its inline text (before format 3) or the stored one; checked."""
    if isinstance(inline, str) and inline:
        if text_hash(inline) != sha:
            raise Damaged(f"its text does not match its sha256 {str(sha)[:12]}")
        return inline
    if sha == EMPTY_SHA:
        return ""
    if not isinstance(sha, str):
        raise Damaged("its sha256 is missing")
    return reader.text(sha)


def unstored(query: Query, method: str) -> list[tuple[str, int]]:
    """(table, step) of the rows of ``method`` whose text is neither inline nor in ``texts``, and of rows whose delta
    chain's base is missing: what a deleted row leaves (checked by store/integrity.py without rebuilding texts)."""
    out = []
    for table in ("memories", "candidates"):
        out += [(table, int(s)) for (s,) in query(
            f"SELECT step FROM {table} t WHERE method=? AND text='' AND sha256<>? AND NOT EXISTS "
            f"(SELECT 1 FROM texts x WHERE x.sha256=t.sha256) ORDER BY step", (method, EMPTY_SHA))]
        out += [(table, int(s)) for (s,) in query(
            f"SELECT t.step FROM {table} t JOIN texts x ON x.sha256=t.sha256 WHERE t.method=? AND x.base IS NOT NULL "
            f"AND NOT EXISTS (SELECT 1 FROM texts b WHERE b.sha256=x.base) ORDER BY t.step", (method,))]
    return sorted(set(out), key=lambda r: (r[0] != "memories", r[1]))


def damage_error(db_path) -> Callable[[str, str, int, str], Exception]:
    """``on_damage`` for :func:`read_versions`: a one-line DamagedStoreError naming the database, row and reason."""
    from ..errors import DamagedStoreError

    def make(table: str, method: str, step: int, reason: str) -> Exception:
        kind = "memory" if table == "memories" else "candidate"
        return DamagedStoreError(f"{db_path}: the {kind} text of {method} at step {step} does not read back "
                                 f"({reason}); the database is damaged")
    return make


def damaged_text(query: Callable[..., list], methods: list[str]) -> str:
    """Which stored text does not read back: 'the memory text of M at step S (reason)'; '' when each reads back
    (a row added, or one no memory or candidate uses)."""
    reader = TextReader(query)
    for method in methods:
        missing = unstored(query, method)
        for table in ("memories", "candidates"):
            kind = "memory" if table == "memories" else "candidate"
            for tbl, step in missing:
                if tbl == table:
                    return f"the {kind} text of {method} at step {step} is not stored"
            for step, sha, inline in query(f"SELECT step, sha256, text FROM {table} WHERE method=? ORDER BY step",
                                           (method,)):
                try:
                    row_text(reader, sha, inline)
                except Damaged as e:
                    return f"the {kind} text of {method} at step {step} does not read back ({e})"
    return ""
