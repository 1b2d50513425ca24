"""A guarded Mem0 ``Memory``: each ``add()`` is one update, judged by its effect on the user's probes.

Interception points (docs/integrations.md has what each version gets):

* **mem0ai 2.x** (tested: 2.2.1). ``add()`` is add-only: one extraction call, new memories inserted, nothing
  updated or deleted. The guard lets ``add()`` run, then compares the memory before and after. Mem0 has no revert
  API; a dropped update is erased: its memories deleted (``Memory.delete``, which also unlinks them from Mem0's
  entity store), their rows of Mem0's history table removed, and the conversation messages ``add()`` kept in its
  ``messages`` table (the "last messages" of the session that Mem0 puts into every later extraction prompt) removed,
  the older messages they pushed out of its ten-message window put back. Between ``add()`` and the decision the new
  memories are visible to other readers of the same store.
* **mem0ai 1.x** (tested: 1.0.11). The LLM chooses ADD, UPDATE, DELETE or NONE per fact and ``add()`` applies them
  through ``Memory._create_memory`` / ``_update_memory`` / ``_delete_memory``. The guard replaces those three on the
  instance for the duration of the call, so the events are staged, not applied; the candidate is the deployed memory
  with the staged events applied in a view, and only a committed update reaches the store (events in their order,
  through the original methods). An UPDATE or DELETE the guard drops never touched the store.

``update()`` and ``delete()`` called by the caller are passed through unguarded (they are the caller's own edits).
The memory text the controller sees is one line per memory (``- text``) sorted; the user's agent answers the probes
against a read-only :class:`Mem0View` (``search(query, limit)``, ``get_all()``), ranked by the Memory's own
embedder, built the same way for the deployed memory and the candidate.
"""
from __future__ import annotations

import importlib.metadata
import sqlite3
import threading
import uuid
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .core import GuardDecision, GuardError, Probe, WriteGuard

SUPPORTED = {1: "1.0.x (ADD/UPDATE/DELETE staged before they are applied)",
             2: "2.x (add-only; a dropped add() is reverted by deleting its ids)"}
_ALL = 10_000


def mem0_major() -> int:
    """The installed mem0ai's major version (ValueError for one the guard does not support)."""
    v = importlib.metadata.version("mem0ai")
    major = int(v.split(".")[0])
    if major not in SUPPORTED:
        raise ValueError(f"mem0ai {v} is not supported by the guard (supported: 1.0.x, 2.x)")
    return major


def render_memories(items: list[dict]) -> str:
    """``- text`` per memory, sorted by text then id: the same memories give the same text."""
    rows = sorted((str(m.get("memory", "")), str(m.get("id", ""))) for m in items)
    return "\n".join(f"- {t}" for t, _ in rows)


class Mem0View:
    """A read-only view of one Mem0 memory state (a list of ``{"id", "memory"}``) for the user's agent: ``search``
    ranks by cosine similarity under the Memory's embedder; a write raises PermissionError."""

    def __init__(self, items: list[dict], embed: Any, label: str):
        self.items = [dict(m) for m in items]
        self._embed = embed
        self.label = label

    def __repr__(self) -> str:
        return f"Mem0View({self.label}, {len(self.items)} memories)"

    def get_all(self, **_: Any) -> dict:
        return {"results": [dict(m) for m in self.items]}

    def search(self, query: str, *, limit: int = 5, top_k: int | None = None, **_: Any) -> dict:
        n = top_k if top_k is not None else limit
        if not self.items:
            return {"results": []}
        q = self._embed(query)
        scored = []
        for m in self.items:
            v = self._embed(str(m.get("memory", "")))
            scored.append((_cos(q, v), str(m.get("id", "")), m))
        scored.sort(key=lambda x: (-x[0], x[1]))
        return {"results": [{**m, "score": s} for s, _, m in scored[:n]]}

    def _readonly(self, *a: Any, **k: Any) -> Any:
        raise PermissionError(f"the {self.label} memory view is read-only: the agent tried to change it while it "
                              "answered a probe")

    add = update = delete = delete_all = reset = _readonly


def _cos(a: Any, b: Any) -> float:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    n = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / n if n > 0 else 0.0


class GuardedMemory:
    """``GuardedMemory(memory, guard)``: Mem0's ``Memory`` whose ``add()`` the guard commits or drops (module
    docstring). Other attributes are the Memory's own. ``add`` returns Mem0's result with a ``"guard"`` entry (the
    decision: accepted, reason, why); a dropped add's ``results`` list what was reverted or never applied."""

    def __init__(self, memory: Any, guard: WriteGuard):
        if not isinstance(guard, WriteGuard):
            raise TypeError(f"guard must be a WriteGuard, got {type(guard).__name__}")
        for name in ("add", "get_all", "delete"):
            if not callable(getattr(memory, name, None)):
                raise TypeError(f"GuardedMemory wraps a mem0 Memory; {type(memory).__name__} has no {name}()")
        self.memory = memory
        self.guard = guard
        self.major = mem0_major()
        if self.major >= 2:
            _history_db(memory)  # a dropped add() must be erasable from it: refuse a Memory whose db is unknown
        self._lock = threading.RLock()
        self._emb: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.memory, name)

    @property
    def decisions(self) -> list[GuardDecision]:
        return self.guard.decisions

    # ------------------------------------------------------------------ reading
    def _embed(self, text: str) -> Any:
        if text not in self._emb:
            self._emb[text] = self.memory.embedding_model.embed(text, "search")
        return self._emb[text]

    def _all(self, filters: dict) -> list[dict]:
        if self.major >= 2:
            res = self.memory.get_all(filters=dict(filters), top_k=_ALL)
        else:
            res = self.memory.get_all(**filters, limit=_ALL)
        items = res.get("results", []) if isinstance(res, dict) else list(res)
        keep = ("created_at", "updated_at", "metadata")
        return [{"id": str(m["id"]), "memory": m.get("memory", ""), **{k: m[k] for k in keep if m.get(k) is not None}}
                for m in items]

    # ------------------------------------------------------------------ add
    def add(self, messages: Any, *, user_id: str | None = None, agent_id: str | None = None,
            run_id: str | None = None, time: float | None = None, probe: Probe | None = None, **kw: Any) -> dict:
        """Mem0's ``add`` as one guarded update. ``time``: when the conversation happened (the probes' time rule);
        ``probe``: its query with the right answer (joins the probes)."""
        filters = {k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)) if v}
        if not filters:
            raise ValueError("add() needs one of user_id, agent_id or run_id (the memory the guard judges)")
        with self._lock, self.guard._lock:
            if self.major >= 2:
                return self._add_v2(messages, filters, time, probe, kw)
            return self._add_v1(messages, filters, time, probe, kw)

    def _decide(self, before: list[dict], after: list[dict], writes: list[dict], time: float | None,
                probe: Probe | None) -> GuardDecision:
        return self.guard.decide(old_text=render_memories(before), new_text=render_memories(after),
                                 old_view=Mem0View(before, self._embed, "deployed"),
                                 new_view=Mem0View(after, self._embed, "candidate"), writes=writes, time_=time,
                                 probe=probe)

    def _add_v2(self, messages: Any, filters: dict, time: float | None, probe: Probe | None, kw: dict) -> dict:
        before = self._all(filters)
        scope = _session_scope(filters)
        kept = _stored_messages(self.memory, scope)  # Mem0's message window of the session before this add()
        try:
            res = self.memory.add(messages, **filters, **kw)
        except BaseException as exc:
            # 2.2.1 inserts no memory when it raises, but may have stored the messages: those are erased. A memory
            # that appeared meanwhile cannot be told from another writer's (no result names this call's ids): none
            # is deleted, and the record says so
            note = ""
            try:
                known = {m["id"] for m in before}
                appeared = [m["id"] for m in self._all(filters) if m["id"] not in known]
                self._revert([], scope, kept, messages)
            except Exception as exc2:  # noqa: BLE001 - add()'s own error is the one raised; this one is recorded
                self._aborted(exc, [], f"; erasing what it left failed ({type(exc2).__name__}: {exc2})")
                raise exc  # noqa: B904 - add()'s own error (the clean-up's is its context)
            if appeared:
                note = (f"; {len(appeared)} memory(ies) appeared under this scope meanwhile "
                        f"({', '.join(sorted(appeared)[:5])}{' ...' if len(appeared) > 5 else ''}), not known to be "
                        "this add()'s (another writer's?): none deleted")
            self._aborted(exc, [], note)
            raise
        added = [r for r in (res.get("results") or []) if r.get("event", "ADD") == "ADD" and r.get("id")]
        writes = [{"op": "add", "id": str(r["id"]), "memory": r.get("memory", "")} for r in added]
        if not added:
            res["guard"] = _brief(self.guard.record_outcome(writes=[], reason="no_writes",
                                                            why="add() stored nothing", time_=time, accepted=True))
            return res
        try:
            after = self._all(filters)
            dec = self._decide(before, after, writes, time, probe)
        except BaseException as exc:
            self._revert(added, scope, kept, messages)
            if not isinstance(exc, Exception):  # KeyboardInterrupt, CancelledError ...: themselves, after the revert
                raise
            raise GuardError(f"the guard could not decide this add() ({type(exc).__name__}: {exc}); its "
                             f"{len(added)} memories were deleted again") from exc
        if not dec.accepted:
            self._revert(added, scope, kept, messages)
        res["guard"] = _brief(dec)
        return res

    def _aborted(self, exc: BaseException, staged: list[dict], note: str = "") -> None:
        """Record an add() that raised (Mem0 2.x: what it stored is erased; 1.x events were staged)."""
        self.guard.record_outcome(writes=[{k: v for k, v in s.items() if k != "call"} for s in staged],
                                  reason="aborted", why=f"add() raised ({type(exc).__name__}: {exc}); the guard "
                                                        f"applied none of its {len(staged)} staged write(s){note}")

    def _revert(self, added: list[dict], scope: str, kept: list[tuple], messages: Any) -> None:
        """Erase a dropped add(): its memories, their history rows, the messages it stored (module docstring)."""
        failed = []
        for r in added:
            try:
                self.memory.delete(r["id"])
            except Exception as exc:  # noqa: BLE001 - every id is tried; the failures are named together
                failed.append(f"{r['id']} ({type(exc).__name__}: {exc})")
        try:
            _erase_rows(self.memory, [str(r["id"]) for r in added], scope, kept, messages)
        except sqlite3.Error as exc:
            failed.append(f"Mem0's history and messages tables ({type(exc).__name__}: {exc})")
        if failed:
            raise GuardError("a dropped add() could not be reverted; these are still stored: " + ", ".join(failed))

    def _add_v1(self, messages: Any, filters: dict, time: float | None, probe: Probe | None, kw: dict) -> dict:
        mem = self.memory
        staged: list[dict] = []
        originals = {n: getattr(mem, n) for n in ("_create_memory", "_update_memory", "_delete_memory")}

        def create(data, existing_embeddings, metadata=None):
            sid = f"staged-{uuid.uuid4()}"
            staged.append({"op": "add", "id": sid, "memory": data,
                           "call": (data, existing_embeddings, metadata)})
            return sid

        def update(memory_id, data, existing_embeddings, metadata=None):
            staged.append({"op": "update", "id": str(memory_id), "memory": data,
                           "call": (memory_id, data, existing_embeddings, metadata)})
            return memory_id

        def delete(memory_id, existing_memory=None):
            staged.append({"op": "delete", "id": str(memory_id), "call": (memory_id, existing_memory)})
            return memory_id

        before = self._all(filters)
        mem._create_memory, mem._update_memory, mem._delete_memory = create, update, delete
        try:
            res = mem.add(messages, **filters, **kw)
        except BaseException as exc:
            self._aborted(exc, staged)
            raise
        finally:
            for n in originals:  # the instance's own methods back (the class's: remove the instance attribute)
                try:
                    delattr(mem, n)
                except AttributeError:
                    setattr(mem, n, originals[n])
        writes = [{k: v for k, v in s.items() if k != "call"} for s in staged]
        if not staged:
            res["guard"] = _brief(self.guard.record_outcome(writes=[], reason="no_writes",
                                                            why="add() chose no ADD, UPDATE or DELETE", time_=time,
                                                            accepted=True))
            return res
        after = {m["id"]: dict(m) for m in before}
        now = datetime.now(timezone.utc).isoformat()
        for s in staged:
            if s["op"] == "delete":
                after.pop(s["id"], None)
            else:
                after[s["id"]] = {**after.get(s["id"], {}), "id": s["id"], "memory": s["memory"], "updated_at": now}
        dec = self._decide(before, list(after.values()), writes, time, probe)
        if dec.accepted:
            ids = {}
            for s in staged:
                if s["op"] == "add":
                    ids[s["id"]] = originals["_create_memory"](*s["call"])
                elif s["op"] == "update":
                    originals["_update_memory"](*s["call"])
                else:
                    originals["_delete_memory"](*s["call"])
            for r in res.get("results") or []:
                if r.get("id") in ids:
                    r["id"] = ids[r["id"]]
        res["guard"] = _brief(dec)
        return res


def _history_db(memory: Any) -> Any:
    """Mem0 2.x's SQLite manager (``Memory.db``: its ``history`` and ``messages`` tables); TypeError when the
    Memory has another kind (the guard could not erase a dropped add() from it)."""
    db = getattr(memory, "db", None)
    conn = getattr(db, "connection", None)
    if not isinstance(conn, sqlite3.Connection) or getattr(db, "_lock", None) is None:
        raise TypeError(f"GuardedMemory needs Mem0's SQLite history store (Memory.db with a connection); "
                        f"{type(memory).__name__}.db is {type(db).__name__}: a dropped add() could not be erased")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    missing = {"history", "messages"} - tables
    if missing:
        raise TypeError(f"Mem0's history database lacks the table(s) {', '.join(sorted(missing))}: a dropped add() "
                        "could not be erased from it")
    return db


def _session_scope(filters: dict) -> str:
    """Mem0 2.x's key of a session's messages (``mem0.memory.main._build_session_scope``)."""
    from mem0.memory.main import _build_session_scope

    return str(_build_session_scope(filters))


_MSG_COLS = "id, session_scope, role, content, name, created_at"


def _stored_messages(memory: Any, scope: str) -> list[tuple]:
    db = _history_db(memory)
    with db._lock:
        return list(db.connection.execute(f"SELECT {_MSG_COLS} FROM messages WHERE session_scope = ?", (scope,)))


def _as_messages(messages: Any) -> list[dict]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, dict):
        return [messages]
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _erase_rows(memory: Any, ids: list[str], scope: str, kept: list[tuple], messages: Any) -> None:
    """In one transaction of Mem0's SQLite: drop the history rows of ``ids`` (fresh uuids: every row is this
    add()'s), drop the rows of ``messages`` that add() stored in ``scope`` (new since ``kept``, matched by role and
    content), put back the rows of ``kept`` it evicted."""
    db = _history_db(memory)
    ours = {(m.get("role"), m.get("content")) for m in _as_messages(messages)}
    known = {r[0] for r in kept}
    conn = db.connection
    with db._lock:
        conn.execute("BEGIN")
        try:
            now = list(conn.execute("SELECT id, role, content FROM messages WHERE session_scope = ?", (scope,)))
            new = [(r[0],) for r in now if r[0] not in known and (r[1], r[2]) in ours]
            conn.executemany("DELETE FROM messages WHERE id = ?", new)
            present = {r[0] for r in now}
            conn.executemany(f"INSERT INTO messages ({_MSG_COLS}) VALUES (?, ?, ?, ?, ?, ?)",
                             [r for r in kept if r[0] not in present])
            conn.executemany("DELETE FROM history WHERE memory_id = ?", [(i,) for i in ids])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _brief(dec: GuardDecision) -> dict:
    return {"update": dec.update, "accepted": dec.accepted, "reason": dec.reason, "why": dec.why}
