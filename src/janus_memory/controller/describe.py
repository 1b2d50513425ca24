"""What a Janus configuration is, in words and numbers: the one description of a controller.

:func:`describe` reads a :class:`~janus_memory.controller.config.JanusConfig` (the one a run stored in config.json, or
one being built) and says which preset it is (``paper``, ``fast``, ``recommended``, or ``custom: <what differs>``),
when it compares (the trigger), on which tasks (the evaluation set and how many of them a comparison reads), how it
decides (the rule) and what it does beyond the paper. The run header, ``janus report``, ``janus view`` and the run's
call estimate all call it, so they cannot disagree about the controller that ran.

An evaluation-set strategy describes itself (``evalset/strategy.py``: size, sizes, text, cell); a decision rule
through :class:`RuleShape` (:data:`RULE_SHAPES`, under ``JanusConfig.decision_rule``). A new strategy registers and
every reader describes it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .config import FLAT, PRESET_SWITCHES, RECOMMENDED_TUNING, JanusConfig
from .strategy import EVAL_SETS, eval_set_for

# the paper's controller settings that any preset may change (a paper-preset run with another warm-up is still the
# paper's controller, run at another size): named beside the label, never folded into it
SIZES = ("warmup", "coverage_size", "boundary_size", "fresh_size", "beta", "tau", "trigger")


class RuleShape(Protocol):
    """How a decision rule describes itself."""

    def caps(self, c: JanusConfig) -> tuple[int | None, int | None]:
        """(tasks a comparison reads usually, at most) whatever the set's size; None: the whole set."""

    def text(self, c: JanusConfig) -> str:
        """The rule in one phrase."""


class PaperRule:
    def caps(self, c: JanusConfig) -> tuple[int | None, int | None]:
        return None, None

    def text(self, c: JanusConfig) -> str:
        early = "; exact early stopping (the same decisions, fewer calls)" if c.decision.early_stop else ""
        return ("the paper's rule: deploy the candidate when it solves at least as many of the tasks as the old "
                f"memory (ties go to the candidate){early}")


class SignTestRule:
    def caps(self, c: JanusConfig) -> tuple[int | None, int | None]:
        return None, None

    def text(self, c: JanusConfig) -> str:
        return (f"a one-sided sign test on the tasks the memories disagree on: roll back only when the old memory wins "
                f"significantly (alpha {c.decision.alpha:g}, margin {c.decision.min_margin})")


class SequentialRule:
    def caps(self, c: JanusConfig) -> tuple[int | None, int | None]:
        if not c.decision.seq_max_pairs:
            return None, None
        return c.decision.seq_max_pairs, max(c.decision.seq_max_pairs, c.decision.seq_extend_pairs, c.decision.seq_recent_pairs)

    def text(self, c: JanusConfig) -> str:
        reuse = "; the deployed memory's measured outcomes reused" if c.reuse.old_results else ""
        tasks = "1 task" if c.decision.seq_round == 1 else f"{c.decision.seq_round} tasks"
        dc = c.decision
        innocent = (f"deployed unless the old memory leads by {dc.seq_rollback_lead} tasks on the tasks read "
                    "(innocent until shown harmful)")
        if dc.seq_innocent_pairs:
            innocent = (f"deployed unless a test on the tasks it loses shows it harmful (at most "
                        f"{dc.seq_innocent_pairs} tasks; innocent until shown harmful)")
        if dc.reoffers:
            innocent += f", its lines offered again at most {dc.seq_reoffer} times when rolled back"
        if dc.seq_rollback_lead and dc.seq_innocent == "all":
            end = f"then {innocent}"
        elif dc.seq_deploy_margin:
            lead = "1 task" if dc.seq_deploy_margin == 1 else f"{dc.seq_deploy_margin} tasks"
            quiet = "deployed" if dc.seq_quiet_deploy else "rolled back"
            end = (f"then deployed only when the candidate leads by {lead} on the tasks read (none disagreeing: "
                   f"{quiet})")
        else:
            end = "then the paper's rule on the tasks read"
        if dc.seq_rollback_lead and dc.seq_innocent == "additions":
            end += f"; a candidate that only adds lines is {innocent}"
        return (f"Wald's sequential test on the tasks the memories disagree on (alpha {c.decision.seq_alpha:g}, beta "
                f"{c.decision.seq_beta:g}, theta {c.decision.seq_theta:g}), {tasks} a round, {end}{reuse}")


RULE_SHAPES: dict[str, RuleShape] = {"paper": PaperRule(), "sign_test": SignTestRule(), "sequential": SequentialRule()}


def trigger_text(c: JanusConfig) -> str:
    """When the controller compares."""
    t = c.trigger.kind
    if t == "never":
        return "never (every candidate is deployed unexamined)"
    if t == "always":
        return "always (a comparison at every step after the warm-up)"
    if t == "mmt":
        return f"MMT (compares when cos(z_t, m_t-1) < tau = {c.trigger.tau:g}; beta = {c.trigger.beta:g})"
    if t == "random":
        return f"random (each step after the warm-up with probability {c.trigger.rate:g})"
    if t == "periodic":
        return f"periodic (every {c.trigger.period} steps after the warm-up)"
    gate = [f"retention < {c.trigger.retention_min:g}" if c.trigger.retention_min else "",
            f"items shrink below {c.trigger.shrink_max:g}x" if c.trigger.shrink_max else ""]
    gate = [g for g in gate if g]
    parts = [f"item gate ({' or '.join(gate)})"] if gate else []
    if c.trigger.use_mmt:
        parts.append(f"MMT below tau {c.trigger.tau:g}" + (f" with |z| >= {c.trigger.magnitude_ratio:g}x its recent median"
                                                  if c.trigger.magnitude_ratio else ""))
    return f"selective ({' or '.join(parts) or 'nothing armed'})"


def _label(c: JanusConfig) -> tuple[str, str]:
    """(preset name, label): ``paper``/``fast``/``recommended`` (``recommended + trigger mmt`` for a changed tuning
    setting) or ``custom: <closest preset> with k=v, ...`` naming every switch that differs from it."""
    name = c.preset
    if name == "recommended":
        return name, c.preset_label()
    if name != "custom":
        return name, name
    refs = {"paper": JanusConfig.paper(), "recommended": JanusConfig.recommended(), "fast": JanusConfig.fast()}
    switches = {p: [k for k in PRESET_SWITCHES if c.flat_value(k) != ref.flat_value(k)] for p, ref in refs.items()}
    closest = min(refs, key=lambda p: len(switches[p]))  # by the switches; ties: the order above (paper first)
    ref = refs[closest]
    # a setting of an evaluation set this configuration does not use is not named
    unused = {k for cls in EVAL_SETS.values() for k in cls.SETTINGS} - set(eval_set_for(c).SETTINGS)
    if not c.decision.seq_rollback_lead:  # which candidates are innocent says nothing without a roll-back lead
        unused.add("seq_innocent")
    tuning = [k for k in RECOMMENDED_TUNING if c.flat_value(k) != ref.flat_value(k)
              and k not in unused] if closest == "recommended" else []
    what = ", ".join(f"{k}={_value(c.flat_value(k))}" for k in switches[closest] + tuning)
    return "custom", f"custom: {closest} with {what}"


def _tasks(n: int) -> str:
    return f"{n} task" if n == 1 else f"{n} tasks"


def _value(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _extras(c: JanusConfig) -> list[str]:
    """What the controller does beyond its trigger, set and rule (options that change which steps compare or how)."""
    out = []
    if c.trigger.gate_compare or c.trigger.gate_full_compare:
        how = "a full paper-rule comparison" if c.trigger.gate_full_compare else "a comparison"
        out.append(f"a dump/wipe-looking candidate gets {how} at any step, warm-up included")
    if c.reuse.near_copy_similarity > 0:
        what = "a rewording" if c.reuse.near_copy_inherit else "a near copy"
        checked = ("is deployed unevaluated" if c.reuse.near_copy_pairs == 0 else
                   f"is checked on {'' if c.reuse.near_copy_inherit else 'at most '}{_tasks(c.reuse.near_copy_pairs)}")
        keeps = (f" and keeps the deployed memory's {'other ' if c.reuse.near_copy_pairs else ''}outcomes"
                 if c.reuse.near_copy_inherit else "")
        out.append(f"{what} (similarity >= {c.reuse.near_copy_similarity:g}) {checked}{keeps}")
    if c.reuse.skip_trivially_equal:
        counters = " (usage counters included)" if c.reuse.ignore_usage_counters else ""
        out.append(f"a candidate that differs only in bookkeeping{counters} is deployed unevaluated")
    if c.reuse.same_memory_shortcut:
        out.append("identical texts are evaluated once")
    return out


@dataclass(frozen=True)
class ControllerDescription:
    """The controller a JanusConfig describes (module docstring). ``reads``/``reads_most``: tasks one comparison
    reads usually / at most (both memories each); ``configured``: the evaluation set's size when full; ``paper_cost``:
    the paper's cost measure (#triggers x configured |E|) applies, i.e. the paper's own controller ran."""

    preset: str
    label: str
    warmup: int
    trigger: str
    eval_set: str
    eval_set_text: str
    eval_set_cell: str
    sizes: dict = field(default_factory=dict)
    configured: int = 0
    reads: int = 0
    reads_most: int = 0
    cap: int | None = None  # the rule's most tasks per comparison on any set (None: the whole set)
    rule: str = ""
    extras: tuple = ()
    paper_differences: tuple = ()
    read_on: str = "while tied"  # when a comparison reads past ``reads``
    paper_set: bool = True  # the evaluation set is the paper's (hybrid)
    warmup_reads: int = 0  # the most tasks a comparison inside the warm-up reads (before the rule's cap)

    @property
    def paper_cost(self) -> bool:
        return self.preset == "paper"

    @property
    def evaluation(self) -> str:
        """The set and how much of it a comparison reads: ``a panel of 19 seen tasks (read 11, up to 19 while
        tied)``."""
        if self.reads == self.reads_most == self.configured:
            return self.eval_set_text
        if self.reads == self.reads_most:
            return f"{self.eval_set_text} (read {self.reads})"
        return f"{self.eval_set_text} (read {self.reads}, up to {self.reads_most} {self.read_on})"

    @property
    def reads_cell(self) -> str:
        """A table cell: ``panel 19, read 11-19`` / ``12+8+5``."""
        if self.reads == self.reads_most == self.configured:
            return self.eval_set_cell
        span = str(self.reads) if self.reads == self.reads_most else f"{self.reads}-{self.reads_most}"
        return f"{self.eval_set_cell}, read {span}"

    def tasks_at_most(self, planned: int, full: bool = False) -> int:
        """Tasks a comparison on ``planned`` entries reads at most (``full``: a forced paper-rule comparison reads
        them all)."""
        return planned if full or self.cap is None else min(planned, self.cap)

    def lines(self) -> list[str]:
        """The description as lines (run header, report header)."""
        diff = f"; differs from the paper's: {', '.join(self.paper_differences)}" if self.paper_differences else ""
        out = [f"Janus preset: {self.label}{diff}",
               f"Janus: warm-up {self.warmup}; trigger {self.trigger}; evaluation set: {self.evaluation}; "
               f"decision: {self.rule}"]
        if self.extras:
            out.append("Janus also: " + "; ".join(self.extras))
        return out

    def to_dict(self) -> dict:
        return {"preset": self.preset, "label": self.label, "warmup": self.warmup, "trigger": self.trigger,
                "eval_set": self.eval_set, "evaluation": self.evaluation, "eval_set_cell": self.reads_cell,
                "sizes": dict(self.sizes), "configured": self.configured, "reads": self.reads,
                "reads_most": self.reads_most, "rule": self.rule, "extras": list(self.extras),
                "paper_differences": list(self.paper_differences), "paper_cost": self.paper_cost}


_PAPER_NAMES = {"warmup": "warm-up", "coverage_size": "coverage", "boundary_size": "boundary", "fresh_size": "fresh",
                "beta": "beta", "tau": "tau", "trigger": "trigger"}


def stored_config(c: JanusConfig | dict) -> JanusConfig:
    """``c``, or the JanusConfig of its stored dict (config.json's ``janus`` section; a partial dict is completed with
    the paper defaults, as a run made before a key existed ran)."""
    if isinstance(c, dict):
        known = {k: v for k, v in c.items() if k in FLAT}
        return JanusConfig(**known)
    return c


def describe(c: JanusConfig | dict) -> ControllerDescription:
    """The description of ``c`` (a JanusConfig, or its stored dict: :func:`stored_config`)."""
    c = stored_config(c)
    shape = eval_set_for(c)
    rule = RULE_SHAPES[c.decision.rule]
    preset, label = _label(c)
    configured = shape.size()
    usual, cap = rule.caps(c)
    reads, most = (configured if x is None else min(configured, x) for x in (usual, cap))
    diffs: tuple = ()
    if shape.PAPER or preset == "custom":
        # where the sizes (the paper's set), warm-up, trigger or momentum are not the paper's; a custom configuration
        # with another evaluation set says it too (its label names only the switches)
        ref = JanusConfig.paper()
        keys = [k for k in SIZES if c.flat_value(k) != ref.flat_value(k)
                and (shape.PAPER or k not in ("coverage_size", "boundary_size", "fresh_size"))]
        diffs = tuple(f"{_PAPER_NAMES[k]} {_value(c.flat_value(k))} (paper {_value(ref.flat_value(k))})" for k in keys)
    return ControllerDescription(
        preset=preset, label=label, warmup=c.warmup, trigger=trigger_text(c), eval_set=c.eval_set.kind,
        eval_set_text=shape.text(), eval_set_cell=shape.cell(), sizes=shape.sizes(), configured=configured,
        reads=reads, reads_most=most, cap=cap, rule=rule.text(c), extras=tuple(_extras(c)), paper_differences=diffs,
        read_on=_read_on(c), paper_set=shape.PAPER, warmup_reads=shape.warmup_size())


def _read_on(c: JanusConfig) -> str:
    """When the adaptive cap reads on: while the comparison is close to the deploy threshold (a tie, or with
    ``seq_deploy_margin`` a lead of exactly that many tasks; sequential.AdaptiveCap)."""
    if c.decision.rule != "sequential" or not c.decision.seq_deploy_margin:
        return "while tied"
    if c.decision.seq_extend_margin:
        return f"while the candidate's lead is within {c.decision.seq_extend_margin} of {_tasks(c.decision.seq_deploy_margin)}"
    return f"while the candidate leads by exactly {_tasks(c.decision.seq_deploy_margin)}"
