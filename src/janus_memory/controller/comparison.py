"""One old-vs-new comparison on behalf of a Decision, and the controller's counters it moves.

The evaluator is told what is coming (``begin_comparison`` for resumable sampling, ``expect_pair`` and
``expect_calls`` for a batching evaluator, all optional), ``decision_rules.compare`` applies the rule, and the outcome is
copied onto the Decision.
A failing evaluator keeps the deployed memory (``on_evaluation_error``; reason ``evaluation_failed:...``). Counter
names are those of ``Janus.stats``: steps, triggers, accepts, rollbacks, evaluator_calls, evaluator_calls_saved,
evaluation_failures.
"""
from __future__ import annotations

from typing import Any

from .changes import only_adds
from .config import JanusConfig
from .decision_rules import Comparison, EvaluationError, compare, n_correct, planned_calls
from .sequential import SPRT
from .step import Decision


def new_stats() -> dict[str, int]:
    """The controller's counters, all zero (this key order is the stored state's)."""
    return dict(steps=0, triggers=0, accepts=0, rollbacks=0, evaluator_calls=0,
                evaluator_calls_saved=0, evaluation_failures=0)


def announce(evaluator: Any, c: JanusConfig, d: Decision, trigger_count: int, n_entries: int,
             old_text: str, new_text: str, *, full: bool = False) -> None:
    """Call the evaluator's optional hooks before a comparison."""
    begin = getattr(evaluator, "begin_comparison", None)
    if callable(begin):  # lets a sampling evaluator draw fresh, resumable samples per (trigger, entry, memory)
        begin(step=d.step, trigger=trigger_count)
    expect = getattr(evaluator, "expect_pair", None)
    if callable(expect) and n_entries and not (c.reuse.same_memory_shortcut and old_text == new_text):
        # both memories will be evaluated on these entries (all of them unless early stopping ends the
        # comparison sooner): a batching evaluator may solve them together (run/eval_batch.py); the
        # calls it receives and the decision are unchanged
        rule = c.decision
        partial = rule.early_stop and rule.rule == "paper" or rule.rule == "sequential"
        expect(old_text, new_text, complete=full or not partial)


def run_comparison(evaluator: Any, c: JanusConfig, d: Decision, tasks: list, old_text: str, new_text: str,
                   stats: dict[str, int], *, full: bool = False, max_pairs: int | None = None,
                   known_old: list | None = None, base_pairs: int | None = None,
                   innocent_ok: bool = True) -> Comparison | None:
    """Compare both memories on ``tasks`` (the planned entries), fill ``d`` and ``stats``; None when the evaluator
    failed (the deployed memory kept, counted as a rollback; ``on_evaluation_error="deploy"``: the candidate kept,
    counted as an accept). Accept/rollback of a completed comparison is left to the
    caller, which counts it after its own bookkeeping.

    ``full``: the paper rule on every entry whatever the configured rule (a text gate's forced comparison).
    ``max_pairs``: the sequential rule's cap for this comparison (default ``c.decision.seq_max_pairs``, extended by the
    adaptive cap ``seq_extend_pairs`` when on and above it; an explicit ``max_pairs`` (a near copy's check) is never
    extended and deploys on a tie whatever ``seq_deploy_margin``: it asks "not worse", not "better").
    ``base_pairs``: this comparison's cap instead of ``seq_max_pairs`` (``seq_recent_pairs``), still extended.
    ``known_old``: the old memory's outcomes already measured (``reuse_old_results``; sequential rule only).
    ``innocent_ok``: False when the candidate adds a line already shown harmful (``seq_reoffer``): not innocent."""
    dc = c.decision
    rule = "paper" if full else dc.rule
    base = dc.seq_max_pairs if base_pairs is None else base_pairs
    seq = rule == "sequential"
    lead = 0  # seq_rollback_lead for this candidate: innocent until shown harmful, read at most the base cap
    if seq and dc.seq_rollback_lead and max_pairs is None and innocent_ok and (
            dc.seq_innocent == "all" or only_adds(old_text, new_text)):
        lead = dc.seq_rollback_lead
    how: dict[str, Any] = dict(
        rule=rule, early_stop=dc.early_stop and not full, round_size=dc.seq_round if seq else dc.early_stop_round,
        same_memory_shortcut=c.reuse.same_memory_shortcut, max_pairs=max_pairs if max_pairs is not None else base,
        known_old=known_old if seq else None,
        extend_pairs=dc.seq_extend_pairs if seq and max_pairs is None and not lead and dc.seq_extend_pairs > base
        else dc.seq_innocent_pairs if lead and dc.seq_innocent_pairs > base else 0)
    expect = getattr(evaluator, "expect_calls", None)
    if callable(expect):  # every call the comparison may make, in order (None: the order depends on the outcomes)
        expect(planned_calls(tasks, old_text, new_text, **how))
    try:
        comp = compare(evaluator, tasks, old_text, new_text, alpha=dc.alpha, min_margin=dc.min_margin,
                       sprt=SPRT(dc.seq_alpha, dc.seq_beta, dc.seq_theta,
                                 dc.seq_deploy_margin if max_pairs is None and not lead else 0, dc.seq_quiet_deploy,
                                 lead) if seq else None,
                       extend_margin=dc.seq_extend_margin, innocent=bool(lead), **how)
    except EvaluationError as exc:
        d.accept = dc.on_evaluation_error == "deploy"
        d.reason = f"evaluation_failed:{exc}"
        d.evaluator_calls = int(getattr(exc, "calls", 0))
        stats["evaluator_calls"] += d.evaluator_calls
        stats["evaluation_failures"] += 1
        stats["accepts" if d.accept else "rollbacks"] += 1
        return None
    if dc.indeterminate_rollback and comp.accept and comp.new_correct and all(v is None for v in comp.new_correct):
        # None casts no vote: without this an all-None candidate (every task a sandbox time-out) is deployed on a
        # 0-0 tie. Nothing was measured for it, so the measured memory stays.
        comp.accept, comp.reason = False, "indeterminate_candidate"
    d.accept = comp.accept
    d.reason = comp.reason
    d.n_evaluated = comp.n_evaluated
    d.old_correct = comp.old_correct
    d.new_correct = comp.new_correct
    d.old_score = n_correct(comp.old_correct) / max(1, len(comp.old_correct))
    d.new_score = n_correct(comp.new_correct) / max(1, len(comp.new_correct))
    d.evaluator_calls = comp.calls
    d.p_value = comp.p_value
    stats["evaluator_calls"] += comp.calls
    stats["evaluator_calls_saved"] += comp.calls_full - comp.calls
    return comp
