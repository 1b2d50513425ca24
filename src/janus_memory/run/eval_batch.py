"""Janus's evaluation as one batch: a triggered step solves the entries x {old, new} memories in ONE ``chat_many``.

The pure controller compares two memories by calling the evaluator twice, ``score(old, E)`` then ``score(new, E)``
(with early stopping: rounds of a few entries, in a data-dependent order). Solved one call at a time, the two
memories run back to back and an engine with parallel slots (llama.cpp ``n_parallel``, a vLLM/SGLang/llama.cpp
server) sits half idle. Before comparing, the controller tells the evaluator which two memories it is about to
compare (``expect_pair(old, new)``, a hook in ``Janus._compare``). :class:`PairedEvaluator` then answers the
first call by solving the requested (memory, entries) AND the other memory on the same entries in one batch
(requests grouped by memory, memory-first prompts, so an engine's prefix cache reads each memory once per slot),
keeps every result of the comparison, and serves the controller's later calls from it.

Identical decisions: a served result is the answer to the very request the controller's call would have sent
(same messages, parameters and sample index; the key is ``(memory text, task id, sample)``), so decisions, the
decision log and the response cache are the same as without batching. Only the *time* at which a request is
sent changes. What the other memory will be asked is predicted:

* a known plan (``expect_calls``, below): the other memory's reads of the plan's next call, when that call reads
  the other memory on this call's round (tasks shared with this call): the paper's full comparison (old on E, then
  new on E) and each round of the sequential test (the deployed memory where its outcome is not known yet, then
  the candidate). Exact for either replay mode, and nothing known is asked again: the deployed memory's reused
  outcomes are never prefetched.
* no plan, ``replay="frozen"``: every request is sample 0, so the prediction is exact for any call order.
* no plan, ``replay="fresh"``: the sample index depends on the call number within the comparison, and the prediction is
  "the other memory is the next call". That holds for the paper's full comparison (old on E, then new on E) and
  for early stopping when |E| fits in one round. The other memory is prefetched on the first call only, so a
  wrong prediction (early stopping over several rounds with fresh draws, a combination no preset uses) costs at
  most one round of unused requests and never a different decision.

Speculation (``speculate``, on a parallel engine): the controller also says which calls the comparison makes if it
never stops early (``expect_calls``, from ``controller.decision_rules.planned_calls``: the sequential test's rounds, old
memory only where its outcome is not known yet). The first call then sends every read of that plan at once, each
with the sample index of its own call number (exact, since the controller's calls are a prefix of the plan), so a
sequential test costs one round of latency instead of one per round. Reads the test never gets to are paid for
and counted: ``batch_stats["prefetched"]`` (sent ahead) and ``["unused"]`` (never read); the decision log and the
step records count only the reads the comparison used, as without speculation.

Cost: with early stopping, a round the controller would have skipped after the first memory's answers is
solved anyway (``batch_stats["unused"]`` counts such requests); that pays only when the engine runs requests in
parallel, so with early stopping on a sequential engine (``parallel=False``: the embedded backend with one slot)
nothing is prefetched. Requests of the other memory that fail are not
raised by the first call: the controller's own call for that memory re-sends them (the client has cached the
successes), so errors surface where they would without batching.
"""
from __future__ import annotations

from typing import Any

from .evaluator import UpdaterEvaluator, failed_result


def _batchable(updater: Any) -> bool:
    """True when the updater replays with the base class's solving prompt (a plugin overriding
    ``solve_with_memory`` keeps its own replay, one memory per call)."""
    from ..updaters.base import Updater

    return (isinstance(updater, Updater) and type(updater).solve_with_memory is Updater.solve_with_memory
            and hasattr(updater, "solve_replays"))


class PairedEvaluator(UpdaterEvaluator):
    """:class:`UpdaterEvaluator` that solves both memories of a comparison in one batch (module docstring).

    ``parallel``: the engine runs several requests at once (server, llama.cpp slots > 1); see :meth:`expect_pair`.

    ``batch_stats``: ``batches`` (chat_many calls sent), ``requests`` (requests in them), ``prefetched`` (requests
    of the memory not asked for yet), ``served`` (results handed out without a new request), ``unused``
    (prefetched results the comparison never asked for)."""

    def __init__(self, updater: Any, *, batch: bool = True, parallel: bool = True, speculate: bool | None = None,
                 **kwargs: Any):
        super().__init__(updater, **kwargs)
        self.batch = bool(batch) and _batchable(updater)
        self.parallel = bool(parallel)
        self.speculate = self.parallel if speculate is None else bool(speculate)
        self._pair: tuple[str, str] | None = None
        self._expected: list[tuple[str, list]] | None = None  # the plan, when speculating on it
        self._planned: list[tuple[str, list]] | None = None  # the plan, always (None: not known in advance)
        self._done: dict[tuple[str, str, int], Any] = {}  # (memory text, task id, sample) -> (ChatResult, Score)
        self._pending: set[tuple[str, str, int]] = set()  # prefetched and not served yet
        self.batch_stats = {"batches": 0, "requests": 0, "prefetched": 0, "served": 0, "unused": 0}

    def begin_comparison(self, *, step: int, trigger: int) -> None:
        super().begin_comparison(step=step, trigger=trigger)
        self._end()

    def expect_pair(self, old_text: str, new_text: str, *, complete: bool = True) -> None:
        """Controller hook: the comparison about to run evaluates ``old_text`` and ``new_text`` on the same entries
        (all of them when ``complete``; with early stopping possibly fewer). An incomplete comparison is prefetched
        only when the engine runs requests in parallel (``parallel``): on one sequential slot an unused prefetch
        costs its full solve time and the batch buys nothing."""
        self._end()
        if complete or self.parallel:
            self._pair = (old_text, new_text)

    def expect_calls(self, calls: list[tuple[str, list]] | None) -> None:
        """Controller hook: the evaluator calls the comparison makes unless it stops early, in order (None: not
        known in advance). Used on the first call when ``speculate`` (module docstring)."""
        self._planned = list(calls) if calls is not None else None
        self._expected = self._planned if self._planned is not None and self.speculate else None

    def take_batch_stats(self) -> dict[str, int]:
        """End the comparison (its prefetched results still unread count as unused) and return the counts since the
        last call, set back to zero: the runner adds them to the method's resumable counters after every step."""
        self._end()
        out = dict(self.batch_stats)
        self.batch_stats = dict.fromkeys(out, 0)
        return out

    def _end(self) -> None:
        self.batch_stats["unused"] += len(self._pending)
        self._pair, self._done, self._pending, self._expected, self._planned = None, {}, set(), None, None

    def _predicted(self, tasks: list[Any]) -> list[int]:
        """The sample indices the NEXT evaluator call on ``tasks`` will draw (the call counter is left as it was)."""
        calls = self._calls
        try:
            return self._samples(tasks)
        finally:
            self._calls = calls

    def _samples_of_call(self, tasks: list[Any], call: int) -> list[int]:
        """The sample indices of the comparison's call number ``call`` (0-based) on ``tasks``."""
        calls = self._calls
        self._calls = call
        try:
            return self._samples(tasks)
        finally:
            self._calls = calls

    def _solve(self, memory_text: str, tasks: list[Any], samples: list[int]) -> list:
        if not self.batch or self._pair is None or memory_text not in self._pair:
            return super()._solve(memory_text, tasks, samples)
        keys = [(memory_text, t.id, s) for t, s in zip(tasks, samples)]
        items, wanted = self._plan(memory_text, tasks, keys)
        if items:
            self._run(items, wanted)
        served = [k for k in keys if k in self._pending]
        self.batch_stats["served"] += len(served)
        self._pending.difference_update(served)
        self._count_repeats(keys)
        return [self._done[k] for k in keys]

    def _count_repeats(self, keys: list[tuple]) -> None:
        """A request repeated within one call (a task listed twice in E) is sent once; sent one by one, the repeat
        would have been served by the response cache, so it counts as a cache hit, keeping usage the same."""
        client = getattr(self.updater, "llm", None)
        if getattr(client, "cache", None) is None:
            return
        seen: set[tuple] = set()
        for k in keys:
            if k in seen:
                client.usage.record_hit(self.role, getattr(self._done[k][0], "usage", None))  # type: ignore[union-attr]  # a client with a cache
            seen.add(k)

    def _plan(self, memory_text: str, tasks: list[Any], keys: list[tuple]) -> tuple[list, set]:
        """Requests to send now: this call's missing ones, then the other memory's on the same tasks (first call of
        the comparison with fresh draws; any call with frozen replays, whose sample 0 is exact)."""
        items, seen = [], set(self._done)
        for t, k in zip(tasks, keys):
            if k not in seen:
                seen.add(k)
                items.append((k, t))
        wanted = {k for k, _ in items}
        if self._expected is not None and self._calls == 1:  # speculation: every read the comparison may make
            for call, (text, planned) in enumerate(self._expected):
                for t, s in zip(planned, self._samples_of_call(planned, call)):
                    k = (text, t.id, s)
                    if k not in seen and text in self._pair:  # type: ignore[operator]  # a pair is set while speculating
                        seen.add(k)
                        items.append((k, t))
            return items, wanted
        old, new = self._pair  # type: ignore[misc]  # set: only called inside a comparison
        other = new if memory_text == old else old
        if self._planned is not None:  # the next call of the plan, when it reads the other memory in this round
            nxt = self._planned[self._calls] if self._calls < len(self._planned) else None
            if nxt is not None and nxt[0] == other and {t.id for t in nxt[1]} & {t.id for t in tasks}:
                for t, s in zip(nxt[1], self._samples_of_call(nxt[1], self._calls)):
                    k = (other, t.id, s)
                    if k not in seen:
                        seen.add(k)
                        items.append((k, t))
            return items, wanted
        if self.replay == "frozen" or self._calls == 1:
            for t, s in zip(tasks, self._predicted(tasks)):
                k = (other, t.id, s)
                if k not in seen:
                    seen.add(k)
                    items.append((k, t))
        return items, wanted

    def _run(self, items: list[tuple[tuple, Any]], wanted: set) -> None:
        out = self.updater.solve_replays([(k[0], t, k[2]) for k, t in items], role=self.role)
        if len(out) != len(items):
            raise RuntimeError(f"solve_replays returned {len(out)} results for {len(items)} requests")
        self.batch_stats["batches"] += 1
        self.batch_stats["requests"] += len(items)
        first_error: BaseException | None = None
        for (k, _), r in zip(items, out):
            if isinstance(r, BaseException):
                if not isinstance(r, Exception):
                    raise r  # cancellation / interrupt: never swallowed
                if k in wanted and self.failures == "zero":  # the authors score a failed request 0 and go on
                    self._done[k] = failed_result(r)
                    continue
                if k in wanted and first_error is None:
                    first_error = r
                continue  # a failed prefetch is re-sent by the controller's own call for that memory
            self._done[k] = r
            if k not in wanted:
                self._pending.add(k)
                self.batch_stats["prefetched"] += 1
        if first_error is not None:
            raise first_error
