"""The library-independent part of the write guard: probes, the user's evaluator, the Janus controller's stream, the
budget, the time rule and the decisions (written by ``record.py``; replies awaited by ``replies.py``).

A memory library's adapter (``langgraph.py``, ``mem0.py``) hands :meth:`WriteGuard.decide` one update: the deployed
memory and the candidate as deterministic texts (what the controller's trigger embeds), a read-only view of each
(what the user's agent answers from), the writes themselves and the update's time. The guard replays the user's
probes on both views through the Janus controller (``janus_memory.controller``: the evaluator callback
``score(memory_text, tasks) -> list[bool | None]``) and says commit or drop; the adapter applies or discards.

How the library maps onto the controller's stream (docs/integrations.md has the reasons):

* The probes given to the guard are the controller's history: each one enters the stream as one step in which the
  memory did not change (old text == new text), and the warm-up is as long as that history (the authors' own rule
  for a support size K: warm-up K, ``JanusConfig.with_support_size``), so the history steps cost nothing and the
  evaluation set starts from the probes (coverage by k-means over their embeddings, boundary from the rest).
* Each update is one stream step. Its task is the probe it brings (``probe=``: the query of the conversation that made
  the writes) or a probe added since (:meth:`WriteGuard.add_probe`), else the probe whose query is closest to what
  the update writes (so the stream holds probes only, and a topic written often weighs more).
* An outcome the user's agent cannot give (over the budget, a probe superseded by a later change of fact) is ``None``:
  the controller's rule for indeterminate outcomes (docs/controller.md, "C16-C").
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..controller import Janus, JanusConfig, StepInput
from .record import DECISIONS_FILE, RECORD_FORMAT, append_row, read_record, write_header
from .replies import DEFAULT_ANSWER_TIMEOUT, AnswerTimeout, GuardError, reply_within

_TEXT_LIMIT = 2000  # characters of an answer / write kept in the record


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _clip(text: Any, n: int = _TEXT_LIMIT) -> str:
    s = text if isinstance(text, str) else json.dumps(text, sort_keys=True, ensure_ascii=False, default=str)
    return s if len(s) <= n else s[:n] + f"... [{len(s) - n} more characters]"


# ---------------------------------------------------------------------------------------------------------- probes
@dataclass(frozen=True)
class Probe:
    """A question the agent must keep answering right.

    id: unique name (shown in the record). query: what the agent is asked. expected: the answer that must appear in
    the agent's reply (case-insensitive, as a whole word or phrase: ``$100`` matches "the cap is $100." but not
    "$1000"); or ``check(reply) -> bool`` instead (a score function of the user's). time: when the fact the probe
    tests was stated (any numbers that compare with the updates' times); ``None``: a standing rule that holds
    whatever is said later. A timed probe stated before an update may be superseded by it (a true change of fact:
    "moved to Seattle"), so a reply that was right before the update and wrong after it is not counted against the
    update (docs/integrations.md, "Probes with a time").
    """

    id: str
    query: str
    expected: str | None = None
    check: Callable[[str], bool] | None = field(default=None, compare=False)
    time: float | None = None

    def __post_init__(self):
        if not isinstance(self.id, str) or not self.id.strip():
            raise ValueError(f"a probe needs a non-empty string id, got {self.id!r}")
        if not isinstance(self.query, str) or not self.query.strip():
            raise ValueError(f"probe {self.id!r}: query must be a non-empty string")
        if (self.expected is None) == (self.check is None):
            raise ValueError(f"probe {self.id!r}: give exactly one of expected= (a string) or check= (a function)")
        if self.expected is not None and (not isinstance(self.expected, str) or not self.expected.strip()):
            raise ValueError(f"probe {self.id!r}: expected must be a non-empty string")
        if self.check is not None and not callable(self.check):
            raise ValueError(f"probe {self.id!r}: check must be callable")
        if self.time is not None and (isinstance(self.time, bool) or not isinstance(self.time, (int, float))
                                      or not math.isfinite(self.time)):
            raise ValueError(f"probe {self.id!r}: time must be a finite number or None, got {self.time!r}")

    def judge(self, reply: Any) -> bool:
        """Is ``reply`` right? A reply that is not a string is wrong."""
        if not isinstance(reply, str):
            return False
        if self.check is not None:
            return bool(self.check(reply))
        return contains_answer(reply, self.expected or "")

    def describe(self) -> dict:
        return {"id": self.id, "query": self.query,
                "expected": self.expected if self.expected is not None else "(score function)", "time": self.time}


def contains_answer(reply: str, expected: str) -> bool:
    """``expected`` appears in ``reply`` as a whole word or phrase, ignoring case and runs of white space."""
    norm = " ".join(expected.split()).casefold()
    text = " ".join(reply.split()).casefold()
    if not norm:
        return False
    return re.search(r"(?<![\w$])" + re.escape(norm) + r"(?![\w])", text) is not None


# ---------------------------------------------------------------------------------------------------------- presets
def guard_config(preset: str | JanusConfig, n_history: int) -> JanusConfig:
    """The controller settings of a guard with ``n_history`` probes at its start.

    ``"always"`` (the default): the paper's evaluation set and rule, compared at every update (the paper's
    *Always* ablation), warm-up = the probes. ``"paper"``: ``JanusConfig.paper()`` with its warm-up set to the
    probes (the MMT trigger compares only when an update turns against the recent ones; the first update after the
    history never compares). ``"recommended"``: ``JanusConfig.recommended()`` as it stands, warm-up = the probes,
    without offering dropped writes again (``seq_reoffer=0``: the guard has no way to stage them anew). A
    ``JanusConfig`` is used as given (its warm-up too: updates inside it are committed without comparison)."""
    if isinstance(preset, JanusConfig):
        return preset
    if preset == "always":
        return JanusConfig.paper().replace(trigger="always", warmup=n_history)
    if preset == "paper":
        return JanusConfig.paper().replace(warmup=n_history)
    if preset == "recommended":
        return JanusConfig.recommended(seq_reoffer=0).replace(warmup=n_history)
    raise ValueError(f"preset must be 'always', 'paper', 'recommended' or a JanusConfig, got {preset!r}")


def default_embed(texts: list[str]) -> np.ndarray:
    """The trigger's embedding when the user gives none: word 1-2 gram hashing (no model, deterministic)."""
    from ..encoders.hashing import HashingEncoder

    global _HASHING
    if _HASHING is None:
        _HASHING = HashingEncoder(2 ** 12)
    return _HASHING.encode(list(texts))


_HASHING: Any = None


# ---------------------------------------------------------------------------------------------------------- decisions
@dataclass
class ProbeResult:
    """One probe in one decision: the replies under the deployed memory (old) and the candidate (new)."""

    id: str
    query: str
    expected: str
    old_answer: str | None = None
    old_ok: bool | None = None
    new_answer: str | None = None
    new_ok: bool | None = None
    note: str = ""


@dataclass
class GuardDecision:
    """What the guard decided for one update (one line of ``decisions.jsonl``).

    accepted: the writes were committed. reason: the controller's reason, or the guard's own (``aborted``,
    ``evaluation_failed``, ``timeout``, ``no_writes``, ``commit_failed``). why: one sentence for people. writes: what
    the update wanted to write. probes: each probe asked, with both replies. old_score / new_score: share of right
    replies among the probes both memories were judged on (None when none was). compared: how many probes that is.
    answers: replies the agent was asked for (the budget counts these). pairs: probes read on both memories (under a
    budget, a probe is read on both or on neither). controller: the controller's Decision (``Decision.to_dict()``).
    id: unique across processes (an amendment record names it)."""

    update: int
    library: str
    accepted: bool
    reason: str
    why: str
    time: float | None
    writes: list[dict]
    probes: list[ProbeResult] = field(default_factory=list)
    old_score: float | None = None
    new_score: float | None = None
    compared: int = 0
    answers: int = 0
    pairs: int = 0
    budget: int | None = None
    controller: dict | None = None
    old_memory_sha256: str = ""
    new_memory_sha256: str = ""
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["probes"] = [dict(p.__dict__) for p in self.probes]
        return d


# ---------------------------------------------------------------------------------------------------------- the guard
class WriteGuard:
    """Judge each memory update by its effect on the user's probes (module docstring).

    Args:
        probes: the questions the agent must keep answering right (:class:`Probe`; at least one).
        answer: ``answer(query, view) -> str``: run the user's agent on ``query`` against ``view``, a read-only view of
            the memory (the deployed one or the candidate); a coroutine function is awaited on the caller's event loop.
        preset: ``"always"`` (default), ``"paper"``, ``"recommended"`` or a ``JanusConfig`` (:func:`guard_config`).
        budget: at most this many replies per update (None: no limit; else at least 2). A probe is read on both
            memories or on neither (pairs: ``budget // 2`` probes when the memories differ); the rest are not asked
            (``None``: no vote for either side).
        embed: ``embed(texts) -> (n, d)`` for the controller's trigger (default: hashing, no model).
        record: a folder for the decision record (``guard.json`` + ``decisions.jsonl``), or None.
        fail_closed: an update whose probes could not be replied to (the agent raised or timed out) is dropped
            (True, default; reason ``evaluation_failed`` or ``timeout``); False leaves it to the controller's
            ``on_evaluation_error`` (``keep_old`` in every preset; reason ``evaluation_failed:...``).
        library: the name the record gives the memory library.
        answer_timeout: seconds one reply may take (default 300; None: wait for ever). A reply that takes longer
            fails the update's evaluation: with ``fail_closed`` the update is dropped, reason ``timeout``, and the
            guard's lock is released. A synchronous ``answer`` then runs in a daemon worker thread (the calling
            thread's contextvars copied); a hung one is left behind there, its late reply ignored. A coroutine
            ``answer`` is cancelled.
    """

    def __init__(self, probes: Sequence[Probe], answer: Callable[[str, Any], Any], *,
                 preset: str | JanusConfig = "always", budget: int | None = None,
                 embed: Callable[[list[str]], Any] | None = None, record: str | os.PathLike | None = None,
                 fail_closed: bool = True, library: str = "custom",
                 answer_timeout: float | None = DEFAULT_ANSWER_TIMEOUT):
        probes = list(probes)
        if not probes:
            raise ValueError("a guard needs at least one probe (the questions its agent must keep answering right)")
        for p in probes:
            if not isinstance(p, Probe):
                raise TypeError(f"probes must be Probe objects, got {type(p).__name__}")
        ids = [p.id for p in probes]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"probe ids must be unique; repeated: {', '.join(dup)}")
        if not callable(answer):
            raise TypeError("answer must be a function answer(query, view) -> str")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 2):
            raise ValueError(f"budget must be an int >= 2 (one probe read on both memories) or None, got {budget!r}")
        if answer_timeout is not None and (isinstance(answer_timeout, bool)
                                           or not isinstance(answer_timeout, (int, float))
                                           or not math.isfinite(answer_timeout) or answer_timeout <= 0):
            raise ValueError(f"answer_timeout must be a number of seconds > 0 or None, got {answer_timeout!r}")
        self.probes: list[Probe] = probes
        self.answer = answer
        self.budget = budget
        self.answer_timeout = None if answer_timeout is None else float(answer_timeout)
        self.embed = embed or default_embed
        self.fail_closed = fail_closed
        self.library = library
        self.config = guard_config(preset, len(probes))
        self.preset = preset if isinstance(preset, str) else "custom"
        self.janus = Janus(self.config, evaluator=self._evaluate)
        self._queued: list[Probe] = []  # probes added after the start: the tasks of the next updates
        self._probe_vecs: dict[str, np.ndarray] = {}  # a probe query's embedding (_nearest_probe)
        self._n_history = len(probes)  # the probes of the start: the controller's history (its warm-up)
        self._streamed = 0  # of those, streamed into the controller so far
        self._updates = 0
        self._lock = threading.RLock()  # one decision at a time (concurrent updates are decided in turn)
        self._ctx: _Context | None = None
        self.decisions: list[GuardDecision] = []
        self.record_dir = Path(record) if record is not None else None
        self._record_size = -1  # size of decisions.jsonl after this guard's last append (another writer changes it)
        if self.record_dir is not None:
            if (self.record_dir / DECISIONS_FILE).is_file():  # a record kept across restarts: numbering goes on
                self._updates = max((int(r["update"]) for r in read_record(self.record_dir)[1]), default=0)
            self._write_header()

    # ------------------------------------------------------------------ probes
    def add_probe(self, probe: Probe) -> None:
        """A probe learnt after the start (a new query with its right answer): the task of the next update."""
        if not isinstance(probe, Probe):
            raise TypeError(f"add_probe expects a Probe, got {type(probe).__name__}")
        with self._lock:
            if any(p.id == probe.id for p in self.probes):
                raise ValueError(f"probe id {probe.id!r} is already used")
            self.probes.append(probe)
            self._queued.append(probe)
            self._append_header_probe(probe)

    # ------------------------------------------------------------------ the decision
    def decide(self, *, old_text: str, new_text: str, old_view: Any, new_view: Any, writes: list[dict],
               time_: float | None = None, probe: Probe | None = None,
               loop: asyncio.AbstractEventLoop | None = None) -> GuardDecision:
        """Compare the deployed memory (``old_*``) with the candidate (``new_*``) on the probes; return the decision
        (recorded). ``time_``: the update's time (default: now); ``probe``: the query this update answered, with its
        right answer (joins the probes); ``loop``: the event loop a coroutine ``answer`` runs on (the adapter's, when
        it decides from a worker thread)."""
        with self._lock:
            if probe is not None:
                self.add_probe(probe)
            self._stream_history(old_text, old_view)
            self._updates += 1
            n = self._updates
            when = time.time() if time_ is None else float(time_)
            if probe is not None:  # the update's own query is its task
                self._queued.remove(probe)
                task = probe
            else:
                task = self._queued.pop(0) if self._queued else self._nearest_probe(_update_text(writes))
            ctx = _Context(views={_sha(old_text): ("old", old_view), _sha(new_text): ("new", new_view)},
                           old_sha=_sha(old_text), new_sha=_sha(new_text), time=when, loop=loop)
            self._ctx = ctx
            try:
                vecs = np.asarray(self.embed([_task_text(task), old_text, new_text]), dtype=np.float64)
                d = self.janus.decide(StepInput(task=task, task_embedding=vecs[0], old_memory=old_text,
                                                new_memory=new_text, old_embedding=vecs[1], new_embedding=vecs[2]))
            finally:
                self._ctx = None
            dd = d.to_dict()
            accepted, reason = bool(d.accept), d.reason
            if reason.startswith("evaluation_failed") and self.fail_closed:
                accepted = False
                reason = "timeout" if ctx.timed_out else "evaluation_failed"
            dec = GuardDecision(
                update=n, library=self.library, accepted=accepted, reason=reason,
                why=_why(accepted, reason, d, ctx), time=when, writes=[_clip_write(w) for w in writes],
                probes=list(ctx.results.values()), old_score=_share(ctx, "old"), new_score=_share(ctx, "new"),
                compared=len(_compared(ctx)), answers=ctx.answers, pairs=_pairs(ctx), budget=self.budget,
                controller=dd,
                old_memory_sha256=ctx.old_sha, new_memory_sha256=ctx.new_sha)
            if d.reason.startswith("evaluation_failed"):
                dec.why += f" ({d.reason.split(':', 1)[1].strip() if ':' in d.reason else d.reason})"
            self._log(dec)
            return dec

    def record_outcome(self, *, writes: list[dict], reason: str, why: str, time_: float | None = None,
                       accepted: bool = False) -> GuardDecision:
        """Record an update the guard did not compare (aborted, nothing to write: ``accepted`` True, as nothing was
        dropped)."""
        with self._lock:
            self._updates += 1
            dec = GuardDecision(update=self._updates, library=self.library, accepted=accepted, reason=reason, why=why,
                                time=time.time() if time_ is None else float(time_),
                                writes=[_clip_write(w) for w in writes])
            self._log(dec)
            return dec

    def amend_last(self, dec: GuardDecision, *, accepted: bool, reason: str, why: str) -> None:
        """A decision whose commit then failed: the record says the writes were not applied (one amendment line
        appended, naming the decision's id; :func:`read_record` applies it; no line of the record is rewritten)."""
        with self._lock:
            dec.accepted, dec.reason, dec.why = accepted, reason, why
            self._log(dec, amend=True)

    # ------------------------------------------------------------------ the controller's stream
    def _stream_history(self, deployed_text: str, deployed_view: Any) -> None:
        """The probes of the start enter the stream as unchanged-memory steps (free: inside the warm-up)."""
        while self._streamed < self._n_history:
            p = self.probes[self._streamed]
            ctx = _Context(views={_sha(deployed_text): ("old", deployed_view)}, old_sha=_sha(deployed_text),
                           new_sha=_sha(deployed_text), time=time.time(), loop=None)
            self._ctx = ctx
            try:
                vecs = np.asarray(self.embed([p.query, deployed_text]), dtype=np.float64)
                self.janus.decide(StepInput(task=p, task_embedding=vecs[0], old_memory=deployed_text,
                                            new_memory=deployed_text, old_embedding=vecs[1], new_embedding=vecs[1]))
            finally:
                self._ctx = None
            self._streamed += 1

    def _nearest_probe(self, text: str) -> Probe:
        """The task of an update that brought no probe: the probe whose query is closest to what it writes (the
        paper's step task is the one whose solving made the update; this is the probe the update is most about)."""
        qs = [p for p in self.probes if p not in self._queued]
        missing = [p.query for p in qs if p.query not in self._probe_vecs]
        if missing:
            for q, v in zip(missing, np.asarray(self.embed(missing), dtype=np.float64)):
                self._probe_vecs[q] = v
        u = np.asarray(self.embed([text]), dtype=np.float64)[0]
        best, best_cos = qs[0], -2.0
        for p in qs:
            v = self._probe_vecs[p.query]
            n = float(np.linalg.norm(u) * np.linalg.norm(v))
            c = float(u @ v) / n if n > 0 else 0.0
            if c > best_cos + 1e-12:
                best, best_cos = p, c
        return best

    def _evaluate(self, memory_text: str, tasks: list) -> list[bool | None]:
        """The controller's evaluator: the user's agent on each probe against the view whose text is
        ``memory_text``; ``None`` for a probe over the budget or a superseded one."""
        ctx = self._ctx
        if ctx is None:
            raise GuardError("the controller asked for a reply outside a decision")
        key = _sha(memory_text)
        if key not in ctx.views:
            raise GuardError("the controller asked about a memory the guard does not hold")
        side = ctx.views[key][0]
        out: list[bool | None] = []
        for t in tasks:
            if not isinstance(t, Probe):
                out.append(None)
                continue
            out.append(self._outcome(ctx, t, side))
        return out

    def _outcome(self, ctx: _Context, p: Probe, side: str) -> bool | None:
        res = ctx.results.get(p.id)
        if res is None:
            res = ctx.results[p.id] = ProbeResult(p.id, p.query, p.expected or "(score function)")
        timed = p.time is not None and p.time < ctx.time and side in ("old", "new") and ctx.old_sha != ctx.new_sha
        sides = ("old", "new") if timed else (side,)
        if self.budget is not None and p.id not in ctx.admitted:
            # a probe is read on both memories or on neither: admitted only while its pair still fits the budget
            cost = 1 if ctx.old_sha == ctx.new_sha else 2
            if ctx.reserved + cost > self.budget:
                res.note = res.note or "over the budget: not asked"
                return None
            ctx.admitted.add(p.id)
            ctx.reserved += cost
        for s in sides:  # a superseded probe needs both replies to tell a change of fact from an improvement
            if getattr(res, f"{s}_ok") is None and not getattr(res, f"{s}_answer"):
                self._ask(ctx, p, res, s)
        ok = getattr(res, f"{side}_ok")
        if timed and res.old_ok is True and res.new_ok is False:
            res.note = f"stated at {p.time:g}, before this update ({ctx.time:g}): a change of fact, not counted"
            return None
        return ok

    def _ask(self, ctx: _Context, p: Probe, res: ProbeResult, side: str) -> None:
        sha = ctx.old_sha if side == "old" else ctx.new_sha
        view = ctx.views[sha][1]
        ctx.answers += 1
        try:
            reply = reply_within(self.answer, p.query, view, ctx.loop, self.answer_timeout)
        except AnswerTimeout:
            ctx.timed_out = True
            raise
        setattr(res, f"{side}_answer", _clip(reply) if isinstance(reply, str) else repr(reply)[:200])
        setattr(res, f"{side}_ok", p.judge(reply))
        if ctx.old_sha == ctx.new_sha:  # one memory: the same reply for both sides
            res.old_answer, res.old_ok, res.new_answer, res.new_ok = (getattr(res, f"{side}_answer"),
                                                                       getattr(res, f"{side}_ok")) * 2

    # ------------------------------------------------------------------ the record
    def _write_header(self) -> None:
        assert self.record_dir is not None
        write_header(self.record_dir, {
            "format": RECORD_FORMAT, "library": self.library, "preset": self.preset,
            "controller": self.config.to_dict(), "budget": self.budget, "fail_closed": self.fail_closed,
            "answer_timeout": self.answer_timeout, "probes": [p.describe() for p in self.probes]})

    def _append_header_probe(self, probe: Probe) -> None:
        if self.record_dir is not None:
            self._write_header()

    def _log(self, dec: GuardDecision, amend: bool = False) -> None:
        """Append the decision (or, ``amend``, an amendment naming it) to the record (record.append_row: appends
        only, locked, a number another process took meanwhile moved after the record's last)."""
        if not amend:
            self.decisions.append(dec)
        if self.record_dir is None:
            return
        if amend:
            row = {"amends": dec.id, "update": dec.update, "accepted": dec.accepted, "reason": dec.reason,
                   "why": dec.why, "time": time.time()}
        else:
            row = dec.to_dict()
        number, self._record_size = append_row(self.record_dir / DECISIONS_FILE, row, known_size=self._record_size,
                                               renumber=not amend)
        if not amend:
            dec.update = number
            self._updates = max(self._updates, number)


@dataclass
class _Context:
    views: dict[str, tuple[str, Any]]
    old_sha: str
    new_sha: str
    time: float
    loop: asyncio.AbstractEventLoop | None
    answers: int = 0
    results: dict[str, ProbeResult] = field(default_factory=dict)
    admitted: set[str] = field(default_factory=set)  # probes the budget lets read (on both memories)
    reserved: int = 0  # replies the admitted probes may take
    timed_out: bool = False


def _task_text(task: Any) -> str:
    return task.query


def _update_text(writes: list[dict]) -> str:
    return "\n".join(json.dumps(w, sort_keys=True, ensure_ascii=False, default=str) for w in writes)[:4000] or "(none)"


def _clip_write(w: dict) -> dict:
    return {k: (_clip(v) if isinstance(v, str) else v) for k, v in w.items()}


def _compared(ctx: _Context) -> list[ProbeResult]:
    """The probes both memories were judged on (not over the budget, not a superseded fact)."""
    return [r for r in ctx.results.values() if r.old_ok is not None and r.new_ok is not None and not r.note]


def _pairs(ctx: _Context) -> int:
    """Probes read on both memories in this decision."""
    return sum(1 for r in ctx.results.values() if r.old_ok is not None and r.new_ok is not None)


def _share(ctx: _Context, side: str) -> float | None:
    rows = _compared(ctx)
    return sum(bool(getattr(r, f"{side}_ok")) for r in rows) / len(rows) if rows else None


def _why(accepted: bool, reason: str, d: Any, ctx: _Context) -> str:
    """One sentence: what the guard did and the probes that decided it."""
    lost = [r for r in ctx.results.values() if r.old_ok and r.new_ok is False]
    won = [r for r in ctx.results.values() if r.old_ok is False and r.new_ok]
    superseded = [r for r in ctx.results.values() if r.note.startswith("stated at")]
    over = [r for r in ctx.results.values() if r.note.startswith("over the budget")]
    if reason == "evaluation_failed":
        return "dropped: the agent could not answer the probes, so the update could not be checked (fail closed)"
    if reason == "timeout":
        return "dropped: the agent did not reply in time (answer_timeout), so the update could not be checked"
    if d.phase == "warmup" and not d.triggered:
        return "committed without comparison: the controller's warm-up"
    if not d.triggered:
        return f"committed without comparison: the trigger did not fire ({reason})"
    score = ""
    rows = _compared(ctx)
    if rows:
        score = (f" (right replies on {len(rows)} probe(s): deployed {sum(bool(r.old_ok) for r in rows)}, "
                 f"candidate {sum(bool(r.new_ok) for r in rows)})")
    parts = []
    if lost:
        parts.append("the candidate got wrong " + "; ".join(f"{r.id} (\"{_short(r.query)}\": expected "
                                                            f"{r.expected!r}, replied {_short(r.new_answer)!r})"
                                                            for r in lost[:3]))
    if won:
        parts.append("it got right " + ", ".join(r.id for r in won[:3]))
    if superseded:
        parts.append("not counted (changed facts): " + ", ".join(r.id for r in superseded[:3]))
    if over:
        parts.append(f"{len(over)} probe(s) over the budget (read on neither memory)")
    tail = ("; " + "; ".join(parts)) if parts else "; no probe changed its reply"
    return ("committed" if accepted else "dropped") + f" [{reason}]" + score + tail


def _short(s: str | None, n: int = 80) -> str:
    s = " ".join((s or "").split())
    return s if len(s) <= n else s[:n - 3] + "..."
