"""JanusConfig: the controller's settings in four groups (config_groups.py), the rules between the groups, the flat
keys every stored form uses, and the paper / fast / recommended presets.

Source: paper-spec.md §4 (defaults), §8.3/8.4/8.6 (ablations, sweeps). Re-exported by ``controller/janus.py``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .config_groups import (  # noqa: F401  (the choices and the seed range re-exported: settings, CLI and tests)
    CLUSTERINGS,
    DECISION_RULES,
    EVAL_ORDERS,
    FLAT,
    FLAT_ORDER,
    GROUPED,
    GROUPS,
    SEED_MAX,
    DecisionConfig,
    EvalSetConfig,
    ReuseConfig,
    TriggerConfig,
    check_ints,
    flat_or_as_given,
    flatten,
)

# JanusConfig.recommended(): an update that only adds lines is innocent until shown harmful; any other must show it
# is better (docs/controller.md "Recommended controller"). Compare at every step on a stable panel of 19 seen tasks,
# the tasks the changed lines touch read first, one at a time. A candidate that keeps every line and adds some is
# deployed unless Wald's test on the tasks it loses shows it harmful (at most 12 tasks); its lines, rolled back, are
# offered again up to 3 times, then blocked. Any other candidate is deployed only when it leads by a discordant task
# (5 tasks, up to 12 while its lead is exactly one). Chosen on the scripted late-rules stream (400 noise seeds), the
# planted-additions check and world tuning seeds 220-239 (docs/measurements.md "Planted additions").
RECOMMENDED = dict(trigger="always", decision_rule="sequential", eval_set="panel", panel_size=19, panel_rotate=0.6,
                   panel_min_evals=5, panel_order="touched", seq_max_pairs=5, seq_extend_pairs=12,
                   seq_extend_margin=0, seq_round=1, seq_alpha=0.2, seq_beta=0.2, seq_theta=0.3,
                   seq_deploy_margin=1, seq_quiet_deploy=False, seq_rollback_lead=3, seq_innocent="additions",
                   reuse_old_results=True, near_copy_similarity=0.93, near_copy_inherit=True, near_copy_pairs=1,
                   gate_compare=True, gate_full_compare=False, eval_order="informative", dedup=True,
                   same_memory_shortcut=True, clustering="paper", near_copy_anchor=True, indeterminate_rollback=True,
                   seq_innocent_pairs=12, seq_reoffer=3)
# recommended() until 2026-12-07 (judged on seeds 2000-2059): an addition read on at most 5 tasks and rolled back only
# when the deployed memory led by 3 of them, never offered again; it let a planted line that spoils half the answers
# through in 2 of 3 trials (docs/measurements.md "Planted additions"); every field it set
RECOMMENDED_ADDITIONS_LEAD = {**RECOMMENDED, "seq_innocent_pairs": 0, "seq_reoffer": 0}
# recommended() until 2026-12-06 (judged on seeds 300-359): a candidate deployed only when it leads by a discordant
# task (5 tasks, up to 12 while its lead is exactly one), the panel read in its stable order. It rolled back every
# update whose value lies in tasks still to come; every field it set, for reproducing its measurements and what a run
# stored with it resumes on
RECOMMENDED_LEAD_TO_DEPLOY = dict(trigger="always", decision_rule="sequential", eval_set="panel", panel_size=19,
                                  panel_rotate=0.6, panel_min_evals=5, seq_max_pairs=5, seq_extend_pairs=12,
                                  seq_extend_margin=0, seq_round=1, seq_alpha=0.2, seq_beta=0.2, seq_theta=0.3,
                                  seq_deploy_margin=1, seq_quiet_deploy=False, reuse_old_results=True,
                                  near_copy_similarity=0.93, near_copy_inherit=True, near_copy_pairs=1,
                                  gate_compare=True, gate_full_compare=False, eval_order="informative", dedup=True,
                                  same_memory_shortcut=True, clustering="paper", near_copy_anchor=True,
                                  indeterminate_rollback=True, seq_recent_pairs=0, seq_rollback_lead=0,
                                  seq_innocent="all", panel_order="stable", seq_innocent_pairs=0, seq_reoffer=0)
# recommended() until 2026-12-04 (judged 2026-12-03): the paper's coverage/boundary/fresh set read boundary first,
# cap 6 -> 14 while tied, near copies on 4 tasks, the gate's comparisons full; every field it set (so a later change
# cannot leak into it), for reproducing its measurements (benchmarks/controller/bench_recommended.py
# --hybrid-boundary-first) and for the hybrid-set machinery's tests
RECOMMENDED_HYBRID_BOUNDARY_FIRST = dict(trigger="always", decision_rule="sequential", eval_order="informative",
                                         gate_full_compare=True, seq_max_pairs=6, seq_extend_pairs=14,
                                         seq_extend_margin=0, seq_round=2, seq_alpha=0.2, seq_beta=0.2, seq_theta=0.3,
                                         reuse_old_results=True, near_copy_similarity=0.93, near_copy_pairs=4,
                                         dedup=True, same_memory_shortcut=True, clustering="paper", seq_recent_pairs=0,
                                         eval_set="hybrid", near_copy_inherit=False, gate_compare=False,
                                         near_copy_anchor=False, indeterminate_rollback=False, seq_deploy_margin=0,
                                         seq_quiet_deploy=True, seq_innocent_pairs=0, seq_reoffer=0)

# the switches that tell the presets apart (JanusConfig.preset); sizes, tau, trigger and seed are settings of any preset
PRESET_SWITCHES = ("early_stop", "dedup", "clustering", "decision_rule", "same_memory_shortcut", "replay_limit",
                   "eval_order", "gate_full_compare", "seq_max_pairs", "reuse_old_results", "seq_extend_pairs",
                   "eval_set", "near_copy_inherit", "gate_compare", "seq_rollback_lead")
# settings of recommended() that JanusConfig.preset does not compare: a change to one is named in the preset label
# ("recommended + trigger mmt"); sizes, tau and seed are settings of every preset and are not named
RECOMMENDED_TUNING = ("trigger", "seq_alpha", "seq_beta", "seq_theta", "seq_round", "seq_extend_margin",
                      "seq_recent_pairs", "seq_recent_window", "panel_size", "panel_rotate", "panel_min_evals",
                      "near_copy_similarity", "near_copy_pairs", "retention_min", "shrink_max", "near_copy_anchor",
                      "indeterminate_rollback", "seq_deploy_margin", "seq_quiet_deploy", "panel_order", "seq_innocent",
                      "seq_innocent_pairs", "seq_reoffer")


@dataclass(frozen=True, init=False)
class JanusConfig:
    """The controller's settings: the warm-up and seed, and four groups: ``trigger`` (when to compare), ``eval_set``
    (on which tasks), ``decision`` (how a comparison decides) and ``reuse`` (measurements reused, comparisons skipped).
    Each group documents and checks its own fields (config_groups.py); the rules between groups are checked here.

    Defaults are the paper's (spec §4): warm-up 20, 12 coverage + 8 boundary + 5 fresh tasks, beta 0.9, tau 0, seed 0,
    the MMT trigger, the paper rule. ``fast()`` and ``recommended()`` are the other presets (docs/controller.md).

    Every setting also has a flat keyword, as in ``JanusConfig(trigger="always", tau=0.1)``: a flat keyword updates its
    group (over a group given beside it; ``cfg.replace(tau=0.1, trigger="mmt")`` changes those two settings and keeps
    the rest), and reads the same way (``cfg.tau`` is ``cfg.trigger.tau``; ``cfg.trigger == "always"`` compares the
    trigger's kind).
    ``to_dict()`` is the flat form; ``from_dict()`` takes the flat form, the grouped form or a mix.

    Raises:
        ValueError: on any invalid value, naming its flat key (negative sizes, beta outside [0, 1), unknown names ...).
        TypeError: on an unknown keyword.
    """

    warmup: int = 20
    """Steps (>= 0) whose candidate is deployed without comparison; the momentum starts after them. The authors' CLI
    sets it to K (``with_support_size``)."""
    seed: int = 0
    """Seed in [0, 2**32 - 1] of the controller's own sampling: random trigger, fresh sample, k-means, panel, replay
    cap."""
    trigger: TriggerConfig = field(default_factory=TriggerConfig)
    """When to compare: the trigger policy and its options, and the item gate (TriggerConfig)."""
    eval_set: EvalSetConfig = field(default_factory=EvalSetConfig)
    """On which tasks: the hybrid set or the panel, sizes and reading order (EvalSetConfig)."""
    decision: DecisionConfig = field(default_factory=DecisionConfig)
    """How a comparison decides: the paper rule, the sign test or the sequential test (DecisionConfig)."""
    reuse: ReuseConfig = field(default_factory=ReuseConfig)
    """Reused outcomes, near copies, identical and trivially equal memories (ReuseConfig)."""

    def __init__(self, *, warmup: int = 20, seed: int = 0, trigger: Any = None, eval_set: Any = None,
                 decision: DecisionConfig | None = None, reuse: ReuseConfig | None = None, **flat: Any):
        given = {"trigger": trigger, "eval_set": eval_set, "decision": decision, "reuse": reuse}
        for name in ("trigger", "eval_set"):  # a kind given as before the grouping: trigger="always"
            if given[name] is not None and not isinstance(given[name], GROUPS[name]):
                flat[name] = given.pop(name)
        for key in flat:
            if key not in FLAT:
                raise TypeError(f"JanusConfig.__init__() got an unexpected keyword argument {key!r}")
        for name, cls in GROUPS.items():
            group: Any = given.get(name)
            if group is not None and not isinstance(group, cls):
                raise ValueError(f"{name} must be a {cls.__name__}, got {group!r}")
            updates = {f: flat[k] for f, k in GROUPED[name].items() if k in flat}
            if group is None:
                group = cls(**updates)
            elif updates:
                group = dataclasses.replace(group, **updates)
            object.__setattr__(self, name, group)
        object.__setattr__(self, "warmup", warmup)
        object.__setattr__(self, "seed", seed)
        self.__post_init__()

    def __post_init__(self):
        check_ints(self, {"warmup": "warmup", "seed": "seed"})
        if not 0 <= self.seed <= SEED_MAX:  # it seeds scikit-learn's KMeans, which takes no other seed
            raise ValueError(f"seed must be in [0, {SEED_MAX}], got {self.seed}")
        seq = self.decision.rule == "sequential"
        if self.reuse.old_results and not seq:
            raise ValueError("reuse_old_results feeds the sequential test: set decision_rule: sequential too")
        if self.reuse.near_copy_similarity > 0 and not seq:
            raise ValueError("near_copy_similarity caps the sequential test: set decision_rule: sequential too")
        from .strategy import eval_set_for

        eval_set_for(self)  # a registered strategy that accepts its argument (ValueError naming the choices)

    if TYPE_CHECKING:  # the flat reads (cfg.tau, cfg.seq_max_pairs ...) are properties made below the class
        def __getattr__(self, name: str) -> Any: ...

    def replace(self, **changes: Any) -> JanusConfig:
        """A copy with ``changes``: flat keywords (``tau=0.1``, ``trigger="always"``) or whole groups
        (``trigger=TriggerConfig(...)``). A kind given flat changes only the kind: ``replace(trigger="mmt")`` keeps
        the trigger group's other settings. (``dataclasses.replace(cfg, trigger="mmt")`` cannot: it hands the
        constructor the kind without the group, which then starts from the defaults; use this method.)"""
        for name in ("trigger", "eval_set"):
            kind = changes.get(name)
            if isinstance(kind, str):
                changes[name] = dataclasses.replace(getattr(self, name), kind=kind)
        return dataclasses.replace(self, **changes)

    def flat_value(self, key: str) -> Any:
        """The value of one flat key (``"tau"``, ``"trigger"`` -> the trigger's kind, ``"warmup"``)."""
        group, name = FLAT[key]
        return getattr(self if group is None else getattr(self, group), name)

    @property
    def support_size(self) -> int:
        """K = coverage_size + boundary_size (spec §3.1)."""
        return self.eval_set.support_size

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
        base: dict[str, Any] = dict(early_stop=True, dedup=True, clustering="incremental", same_memory_shortcut=True)
        base.update(overrides)
        return cls(**base)

    @classmethod
    def recommended(cls, **overrides) -> JanusConfig:
        """The recommended controller, innocent until shown harmful (docs/controller.md "Recommended controller",
        measured in docs/measurements.md): compare at every post-warm-up step (``trigger="always"``) with Wald's
        sequential test on discordant pairs (``decision_rule="sequential"``, one task at a time) on a stable panel of
        ``panel_size`` seen tasks (``eval_set="panel"``), the tasks the changed lines touch read first
        (``panel_order="touched"``), at most ``seq_max_pairs``; a crossed Wald boundary decides sooner; a candidate that
        only adds lines is decided by Wald's test on the tasks it loses (at most ``seq_innocent_pairs``) and its lines,
        rolled back, are offered again up to ``seq_reoffer`` times (``decision.reoffer``); any other candidate must
        lead by ``seq_deploy_margin``. Per
        comparison, with probability ``panel_rotate``, the member on which memories disagreed least is replaced by a
        random seen task; the deployed memory's outcomes are reused; a near copy that only rewords the last fully
        compared memory is checked on ``near_copy_pairs`` tasks and keeps the rest; a candidate with no determinate
        outcome is rolled back; a dump/wipe-looking candidate is compared also inside the warm-up (``gate_compare``);
        identical texts are evaluated once. The controller it replaces (additions rolled back on a lead of 3 of 5):
        ``JanusConfig(**config.RECOMMENDED_ADDITIONS_LEAD)``."""
        base: dict[str, Any] = dict(RECOMMENDED)
        base.update(overrides)
        return cls(**base)

    @property
    def preset(self) -> str:
        """``"paper"``, ``"fast"`` or ``"recommended"`` when the speed/fidelity switches equal that preset's, else
        ``"custom"``.

        Only the switches that separate the presets are compared (sizes, tau, trigger policy, seed are settings
        of either preset): early_stop, dedup, clustering, decision_rule, same_memory_shortcut, replay_limit, and
        the recommended controller's own switches (eval_order, gate_full_compare, seq_max_pairs)."""
        mine = tuple(self.flat_value(k) for k in PRESET_SWITCHES)
        for name, ref in (("paper", JanusConfig.paper()), ("fast", JanusConfig.fast()),
                          ("recommended", JanusConfig.recommended())):
            if mine == tuple(ref.flat_value(k) for k in PRESET_SWITCHES):
                return name
        return "custom"

    def preset_label(self) -> str:
        """The preset's name, and for ``recommended`` the recommended settings this configuration changes, e.g.
        ``"recommended + trigger mmt"`` (``preset`` compares the speed/fidelity switches only, so a recommended
        configuration with another trigger is still ``"recommended"`` there)."""
        name = self.preset
        if name != "recommended":
            return name
        ref = JanusConfig.recommended()
        changed = [f"{k} {self.flat_value(k)}" for k in RECOMMENDED_TUNING if self.flat_value(k) != ref.flat_value(k)]
        return " + ".join([name] + changed)

    def preset_line(self) -> str:
        """One line for run headers, e.g. ``janus preset: paper (same_memory_shortcut=False, ...)``."""
        t, e, d, r = self.trigger, self.eval_set, self.decision, self.reuse
        head = (f"janus preset: {self.preset_label()} (trigger={t.kind}, tau={t.tau}, "
                f"same_memory_shortcut={r.same_memory_shortcut}, early_stop={d.early_stop}, "
                f"dedup={e.dedup}, clustering={e.clustering}, replay_limit={e.replay_limit}")
        if d.rule != "sequential":  # the recommended preset is sequential
            return head + ")"
        parts = [f"decision_rule={d.rule}"]
        if e.kind != "panel":  # the panel has its own order
            parts.append(f"eval_order={e.order}")
        parts += [f"seq_max_pairs={d.seq_max_pairs}", f"gate_full_compare={t.gate_full_compare}"]
        if t.gate_compare:
            parts.append("gate_compare=True")
        parts.append(f"reuse_old_results={r.old_results}")
        if d.seq_extend_pairs:
            parts += [f"seq_extend_pairs={d.seq_extend_pairs}", f"seq_extend_margin={d.seq_extend_margin}"]
        if d.seq_deploy_margin:
            parts += [f"seq_round={d.seq_round}", f"seq_deploy_margin={d.seq_deploy_margin}",
                      f"seq_quiet_deploy={d.seq_quiet_deploy}"]
        if d.seq_rollback_lead:
            parts += ([] if d.seq_deploy_margin else [f"seq_round={d.seq_round}"]) + [
                f"seq_rollback_lead={d.seq_rollback_lead}", f"seq_innocent={d.seq_innocent}"]
            if d.seq_innocent_pairs:
                parts.append(f"seq_innocent_pairs={d.seq_innocent_pairs}")
            if d.reoffers:
                parts.append(f"seq_reoffer={d.seq_reoffer}")
        if r.near_copy_similarity > 0:
            parts.append(f"near_copy_similarity={r.near_copy_similarity}")
            parts.append("near_copy_inherit=True" if r.near_copy_inherit else
                         f"near_copy_pairs={r.near_copy_pairs}")
        if e.kind == "panel":
            parts += ["eval_set=panel", f"panel_size={e.panel_size}", f"panel_rotate={e.panel_rotate}",
                      f"panel_min_evals={e.panel_min_evals}"]
            if e.panel_order != "stable":
                parts.append(f"panel_order={e.panel_order}")
        return head + ", " + ", ".join(parts) + ")"

    @classmethod
    def with_support_size(cls, k: int, *, coverage_size: int = 12, **overrides) -> JanusConfig:
        """Support-size sweep as in the authors' CLI (spec §8.6): K' = min(coverage_size, K), K_b = K - K',
        and the warm-up length equals K (the authors' warm-up is K steps)."""
        if k < 1:
            raise ValueError("support size K must be >= 1")
        cov = min(coverage_size, k)
        base: dict[str, Any] = dict(coverage_size=cov, boundary_size=k - cov, warmup=k)
        base.update(overrides)
        return cls(**base)

    def to_dict(self) -> dict:
        """The flat form: every flat key in its fixed order (what ``<run>/config.json`` and a checkpoint hold)."""
        return {k: self.flat_value(k) for k in FLAT_ORDER}

    def to_grouped_dict(self) -> dict:
        """The grouped form: ``{"warmup": 20, "seed": 0, "trigger": {"kind": "mmt", ...}, "eval_set": {...}, ...}``."""
        return {"warmup": self.warmup, "seed": self.seed,
                **{g: dataclasses.asdict(getattr(self, g)) for g in GROUPS}}

    @classmethod
    def from_dict(cls, d: dict) -> JanusConfig:
        """Inverse of :meth:`to_dict` and :meth:`to_grouped_dict`; a mix of the two forms is read too. Raises
        ValueError naming any unknown key, or a setting given in both forms with different values."""
        return cls(**flatten(d))


def _flat_property(key: str, group: str, name: str) -> property:
    def read(self: JanusConfig) -> Any:
        return getattr(getattr(self, group), name)

    read.__name__ = key
    return property(read, doc=f"``{group}.{name}`` (the flat read).")


for _key, (_group, _name) in FLAT.items():
    if _group is not None and _key not in GROUPS:  # cfg.trigger / cfg.eval_set are the groups themselves
        setattr(JanusConfig, _key, _flat_property(_key, _group, _name))
