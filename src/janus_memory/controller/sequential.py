"""Sequential old-vs-new comparison: Wald's SPRT on discordant pairs (a sequential sign / McNemar test).

Beyond the paper (``JanusConfig(decision_rule="sequential")``; part of ``JanusConfig.recommended()``).

Both memories are evaluated on the same tasks, ``round`` tasks per evaluator call, in the planned order. A task
where exactly one memory is correct is a *discordant pair*: ``w`` counts those the new memory wins, ``l`` those the
old memory wins (a ``None`` outcome casts no vote, as in the sign test). Concordant pairs carry no information about
which memory is better (McNemar 1947), so only ``(w, l)`` enters the test. With ``p`` = P(new wins | discordant):

* H0 "the candidate is not worse": ``p = 1/2``;  H1 "the candidate is worse": ``p = theta`` (< 1/2).
* log-likelihood ratio of H1 to H0: ``LLR = l * log(2 (1 - theta)) + w * log(2 theta)``.
* Wald's boundaries (Wald 1945): roll back as soon as ``LLR >= log((1 - beta) / alpha)``; deploy as soon as
  ``LLR <= log(beta / (1 - alpha))``. ``alpha`` bounds (approximately) the probability of rolling back a candidate
  that is as good as the old memory, ``beta`` that of deploying one whose discordant pairs go its way only with
  probability ``theta``.
* Truncation: after ``max_pairs`` pairs (or when the planned entries run out) the paper rule decides on the pairs
  seen (``w >= l`` deploys; ties go to the new memory).
* Curtailment (exact, as in ``early_stop``): evaluation also stops as soon as the remaining pairs cannot change the
  truncated test's outcome (the LLR is monotone in every remaining pair, so the two extreme completions decide).

The decision is a deterministic function of the evaluated outcomes; the test's error rates are Wald's
approximations for i.i.d. discordant pairs (the planned tasks are not i.i.d.; the rates are stated, the measured
decision quality is in docs/measurements.md, "Recommended controller"). ``alpha``/``beta``/``theta`` are
validated by JanusConfig.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class SPRT:
    """Wald's sequential probability ratio test on discordant pairs (see module docstring)."""

    alpha: float = 0.2
    beta: float = 0.2
    theta: float = 0.3
    margin: int = 0  # at truncation the candidate is deployed iff wins - losses >= margin (0: ties deploy)
    quiet: bool = True  # with margin > 0: a comparison without any discordant pair still deploys (a 0-0 tie)
    rollback_lead: int = 0  # > 0: at truncation the candidate is rolled back iff losses - wins >= rollback_lead

    def __post_init__(self):
        for name in ("alpha", "beta"):
            v = getattr(self, name)
            if not 0.0 < v < 0.5:
                raise ValueError(f"{name} must be in (0, 0.5), got {v}")
        if not 0.0 < self.theta < 0.5:
            raise ValueError(f"theta must be in (0, 0.5), got {self.theta}")
        if self.margin < 0:
            raise ValueError(f"margin must be >= 0, got {self.margin}")
        if self.rollback_lead < 0 or (self.rollback_lead and self.margin):
            raise ValueError(f"rollback_lead must be >= 0 and needs margin 0, got {self.rollback_lead} with margin "
                             f"{self.margin}")

    @property
    def upper(self) -> float:
        """Roll-back boundary log((1 - beta) / alpha)."""
        return math.log((1.0 - self.beta) / self.alpha)

    @property
    def lower(self) -> float:
        """Deploy boundary log(beta / (1 - alpha))."""
        return math.log(self.beta / (1.0 - self.alpha))

    def llr(self, wins: int, losses: int) -> float:
        """LLR of H1 (worse) against H0 (not worse) after ``wins`` new-memory and ``losses`` old-memory discordant
        pairs."""
        return losses * math.log(2.0 * (1.0 - self.theta)) + wins * math.log(2.0 * self.theta)

    def verdict(self, wins: int, losses: int) -> str | None:
        """"rollback", "deploy" or None (continue)."""
        v = self.llr(wins, losses)
        if v >= self.upper:
            return "rollback"
        if v <= self.lower:
            return "deploy"
        return None

    def truncated(self, wins: int, losses: int) -> str:
        """The decision when the pairs run out: a boundary already crossed, else the paper rule (ties deploy), or
        with ``margin`` > 0 a lead of at least ``margin`` discordant pairs (``seq_deploy_margin``), or with
        ``rollback_lead`` > 0 a roll-back only when the deployed memory leads by that many (``seq_rollback_lead``)."""
        v = self.verdict(wins, losses)
        if v is not None:
            return v
        if self.rollback_lead:  # innocent until shown harmful: only a lead of the deployed memory rolls back
            return "rollback" if losses - wins >= self.rollback_lead else "deploy"
        if self.quiet_tie(wins, losses):
            return "deploy"
        return "deploy" if wins - losses >= self.margin else "rollback"

    def quiet_tie(self, wins: int, losses: int) -> bool:
        """No discordant pair yet, under a margin that spares such a comparison (``quiet``): at truncation it
        deploys, as the paper's tie does; one discordant pair either way ends the exception."""
        return self.margin > 0 and self.quiet and wins == losses == 0


def settled(test: SPRT, wins: int, losses: int, remaining: int) -> str | None:
    """The outcome if it no longer depends on the ``remaining`` unevaluated pairs, else None.

    Every old-memory win raises the LLR, every new-memory win lowers it, a concordant pair leaves it. After k more
    pairs no completion's LLR is above the all-old-wins path's, so if that path never reaches the roll-back
    boundary and ends deployed (``w >= l + remaining`` at truncation), no completion reaches it and every one ends
    deployed (by the deploy boundary or at truncation with at least as many new-memory wins). The mirror argument
    holds for the all-new-wins path and roll-back. ``tests/controller/test_recommended.py`` checks this against every
    completion of small cases.
    """
    now = test.verdict(wins, losses)
    if now is not None:
        return now
    if _path_end(test, wins, losses, 0, remaining) == "deploy":
        return "deploy"
    # (a quiet 0-0 tie deploys at truncation: an all-concordant completion is not bounded by the all-new-wins path)
    if _path_end(test, wins, losses, remaining, 0) == "rollback" and not (remaining and test.quiet_tie(wins, losses)):
        return "rollback"
    return None


def _path_end(test: SPRT, wins: int, losses: int, w_add: int, l_add: int) -> str:
    """Outcome of the path that adds ``w_add`` new-memory wins or ``l_add`` old-memory wins (one of them 0) one at a
    time, then truncates."""
    w, ll = wins, losses
    for _ in range(w_add + l_add):
        if w_add:
            w += 1
        else:
            ll += 1
        v = test.verdict(w, ll)
        if v is not None:
            return v
    return test.truncated(w, ll)


def discordant(old: list, new: list) -> tuple[int, int]:
    """(new-memory wins, old-memory wins) over aligned outcome lists; a None on either side casts no vote."""
    w = sum(1 for o, n in zip(old, new) if o is not None and n is not None and n and not o)
    ll = sum(1 for o, n in zip(old, new) if o is not None and n is not None and o and not n)
    return w, ll


@dataclass(frozen=True)
class AdaptiveCap:
    """The adaptive cap of the truncated SPRT (``JanusConfig.seq_extend_pairs``): spend more tasks only on a close
    comparison.

    Stage 1 is the truncated test with cap ``base`` (``seq_max_pairs``). If it reaches ``base`` tasks without
    crossing a boundary and the comparison is *close* (``|w - l| <= margin``, ``w``/``l`` the new/old discordant
    wins), stage 2 goes on, ``seq_round`` tasks at a time, while it stays close: it stops as soon as one memory
    leads by more than ``margin`` (that memory wins), a Wald boundary is crossed, or ``top`` tasks are used (then
    the paper rule on the pairs seen, ties deploy). A comparison that is clear at ``base`` costs what the fixed cap
    costs; only close ones pay for more tasks.

    Where it comes from: stage 2 is the "play until one leads by r" stopping rule of Bechhofer, Kiefer and Sobel's
    sequential selection procedures for Bernoulli populations (1968), here truncated at ``top``; the two stages
    are a two-look group-sequential design (Pocock 1977) whose second look is taken only when the first is in the
    "promising" (close) zone, as in adaptive sample-size re-estimation (Mehta and Pocock 2011). The stopping rule is
    a deterministic function of the outcomes; no error rate beyond Wald's approximations is claimed.

    Curtailment stays exact for the whole two-stage rule (``stop``): before ``base`` the comparison stops when every
    completion up to ``base`` ends with a lead above ``margin`` for the same memory (no stage 2 possible), or when
    :func:`settled` with the remaining pairs up to ``top`` decides it (every completion, through both stages, then
    ends the same way: the extreme paths bound ``w - l`` at every point, and with ``w >= l`` at every point no
    completion rolls back by either rule, and the mirror). ``tests/controller/test_recommended.py`` checks ``stop`` against
    every completion of small cases.
    """

    base: int
    top: int
    margin: int = 1

    def __post_init__(self):
        if not 0 < self.base < self.top:
            raise ValueError(f"the adaptive cap needs 0 < seq_max_pairs < seq_extend_pairs, got {self.base}, {self.top}")
        if self.margin < 0:
            raise ValueError(f"seq_extend_margin must be >= 0, got {self.margin}")

    def stop(self, test: SPRT, wins: int, losses: int, k: int, n: int) -> str | None:
        """The outcome after ``k`` of ``n`` planned tasks if the comparison stops here, else None (continue)."""
        base, top = min(n, self.base), min(n, self.top)
        now = test.verdict(wins, losses)
        if now is not None:
            return now
        # the lead over the deploy threshold (test.margin, 0 = ties deploy): "close" and "leads" are measured from it
        d = wins - losses - test.margin
        if k >= top:
            return test.truncated(wins, losses)
        if k >= base:
            if test.quiet_tie(wins, losses):
                return "deploy"  # no discordant pair by the cap: nothing to extend for
            if abs(d) > self.margin:
                return "deploy" if d > 0 else "rollback"
            return settled(test, wins, losses, top - k)
        left = base - k
        if d - left > self.margin:
            return "deploy"  # (d > margin >= 0 at the cap)
        if d + left < -self.margin and not test.quiet_tie(wins, losses):
            return "rollback"
        return settled(test, wins, losses, top - k)


@dataclass(frozen=True)
class InnocentCap:
    """The test of an innocent candidate under ``seq_innocent_pairs``: Wald's SPRT on the tasks the candidate loses
    (the deployed memory right, the candidate wrong), read one task at a time, at most ``top`` tasks.

    A line that only adds harmless knowledge loses a task now and then through noise (H0: a loss rate of ``p0``); a
    planted instruction that spoils answers loses many (H1: ``p1``). Per task the log-likelihood ratio of H1 to H0
    moves by ``log(p1 / p0)`` on a loss and ``log((1 - p1) / (1 - p0))`` otherwise (a win counts as no loss: a line
    that fixes some answers and spoils many is still harmful). Roll back at ``log((1 - beta) / alpha)``, deploy at
    ``log(beta / (1 - alpha))``; at ``top`` (or when the planned tasks run out) roll back iff the ratio is above 0.
    ``alpha`` bounds the share of harmless additions rolled back per offer (``seq_reoffer`` offers them again),
    ``beta`` that of planted lines with loss rate ``p1`` deployed. The constants are chosen for the measured case
    (an evaluator right on 80% of tasks, 10% noise: a harmless line loses 9% of tasks, a line that spoils half the
    answers 40%; docs/measurements.md, "Planted additions"). Curtailment is Wald's: it stops at a boundary."""

    base: int
    top: int
    p0: float = 0.1
    p1: float = 0.35
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self):
        if not 0 < self.base < self.top:
            raise ValueError(f"seq_innocent_pairs needs 0 < seq_max_pairs < seq_innocent_pairs, got {self.base}, "
                             f"{self.top}")

    def llr(self, k: int, losses: int) -> float:
        """The log-likelihood ratio of H1 (harmful) to H0 (harmless) after ``k`` tasks with ``losses`` lost."""
        return losses * math.log(self.p1 / self.p0) + (k - losses) * math.log((1 - self.p1) / (1 - self.p0))

    def stop(self, test: SPRT, wins: int, losses: int, k: int, n: int, determinate: int | None = None) -> str | None:
        """The outcome after ``k`` of ``n`` planned tasks if the comparison stops here, else None (continue).
        ``determinate``: the tasks among the ``k`` on which both memories had an outcome (an indeterminate one, None,
        casts no vote; default ``k``). ``test`` is not read: this rule replaces the discordant-pair test for the
        candidates it holds innocent."""
        v = self.llr(k if determinate is None else determinate, losses)
        at_boundary = self._boundary(v)
        if at_boundary is not None:
            return at_boundary
        if k >= min(n, self.top):
            return "rollback" if v > 0 else "deploy"
        return None

    def _boundary(self, v: float) -> str | None:
        """Wald's boundaries for a log-likelihood ratio ``v``: "rollback", "deploy" or None (between them)."""
        if v >= math.log((1 - self.beta) / self.alpha):
            return "rollback"
        if v <= math.log(self.beta / (1 - self.alpha)):
            return "deploy"
        return None

    def crossed(self, k: int, losses: int) -> bool:
        """A boundary decided (not the truncation)."""
        return self._boundary(self.llr(k, losses)) is not None
