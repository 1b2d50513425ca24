"""The Janus controller: decides, per stream step, whether to deploy the candidate memory.

Source: paper-spec.md §2 (MMT trigger), §3 (hybrid evaluation set), §4 (full algorithm), §8.3/8.4/8.6 (ablations,
sweeps), §11 (pitfalls); failure case C23. Pure: no I/O, no LLM client. The caller supplies an evaluator
``score(memory_text: str, tasks: list[Any]) -> list[bool]`` and the embeddings (φ(question), φ(M_{t-1}), φ(M̂_t)).

Usage::

    janus = Janus(JanusConfig(), evaluator=score)
    d = janus.decide(StepInput(task, task_emb, old_text, new_text, old_emb, new_emb))
    if not d.accept:
        updater.rollback(snapshot)
"""
from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from janus_memory.types import Task

from .decision import EvaluationError, compare, n_correct
from .trigger_options import SelectiveOptions, SelectiveTrigger
from .equivalence import trivially_equal
from .evalset import (
    EmbeddingStore,
    FullCoverage,
    IncrementalCoverage,
    bootstrap_boundary,
    build_entries,
    decode_array,
    encode_array,
    refresh_boundary,
    sample_fresh,
)
from .changes import change_stats
from .trigger import TRIGGER_POLICIES, TriggerPolicy, as_vector, cosine, exact_norm, momentum_update, update_direction

STATE_FORMAT = "janus-controller/1"


# ----------------------------------------------------------------------------- config


@dataclass(frozen=True)
class JanusConfig:
    """Controller hyper-parameters. Defaults are the paper's (spec §4, §8.6): the faithful configuration.

    Paper: warmup=20 (steps always accepted, momentum untouched), coverage_size K'=12, boundary_size K_b=8
    (support size K = K' + K_b = 20), fresh_size K_F=5, beta=0.9, tau=0.0, seed=0, trigger="mmt".
    Ablations (spec §8.3/8.4): trigger in never|always|random|periodic|mmt with trigger_rate / trigger_period;
    use_coverage / use_boundary / use_fresh drop a role from the evaluation entries (the role is still maintained).
    Beyond the paper (all off here; ``JanusConfig.fast()`` turns the speed options on):
      early_stop (+ early_stop_round tasks per round), dedup, clustering="incremental" (+ pool_size),
      decision_rule="sign_test" (+ alpha, min_margin).
    same_memory_shortcut (off in the paper preset, on in ``fast()``; C23): identical old/new texts are evaluated
      once, so evaluator noise cannot create flips. The authors always evaluate both memories, so with a stochastic
      evaluator noise can flip and roll back identical memories (this matters for the Always/Random/Periodic and
      tau=0.2 ablations); with a deterministic evaluator both settings decide the same.
    replay_limit (None = off, as in the paper): cap |E| by ``random.Random(seed + trigger_count + 17).sample``
      over the planned entries (trigger_count after the increment), as the authors' optional cap does.
    trigger="selective" (issue 16, opt-in): item gate (retention_min, shrink_max) or MMT with a magnitude gate
      (magnitude_ratio, magnitude_window) and an optional calibrated threshold (tau_quantile, tau_window);
      arm_warmup lets the item gate compare during warm-up; use_mmt=False keeps the item gate only. These fields
      are ignored by every other trigger (docs/controller.md, "Selective trigger").
    skip_trivially_equal (off; not in the paper): when the trigger fires on a candidate that differs from the old
      memory only in bookkeeping (version counter, whitespace, entry order; ``controller/equivalence.py``), accept
      it without evaluation: reason "trivially_equal", triggered False, no evaluator call, and the trigger's
      bookkeeping (fresh window, trigger count, coverage refresh, boundary) is left to the next real trigger.

    Raises:
        ValueError: on any invalid value (negative sizes, beta outside [0, 1), unknown names ...).
    """

    warmup: int = 20
    coverage_size: int = 12
    boundary_size: int = 8
    fresh_size: int = 5
    beta: float = 0.9
    tau: float = 0.0
    seed: int = 0
    trigger: str = "mmt"
    trigger_rate: float = 0.3
    trigger_period: int = 3
    use_coverage: bool = True
    use_boundary: bool = True
    use_fresh: bool = True
    early_stop: bool = False
    early_stop_round: int = 5
    dedup: bool = False
    clustering: str = "full"
    pool_size: int = 32
    decision_rule: str = "paper"
    min_margin: int = 0
    alpha: float = 0.05
    same_memory_shortcut: bool = False
    replay_limit: int | None = None
    # selective trigger (issue 16): read only when trigger == "selective" (trigger_options.py); defaults = the
    # measured recommendation in docs/controller.md. 0 switches a gate off.
    retention_min: float = 0.25
    shrink_max: float = 0.5
    magnitude_ratio: float = 1.5
    magnitude_window: int = 10
    tau_quantile: float = 0.0
    tau_window: int = 20
    arm_warmup: bool = True
    use_mmt: bool = True
    skip_trivially_equal: bool = False

    def __post_init__(self):
        ints = ("warmup", "coverage_size", "boundary_size", "fresh_size", "seed", "trigger_period",
                "early_stop_round", "pool_size", "min_margin", "magnitude_window", "tau_window")
        for name in ints:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ValueError(f"{name} must be an int, got {v!r}")
            if name != "seed" and v < 0:
                raise ValueError(f"{name} must be >= 0, got {v}")
        for name in ("trigger_period", "early_stop_round", "pool_size", "magnitude_window", "tau_window"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        for name in ("use_coverage", "use_boundary", "use_fresh", "early_stop", "dedup", "same_memory_shortcut",
                     "arm_warmup", "use_mmt", "skip_trivially_equal"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool")
        for name in ("beta", "tau", "trigger_rate", "alpha", "retention_min", "shrink_max", "magnitude_ratio",
                     "tau_quantile"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
        if not 0.0 <= self.beta < 1.0:
            raise ValueError(f"beta must be in [0, 1), got {self.beta}")
        if not 0.0 <= self.trigger_rate <= 1.0:
            raise ValueError(f"trigger_rate must be in [0, 1], got {self.trigger_rate}")
        for name in ("retention_min", "shrink_max", "tau_quantile"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.magnitude_ratio < 0:
            raise ValueError(f"magnitude_ratio must be >= 0, got {self.magnitude_ratio}")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        rl = self.replay_limit
        if rl is not None and (isinstance(rl, bool) or not isinstance(rl, (int, np.integer)) or rl < 1):
            raise ValueError(f"replay_limit must be None or an int >= 1, got {rl!r}")
        if self.trigger not in TRIGGER_POLICIES:
            raise ValueError(f"trigger must be one of {TRIGGER_POLICIES}, got {self.trigger!r}")
        if self.clustering not in ("full", "incremental"):
            raise ValueError(f"clustering must be 'full' or 'incremental', got {self.clustering!r}")
        if self.decision_rule not in ("paper", "sign_test"):
            raise ValueError(f"decision_rule must be 'paper' or 'sign_test', got {self.decision_rule!r}")
        if self.early_stop and self.decision_rule != "paper":
            raise ValueError("early_stop is exact only for decision_rule='paper'")

    @property
    def support_size(self) -> int:
        """K = coverage_size + boundary_size (spec §3.1)."""
        return self.coverage_size + self.boundary_size

    @classmethod
    def paper(cls, **overrides) -> JanusConfig:
        """The paper preset: the authors' code rule for rule (same as ``JanusConfig()``)."""
        return cls(**overrides)

    @classmethod
    def faithful(cls, **overrides) -> JanusConfig:
        """Alias of :meth:`paper` (older name)."""
        return cls.paper(**overrides)

    @classmethod
    def fast(cls, **overrides) -> JanusConfig:
        """Speed options on: exact early stopping, de-duplication, incremental clustering and the identical-memory
        shortcut (identical texts are evaluated once: no noise flips)."""
        base = dict(early_stop=True, dedup=True, clustering="incremental", same_memory_shortcut=True)
        base.update(overrides)
        return cls(**base)

    @property
    def preset(self) -> str:
        """``"paper"`` or ``"fast"`` when the speed/fidelity switches equal that preset's, else ``"custom"``.

        Only the switches that separate the presets are compared (sizes, tau, trigger policy, seed are settings
        of either preset): early_stop, dedup, clustering, decision_rule, same_memory_shortcut, replay_limit."""
        keys = ("early_stop", "dedup", "clustering", "decision_rule", "same_memory_shortcut", "replay_limit")
        mine = tuple(getattr(self, k) for k in keys)
        for name, ref in (("paper", JanusConfig.paper()), ("fast", JanusConfig.fast())):
            if mine == tuple(getattr(ref, k) for k in keys):
                return name
        return "custom"

    def preset_line(self) -> str:
        """One line for run headers, e.g. ``janus preset: paper (same_memory_shortcut=False, ...)``."""
        return (f"janus preset: {self.preset} (trigger={self.trigger}, tau={self.tau}, "
                f"same_memory_shortcut={self.same_memory_shortcut}, early_stop={self.early_stop}, "
                f"dedup={self.dedup}, clustering={self.clustering}, replay_limit={self.replay_limit})")

    @classmethod
    def with_support_size(cls, k: int, *, coverage_size: int = 12, **overrides) -> JanusConfig:
        """Support-size sweep as in the authors' CLI (spec §8.6): K' = min(coverage_size, K), K_b = K - K',
        and the warm-up length equals K (the authors' warm-up is K steps)."""
        if k < 1:
            raise ValueError("support size K must be >= 1")
        cov = min(coverage_size, k)
        base = dict(coverage_size=cov, boundary_size=k - cov, warmup=k)
        base.update(overrides)
        return cls(**base)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> JanusConfig:
        """Inverse of :meth:`to_dict`. Raises ValueError naming any unknown key."""
        known = {f.name for f in dataclasses.fields(cls)}
        for key in d:
            if key not in known:
                raise ValueError(f"unknown JanusConfig key: {key!r}")
        return cls(**d)


# ----------------------------------------------------------------------------- step input / decision


@dataclass
class StepInput:
    """One stream step as seen by the controller.

    task: the caller's task object; needs an ``id`` (attribute, or key for dicts). Passed back to the evaluator.
    task_embedding: φ(question), shape (d,), same d for every task (L2-normalised in the paper).
    old_memory / new_memory: texts of M_{t-1} and the candidate M̂_t (what the evaluator replays).
    old_embedding / new_embedding: φ(old_memory), φ(new_memory), shape (d_m,).
    """

    task: Any
    task_embedding: Any
    old_memory: str
    new_memory: str
    old_embedding: Any
    new_embedding: Any


@dataclass
class Decision:
    """The controller's verdict for one step (JSON-serialisable through :meth:`to_dict`).

    accept: deploy the candidate (False = restore M_{t-1}). cosine: cos(z_t, m_{t-1}) or None (warm-up / no momentum).
    z_norm: ‖z_t‖; momentum_norm: ‖m_{t-1}‖ (None when absent). coverage/boundary/fresh: task ids of each role used
    in the evaluation (empty when the role is ablated). eval_ids: planned entries in evaluation order (duplicates
    kept unless dedup); old_correct/new_correct align with eval_ids[:len(...)] (all of them with full evaluation; a
    prefix under early stopping, possibly of different lengths for the two memories). n_evaluated: entries scored
    under both memories (the flip set is computed on them). old_score/new_score: accuracy over the entries each
    memory was evaluated on (denominator max(1, n)). flips: ids where the memories disagree (coverage reps excluded). evaluator_calls: (memory, task) evaluations spent; evaluator_calls_full: cost of the full two-memory
    evaluation. warnings: sanitised bad input and recovered failures.
    """

    step: int
    task_id: str
    phase: str
    triggered: bool
    accept: bool
    reason: str
    cosine: float | None = None
    z_norm: float | None = None
    momentum_norm: float | None = None
    coverage: list[str] = field(default_factory=list)
    boundary: list[str] = field(default_factory=list)
    fresh: list[str] = field(default_factory=list)
    eval_ids: list[str] = field(default_factory=list)
    n_evaluated: int = 0
    old_correct: list[bool] = field(default_factory=list)
    new_correct: list[bool] = field(default_factory=list)
    old_score: float | None = None
    new_score: float | None = None
    flips: list[str] = field(default_factory=list)
    evaluator_calls: int = 0
    evaluator_calls_full: int = 0
    p_value: float | None = None
    trigger_count: int = 0
    warnings: list[str] = field(default_factory=list)
    trigger_signals: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """All fields; ``trigger_signals`` only when a trigger produced some (the selective trigger), so decision
        logs of the other triggers keep their format."""
        d = dataclasses.asdict(self)
        if not d["trigger_signals"]:
            del d["trigger_signals"]
        return d


# ----------------------------------------------------------------------------- task (de)serialisation


def task_id_of(task: Any) -> str:
    """The task's id as a string (``task.id`` or ``task["id"]``). Raises TypeError when absent."""
    if isinstance(task, dict):
        if "id" not in task:
            raise TypeError("task dict has no 'id' key")
        return str(task["id"])
    tid = getattr(task, "id", None)
    if tid is None:
        raise TypeError(f"task of type {type(task).__name__} has no 'id' attribute")
    return str(tid)


def _default_task_to_dict(task: Any) -> dict:
    if isinstance(task, Task):
        return {"type": "Task", "data": dataclasses.asdict(task)}
    if isinstance(task, dict):
        return {"type": "dict", "data": task}
    raise TypeError(
        f"cannot serialise task of type {type(task).__name__}; pass task_to_dict/task_from_dict to Janus"
    )


def _default_task_from_dict(d: dict) -> Any:
    if d["type"] == "Task":
        return Task(**d["data"])
    if d["type"] == "dict":
        return d["data"]
    raise ValueError(f"unknown stored task type {d['type']!r}; pass task_from_dict")


# ----------------------------------------------------------------------------- controller


class Janus:
    """The Janus controller (spec §4). See module docstring.

    Args:
        config: :class:`JanusConfig` (paper defaults when None).
        evaluator: ``evaluator(memory_text, tasks) -> list[bool]`` (one bool per task, same order).
        task_to_dict / task_from_dict: JSON (de)serialisation of task objects for :meth:`state_dict`;
            defaults handle ``janus_memory.types.Task`` and plain dicts.
    """

    def __init__(
        self,
        config: JanusConfig | None = None,
        evaluator: Callable[[str, list], list] | None = None,
        *,
        task_to_dict: Callable[[Any], dict] | None = None,
        task_from_dict: Callable[[dict], Any] | None = None,
    ):
        self.config = config if config is not None else JanusConfig()
        if not isinstance(self.config, JanusConfig):
            raise TypeError("config must be a JanusConfig")
        self.evaluator = evaluator
        self._task_to_dict = task_to_dict
        self._task_from_dict = task_from_dict
        c = self.config
        self._policy = TriggerPolicy(c.trigger, float(c.tau), float(c.trigger_rate), c.trigger_period, c.warmup, c.seed)
        self._selective = SelectiveTrigger(SelectiveOptions(
            tau=float(c.tau), use_mmt=c.use_mmt, retention_min=float(c.retention_min), shrink_max=float(c.shrink_max),
            magnitude_ratio=float(c.magnitude_ratio), magnitude_window=c.magnitude_window,
            tau_quantile=float(c.tau_quantile), tau_window=c.tau_window, arm_warmup=c.arm_warmup))
        self._cov_model = (
            FullCoverage(c.coverage_size, c.seed)
            if c.clustering == "full"
            else IncrementalCoverage(c.coverage_size, c.seed, c.pool_size)
        )
        self._store = EmbeddingStore()
        self._tasks: list[Any] = []
        self._ids: list[str] = []
        self._step = 0
        self._trigger_count = 0
        self._seen_end = 0
        self._warmup_initialized = False
        self._momentum: np.ndarray | None = None
        self._coverage: list[int] = []
        self._boundary: list[tuple[int, str]] = []
        self._stats = dict(steps=0, triggers=0, accepts=0, rollbacks=0, evaluator_calls=0,
                           evaluator_calls_saved=0, evaluation_failures=0)

    # ------------------------------------------------------------------ read-only views
    @property
    def stats(self) -> dict:
        """steps, triggers, accepts, rollbacks, evaluator_calls, evaluator_calls_saved, evaluation_failures."""
        return dict(self._stats)

    @property
    def momentum(self) -> np.ndarray | None:
        return None if self._momentum is None else self._momentum.copy()

    @property
    def coverage_ids(self) -> list[str]:
        return [self._ids[i] for i in self._coverage]

    @property
    def boundary_ids(self) -> list[str]:
        return [self._ids[i] for i, _ in self._boundary]

    @property
    def boundary_tags(self) -> list[str]:
        return [t for _, t in self._boundary]

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
        Nothing is mutated when an exception is raised.
        """
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
        c = self.config

        selective = c.trigger == "selective"
        # ---- warm-up (spec §3.2): accept, store, initialise support sets at the last warm-up step
        if self._step + 1 <= c.warmup:
            verdict = signals = None
            if selective and c.arm_warmup:
                ch = change_stats(inp.old_memory, inp.new_memory)
                verdict = self._selective.warmup_fires(ch)
                signals = {**ch.to_dict(), **verdict.to_dict()}
                if verdict.fire and self.evaluator is None:
                    raise RuntimeError("Janus needs an evaluator callback to compare memories")
            self._append(q, inp.task, tid)
            d = Decision(step=self._step, task_id=tid, phase="warmup", triggered=False, accept=True,
                         reason="warmup", warnings=warnings, trigger_signals=signals or {})
            if verdict is not None and verdict.fire:
                d.triggered = True
                self._warmup_trigger(d, inp.old_memory, inp.new_memory)
            else:
                self._stats["accepts"] += 1
            if self._step == c.warmup and not self._warmup_initialized:
                d.warnings += self._init_support()
            d.trigger_count = self._trigger_count
            return d

        # ---- post-warm-up
        z, w = update_direction(old_v, new_v)
        warnings += w
        prev = self._momentum
        if self.config.trigger != "never" and self.evaluator is None:
            raise RuntimeError("Janus needs an evaluator callback to compare memories")
        self._append(q, inp.task, tid)
        step = self._step
        cos = None
        if prev is not None:
            if prev.shape != z.shape:
                warnings.append(f"momentum dimension {prev.shape[0]} differs from z dimension {z.shape[0]}; "
                                "cosine 0 and momentum restarted from z")
            cos = cosine(z, prev)
        z_norm = exact_norm(z)
        signals: dict = {}
        if selective:
            ch = change_stats(inp.old_memory, inp.new_memory)
            verdict = self._selective.fires(cos, z_norm, ch)
            fire = verdict.fire
            signals = {**ch.to_dict(), **verdict.to_dict()}
        else:
            fire = self._policy.fires(step, cos)
        d = Decision(step=step, task_id=tid, phase="stream", triggered=fire, accept=True, reason="not_triggered",
                     cosine=cos, z_norm=z_norm, momentum_norm=None if prev is None else exact_norm(prev),
                     warnings=warnings, trigger_signals=signals)
        if fire and c.skip_trivially_equal and trivially_equal(inp.old_memory, inp.new_memory):
            d.triggered = False
            d.reason = "trivially_equal"
            self._stats["accepts"] += 1
        elif fire:
            self._trigger(d, inp.old_memory, inp.new_memory)
        else:
            self._stats["accepts"] += 1
        d.trigger_count = self._trigger_count
        # momentum: every post-warm-up step, with the candidate's z, after the decision (spec §2.2)
        self._momentum = momentum_update(prev, z, c.beta)
        if selective:
            self._selective.observe(cos, z_norm)
        return d

    # ------------------------------------------------------------------ internals
    def _append(self, q: np.ndarray, task: Any, tid: str) -> None:
        self._store.append(q)
        self._tasks.append(task)
        self._ids.append(tid)
        self._step += 1
        self._stats["steps"] += 1

    def _init_support(self) -> list[str]:
        """End of warm-up: coverage via k-means on the warm-up tasks, bootstrap boundary (spec §3.2)."""
        n = self._store.n
        warnings = []
        try:
            reps = self._cov_model.refresh(self._store, n)
        except Exception as exc:  # clustering failure: leave coverage empty, keep going
            reps = []
            warnings.append(f"coverage initialisation failed: {type(exc).__name__}: {exc}")
        self._coverage = reps
        self._boundary = bootstrap_boundary(n, reps, self.config.boundary_size)
        self._seen_end = n
        self._warmup_initialized = True
        return warnings

    def _warmup_trigger(self, d: Decision, old_text: str, new_text: str) -> None:
        """Selective trigger armed during warm-up: compare on up to K + K_F tasks seen so far (a seeded sample,
        role ``fresh``). Coverage, boundary and the seen/pending split are untouched (they start at the end of
        warm-up); the trigger count advances."""
        c = self.config
        n = self._store.n
        entries = sample_fresh(0, n, c.support_size + c.fresh_size, c.seed, self._trigger_count)
        self._trigger_count += 1
        self._stats["triggers"] += 1
        d.fresh = [self._ids[i] for i in entries]
        d.eval_ids = list(d.fresh)
        d.evaluator_calls_full = 2 * len(entries)
        comp = self._compare(d, entries, old_text, new_text)
        if comp is not None:
            self._stats["accepts" if comp.accept else "rollbacks"] += 1

    def _compare(self, d: Decision, entries: list[int], old_text: str, new_text: str):
        """Evaluate both memories on ``entries``, fill ``d``; None (candidate kept) when the evaluator failed."""
        c = self.config
        begin = getattr(self.evaluator, "begin_comparison", None)
        if callable(begin):  # lets a sampling evaluator draw fresh, resumable samples per (trigger, entry, memory)
            begin(step=d.step, trigger=self._trigger_count)
        expect = getattr(self.evaluator, "expect_pair", None)
        if callable(expect) and entries and not (c.same_memory_shortcut and old_text == new_text):
            # both memories will be evaluated on these entries (all of them unless early stopping ends the
            # comparison sooner): a batching evaluator may solve them together (runner/eval_batch.py); the
            # calls it receives and the decision are unchanged
            expect(old_text, new_text, complete=not (c.early_stop and c.decision_rule == "paper"))
        try:
            comp = compare(self.evaluator, [self._tasks[i] for i in entries], old_text, new_text,
                           rule=c.decision_rule, alpha=c.alpha, min_margin=c.min_margin,
                           early_stop=c.early_stop, round_size=c.early_stop_round,
                           same_memory_shortcut=c.same_memory_shortcut)
        except EvaluationError as exc:
            d.accept = True
            d.reason = f"evaluation_failed:{exc}"
            d.evaluator_calls = int(getattr(exc, "calls", 0))
            self._stats["evaluator_calls"] += d.evaluator_calls
            self._stats["evaluation_failures"] += 1
            self._stats["accepts"] += 1
            return None
        d.accept = comp.accept
        d.reason = comp.reason
        d.n_evaluated = comp.n_evaluated
        d.old_correct = comp.old_correct
        d.new_correct = comp.new_correct
        d.old_score = n_correct(comp.old_correct) / max(1, len(comp.old_correct))
        d.new_score = n_correct(comp.new_correct) / max(1, len(comp.new_correct))
        d.evaluator_calls = comp.calls
        d.p_value = comp.p_value
        self._stats["evaluator_calls"] += comp.calls
        self._stats["evaluator_calls_saved"] += comp.calls_full - comp.calls
        return comp

    def _trigger(self, d: Decision, old_text: str, new_text: str) -> None:
        c = self.config
        ids = self._ids
        fresh = sample_fresh(self._seen_end, self._store.n, c.fresh_size, c.seed, self._trigger_count)
        self._seen_end = self._store.n
        self._trigger_count += 1
        self._stats["triggers"] += 1
        try:
            self._coverage = self._cov_model.refresh(self._store, self._seen_end)
        except Exception as exc:  # spec §3.2 step 3: keep the previous coverage
            d.warnings.append(f"coverage refresh failed ({type(exc).__name__}: {exc}); previous coverage kept")
        cov = list(self._coverage) if c.use_coverage else []
        bnd = [i for i, _ in self._boundary] if c.use_boundary else []
        fr = fresh if c.use_fresh else []
        entries = build_entries(cov, bnd, fr, c.dedup)
        if c.replay_limit is not None and len(entries) > c.replay_limit:
            # the authors' optional cap (spec §3.2 step 4): trigger_count is already incremented here
            entries = random.Random(c.seed + self._trigger_count + 17).sample(entries, c.replay_limit)
        d.coverage = [ids[i] for i in cov]
        d.boundary = [ids[i] for i in bnd]
        d.fresh = [ids[i] for i in fr]
        d.eval_ids = [ids[i] for i in entries]
        d.evaluator_calls_full = 2 * len(entries)
        comp = self._compare(d, entries, old_text, new_text)
        if comp is None:
            return
        cov_set = set(self._coverage)
        # an indeterminate outcome (None, e.g. a timeout) under either memory is never a flip (C16-C)
        flips = [entries[p] for p in range(comp.n_evaluated)
                 if comp.old_correct[p] is not None and comp.new_correct[p] is not None
                 and comp.old_correct[p] != comp.new_correct[p] and entries[p] not in cov_set]
        d.flips = [ids[i] for i in flips]
        self._boundary = refresh_boundary(self._boundary, flips, self._coverage, c.boundary_size, c.seed,
                                          self._trigger_count)
        self._stats["accepts" if comp.accept else "rollbacks"] += 1

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict:
        """Full controller state, JSON-serialisable (arrays as base64 little-endian bytes).

        ``json.dumps(state, sort_keys=True)`` is byte-identical after a save -> load -> save round trip, and a
        restored controller makes exactly the decisions the original would have made.
        Raises TypeError when a task cannot be serialised (pass ``task_to_dict``).
        """
        to_d = self._task_to_dict
        tasks = [({"type": "custom", "data": to_d(t)} if to_d else _default_task_to_dict(t)) for t in self._tasks]
        return {
            "format": STATE_FORMAT,
            "config": self.config.to_dict(),
            "step": self._step,
            "trigger_count": self._trigger_count,
            "seen_end": self._seen_end,
            "warmup_initialized": self._warmup_initialized,
            "momentum": encode_array(self._momentum),
            "coverage": list(self._coverage),
            "boundary": [[i, t] for i, t in self._boundary],
            "coverage_model": self._cov_model.state_dict(),
            "embeddings": self._store.state_dict(),
            "ids": list(self._ids),
            "tasks": tasks,
            "stats": dict(self._stats),
            "trigger_state": self._selective.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore from :meth:`state_dict` (the config stored in the state replaces the current one).

        Raises ValueError on an unknown format or inconsistent content.
        """
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise ValueError(f"not a Janus controller state (format {STATE_FORMAT!r} expected)")
        fresh = Janus(JanusConfig.from_dict(state["config"]), self.evaluator,
                      task_to_dict=self._task_to_dict, task_from_dict=self._task_from_dict)
        store = EmbeddingStore.from_state_dict(state["embeddings"])
        n = store.n
        if len(state["ids"]) != n or len(state["tasks"]) != n:
            raise ValueError("state has inconsistent numbers of tasks, ids and embeddings")
        if state["coverage_model"]["kind"] != fresh._cov_model.kind:
            raise ValueError("state coverage model does not match config.clustering")
        fresh._cov_model.load_state_dict(state["coverage_model"])
        fresh._store = store
        fresh._ids = [str(i) for i in state["ids"]]
        from_d = self._task_from_dict
        tasks = []
        for t in state["tasks"]:
            if t["type"] == "custom":
                if from_d is None:
                    raise ValueError("state holds custom-serialised tasks: pass task_from_dict")
                tasks.append(from_d(t["data"]))
            else:
                tasks.append(_default_task_from_dict(t))
        fresh._tasks = tasks
        fresh._step = int(state["step"])
        fresh._trigger_count = int(state["trigger_count"])
        fresh._seen_end = int(state["seen_end"])
        fresh._warmup_initialized = bool(state["warmup_initialized"])
        fresh._momentum = decode_array(state["momentum"])
        fresh._coverage = [int(i) for i in state["coverage"]]
        fresh._boundary = [(int(i), str(t)) for i, t in state["boundary"]]
        fresh._stats = {k: int(v) for k, v in state["stats"].items()}
        fresh._selective.load_state_dict(state.get("trigger_state"))  # absent in states saved before issue 16
        self.__dict__.update(fresh.__dict__)

    @classmethod
    def from_state_dict(
        cls,
        state: dict,
        evaluator: Callable[[str, list], list] | None = None,
        *,
        task_to_dict: Callable[[Any], dict] | None = None,
        task_from_dict: Callable[[dict], Any] | None = None,
    ) -> Janus:
        """Build a controller from :meth:`state_dict` output."""
        j = cls(JanusConfig.from_dict(state["config"]), evaluator,
                task_to_dict=task_to_dict, task_from_dict=task_from_dict)
        j.load_state_dict(state)
        return j
