"""The Janus controller: decides, per stream step, whether to deploy the candidate memory.

Source: paper-spec.md §2 (MMT trigger), §3 (hybrid evaluation set), §4 (full algorithm), §8.3/8.4/8.6 (ablations,
sweeps), §11 (pitfalls); failure case C23. Pure: no I/O, no LLM client. The caller supplies an evaluator
``score(memory_text: str, tasks: list[Any]) -> list[bool]`` and the embeddings (φ(question), φ(M_{t-1}), φ(M̂_t)).

Usage::

    janus = Janus(JanusConfig(), evaluator=score)
    d = janus.decide(StepInput(task, task_emb, old_text, new_text, old_emb, new_emb))
    if not d.accept:
        updater.rollback(snapshot)

This module holds the step logic, the reuse of measured outcomes and the state; its parts live next to it (config.py,
step.py, strategy.py, comparison.py, state.py, reoffer.py).
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

from .changes import change_stats, rewords_only, shingle_similarity
from .comparison import announce, new_stats, run_comparison
from .config import JanusConfig
from .decision_rules import UNKNOWN, Comparison
from .equivalence import COUNTER_BOOKKEEPING, COUNTER_INLINE, DEFAULT_BOOKKEEPING, trivially_equal
from .evalset import EmbeddingStore, decode_array, encode_array
from .panel_set import touched_first
from .reoffer import ReofferBook, after_step
from .sequential import discordant
from .state import STATE_FORMAT, default_task_to_dict, tasks_from_state
from .step import Decision, StepInput, task_id_of
from .strategy import eval_set_for
from .trigger import (
    TriggerPolicy,
    as_vector,
    broken_embeddings,
    cosine,
    exact_norm,
    momentum_update,
    update_direction,
)
from .trigger_options import SelectiveOptions, SelectiveTrigger, item_flag

__all__ = ["STATE_FORMAT", "Decision", "Janus", "JanusConfig", "StepInput", "task_id_of"]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Janus:
    """The Janus controller (spec §4). See module docstring.

    Args:
        config: :class:`JanusConfig` (paper defaults when None).
        evaluator: ``evaluator(memory_text, tasks) -> list[bool]`` (one bool per task, same order).
        task_to_dict / task_from_dict: JSON (de)serialisation of task objects for :meth:`state_dict`;
            defaults handle ``janus_memory.values.Task`` and plain dicts.
        units: what ``seq_reoffer`` offers again (reoffer.py): lines (None) or an updater's ``memory_units()``.
    """

    def __init__(self, config: JanusConfig | None = None, evaluator: Callable[[str, list], list] | None = None, *,
                 task_to_dict: Callable[[Any], dict] | None = None,
                 task_from_dict: Callable[[dict], Any] | None = None, units: Any = None):
        self.config = config if config is not None else JanusConfig()
        if not isinstance(self.config, JanusConfig):
            raise TypeError("config must be a JanusConfig")
        self.evaluator = evaluator
        self._task_to_dict = task_to_dict
        self._task_from_dict = task_from_dict
        c = self.config
        t = c.trigger
        self._policy = TriggerPolicy(t.kind, float(t.tau), float(t.rate), t.period, c.warmup, c.seed)
        self._selective = SelectiveTrigger(SelectiveOptions.of(t))
        self._evalset = eval_set_for(c)  # the evaluation-set strategy c.eval_set.kind names (strategy.py)
        self._store = EmbeddingStore()
        self._grow_token = object()  # tasks / ids / embeddings only grow while this object stays (state_hints)
        self._tasks: list[Any] = []
        self._task_cache: list[dict] = []  # the stored form of _tasks[:len], filled by state_dict(by_reference=True)
        self._ids: list[str] = []
        self._step = 0
        self._trigger_count = 0
        self._seen_end = 0
        self._warmup_initialized = False
        self._momentum: np.ndarray | None = None
        self._stats = new_stats()
        self._old_key: str | None = None  # reuse_old_results: sha256 of the memory whose outcomes are cached
        self._old_cache: dict[int, bool] = {}  # stream index -> that memory's measured outcome
        self._recent_close: list[bool] = []  # seq_recent_pairs: was each of the last comparisons close
        self._direction: np.ndarray | None = None  # this step's update direction z, while decide() runs (not state)
        self._anchor_sha: str | None = None  # near_copy_anchor: the last fully compared memory (_anchored)
        self._anchor_text: str | None = None
        self._saved: dict | None = None  # decide()'s saved state while it runs (_save)
        self._book = ReofferBook(c.decision.reoffers, units)  # seq_reoffer: rolled-back additions to offer again

    # ------------------------------------------------------------------ read-only views
    @property
    def units(self) -> Any:
        return self._book.units  # what seq_reoffer offers again: reoffer.LINES or an updater's records

    @property
    def stats(self) -> dict:
        """steps, triggers, accepts, rollbacks, evaluator_calls, evaluator_calls_saved, evaluation_failures."""
        return dict(self._stats)

    @property
    def momentum(self) -> np.ndarray | None:
        return None if self._momentum is None else self._momentum.copy()

    @property
    def eval_set(self):
        """The evaluation-set strategy (``config.eval_set``): its members, its description."""
        return self._evalset

    def member_ids(self, role: str) -> list[str]:
        """The task ids the evaluation set holds now in ``role`` (``coverage``, ``boundary``, ``panel``, ...; empty
        when it has no such role)."""
        return [self._ids[i] for i in self._evalset.members().get(role, [])]

    @property
    def coverage_ids(self) -> list[str]:
        return self.member_ids("coverage")

    @property
    def boundary_ids(self) -> list[str]:
        return self.member_ids("boundary")

    @property
    def boundary_tags(self) -> list[str]:
        """The paper set's boundary tags (``bootstrap`` / ``flip``), in the order of :attr:`boundary_ids`."""
        return [t for _, t in getattr(self._evalset, "boundary", [])]

    @property
    def panel_ids(self) -> list[str]:
        """``eval_set="panel"``: the task ids of the current panel, in reading order (empty otherwise)."""
        return self.member_ids("panel")

    @property
    def pending_ids(self) -> list[str]:
        return self._ids[self._seen_end:]

    @property
    def n_seen(self) -> int:
        return self._seen_end

    @property
    def trigger_count(self) -> int:
        return self._trigger_count

    # ------------------------------------------------------------------ main entry
    def decide(self, inp: StepInput) -> Decision:
        """Process one stream step and return the deployment decision (spec §4).

        Raises:
            TypeError: ``inp`` is not a StepInput, the task has no id, or a memory is not a str.
            ValueError: the task embedding is empty/non-numeric or its dimension differs from earlier tasks.
            RuntimeError: a comparison is needed but no evaluator was given.
        Nothing is mutated when an exception is raised, an interrupt inside the evaluator included
        (KeyboardInterrupt, asyncio.CancelledError): the state is put back as it was, so the step can be retried.
        """
        tid, q, old_v, new_v, warnings = self._read_input(inp)
        saved = self._saved = self._save()
        try:
            if self._step + 1 <= self.config.warmup:
                return self._warmup_step(inp, tid, q, warnings)
            return self._stream_step(inp, tid, q, old_v, new_v, warnings)
        except BaseException:
            self._restore(saved)
            raise
        finally:
            self._saved = None

    # ------------------------------------------------------------------ decide() as one transaction
    def _save(self) -> dict:
        """What one decide() may change, taken before it (cheap: lengths, counters, small lists; the evaluation set's
        state only when the step is about to change it, :meth:`_save_evalset`)."""
        return {"n": self._store.n, "dim": self._store.dim, "data_none": self._store._data is None,
                "tasks": len(self._tasks), "task_cache": len(self._task_cache), "ids": len(self._ids),
                "step": self._step, "trigger_count": self._trigger_count, "seen_end": self._seen_end,
                "warmup_initialized": self._warmup_initialized, "momentum": self._momentum,
                "stats": dict(self._stats), "old_key": self._old_key, "old_cache": dict(self._old_cache),
                "recent_close": list(self._recent_close), "anchor": (self._anchor_sha, self._anchor_text),
                "selective": self._selective.state_dict(), "evalset": None, "book": self._book.state_dict()}

    def _save_evalset(self) -> None:
        """Keep the evaluation set's state before this step changes it (once per step)."""
        saved = getattr(self, "_saved", None)
        if saved is not None and saved["evalset"] is None:
            saved["evalset"] = self._evalset.state_dict()

    def _restore(self, saved: dict) -> None:
        """Put back the state :meth:`_save` took: the step's task, embedding and counters are gone."""
        st = self._store
        st.n, st.dim = saved["n"], saved["dim"]
        if saved["data_none"]:
            st._data = None
        del self._tasks[saved["tasks"]:], self._task_cache[saved["task_cache"]:], self._ids[saved["ids"]:]
        self._step, self._trigger_count = saved["step"], saved["trigger_count"]
        self._seen_end, self._warmup_initialized = saved["seen_end"], saved["warmup_initialized"]
        self._momentum, self._stats = saved["momentum"], saved["stats"]
        self._old_key, self._old_cache, self._recent_close = saved["old_key"], saved["old_cache"], saved["recent_close"]
        self._anchor_sha, self._anchor_text = saved["anchor"]
        self._selective.load_state_dict(saved["selective"])
        self._book.load_state_dict(saved["book"])
        if saved["evalset"] is not None:
            self._evalset.load_state_dict(saved["evalset"], self._store.n, self._trigger_count)

    # ------------------------------------------------------------------ steps of decide()
    def _read_input(self, inp: StepInput) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """Check ``inp`` without mutating anything: task id, task/old/new vectors and sanitising warnings."""
        if not isinstance(inp, StepInput):
            raise TypeError("decide() expects a StepInput")
        tid = task_id_of(inp.task)
        if not isinstance(inp.old_memory, str) or not isinstance(inp.new_memory, str):
            raise TypeError("old_memory and new_memory must be str")
        warnings: list[str] = []
        q, w = as_vector(inp.task_embedding, "task_embedding")
        warnings += w
        self._store.check(q)
        old_v, w = as_vector(inp.old_embedding, "old_embedding")
        warnings += w
        new_v, w = as_vector(inp.new_embedding, "new_embedding")
        warnings += w
        return tid, q, old_v, new_v, warnings

    def _warmup_step(self, inp: StepInput, tid: str, q: np.ndarray, warnings: list[str]) -> Decision:
        """Warm-up (spec §3.2): accept, store, initialise the support sets at the last warm-up step. Only the
        selective trigger with ``arm_warmup`` may compare here."""
        c = self.config
        verdict = signals = None
        gate = False
        if c.trigger.kind == "selective" and c.trigger.arm_warmup:
            ch = change_stats(inp.old_memory, inp.new_memory)
            verdict = self._selective.warmup_fires(ch)
            signals = {**ch.to_dict(), **verdict.to_dict()}
        if c.trigger.gated and self._gate(inp.old_memory, inp.new_memory):
            gate = True
            signals = {**(signals or {}), "forced_by": "gate"}
        if ((verdict is not None and verdict.fire) or gate) and self.evaluator is None:
            raise RuntimeError("Janus needs an evaluator callback to compare memories")
        self._append(q, inp.task, tid)
        d = Decision(step=self._step, task_id=tid, phase="warmup", triggered=False, accept=True,
                     reason="warmup", warnings=warnings, trigger_signals=signals or {})
        if (verdict is not None and verdict.fire) or gate:
            d.triggered = True
            self._warmup_trigger(d, inp.old_memory, inp.new_memory, full=gate and c.trigger.gate_full_compare)
        else:
            self._stats["accepts"] += 1
        if self._step == c.warmup and not self._warmup_initialized:
            d.warnings += self._init_support()
        d.trigger_count = self._trigger_count
        return d

    def _stream_step(self, inp: StepInput, tid: str, q: np.ndarray, old_v: np.ndarray, new_v: np.ndarray,
                     warnings: list[str]) -> Decision:
        """Post-warm-up: update direction z_t, trigger test, comparison when it fires, then the momentum update
        (every post-warm-up step, with the candidate's z, after the decision: spec §2.2)."""
        c = self.config
        z, w = update_direction(old_v, new_v)
        warnings += w
        prev = self._momentum
        if (c.trigger.kind != "never" or c.trigger.gated) and self.evaluator is None:
            raise RuntimeError("Janus needs an evaluator callback to compare memories")
        self._append(q, inp.task, tid)
        cos = None
        if prev is not None:
            if prev.shape != z.shape:
                warnings.append(f"momentum dimension {prev.shape[0]} differs from z dimension {z.shape[0]}; "
                                "cosine 0 and momentum restarted from z")
            cos = cosine(z, prev)
        z_norm = exact_norm(z)
        fire, signals = self._fires(cos, z_norm, inp)
        if not fire and c.trigger.kind != "never" and c.trigger.compare_on_broken_embeddings:
            broken = broken_embeddings(inp, (q, old_v, new_v))
            if broken:  # a broken encoder: the trigger cannot see anything, so compare (fail closed)
                fire, signals = True, {**signals, "forced_by": "encoder"}
                warnings.append(f"{broken}; compared whatever the trigger said (compare_on_broken_embeddings)")
        d = Decision(step=self._step, task_id=tid, phase="stream", triggered=fire, accept=True,
                     reason="not_triggered", cosine=cos, z_norm=z_norm,
                     momentum_norm=None if prev is None else exact_norm(prev), warnings=warnings,
                     trigger_signals=signals)
        self._direction = z
        innocent = not self._book.blocks(inp.old_memory, inp.new_memory)
        try:
            self._act(d, fire, inp.old_memory, inp.new_memory)
        finally:
            self._direction = None
        if c.decision.reoffers:
            after_step(self, d, inp.old_memory, inp.new_memory, innocent)
        d.trigger_count = self._trigger_count
        self._momentum = momentum_update(prev, z, c.trigger.beta)
        if c.trigger.kind == "selective":
            self._selective.observe(cos, z_norm)
        return d

    def _fires(self, cos: float | None, z_norm: float, inp: StepInput) -> tuple[bool, dict]:
        """The trigger test of a post-warm-up step and its signals (selective trigger only)."""
        if self.config.trigger.kind != "selective":
            return self._policy.fires(self._step, cos), {}
        ch = change_stats(inp.old_memory, inp.new_memory)
        verdict = self._selective.fires(cos, z_norm, ch)
        return verdict.fire, {**ch.to_dict(), **verdict.to_dict()}

    def _bookkeeping(self) -> tuple:
        """(line patterns, in-line patterns) that skip_trivially_equal ignores (equivalence.py)."""
        return (COUNTER_BOOKKEEPING, COUNTER_INLINE) if self.config.reuse.ignore_usage_counters else (DEFAULT_BOOKKEEPING, ())

    def _gate(self, old_text: str, new_text: str) -> bool:
        """The text gate of ``gate_full_compare`` / ``gate_compare``: the selective trigger's item gate (retention_min,
        shrink_max)."""
        return item_flag(self._selective.opts, change_stats(old_text, new_text))

    def _act(self, d: Decision, fire: bool, old_text: str, new_text: str) -> None:
        """Gate (``gate_full_compare``) on a destructive-looking candidate: a full paper-rule comparison, fired or
        not; (``gate_compare``) a comparison by the configured rule, fired or not. Not fired: accept. Fired on a
        trivially-equal candidate (when enabled): accept without evaluation, the trigger's bookkeeping left to the
        next real trigger. Fired on a near copy (``near_copy_similarity``): with ``near_copy_inherit`` see
        ``_near_copy``, else the sequential test capped at ``near_copy_pairs`` pairs (0: accepted
        unevaluated, reason "near_copy"). Fired otherwise: compare (``_trigger``)."""
        c = self.config
        if c.trigger.gated and self._gate(old_text, new_text):
            d.triggered = True
            d.trigger_signals = {**d.trigger_signals, "forced_by": "gate"}
            self._trigger(d, old_text, new_text, full=c.trigger.gate_full_compare)
            return
        if fire and c.reuse.skip_trivially_equal and trivially_equal(old_text, new_text, *self._bookkeeping()):
            d.triggered = False
            d.reason = "trivially_equal"
            self._stats["accepts"] += 1
            return
        if not fire:
            self._stats["accepts"] += 1
            return
        cap = None
        if c.reuse.near_copy_similarity > 0 and shingle_similarity(old_text, new_text) >= c.reuse.near_copy_similarity:
            if c.reuse.near_copy_inherit:
                self._near_copy(d, old_text, new_text)
                return
            cap = c.reuse.near_copy_pairs
            if cap == 0:
                d.triggered = False
                d.reason = "near_copy"
                self._stats["accepts"] += 1
                return
        self._trigger(d, old_text, new_text, max_pairs=cap)

    # ------------------------------------------------------------------ internals
    def _append(self, q: np.ndarray, task: Any, tid: str) -> None:
        self._store.append(q)
        self._tasks.append(task)
        self._ids.append(tid)
        self._step += 1
        self._stats["steps"] += 1

    def _init_support(self) -> list[str]:
        """End of warm-up: the evaluation set starts (the paper's: coverage via k-means on the warm-up tasks,
        bootstrap boundary; spec §3.2); the warm-up tasks count as seen."""
        self._save_evalset()
        warnings = self._evalset.start(self._store, self._store.n)
        self._seen_end = self._store.n
        self._warmup_initialized = True
        return warnings

    def _warmup_trigger(self, d: Decision, old_text: str, new_text: str, full: bool = False) -> None:
        """Selective trigger armed during warm-up: compare on up to K + K_F tasks seen so far (a seeded sample,
        role ``fresh``). Coverage, boundary and the seen/pending split are untouched (they start at the end of
        warm-up); the trigger count advances."""
        self._save_evalset()
        plan = self._evalset.plan_warmup(self._store.n, self._trigger_count)
        self._trigger_count += 1
        self._stats["triggers"] += 1
        plan.record(d, self._ids)
        comp = self._compare(d, plan.entries, old_text, new_text, full=full)
        if comp is not None:
            self._stats["accepts" if comp.accept else "rollbacks"] += 1

    def _compare(self, d: Decision, entries: list[int], old_text: str, new_text: str, full: bool = False,
                 max_pairs: int | None = None, inherit: bool = False) -> Comparison | None:
        """Evaluate both memories on ``entries``, fill ``d``; None when the evaluator failed (``on_evaluation_error`` decided).
        ``inherit``: a rewording checked on a few tasks (``_near_copy``), see ``_remember``."""
        announce(self.evaluator, self.config, d, self._trigger_count, len(entries), old_text, new_text, full=full)
        known = None
        if self.config.reuse.old_results:
            if self._old_key != _sha(old_text):  # a memory deployed unmeasured: measured from here, its own anchor
                self._old_key, self._old_cache = _sha(old_text), {}
                self._set_anchor(old_text)
            known = [self._old_cache.get(i, UNKNOWN) for i in entries]
        c = self.config
        base = None
        if c.decision.seq_recent_pairs and max_pairs is None and not full and any(self._recent_close):
            base = c.decision.seq_recent_pairs  # a close comparison among the last seq_recent_window: the bigger budget
        comp = run_comparison(self.evaluator, c, d, [self._tasks[i] for i in entries], old_text,
                              new_text, self._stats, full=full, max_pairs=max_pairs, known_old=known, base_pairs=base,
                              innocent_ok=not self._book.blocks(old_text, new_text))
        if comp is not None and c.reuse.old_results:
            self._remember(entries, comp, new_text, inherit)
        if comp is not None and c.decision.seq_recent_pairs and not full and max_pairs is None and comp.calls_full:
            w, ll = discordant(comp.old_correct, comp.new_correct)
            close = comp.reason.startswith("sprt_truncated") and abs(w - ll) <= c.decision.seq_extend_margin
            self._recent_close = (self._recent_close + [close])[-c.decision.seq_recent_window:]
        return comp

    def _trigger(self, d: Decision, old_text: str, new_text: str, full: bool = False,
                 max_pairs: int | None = None, inherit: bool = False) -> None:
        """A post-warm-up trigger (spec §3.2): the evaluation set plans the tasks (the paper's: fresh sample,
        coverage refresh, planned entries), the comparison, then the set observes the outcomes (the paper's:
        boundary refresh from the flips)."""
        self._save_evalset()
        prev_seen, self._seen_end = self._seen_end, self._store.n
        self._trigger_count += 1
        self._stats["triggers"] += 1
        plan = self._evalset.plan(self._store, prev_seen, self._trigger_count, d.warnings)
        if self.config.eval_set.panel_order == "touched" and self._evalset.name == "panel":
            plan.entries = touched_first(plan.entries, self._tasks, old_text, new_text, self._store, self._direction)
        plan.record(d, self._ids)
        comp = self._compare(d, plan.entries, old_text, new_text, full=full, max_pairs=max_pairs, inherit=inherit)
        self._evalset.observe(plan, comp, d, self._ids, self._trigger_count)
        if comp is not None:
            self._stats["accepts" if comp.accept else "rollbacks"] += 1

    # ------------------------------------------------------------------ reused outcomes and near copies
    def _near_copy(self, d: Decision, old_text: str, new_text: str) -> None:
        """A near copy under ``near_copy_inherit``: a rewording (``changes.rewords_only``) is checked on the first
        ``near_copy_pairs`` tasks (0: accepted unevaluated, reason "near_copy") and, deployed, keeps the deployed
        memory's outcomes on the tasks it was not asked; any other near copy (an inserted, dropped or rewritten
        line, e.g. a planted instruction) is compared as any candidate."""
        c = self.config
        if not rewords_only(old_text, new_text):
            self._trigger(d, old_text, new_text)
            return
        if c.reuse.near_copy_anchor and not self._anchored(old_text, new_text):
            d.trigger_signals = {**d.trigger_signals, "near_copy": "drifted"}
            self._trigger(d, old_text, new_text)
            return
        d.trigger_signals = {**d.trigger_signals, "near_copy": "rewording"}
        if c.reuse.near_copy_pairs == 0:  # measured, not the default: a one-word change outside the guard words passes
            d.triggered = False
            d.reason = "near_copy"
            if self._old_key == _sha(old_text):  # the rewording answers as the deployed memory did
                self._old_key = _sha(new_text)
            self._stats["accepts"] += 1
            return
        self._trigger(d, old_text, new_text, max_pairs=c.reuse.near_copy_pairs, inherit=True)

    def _anchored(self, old_text: str, new_text: str) -> bool:
        """``near_copy_anchor``: the candidate is a near copy and a rewording of the anchor, the last fully compared
        memory (whose outcome cache holds its own measurements, not inherited ones). When the deployed memory is the
        anchor this is the rewording test already passed; after an inherited rewording it is the whole drift since
        the anchor, so rewordings cannot chain (each checked on one task) into a memory nobody measured. No anchor
        yet (nothing measured): False."""
        if self._anchor_sha is None:
            return False
        if self._anchor_sha == _sha(old_text):
            self._anchor_text = old_text  # (a restored state holds the anchor's text only when it is not deployed)
            return True
        anchor = self._anchor_text
        if anchor is None:  # restored with the anchor deployed, and the caller now passes another memory
            return False
        return (shingle_similarity(anchor, new_text) >= self.config.reuse.near_copy_similarity
                and rewords_only(anchor, new_text))

    def _set_anchor(self, text: str) -> None:
        self._anchor_sha, self._anchor_text = _sha(text), text

    def _remember(self, entries: list[int], comp: Comparison, new_text: str, inherit: bool = False) -> None:
        """reuse_old_results: keep the deployed memory's measured outcomes (the candidate's when it is deployed);
        an indeterminate outcome (None) is not kept, so it is measured again. ``inherit`` (a rewording checked on a
        few tasks and deployed): the old memory's outcomes on the tasks the candidate was not asked are kept as
        its own."""
        if comp.accept:
            asked = set(entries[:len(comp.new_correct)])
            kept = {i: v for i, v in self._old_cache.items() if i not in asked} if inherit else {}
            self._old_key, self._old_cache = _sha(new_text), kept
            if not inherit:  # its outcomes are its own measurements: the new anchor
                self._set_anchor(new_text)
            pairs = zip(entries, comp.new_correct)
        else:
            pairs = zip(entries, comp.old_correct)
        for i, v in pairs:
            if v is not None:
                self._old_cache[i] = bool(v)

    # ------------------------------------------------------------------ saving and restoring
    def state_dict(self, *, by_reference: bool = False) -> dict:
        """Full controller state, JSON-serialisable (arrays as base64 little-endian bytes).

        ``json.dumps(state, sort_keys=True)`` is byte-identical after a save -> load -> save round trip, and a
        restored controller makes exactly the decisions the original would have made.
        Raises TypeError when a task cannot be serialised (pass ``task_to_dict``).

        ``by_reference=True``: the run store's form (its cost does not grow with the stream): the embedding matrix is
        a :class:`~janus_memory.rows.RowsRef` (``.encode()`` gives the plain form) and the task entries are the
        controller's cached ones (serialised once per task; read-only: shared with later calls).
        """
        if by_reference:
            tasks = self._task_entries()
        else:
            tasks = [self._task_entry(t) for t in self._tasks]
        extra = {}
        if self.config.reuse.old_results:  # only then, so other configs keep their stored form
            extra["old_results"] = {"sha256": self._old_key,
                                    "results": [[i, v] for i, v in sorted(self._old_cache.items())]}
        if self.config.decision.seq_recent_pairs:  # only then, as old_results
            extra["recent_close"] = list(self._recent_close)
        if self.config.decision.reoffers:  # only then, as old_results
            extra["reoffer"] = self._book.state_dict()
        if self.config.reuse.near_copy_anchor:  # only then, as old_results; the text only while another memory is deployed
            extra["near_copy_anchor"] = {
                "sha256": self._anchor_sha,
                "text": self._anchor_text if self._anchor_sha not in (None, self._old_key) else None}
        return {
            **extra,
            "format": STATE_FORMAT,
            "config": self.config.to_dict(),
            "step": self._step,
            "trigger_count": self._trigger_count,
            "seen_end": self._seen_end,
            "warmup_initialized": self._warmup_initialized,
            "momentum": encode_array(self._momentum),
            **self._evalset.state_dict(),
            "embeddings": self._store.state_dict(self._grow_token if by_reference else None),
            "ids": list(self._ids),
            "tasks": tasks,
            "stats": dict(self._stats),
            "trigger_state": self._selective.state_dict(),
        }

    def _task_entry(self, task: Any) -> dict:
        to_d = self._task_to_dict
        return {"type": "custom", "data": to_d(task)} if to_d else default_task_to_dict(task)

    def _task_entries(self) -> list[dict]:
        """The stored form of every task, serialised once per task (tasks are only appended; a restore starts a new
        cache); a new list of the shared entries."""
        cache = self._task_cache
        for t in self._tasks[len(cache):]:
            cache.append(self._task_entry(t))
        return list(cache)

    def state_hints(self) -> dict:
        """What of :meth:`state_dict` only grows: ``{key path: (token, stable)}``; while ``token`` is the same object,
        the first ``stable`` items (tasks, ids) or base64 characters (the embedding matrix) stay as they are. The run
        store uses it to write appends without comparing the whole state (store/ckpt_log.py)."""
        n, tok = self._store.n, self._grow_token
        return {("tasks",): (tok, n), ("ids",): (tok, n),
                ("embeddings", "data", "b64"): (tok, 4 * (n * (self._store.dim or 0) * 4 // 3))}

    def load_state_dict(self, state: dict) -> None:
        """Restore from :meth:`state_dict` (its config replaces the current one); ValueError on an unknown format or
        inconsistent content."""
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise ValueError(f"not a Janus controller state (format {STATE_FORMAT!r} expected)")
        fresh = type(self)(JanusConfig.from_dict(state["config"]), self.evaluator,
                           task_to_dict=self._task_to_dict, task_from_dict=self._task_from_dict,
                           units=self._book.units)
        store = EmbeddingStore.from_state_dict(state["embeddings"])
        n = store.n
        if len(state["ids"]) != n or len(state["tasks"]) != n:
            raise ValueError("state has inconsistent numbers of tasks, ids and embeddings")
        fresh._store = store
        fresh._ids = [str(i) for i in state["ids"]]
        fresh._tasks = tasks_from_state(state["tasks"], self._task_from_dict)
        fresh._step = int(state["step"])
        fresh._trigger_count = int(state["trigger_count"])
        fresh._seen_end = int(state["seen_end"])
        fresh._warmup_initialized = bool(state["warmup_initialized"])
        fresh._momentum = decode_array(state["momentum"])
        fresh._evalset.load_state_dict(state, n, fresh._trigger_count)
        fresh._stats = {k: int(v) for k, v in state["stats"].items()}
        fresh._selective.load_state_dict(state.get("trigger_state"))  # absent in states saved before the selective trigger
        old = state.get("old_results") or {}
        fresh._old_key = old.get("sha256")
        fresh._old_cache = {int(i): bool(v) for i, v in old.get("results", [])}
        fresh._recent_close = [bool(v) for v in state.get("recent_close", [])]
        fresh._book.load_state_dict(state.get("reoffer"))
        anchor = state.get("near_copy_anchor") or {}
        sha, text = anchor.get("sha256"), anchor.get("text")
        if not (sha is None or isinstance(sha, str)) or not (text is None or isinstance(text, str)):
            raise ValueError("state near_copy_anchor must hold a sha256 string and a text string (or null)")
        if text is not None and _sha(text) != sha:
            raise ValueError("state near_copy_anchor text does not match its sha256")
        if fresh.config.reuse.near_copy_anchor and sha is not None and text is None and sha != fresh._old_key:
            raise ValueError("state near_copy_anchor holds no text for an anchor that is not the deployed memory")
        fresh._anchor_sha, fresh._anchor_text = sha, text
        self.__dict__.update(fresh.__dict__)

    @classmethod
    def from_state_dict(cls, state: dict, evaluator: Callable[[str, list], list] | None = None, *,
                        task_to_dict: Callable[[Any], dict] | None = None,
                        task_from_dict: Callable[[dict], Any] | None = None, units: Any = None):
        """Build a controller from :meth:`state_dict` output."""
        j = cls(JanusConfig.from_dict(state["config"]), evaluator,
                task_to_dict=task_to_dict, task_from_dict=task_from_dict, units=units)
        j.load_state_dict(state)
        return j
