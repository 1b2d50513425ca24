"""The decision rules of one old-vs-new comparison (``JanusConfig.decision_rule``), applied by ``compare``.

Source: paper-spec.md §3.2 steps 5-7 and §11 item 1 (paper rule); the rest is beyond the paper.

* ``paper`` rule: ``new_acc >= old_acc`` deploys the candidate (ties go to the new memory). Both accuracies share
  the denominator ``max(1, |entries|)``, so the rule is ``sum(new_correct) >= sum(old_correct)``.
* Exact early stopping (option): each memory is evaluated on a growing prefix of the entries, one call of
  ``round_size`` tasks at a time, and evaluation stops as soon as the unevaluated (memory, task) pairs cannot
  change the paper decision. Before every call, with unknown old results counted as correct and unknown new ones
  as wrong, ``lower = Σnew - Σold - #old_unknown``; the other way round ``upper = Σnew + #new_unknown - Σold``.
  ``lower >= 0`` -> accept is certain; ``upper < 0`` -> rollback is certain. The next call goes to the memory
  whose results move the likelier bound fastest (Laplace estimates of both accuracies): e.g. proving "accept"
  gains 1 per new-memory success and 1 per old-memory failure. Whatever the schedule, the decision equals the
  full evaluation's (the bounds are worst cases). Consequences: ``old_correct`` and ``new_correct`` are prefixes
  of different lengths; the flip set (and thus
  the boundary refresh, and therefore later evaluation sets) only knows the entries evaluated under both memories,
  so a live run with early stopping can drift from a full-evaluation run after the first early stop. Savings are
  bounded by the rule itself: a certificate needs at least |entries| calls (e.g. new successes + old failures
  >= |entries| for "accept"), so at most 50 % can be saved, and much less when both accuracies are close to 1/2.
* ``sign_test`` rule (option, for noisy evaluation sets): with ``b`` = #(old correct, new wrong) and ``c`` =
  #(new correct, old wrong), roll back only when ``b - c >= max(1, min_margin)`` and the exact one-sided binomial
  (sign / exact McNemar) test ``P(X >= b | X ~ Bin(b + c, 1/2)) <= alpha``; otherwise deploy the candidate.
* ``sequential`` rule (option, ``sequential.py``): both memories on the same tasks, ``round_size`` tasks per call,
  until Wald's SPRT on the discordant pairs settles (or ``max_pairs`` / the entries run out: the paper rule on the
  pairs seen). Reasons ``sprt_new_not_worse`` / ``sprt_new_worse`` (a boundary crossed, or settled because the
  remaining pairs cannot change the outcome) and ``sprt_truncated_new_ge_old`` / ``sprt_truncated_old_better``.
  Decision logs written before the rule's rejection was named ``sprt_new_worse`` say ``sprt_old_worse`` for it
  (``STORED_REASON_NAMES``: readers show the current name).
* C23 guard: when old and new memory texts are identical, the memories cannot differ, so the entries are
  evaluated once and the result is reused for both (no noise flips); with early stopping nothing is evaluated.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import binomtest

from .sequential import SPRT, AdaptiveCap, InnocentCap, discordant, settled

Evaluator = Callable[[str, list], list]
UNKNOWN = object()  # an old-memory outcome not measured yet (``known_old``)
# reasons that stored decision logs may hold under another name: {stored name: the name of the same verdict now}
STORED_REASON_NAMES = {"sprt_old_worse": "sprt_new_worse"}


class EvaluationError(RuntimeError):
    """The evaluator callback raised or returned an unusable result.

    ``calls`` is set by :func:`compare` to the (memory, task) evaluations attempted before the failure.
    """

    calls: int = 0


def n_correct(results: list) -> int:
    """Number of correct entries; ``None`` (indeterminate, e.g. a sandbox timeout) counts as incorrect."""
    return sum(1 for x in results if x)


def _check(res: Any, n: int) -> list:
    """Validate an evaluator result: a sequence of ``n`` bool-like values (bool, numpy bool, 0/1), or ``None`` for an
    entry whose outcome is indeterminate (e.g. a code-sandbox timeout, failure case C16-C). ``None`` scores as
    incorrect (as the paper counts failed evaluations) but never makes a flip, so it cannot enter the boundary set."""
    try:
        out = list(res)
    except TypeError as exc:
        raise EvaluationError(f"evaluator returned {type(res).__name__}, not a list") from exc
    if len(out) != n:
        raise EvaluationError(f"evaluator returned {len(out)} results for {n} tasks")
    clean = []
    for v in out:
        if v is None:
            clean.append(None)
        elif isinstance(v, (bool, np.bool_)) or isinstance(v, (int, np.integer)) and int(v) in (0, 1):
            clean.append(bool(v))
        else:
            raise EvaluationError(f"evaluator returned a non-boolean value {v!r}")
    return clean


def call_evaluator(evaluator: Evaluator, memory_text: str, tasks: list) -> list[bool]:
    """Call ``evaluator(memory_text, tasks)``; any exception or bad result becomes :class:`EvaluationError`."""
    if not tasks:
        return []
    try:
        res = evaluator(memory_text, list(tasks))
    except EvaluationError:
        raise
    except Exception as exc:  # the callback is user code: wrap everything
        raise EvaluationError(f"{type(exc).__name__}: {exc}") from exc
    return _check(res, len(tasks))


@dataclass
class Comparison:
    """Outcome of comparing two memories on an evaluation set.

    ``old_correct``/``new_correct`` cover the evaluated prefix ``entries[:n_evaluated]``.
    ``calls`` / ``calls_full``: (memory, task) evaluations spent / needed by a full two-memory evaluation.
    """

    accept: bool
    reason: str
    old_correct: list[bool] = field(default_factory=list)
    new_correct: list[bool] = field(default_factory=list)
    n_evaluated: int = 0
    calls: int = 0
    calls_full: int = 0
    p_value: float | None = None
    early_stopped: bool = False


def paper_accept(old_sum: int, new_sum: int) -> bool:
    """Paper rule (spec §3.2 step 7): deploy the candidate iff new_acc >= old_acc (same denominator)."""
    return new_sum >= old_sum


def sign_test(old_correct: list[bool], new_correct: list[bool], alpha: float, min_margin: int) -> tuple[bool, str, float]:
    """Exact one-sided sign test on discordant pairs. Returns (accept, reason, p_value)."""
    pairs = [(o, n) for o, n in zip(old_correct, new_correct) if o is not None and n is not None]  # indeterminate: no vote
    b = sum(1 for o, n in pairs if o and not n)
    c = sum(1 for o, n in pairs if n and not o)
    if b <= c:
        return True, "sign_test_new_ge_old", 1.0
    p = float(binomtest(b, b + c, 0.5, alternative="greater").pvalue)
    if b - c >= max(1, min_margin) and p <= alpha:
        return False, "sign_test_old_better", p
    return True, "sign_test_not_significant", p


def compare(
    evaluator: Evaluator,
    tasks: list,
    old_text: str,
    new_text: str,
    *,
    rule: str = "paper",
    alpha: float = 0.05,
    min_margin: int = 0,
    early_stop: bool = False,
    round_size: int = 5,
    same_memory_shortcut: bool = True,
    sprt: SPRT | None = None,
    max_pairs: int = 0,
    known_old: list | None = None,
    extend_pairs: int = 0,
    extend_margin: int = 1,
    innocent: bool = False,
) -> Comparison:
    """Compare ``old_text`` vs ``new_text`` on ``tasks`` (the evaluation entries, in order).

    ``rule="sequential"`` uses ``sprt`` (default ``SPRT()``), ``round_size`` tasks per call and at most ``max_pairs``
    tasks (0: all of them). ``known_old`` (sequential rule only): per task, the old memory's outcome when it is
    already known (``True``/``False``/``None``) or ``UNKNOWN``; known outcomes are reused instead of evaluated.
    ``extend_pairs`` > ``max_pairs`` > 0 (sequential rule only): the adaptive cap (``sequential.AdaptiveCap``): a
    comparison still close at ``max_pairs`` (new-minus-old discordant wins within ``extend_margin``) goes on, up to
    ``extend_pairs`` tasks, until one memory leads by more than ``extend_margin``. ``innocent`` (with
    ``sprt.rollback_lead``): ``extend_pairs`` is the read-on cap of ``sequential.InnocentCap`` instead.

    Raises:
        EvaluationError: the evaluator raised or returned a wrong-length / non-boolean result.
    """
    n = len(tasks)
    full = 2 * n
    same = same_memory_shortcut and old_text == new_text
    spent = [0]

    def ev(text: str, chunk: list) -> list[bool]:
        spent[0] += len(chunk)
        return call_evaluator(evaluator, text, chunk)

    try:
        if rule == "sequential":
            cap: AdaptiveCap | InnocentCap | None = None
            if extend_pairs > 0 and max_pairs > 0:
                cap = InnocentCap(max_pairs, extend_pairs) if innocent else AdaptiveCap(max_pairs, extend_pairs,
                                                                                           extend_margin)
            return _sequential(ev, tasks, old_text, new_text, full, same, sprt or SPRT(), round_size, max_pairs,
                               known_old, cap)
        return _compare(ev, tasks, old_text, new_text, n, full, same, rule, alpha, min_margin, early_stop, round_size)
    except EvaluationError as exc:
        exc.calls = spent[0]
        raise


def _sequential(ev, tasks, old_text, new_text, full, same, test: SPRT, round_size: int, max_pairs: int,
                known_old: list | None = None, cap: AdaptiveCap | InnocentCap | None = None) -> Comparison:
    """The ``sequential`` rule (module docstring). Identical texts (with the C23 guard) are accepted unevaluated.
    Old-memory outcomes given in ``known_old`` are reused (not evaluated, not counted as calls). ``cap``: the
    adaptive cap (None: the fixed cap ``max_pairs``)."""
    n = len(tasks)
    if same:
        return Comparison(True, "sprt_new_not_worse", [], [], 0, 0, full, None, n > 0)
    limit = n if max_pairs <= 0 else min(n, max_pairs)
    top = limit if cap is None else min(n, cap.top)
    old_c: list = []
    new_c: list = []
    verdict = None
    spent = 0
    while True:
        w, ll = discordant(old_c, new_c)
        k = len(old_c)
        if cap is None:
            verdict = settled(test, w, ll, limit - k)
        else:
            verdict = cap.stop(test, w, ll, k, n, *([_determinate(old_c, new_c)] if isinstance(cap, InnocentCap) else []))
        if verdict is not None or k >= top:
            break
        lo, hi = k, _round_end(k, round_size, limit, top, cap is not None)
        chunk = tasks[lo:hi]
        known = [UNKNOWN] * len(chunk) if known_old is None else list(known_old[lo:hi])
        todo = [t for t, v in zip(chunk, known) if v is UNKNOWN]
        got = iter(ev(old_text, todo) if todo else [])
        old_c += [next(got) if v is UNKNOWN else v for v in known]
        new_c += ev(new_text, chunk)
        spent += len(todo) + len(chunk)
    k = len(old_c)
    w, ll = discordant(old_c, new_c)
    if verdict is None:  # reached the (possibly extended) cap undecided: the paper rule on the pairs seen
        verdict = test.truncated(w, ll)
    wald = test.verdict(w, ll) is not None
    crossed = wald or k < limit
    if isinstance(cap, InnocentCap):  # the loss test decided: its own boundaries, not Wald's on discordant pairs
        wald = crossed = cap.crossed(_determinate(old_c, new_c), ll)
    accept = verdict == "deploy"
    if accept and w < ll and not wald:  # seq_rollback_lead: the deployed memory leads, short of the roll-back lead
        reason = "sprt_truncated_no_evidence"
    elif crossed:
        reason = "sprt_new_not_worse" if accept else "sprt_new_worse"
    elif accept or w < ll:
        reason = "sprt_truncated_new_ge_old" if accept else "sprt_truncated_old_better"
    else:  # not worse, but short of the lead seq_deploy_margin asks for
        reason = "sprt_truncated_no_lead"
    return Comparison(accept, reason, old_c, new_c, k, spent, full, None, k < n)


def _determinate(old_c: list, new_c: list) -> int:
    """The tasks on which both memories had an outcome (not None)."""
    return sum(1 for o, v in zip(old_c, new_c) if o is not None and v is not None)


def _round_end(k: int, round_size: int, limit: int, top: int, capped: bool) -> int:
    """End of the sequential rule's round that starts at task ``k``: ``round_size`` tasks, never across the fixed
    cap ``limit`` while the adaptive cap's first stage runs, never past ``top``."""
    stage_end = limit if capped and k < limit else top
    return min(stage_end, k + max(1, round_size))


def planned_calls(tasks: list, old_text: str, new_text: str, *, rule: str = "paper", early_stop: bool = False,
                  round_size: int = 5, same_memory_shortcut: bool = True, max_pairs: int = 0,
                  known_old: list | None = None, extend_pairs: int = 0) -> list[tuple[str, list]] | None:
    """The evaluator calls :func:`compare` makes with these arguments, in order, when it never stops early:
    ``[(memory text, tasks), ...]``. A comparison that stops early makes a prefix of them. None when the order
    depends on the outcomes (paper rule with early stopping). Lets a batching evaluator send every read a
    comparison may need at once (run/eval_batch.py); the decision does not depend on it."""
    n = len(tasks)
    same = same_memory_shortcut and old_text == new_text
    if rule == "sequential":
        if same:
            return []
        limit = n if max_pairs <= 0 else min(n, max_pairs)
        capped = extend_pairs > 0 and max_pairs > 0
        top = min(n, extend_pairs) if capped else limit
        calls, k = [], 0
        while k < top:
            hi = _round_end(k, round_size, limit, top, capped)
            known = [UNKNOWN] * (hi - k) if known_old is None else list(known_old[k:hi])
            todo = [t for t, v in zip(tasks[k:hi], known) if v is UNKNOWN]
            if todo:
                calls.append((old_text, todo))
            calls.append((new_text, list(tasks[k:hi])))
            k = hi
        return calls
    if early_stop and rule == "paper":
        return None
    if not tasks:
        return []
    return [(old_text, list(tasks))] if same else [(old_text, list(tasks)), (new_text, list(tasks))]


def _compare(ev, tasks, old_text, new_text, n, full, same, rule, alpha, min_margin, early_stop, round_size):
    if early_stop and rule == "paper":
        if same:
            return Comparison(True, "early_stop_new_ge_old", [], [], 0, 0, full, None, n > 0)
        old_c: list[bool] = []
        new_c: list[bool] = []
        while len(old_c) < n or len(new_c) < n:
            so, sn, lo, ln = n_correct(old_c), n_correct(new_c), len(old_c), len(new_c)
            # worst cases: unknown old results correct + unknown new wrong (lower), and the reverse (upper)
            if sn - so - (n - lo) >= 0:
                return Comparison(True, "early_stop_new_ge_old", old_c, new_c, min(lo, ln), lo + ln, full, None, True)
            if sn + (n - ln) - so < 0:
                return Comparison(False, "early_stop_old_better", old_c, new_c, min(lo, ln), lo + ln, full, None, True)
            # pick the call that moves the likelier bound the most (Laplace estimates of both accuracies)
            po, pn = (so + 1) / (lo + 2), (sn + 1) / (ln + 2)
            gain_new, gain_old = (pn, 1 - po) if pn >= po else (1 - pn, po)
            use_new = ln < n and (lo >= n or gain_new > gain_old or (gain_new == gain_old and ln <= lo))
            if use_new:
                new_c += ev(new_text, tasks[ln : ln + round_size])
            else:
                old_c += ev(old_text, tasks[lo : lo + round_size])
        accept = paper_accept(n_correct(old_c), n_correct(new_c))
        return Comparison(accept, "new_ge_old" if accept else "old_better", old_c, new_c, n, 2 * n, full)

    if same:
        old_c = ev(old_text, tasks)
        new_c = list(old_c)
        calls = n
    else:
        old_c = ev(old_text, tasks)
        new_c = ev(new_text, tasks)
        calls = 2 * n
    if rule == "sign_test":
        accept, reason, p = sign_test(old_c, new_c, alpha, min_margin)
        return Comparison(accept, reason, old_c, new_c, n, calls, full, p)
    accept = paper_accept(n_correct(old_c), n_correct(new_c))
    return Comparison(accept, "new_ge_old" if accept else "old_better", old_c, new_c, n, calls, full)
