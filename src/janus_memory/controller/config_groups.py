"""The four groups of JanusConfig: when to compare (``TriggerConfig``), on which tasks (``EvalSetConfig``), how a
comparison decides (``DecisionConfig``) and which measurements are reused or skipped (``ReuseConfig``).

Each group is a frozen dataclass that checks its own fields; the rules that tie two groups together live in
``JanusConfig``. Every setting also has one flat name (``tau``, ``trigger_rate``, ``seq_max_pairs`` ...): the keys of
``JanusConfig.to_dict()``, the YAML ``janus:`` block, the CLI flags and ``<run>/config.json``. ``FLAT`` maps each flat
name to its group and field; error messages name the flat key, which every form of the settings accepts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ..did_you_mean import did_you_mean
from .trigger import TRIGGER_POLICIES

SEED_MAX = 2**32 - 1  # scikit-learn's KMeans random_state range (numpy's RandomState takes the same)
CLUSTERINGS = ("paper", "sklearn", "incremental")
DECISION_RULES = ("paper", "sign_test", "sequential")
EVAL_ORDERS = ("paper", "informative", "relevant", "fresh_first", "interleaved")
ON_EVALUATION_ERROR = ("keep_old", "deploy")
PANEL_ORDERS = ("stable", "touched")


# ------------------------------------------------------------------ checks shared by the groups
MAX_COUNT = 1 << 20  # the settings' bound of a count (settings/limits.py)


def check_ints(obj: Any, names: dict[str, str], at_least_one: tuple[str, ...] = ()) -> None:
    """Each field of ``names`` (group field -> flat name) an int in [0, 2**20] (numpy ints too, stored as int; bools
    not; the seed has its own range); those of ``at_least_one`` >= 1. A count past 2**20 is a typo that would ask
    for that many model calls (settings/limits.py MAX_COUNT)."""
    for name, flat in names.items():
        v = getattr(obj, name)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"{flat} must be an int, got {v!r}")
        object.__setattr__(obj, name, int(v))  # a numpy int would not write as JSON
        if flat != "seed" and v < 0:
            raise ValueError(f"{flat} must be >= 0, got {v}")
        if flat != "seed" and v > MAX_COUNT:
            raise ValueError(f"{flat} must be <= {MAX_COUNT}, got {v}")
    for name in at_least_one:
        if getattr(obj, name) < 1:
            raise ValueError(f"{names[name]} must be >= 1, got {getattr(obj, name)}")


def check_bools(obj: Any, names: dict[str, str]) -> None:
    for name, flat in names.items():
        if not isinstance(getattr(obj, name), bool):
            raise ValueError(f"{flat} must be a bool")


def check_numbers(obj: Any, names: dict[str, str]) -> None:
    """Each field a finite int or float (bools not)."""
    for name, flat in names.items():
        v = getattr(obj, name)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{flat} must be a finite number, got {v!r}")


def check_range(obj: Any, name: str, lo: float, hi: float, *, flat: str | None = None, closed: str = "[]") -> None:
    """``lo <= v <= hi`` with the bounds ``closed`` names as inclusive ("[]", "[)", "()")."""
    v = getattr(obj, name)
    ok_lo = v >= lo if closed[0] == "[" else v > lo
    ok_hi = v <= hi if closed[1] == "]" else v < hi
    if not (ok_lo and ok_hi):
        raise ValueError(f"{flat or name} must be in {closed[0]}{lo:g}, {hi:g}{closed[1]}, got {v}")


def check_choice(value: Any, flat: str, choices: tuple[str, ...], sep: str | None = None) -> None:
    if value not in choices:
        shown = sep.join(choices) if sep is not None else str(choices)
        raise ValueError(f"{flat} must be one of {shown}, got {value!r}{did_you_mean(value, choices)}")


class _KindCompat:
    """A group with a ``kind`` reads like the string it was before the settings were grouped: ``cfg.trigger ==
    "always"``, ``str(cfg.trigger)`` and ``f"{cfg.trigger}"`` see the kind (two groups compare field by field)."""

    kind: str

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self.kind == other
        if type(other) is type(self):
            return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(self))  # type: ignore[arg-type]
        return NotImplemented

    def __hash__(self) -> int:  # equal groups have equal kinds; a group equal to its kind hashes as it does
        return hash(self.kind)

    def __str__(self) -> str:
        return self.kind

    def __format__(self, spec: str) -> str:
        return format(self.kind, spec)


# ------------------------------------------------------------------ the groups
@dataclass(frozen=True, eq=False)
class TriggerConfig(_KindCompat):
    """When the controller compares the candidate with the deployed memory (after the warm-up), and the item gate that
    can force a comparison whatever the trigger."""

    kind: str = "mmt"
    """Trigger policy (flat key ``trigger``): ``mmt`` (the paper's Memory Momentum Trigger), ``never``, ``always``,
    ``random`` (``rate``), ``periodic`` (``period``) or ``selective`` (MMT with the magnitude, calibration and item
    gates below)."""
    beta: float = 0.9
    """Momentum coefficient in [0, 1): m_t = beta * m_(t-1) + (1 - beta) * z_t. The momentum is kept whatever the
    trigger; only ``mmt`` and ``selective`` read it."""
    tau: float = 0.0
    """Cosine threshold in [-1, 1]: ``mmt`` compares when cos(z_t, m_(t-1)) < tau. Read by ``mmt`` and ``selective``
    (there the cap of the calibrated threshold, ``tau_quantile``)."""
    rate: float = 0.3
    """Probability in [0, 1] that a post-warm-up step compares (flat key ``trigger_rate``). Read by ``random`` only."""
    period: int = 3
    """Compare every ``period`` steps after the warm-up, >= 1 (flat key ``trigger_period``). Read by ``periodic``
    only."""
    use_mmt: bool = True
    """``selective`` only: keep the momentum gate (cosine below tau and the magnitude test); False leaves the item gate
    alone."""
    retention_min: float = 0.25
    """Item gate, in [0, 1], 0 = off: a candidate that keeps less than this share of the old memory's word 3-grams is
    flagged as destructive. Read by ``selective`` and by ``gate_compare`` / ``gate_full_compare``."""
    shrink_max: float = 0.5
    """Item gate, in [0, 1], 0 = off: a candidate whose item count falls below this times the old count is flagged.
    Read as ``retention_min``."""
    magnitude_ratio: float = 1.5
    """``selective`` momentum gate, >= 0, 0 = off: also ask ||z_t|| >= this times the median of the last
    ``magnitude_window`` post-warm-up ||z||."""
    magnitude_window: int = 10
    """Steps (>= 1) of the ||z|| median of ``magnitude_ratio``."""
    tau_quantile: float = 0.0
    """``selective`` calibrated threshold, in [0, 1], 0 = off: the threshold is this quantile of the last
    ``tau_window`` cosines (once 5 are recorded), capped at ``tau``."""
    tau_window: int = 20
    """Cosines (>= 1) the calibrated threshold of ``tau_quantile`` is taken over."""
    arm_warmup: bool = True
    """``selective`` only: the item gate may compare during the warm-up (the cosine needs a momentum, so only it
    can)."""
    gate_compare: bool = False
    """Whatever the trigger, warm-up included: a candidate the item gate (``retention_min``, ``shrink_max``) flags is
    compared by the configured decision rule. Exclusive with ``gate_full_compare``."""
    gate_full_compare: bool = False
    """As ``gate_compare``, but the flagged candidate gets a full paper-rule comparison on the whole evaluation set
    (no sequential cap, no early stop). Exclusive with ``gate_compare``."""
    compare_on_broken_embeddings: bool = True
    """Fail closed on a broken encoder: after the warm-up, a step whose embeddings hold a NaN or inf, or are all three
    (task, old and new memory) all zeros while a memory text is not blank, is compared whatever the trigger said
    (signal ``forced_by: "encoder"``, and a warning). False: the trigger reads zero vectors (NaN and inf replaced;
    MMT's cosine is then 0 and it never fires, so every candidate is deployed unchecked). Not read by ``never``."""

    def __post_init__(self):
        check_ints(self, {"period": "trigger_period", "magnitude_window": "magnitude_window",
                          "tau_window": "tau_window"}, at_least_one=("period", "magnitude_window", "tau_window"))
        check_bools(self, {n: n for n in ("use_mmt", "arm_warmup", "gate_compare", "gate_full_compare",
                                          "compare_on_broken_embeddings")})
        check_numbers(self, {"beta": "beta", "tau": "tau", "rate": "trigger_rate", "retention_min": "retention_min",
                             "shrink_max": "shrink_max", "magnitude_ratio": "magnitude_ratio",
                             "tau_quantile": "tau_quantile"})
        if not -1.0 <= self.tau <= 1.0:
            fix = ("to compare at every step use the trigger policy always: --trigger always" if self.tau > 1 else
                   "to never compare use the trigger policy never: --trigger never")
            raise ValueError(f"tau must be in [-1, 1], got {self.tau} (MMT compares it with a cosine; {fix})")
        check_range(self, "beta", 0, 1, closed="[)")
        check_range(self, "rate", 0, 1, flat="trigger_rate")
        for name in ("retention_min", "shrink_max", "tau_quantile"):
            check_range(self, name, 0, 1)
        if self.magnitude_ratio < 0:
            raise ValueError(f"magnitude_ratio must be >= 0, got {self.magnitude_ratio}")
        if self.gate_full_compare and self.gate_compare:
            raise ValueError("gate_full_compare and gate_compare are two forms of one gate (a full paper-rule "
                             "comparison, or one by the configured rule): set one of them")
        check_choice(self.kind, "trigger", TRIGGER_POLICIES)

    @property
    def gated(self) -> bool:
        """The item gate forces comparisons (``gate_compare`` or ``gate_full_compare``)."""
        return self.gate_compare or self.gate_full_compare


@dataclass(frozen=True, eq=False)
class EvalSetConfig(_KindCompat):
    """Which tasks a comparison solves with both memories: the paper's hybrid set (coverage + boundary + fresh) or a
    stable panel, and the order they are read in."""

    kind: str = "hybrid"
    """Evaluation-set strategy (flat key ``eval_set``): ``hybrid`` (the paper's set), ``panel`` (a stable panel of
    seen tasks) or a registered plugin's name, optionally ``name:arg``."""
    coverage_size: int = 12
    """K': coverage tasks (k-means representatives of the seen tasks), >= 0. Hybrid set only."""
    boundary_size: int = 8
    """K_b: boundary tasks (tasks whose correctness flipped), >= 0. Hybrid set only; K = K' + K_b is also the warm-up
    sample of every strategy."""
    fresh_size: int = 5
    """K_F: tasks sampled among those seen since the last comparison, >= 0. Hybrid set only."""
    use_coverage: bool = True
    """Ablation: False drops the coverage tasks from the comparison (the coverage model is still kept)."""
    use_boundary: bool = True
    """Ablation: False drops the boundary tasks from the comparison (the buffer is still kept)."""
    use_fresh: bool = True
    """Ablation: False drops the fresh sample from the comparison."""
    clustering: str = "paper"
    """Coverage k-means: ``paper`` (the authors' kmeans_pytorch behaviour, seeded), ``sklearn`` (scikit-learn
    k-means++ with exact warm starts; the stored name ``full`` reads as it) or ``incremental`` (faster; uses
    ``pool_size``)."""
    pool_size: int = 32
    """Candidate pool (>= 1) of the ``incremental`` clustering; read by it only."""
    dedup: bool = False
    """A task that holds two roles of the hybrid set is solved once."""
    order: str = "paper"
    """Reading order of the hybrid set (flat key ``eval_order``): ``paper`` (coverage, boundary, fresh),
    ``informative`` (past flips first, the rest of the boundary, coverage, fresh), ``relevant`` (those sorted by
    their similarity to the current task), ``fresh_first`` or ``interleaved``. Matters with a rule that can stop
    early (sequential, early stop, ``replay_limit``); the panel keeps its own order."""
    replay_limit: int | None = None
    """None = off; else an int >= 1: a comparison reads a seeded sample of at most this many of the hybrid set's
    tasks (the authors' optional cap)."""
    panel_size: int = 18
    """Tasks (>= 1) of the ``panel`` strategy, read in order. Panel only."""
    panel_rotate: float = 0.3
    """Probability in [0, 1], per comparison, that one panel member is replaced by a random seen task. Panel only."""
    panel_min_evals: int = 5
    """The member replaced is the one the memories disagreed on least among those read at least this many times;
    0 = a seeded member. Panel only."""
    panel_order: str = "stable"
    """Reading order of the panel: ``stable`` (members in their places) or ``touched`` (the members whose question
    shares the most words with the lines the update added or removed first; without question texts, the members whose
    embedding is most aligned, either sign, with φ(new) − φ(old)). Panel only."""

    def __post_init__(self):
        check_ints(self, {n: n for n in ("coverage_size", "boundary_size", "fresh_size", "pool_size", "panel_size",
                                         "panel_min_evals")}, at_least_one=("pool_size", "panel_size"))
        check_bools(self, {n: n for n in ("use_coverage", "use_boundary", "use_fresh", "dedup")})
        check_numbers(self, {"panel_rotate": "panel_rotate"})
        check_choice(self.order, "eval_order", EVAL_ORDERS)
        check_choice(self.panel_order, "panel_order", PANEL_ORDERS)
        check_range(self, "panel_rotate", 0, 1)
        rl = self.replay_limit
        if rl is not None and (isinstance(rl, bool) or not isinstance(rl, (int, np.integer)) or not 1 <= rl <= MAX_COUNT):
            raise ValueError(f"replay_limit must be None or an int in [1, {MAX_COUNT}], got {rl!r}")
        if rl is not None:
            object.__setattr__(self, "replay_limit", int(rl))
        if self.clustering == "full":  # the name of the scikit-learn k-means before the paper k-means existed
            object.__setattr__(self, "clustering", "sklearn")
        check_choice(self.clustering, "clustering", CLUSTERINGS, sep=", ")
        if not isinstance(self.kind, str):
            raise ValueError(f"eval_set must be a string, got {self.kind!r}")

    @property
    def support_size(self) -> int:
        """K = coverage_size + boundary_size (spec §3.1)."""
        return self.coverage_size + self.boundary_size


@dataclass(frozen=True)
class DecisionConfig:
    """How one comparison decides between the old and the new memory, and when it stops reading tasks."""

    rule: str = "paper"
    """Decision rule (flat key ``decision_rule``): ``paper`` (deploy when new accuracy >= old, ties to the new
    memory), ``sign_test`` (a paired test: ``alpha``, ``min_margin``) or ``sequential`` (Wald's SPRT on the tasks the
    memories disagree on: the ``seq_*`` fields)."""
    alpha: float = 0.05
    """``sign_test`` only: significance level in (0, 1)."""
    min_margin: int = 0
    """``sign_test`` only: discordant tasks (>= 0) the winner must lead by."""
    early_stop: bool = False
    """``paper`` rule only: stop once the remaining tasks cannot change the decision (the same decisions, fewer
    calls), reading ``early_stop_round`` tasks at a time."""
    early_stop_round: int = 5
    """Tasks (>= 1) per round of ``early_stop``."""
    seq_alpha: float = 0.2
    """``sequential``: SPRT type I error, in (0, 0.5)."""
    seq_beta: float = 0.2
    """``sequential``: SPRT type II error, in (0, 0.5)."""
    seq_theta: float = 0.3
    """``sequential``: the SPRT's alternative, how far from even the discordant wins are, in (0, 0.5)."""
    seq_round: int = 2
    """``sequential``: tasks (>= 1) read per round."""
    seq_max_pairs: int = 0
    """``sequential``: the cap, tasks read at most before the paper rule decides on the pairs seen (0 = the whole
    set)."""
    seq_extend_pairs: int = 0
    """``sequential``, 0 = off, else above ``seq_max_pairs``: the adaptive cap. A comparison still close at
    ``seq_max_pairs`` (lead within ``seq_extend_margin``) reads on until one memory leads by more, at most this many
    tasks. It acts inside one comparison; ``seq_recent_pairs`` raises the cap from the start of the next ones."""
    seq_extend_margin: int = 1
    """``sequential``: a lead (discordant wins, >= 0) this small still counts as close, for ``seq_extend_pairs`` and
    ``seq_recent_pairs``."""
    seq_recent_pairs: int = 0
    """``sequential``, 0 = off, else above ``seq_max_pairs``: a budget that follows recent closeness. While one of
    the last ``seq_recent_window`` comparisons ended close (truncated within ``seq_extend_margin``), a comparison
    starts with this cap instead of ``seq_max_pairs`` (still extended by ``seq_extend_pairs``)."""
    seq_recent_window: int = 3
    """``sequential``: comparisons (>= 1) ``seq_recent_pairs`` looks back on."""
    seq_deploy_margin: int = 0
    """``sequential``: at truncation the candidate is deployed only with a lead of this many discordant tasks (>= 0;
    0: ties deploy, as the paper rule)."""
    seq_quiet_deploy: bool = True
    """``sequential`` with ``seq_deploy_margin``: a comparison without any discordant task deploys (as the paper's
    tie); False rolls it back."""
    seq_rollback_lead: int = 0
    """``sequential``, 0 = off: a candidate ``seq_innocent`` names is read on at most ``seq_max_pairs`` tasks and,
    at that cap, rolled back only when the deployed memory leads by at least this many discordant tasks, else
    deployed (innocent until shown harmful; a crossed Wald boundary still decides)."""
    seq_innocent: str = "all"
    """``sequential`` with ``seq_rollback_lead``: which candidates it holds innocent: ``all``, or ``additions`` (a
    candidate that keeps every line of the deployed memory, version and count lines aside, and adds some; the others
    are decided by ``seq_deploy_margin`` and the adaptive cap as usual)."""
    seq_innocent_pairs: int = 0
    """``sequential`` with ``seq_rollback_lead``, 0 = off, else above ``seq_max_pairs``: a candidate held innocent is
    decided by Wald's test on the tasks it loses (``sequential.InnocentCap``: a harmless line loses 10% of tasks, a
    harmful one 35%; alpha = beta = 0.05), at most this many tasks, instead of the roll-back lead."""
    seq_reoffer: int = 0
    """``sequential`` with ``seq_rollback_lead`` and ``seq_innocent="additions"`` (else no effect), 0 = off: the lines
    of an addition held innocent and rolled back are offered again (controller/reoffer.py), at most this many times,
    each offer a comparison of the deployed memory with the deployed memory plus those lines; lines rolled back at
    their last offer are blocked: no longer held innocent."""
    indeterminate_rollback: bool = False
    """Any rule: a candidate whose every outcome is None (indeterminate, e.g. sandbox time-outs) is rolled back,
    reason ``indeterminate_candidate``, whatever the rule said."""
    on_evaluation_error: str = "keep_old"
    """What a comparison whose evaluator raised (or returned the wrong length or non-booleans) decides, reason
    ``evaluation_failed:...`` either way: ``keep_old`` (fail closed: the deployed memory stays, the candidate is
    rolled back) or ``deploy`` (the candidate is kept, as this library did before the setting)."""

    def __post_init__(self):
        check_ints(self, {n: n for n in ("min_margin", "early_stop_round", "seq_round", "seq_max_pairs",
                                         "seq_extend_pairs", "seq_extend_margin", "seq_recent_pairs",
                                         "seq_recent_window", "seq_deploy_margin", "seq_rollback_lead",
                                         "seq_innocent_pairs", "seq_reoffer")},
                   at_least_one=("early_stop_round", "seq_round", "seq_recent_window"))
        check_bools(self, {n: n for n in ("early_stop", "seq_quiet_deploy", "indeterminate_rollback")})
        check_numbers(self, {n: n for n in ("alpha", "seq_alpha", "seq_beta", "seq_theta")})
        check_range(self, "alpha", 0, 1, closed="()")
        for name in ("seq_alpha", "seq_beta", "seq_theta"):
            check_range(self, name, 0, 0.5, closed="()")
        for name, what in (("seq_extend_pairs", "extends the sequential test's cap"),
                           ("seq_recent_pairs", "sets the sequential test's cap")):
            if getattr(self, name):
                if self.rule != "sequential":
                    raise ValueError(f"{name} {what}: set decision_rule: sequential too")
                if not 0 < self.seq_max_pairs < getattr(self, name):
                    raise ValueError(f"{name} must be above seq_max_pairs (> 0), got {name}="
                                     f"{getattr(self, name)} with seq_max_pairs={self.seq_max_pairs}")
        check_choice(self.rule, "decision_rule", DECISION_RULES)
        check_choice(self.on_evaluation_error, "on_evaluation_error", ON_EVALUATION_ERROR, sep=", ")
        check_choice(self.seq_innocent, "seq_innocent", ("all", "additions"))
        if self.seq_rollback_lead and self.rule != "sequential":
            raise ValueError("seq_rollback_lead decides the sequential test's truncation: set decision_rule: "
                             "sequential too")
        if self.seq_innocent_pairs and self.seq_rollback_lead and not 0 < self.seq_max_pairs < self.seq_innocent_pairs:
            raise ValueError(f"seq_innocent_pairs must be above seq_max_pairs (> 0), got {self.seq_innocent_pairs} "
                             f"with seq_max_pairs={self.seq_max_pairs}")
        if self.early_stop and self.rule != "paper":
            raise ValueError("early_stop is exact only for decision_rule='paper'")

    @property
    def sequential(self) -> bool:
        return self.rule == "sequential"

    @property
    def reoffers(self) -> int:
        """``seq_reoffer`` where it acts (the sequential rule holding additions innocent), else 0."""
        on = self.rule == "sequential" and self.seq_rollback_lead and self.seq_innocent == "additions"
        return self.seq_reoffer if on else 0


@dataclass(frozen=True)
class ReuseConfig:
    """Measurements the controller reuses and comparisons it skips or shortens: identical and trivially equal
    memories, the deployed memory's outcomes, near copies."""

    old_results: bool = False
    """Flat key ``reuse_old_results``; needs the sequential rule: the deployed memory's measured outcomes are reused
    until it changes, so a comparison solves mostly the candidate."""
    near_copy_similarity: float = 0.0
    """In [0, 1], 0 = off; needs the sequential rule: a candidate whose word-3-gram Jaccard similarity to the old
    memory reaches this is a near copy, compared on at most ``near_copy_pairs`` tasks."""
    near_copy_pairs: int = 2
    """Tasks (>= 0) a near copy is compared on; 0 = deployed unevaluated (reason ``near_copy``)."""
    near_copy_inherit: bool = False
    """Needs ``old_results`` and ``near_copy_similarity`` > 0: a near copy that only rewords the deployed memory (lines
    changed in place, marks, guard words, word order and case kept) is checked on ``near_copy_pairs`` tasks and,
    deployed, keeps the deployed memory's reused outcomes on the others; any other near copy is compared as usual."""
    near_copy_anchor: bool = False
    """Read with ``near_copy_inherit``: a rewording inherits only while it is also a near copy of the last fully
    compared memory (the anchor), so rewordings cannot chain away from what was measured."""
    same_memory_shortcut: bool = False
    """Identical old and new texts are evaluated once, so evaluator noise cannot flip them (the authors evaluate both;
    with a deterministic evaluator both settings decide the same)."""
    skip_trivially_equal: bool = False
    """A fired trigger on a candidate that differs only in bookkeeping (version counter, whitespace, entry order)
    accepts it unevaluated: reason ``trivially_equal``, triggered False, the trigger's bookkeeping left to the next
    real comparison."""
    ignore_usage_counters: bool = False
    """Needs ``skip_trivially_equal``: usage counters (DC's ``** Count: N``, ACE's ``helpful=N harmful=N``) count as
    bookkeeping too. Off by default: the solver reads the counters."""

    def __post_init__(self):
        check_ints(self, {"near_copy_pairs": "near_copy_pairs"})
        check_bools(self, {"old_results": "reuse_old_results", "near_copy_inherit": "near_copy_inherit",
                           "near_copy_anchor": "near_copy_anchor", "same_memory_shortcut": "same_memory_shortcut",
                           "skip_trivially_equal": "skip_trivially_equal",
                           "ignore_usage_counters": "ignore_usage_counters"})
        if self.ignore_usage_counters and not self.skip_trivially_equal:
            raise ValueError("ignore_usage_counters refines skip_trivially_equal: set skip_trivially_equal: true too")
        check_numbers(self, {"near_copy_similarity": "near_copy_similarity"})
        check_range(self, "near_copy_similarity", 0, 1)
        if self.near_copy_inherit and not (self.old_results and self.near_copy_similarity > 0):
            raise ValueError("near_copy_inherit passes the reused outcomes to a near copy: set reuse_old_results: true "
                             "and near_copy_similarity > 0 too")


GROUPS: dict[str, Any] = {"trigger": TriggerConfig, "eval_set": EvalSetConfig, "decision": DecisionConfig,
                           "reuse": ReuseConfig}
# group fields whose flat key is not the field's own name
_RENAMED = {("trigger", "kind"): "trigger", ("trigger", "rate"): "trigger_rate",
            ("trigger", "period"): "trigger_period", ("eval_set", "kind"): "eval_set", ("eval_set", "order"): "eval_order",
            ("decision", "rule"): "decision_rule", ("reuse", "old_results"): "reuse_old_results"}
# every flat key in the order of JanusConfig.to_dict() (the order config.json has always had): flat key ->
# (group, field); None for the two top-level fields
FLAT_ORDER = ("warmup", "coverage_size", "boundary_size", "fresh_size", "beta", "tau", "seed", "trigger",
              "trigger_rate", "trigger_period", "use_coverage", "use_boundary", "use_fresh", "early_stop",
              "early_stop_round", "dedup", "clustering", "pool_size", "decision_rule", "min_margin", "alpha",
              "same_memory_shortcut", "replay_limit", "retention_min", "shrink_max", "magnitude_ratio",
              "magnitude_window", "tau_quantile", "tau_window", "arm_warmup", "use_mmt", "skip_trivially_equal",
              "ignore_usage_counters", "seq_alpha", "seq_beta", "seq_theta", "seq_max_pairs", "seq_round",
              "eval_order", "gate_full_compare", "gate_compare", "near_copy_similarity", "near_copy_pairs",
              "reuse_old_results", "seq_extend_pairs", "seq_extend_margin", "seq_recent_pairs", "seq_recent_window",
              "eval_set", "panel_size", "panel_rotate", "panel_min_evals", "near_copy_inherit", "near_copy_anchor",
              "indeterminate_rollback", "seq_deploy_margin", "seq_quiet_deploy", "compare_on_broken_embeddings",
              "on_evaluation_error", "seq_rollback_lead", "seq_innocent", "panel_order", "seq_innocent_pairs",
              "seq_reoffer")
_WHERE = {_RENAMED.get((g, f.name), f.name): (g, f.name) for g, cls in GROUPS.items() for f in fields(cls)}
FLAT: dict[str, tuple[str | None, str]] = {k: _WHERE.get(k, (None, k)) for k in FLAT_ORDER}
assert set(_WHERE) | {"warmup", "seed"} == set(FLAT_ORDER), "FLAT_ORDER lists every grouped field once"
# group -> {field: flat key}
GROUPED: dict[str, dict[str, str]] = {g: {f.name: _RENAMED.get((g, f.name), f.name) for f in fields(cls)}
                                      for g, cls in GROUPS.items()}


def flat_or_as_given(d: dict) -> dict:
    """``d`` in the flat form, so a flat key laid over it replaces one setting (a command-line option, a grid axis);
    ``d`` itself when it does not flatten (its error is reported where the settings are checked, with its line)."""
    try:
        return flatten(d)
    except (TypeError, ValueError):
        return d


def flatten(d: dict) -> dict:
    """Settings in the flat form (``{"trigger": "mmt", "tau": 0.1}``), the grouped form (``{"trigger": {"kind":
    "mmt", "tau": 0.1}}``) or a mix, as flat keys. ValueError naming an unknown key, a group that is not a mapping,
    or a setting given both ways with different values."""
    out: dict[str, Any] = {}
    given: dict[str, str] = {}  # flat key -> how it was spelled

    def put(flat: str, value: Any, spelled: str) -> None:
        if flat in out and not _same(out[flat], value):
            raise ValueError(f"Janus setting {flat} given twice with different values: {given[flat]}="
                             f"{out[flat]!r} and {spelled}={value!r}")
        out[flat], given[flat] = value, spelled

    for key, value in d.items():
        if key in GROUPS and isinstance(value, dict):
            for sub, v in value.items():
                if sub not in GROUPED[key]:
                    choices = tuple(GROUPED[key])
                    raise ValueError(f"unknown JanusConfig key: '{key}.{sub}'{did_you_mean(str(sub), choices)} "
                                     f"(the {key} group has {', '.join(choices)})")
                put(GROUPED[key][sub], v, f"{key}.{sub}")
        elif key in ("decision", "reuse"):
            raise ValueError(f"JanusConfig key {key!r} is a group: give a mapping of its settings "
                             f"({', '.join(GROUPED[key])}), got {value!r}")
        elif key in FLAT:
            put(key, value, key)
        else:
            raise ValueError(f"unknown JanusConfig key: {key!r}{did_you_mean(str(key), tuple(FLAT) + tuple(GROUPS))}")
    return out


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                             and not isinstance(a, bool) and not isinstance(b, bool) and a == b)
