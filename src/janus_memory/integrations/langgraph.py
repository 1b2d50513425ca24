"""A guarded LangGraph store: wraps any ``BaseStore`` and lets an update's writes reach it only when the Janus guard
commits them (LangMem's memory managers write through such a store).

Interception point: ``BaseStore.batch`` / ``abatch``, the only two abstract methods; ``put``/``aput``, ``delete``/
``adelete`` arrive there as ``PutOp`` (a delete is a ``PutOp`` whose value is None). Reads (``GetOp``, ``SearchOp``,
``ListNamespacesOp``) go to the wrapped store: they see the deployed memory, also while an update is staged.

One update is the writes made inside ``with store.update(): ...`` / ``async with store.update(): ...`` (one memory
manager call: :meth:`GuardedStore.guard_manager` wraps ``invoke``/``ainvoke`` in one), or, outside any update, one
``batch`` call holding puts. A write made after its block ended, by an asyncio task, a copied context or a thread
started inside it, is not lost: that ``batch`` is an update of its own, like a write outside any block. The
update's writes are staged in memory; when the block ends the guard compares the
deployed memory with the candidate (deployed + staged writes) on the probes and commits the writes in one ``batch``
of the wrapped store, or drops them. An exception inside the block drops them (nothing was applied). A commit the
wrapped store fails part-way is undone key by key (the values read before the commit are put back).

The memory the controller sees is the text of every item under the namespaces the update writes to (their
"scope"), one line per item sorted by namespace and key, value as sorted-key JSON: the same store gives the same
text. The user's agent answers the probes against a read-only :class:`StoreView` of the deployed memory or of the
candidate; inside the scope both are in-memory copies (``InMemoryStore`` with the wrapped store's index settings,
so the old and the candidate are searched alike), outside it reads go to the wrapped store.

Tested against langgraph 1.2.24 (``InMemoryStore``, ``SqliteStore`` of langgraph-checkpoint-sqlite 3.1.2) and
langmem 0.0.30 (docs/integrations.md).
"""
from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from langgraph.store.base import BaseStore, GetOp, Item, ListNamespacesOp, Op, PutOp, Result, SearchItem, SearchOp
from langgraph.store.memory import InMemoryStore

from .core import GuardDecision, GuardError, Probe, WriteGuard

_PAGE = 1000


@dataclass
class _Update:
    store: GuardedStore
    time: float | None = None
    probe: Probe | None = None
    ops: list[PutOp] = field(default_factory=list)
    decision: GuardDecision | None = None
    closed: bool = False  # the block has ended: its writes are taken; a later write is an update of its own
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, ops: list[PutOp]) -> bool:
        """Stage ``ops`` in this update; False when it has ended (a task or a copied context started inside the
        block writes after it: the caller makes those writes an update of their own)."""
        with self.lock:
            if self.closed:
                return False
            self.ops.extend(ops)
            return True

    def close(self) -> None:
        with self.lock:
            self.closed = True


_CURRENT: contextvars.ContextVar[_Update | None] = contextvars.ContextVar("janus_guard_update", default=None)


def render_items(items: Iterable[Item]) -> str:
    """The deterministic text of a set of items: ``[ns/ns] key: {sorted-key JSON}`` per line, sorted."""
    lines = []
    for it in items:
        ns = "/".join(it.namespace)
        lines.append((tuple(it.namespace), it.key,
                      f"[{ns}] {it.key}: {json.dumps(it.value, sort_keys=True, ensure_ascii=False, default=str)}"))
    lines.sort(key=lambda x: (x[0], x[1]))
    return "\n".join(x[2] for x in lines)


def _within(ns: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return tuple(ns[:len(prefix)]) == tuple(prefix)


class GuardedStore(BaseStore):
    """``GuardedStore(store, guard)``: a ``BaseStore`` whose writes the guard commits or drops (module docstring).

    ``guard`` is a :class:`~janus_memory.integrations.core.WriteGuard` whose ``answer(query, view)`` receives a
    :class:`StoreView`. ``index``: the index settings of the views' in-memory copies (default: the wrapped store's
    ``index_config``, so a semantic search ranks as the user's store does).
    """

    supports_ttl = False

    def __init__(self, store: BaseStore, guard: WriteGuard, *, index: dict | None = None):
        if not isinstance(store, BaseStore):
            raise TypeError(f"GuardedStore wraps a langgraph BaseStore, got {type(store).__name__}")
        if not isinstance(guard, WriteGuard):
            raise TypeError(f"guard must be a WriteGuard, got {type(guard).__name__}")
        self.store = store
        self.guard = guard
        self.index = index if index is not None else _index_of(store)

    # ------------------------------------------------------------------ updates
    def update(self, *, time: float | None = None, probe: Probe | None = None) -> _UpdateBlock:
        """``with store.update(): ...`` or ``async with store.update(): ...``: the writes inside are one update.
        ``time``: when the conversation happened (probes' time rule); ``probe``: its query with the right answer.
        The block's ``decision`` attribute holds the guard's decision once it ends."""
        return _UpdateBlock(self, time, probe)

    def guard_manager(self, manager: Any, *, time: float | None = None) -> _GuardedRunnable:
        """A LangMem memory manager (any runnable with ``invoke``/``ainvoke``) whose every call is one update."""
        return _GuardedRunnable(self, manager, time)

    @property
    def decisions(self) -> list[GuardDecision]:
        return self.guard.decisions

    # ------------------------------------------------------------------ BaseStore
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        puts = _puts(ops)
        upd = _CURRENT.get()
        if upd is not None and upd.store is self:
            out = self._read(ops)
            if upd.take(puts):
                return out
        elif not puts:
            return self.store.batch(ops)
        else:
            out = self._read(ops)
        own = _Update(self)  # writes outside an update block (or after theirs ended): this batch is one update
        own.take(puts)
        self._finish(own, None)
        return out

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        puts = _puts(ops)
        upd = _CURRENT.get()
        if upd is not None and upd.store is self:
            out = await self._aread(ops)
            if upd.take(puts):
                return out
        elif not puts:
            return await self.store.abatch(ops)
        else:
            out = await self._aread(ops)
        own = _Update(self)
        own.take(puts)
        await self._afinish(own, None)
        return out

    def _read(self, ops: list[Op]) -> list[Result]:
        """The batch's reads answered by the wrapped store (the deployed memory); None in the puts' places."""
        reads = [(i, op) for i, op in enumerate(ops) if not isinstance(op, PutOp)]
        got = self.store.batch([op for _, op in reads]) if reads else []
        out: list[Result] = [None] * len(ops)
        for (i, _), r in zip(reads, got):
            out[i] = r
        return out

    async def _aread(self, ops: list[Op]) -> list[Result]:
        reads = [(i, op) for i, op in enumerate(ops) if not isinstance(op, PutOp)]
        got = await self.store.abatch([op for _, op in reads]) if reads else []
        out: list[Result] = [None] * len(ops)
        for (i, _), r in zip(reads, got):
            out[i] = r
        return out

    # ------------------------------------------------------------------ deciding and committing
    def _finish(self, upd: _Update, loop: asyncio.AbstractEventLoop | None) -> GuardDecision:
        """Decide ``upd`` and apply its writes when committed (one decision at a time: the guard's lock)."""
        with self.guard._lock:
            writes = [_describe(op) for op in upd.ops]
            if not upd.ops:
                dec = self.guard.record_outcome(writes=[], reason="no_writes", why="nothing to write", accepted=True,
                                                time_=upd.time)
                upd.decision = dec
                return dec
            scopes = sorted({tuple(op.namespace) for op in upd.ops})
            deployed = self._items(scopes)
            candidate = _apply(deployed, upd.ops)
            old_text, new_text = render_items(deployed.values()), render_items(candidate.values())
            old_view = StoreView(self.store, scopes, deployed, self.index, "deployed")
            new_view = StoreView(self.store, scopes, candidate, self.index, "candidate")
            dec = self.guard.decide(old_text=old_text, new_text=new_text, old_view=old_view, new_view=new_view,
                                    writes=writes, time_=upd.time, probe=upd.probe, loop=loop)
            upd.decision = dec
            if dec.accepted:
                self._commit(upd, dec)
            return dec

    async def _afinish(self, upd: _Update, _unused: Any) -> GuardDecision:
        loop = asyncio.get_running_loop()
        return await asyncio.to_thread(self._finish, upd, loop)

    def _commit(self, upd: _Update, dec: GuardDecision) -> None:
        """Apply the staged writes in one batch; on failure put back what was there (GuardError says so)."""
        keys = list(dict.fromkeys((tuple(op.namespace), op.key) for op in upd.ops))
        before = self.store.batch([GetOp(ns, k, refresh_ttl=False) for ns, k in keys])
        try:
            self.store.batch(list(upd.ops))
        except Exception as exc:
            undo = [PutOp(ns, k, None if it is None else cast(Item, it).value) for (ns, k), it in zip(keys, before)]
            try:
                self.store.batch(undo)
                state = "the keys it touched were put back as they were"
            except Exception as exc2:  # noqa: BLE001 - reported below, with the first error
                state = f"putting the keys back failed too ({type(exc2).__name__}: {exc2}); check the store"
            self.guard.amend_last(dec, accepted=False, reason="commit_failed",
                                  why=f"dropped: the store failed while the writes were applied "
                                      f"({type(exc).__name__}: {exc}); {state}")
            raise GuardError(f"the guarded store could not apply update {dec.update} "
                             f"({type(exc).__name__}: {exc}); {state}") from exc

    def _items(self, scopes: list[tuple[str, ...]]) -> dict[tuple[tuple[str, ...], str], Item]:
        """Every item of the wrapped store under the scopes (the deployed memory the update is judged on)."""
        out: dict[tuple[tuple[str, ...], str], Item] = {}
        for ns in scopes:
            offset = 0
            while True:
                page = cast(list[SearchItem], self.store.batch([SearchOp(ns, None, _PAGE, offset, None, False)])[0])
                for it in page:
                    out[(tuple(it.namespace), it.key)] = it
                if len(page) < _PAGE:
                    break
                offset += _PAGE
        return out


def _puts(ops: list[Op]) -> list[PutOp]:
    """The batch's writes, each checked (a bad one raises before anything is staged or read)."""
    puts = [op for op in ops if isinstance(op, PutOp)]
    for op in puts:
        _check_put(op)
    return puts


def _check_put(op: PutOp) -> None:
    if not isinstance(op.namespace, tuple) or not all(isinstance(x, str) for x in op.namespace):
        raise ValueError(f"a put's namespace must be a tuple of strings, got {op.namespace!r}")
    if not isinstance(op.key, str):
        raise ValueError(f"a put's key must be a string, got {op.key!r}")
    if op.value is not None and not isinstance(op.value, dict):
        raise ValueError(f"a put's value must be a dict or None (a delete), got {type(op.value).__name__}")


def _describe(op: PutOp) -> dict:
    if op.value is None:
        return {"op": "delete", "namespace": list(op.namespace), "key": op.key}
    return {"op": "put", "namespace": list(op.namespace), "key": op.key, "value": op.value}


def _apply(items: dict, ops: list[PutOp]) -> dict:
    """``items`` with the puts applied in order (a None value deletes)."""
    from datetime import datetime, timezone

    out = dict(items)
    now = datetime.now(timezone.utc)
    for op in ops:
        k = (tuple(op.namespace), op.key)
        if op.value is None:
            out.pop(k, None)
        else:
            prev = out.get(k)
            out[k] = Item(value=dict(op.value), key=op.key, namespace=tuple(op.namespace),
                          created_at=prev.created_at if prev is not None else now, updated_at=now)
    return out


def _index_of(store: BaseStore) -> dict | None:
    cfg = getattr(store, "index_config", None)
    emb = getattr(store, "embeddings", None)
    if not cfg or emb is None:
        return None
    return {"dims": cfg["dims"], "embed": emb, "fields": cfg.get("fields") or ["$"]}


class StoreView(BaseStore):
    """A read-only view of one memory (the deployed one or a candidate) for the user's agent: inside the scope an
    in-memory copy, outside it the wrapped store. A write raises PermissionError."""

    def __init__(self, base: BaseStore, scopes: list[tuple[str, ...]], items: dict, index: dict | None, label: str):
        self.base = base
        self.scopes = scopes
        self.label = label
        self.copy = InMemoryStore(index=cast(Any, index)) if index else InMemoryStore()
        for it in items.values():  # one put per batch: InMemoryStore (1.2.24) fails a batch in which two items
            self.copy.batch([PutOp(it.namespace, it.key, it.value)])  # share a text to embed

    def __repr__(self) -> str:
        return f"StoreView({self.label}, scopes={self.scopes})"

    def _inside(self, ns: tuple[str, ...]) -> bool:
        return any(_within(ns, s) for s in self.scopes)

    def _spans(self, prefix: tuple[str, ...]) -> bool:
        return any(_within(s, prefix) for s in self.scopes)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)

    def _one(self, op: Op) -> Result:
        if isinstance(op, PutOp):
            raise PermissionError(f"the {self.label} memory view is read-only: the agent tried to write "
                                  f"{'/'.join(op.namespace)}/{op.key} while it answered a probe")
        if isinstance(op, GetOp):
            src = self.copy if self._inside(op.namespace) else self.base
            return src.batch([op])[0]
        if isinstance(op, SearchOp):
            if self._inside(op.namespace_prefix):
                return self.copy.batch([op])[0]
            if not self._spans(op.namespace_prefix):
                return self.base.batch([op])[0]
            wide = SearchOp(op.namespace_prefix, op.filter, op.limit + op.offset, 0, op.query, False)
            mine = cast(list[SearchItem], self.copy.batch([wide])[0])
            theirs = [it for it in cast(list[SearchItem], self.base.batch([wide])[0]) if not self._inside(it.namespace)]
            merged: list[SearchItem] = sorted(mine + theirs, key=lambda it: -(it.score if it.score is not None
                                                                              else float("-inf")))
            return merged[op.offset:op.offset + op.limit]
        if isinstance(op, ListNamespacesOp):
            lop = ListNamespacesOp(op.match_conditions, op.max_depth, op.limit + op.offset, 0)
            mine_ns = cast(list[tuple[str, ...]], self.copy.batch([lop])[0])
            base_ns = cast(list[tuple[str, ...]], self.base.batch([lop])[0])
            names = set(mine_ns) | {n for n in base_ns if not self._inside(n)}
            return sorted(names)[op.offset:op.offset + op.limit]
        raise TypeError(f"unknown store operation {type(op).__name__}")


class _UpdateBlock:
    """The context manager of :meth:`GuardedStore.update` (sync and async)."""

    def __init__(self, store: GuardedStore, time: float | None, probe: Probe | None):
        self.upd = _Update(store, time, probe)
        self._token: contextvars.Token | None = None
        self.decision: GuardDecision | None = None

    def _enter(self) -> _UpdateBlock:
        cur = _CURRENT.get()
        if cur is not None and cur.store is self.upd.store and not cur.closed:
            raise GuardError("an update is already open in this context; updates do not nest")
        self._token = _CURRENT.set(self.upd)
        return self

    def _leave(self) -> None:
        assert self._token is not None
        self.upd.close()  # a task or copied context started inside writes after this as an update of its own
        _CURRENT.reset(self._token)

    def _aborted(self, exc: BaseException) -> None:
        g = self.upd.store.guard
        self.decision = g.record_outcome(writes=[_describe(op) for op in self.upd.ops], reason="aborted",
                                         why=f"dropped: the update stopped before its end ({type(exc).__name__}: "
                                             f"{exc}); none of its {len(self.upd.ops)} write(s) were applied",
                                         time_=self.upd.time)

    def __enter__(self) -> _UpdateBlock:
        return self._enter()

    def __exit__(self, et, exc, tb) -> Literal[False]:
        self._leave()
        if exc is not None:
            self._aborted(exc)
            return False
        self.decision = self.upd.store._finish(self.upd, None)
        return False

    async def __aenter__(self) -> _UpdateBlock:
        return self._enter()

    async def __aexit__(self, et, exc, tb) -> Literal[False]:
        self._leave()
        if exc is not None:
            self._aborted(exc)
            return False
        self.decision = await self.upd.store._afinish(self.upd, None)
        return False


class _GuardedRunnable:
    """A runnable (LangMem memory manager) whose every ``invoke``/``ainvoke`` is one guarded update. The decision of
    the last call is ``last_decision``."""

    def __init__(self, store: GuardedStore, runnable: Any, time: float | None):
        self.store = store
        self.runnable = runnable
        self.time = time
        self.last_decision: GuardDecision | None = None

    def invoke(self, input: Any, config: Any = None, *, probe: Probe | None = None, time: float | None = None,
               **kw: Any) -> Any:
        with self.store.update(time=self.time if time is None else time, probe=probe) as blk:
            out = self.runnable.invoke(input, config, **kw)
        self.last_decision = blk.decision
        return out

    async def ainvoke(self, input: Any, config: Any = None, *, probe: Probe | None = None,
                      time: float | None = None, **kw: Any) -> Any:
        async with self.store.update(time=self.time if time is None else time, probe=probe) as blk:
            out = await self.runnable.ainvoke(input, config, **kw)
        self.last_decision = blk.decision
        return out
