"""The ``selective`` trigger: MMT plus magnitude, item-level and calibration options.

Pure and serialisable. The paper's MMT (trigger.py) stays the default; this trigger is opt-in
(``JanusConfig(trigger="selective")``). It fires on a post-warm-up step iff

* **item gate** (``retention_min > 0``): the candidate keeps less than ``retention_min`` of the old memory's word
  3-grams (``changes.change_stats(...).retention``), or (``shrink_max > 0``) its item count falls below
  ``shrink_max`` x the old count. These are the destructive-looking steps: dumps that replace the memory, wipes.
  With ``arm_warmup`` the item gate also fires during warm-up (the cosine needs a momentum, so only it can).
* **or the momentum gate** (``use_mmt``): ``cos(z_t, m_{t-1}) < threshold`` and ``||z_t|| >= magnitude_ratio x``
  the median of the last ``magnitude_window`` post-warm-up ``||z||`` (magnitude-aware firing; no history or
  ``magnitude_ratio == 0`` passes). ``threshold`` is ``tau``, or with ``tau_quantile > 0`` the ``tau_quantile``
  quantile (numpy's linear rule) of the last ``tau_window`` cosines once at least 5 are recorded (a calibrated
  threshold), capped at ``tau``.

The histories hold plain Python floats, so ``json.dumps`` of :meth:`SelectiveTrigger.state_dict` round-trips
byte-identically. History is updated after every post-warm-up step whatever the decision, like the momentum.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .changes import ChangeStats

MIN_CALIBRATION = 5


@dataclass(frozen=True)
class SelectiveOptions:
    tau: float = 0.0
    use_mmt: bool = True
    retention_min: float = 0.0
    shrink_max: float = 0.0
    magnitude_ratio: float = 0.0
    magnitude_window: int = 10
    tau_quantile: float = 0.0
    tau_window: int = 20
    arm_warmup: bool = False

    @classmethod
    def of(cls, trigger) -> SelectiveOptions:
        """The options a JanusConfig's trigger group (TriggerConfig, the same field names) sets, numbers as floats."""
        return cls(tau=float(trigger.tau), use_mmt=trigger.use_mmt, retention_min=float(trigger.retention_min),
                   shrink_max=float(trigger.shrink_max), magnitude_ratio=float(trigger.magnitude_ratio),
                   magnitude_window=trigger.magnitude_window, tau_quantile=float(trigger.tau_quantile),
                   tau_window=trigger.tau_window, arm_warmup=trigger.arm_warmup)


@dataclass
class TriggerVerdict:
    fire: bool
    by: str  # "item", "mmt", "" (not fired)
    threshold: float | None
    z_norm_ref: float | None
    item_flag: bool

    def to_dict(self) -> dict:
        return {"fired_by": self.by, "threshold": self.threshold, "z_norm_ref": self.z_norm_ref,
                "item_flag": self.item_flag}


def item_flag(opts: SelectiveOptions, ch: ChangeStats) -> bool:
    """Destructive-looking by item signals (see module docstring)."""
    if opts.retention_min > 0 and ch.old_items > 0 and ch.retention < opts.retention_min:
        return True
    return opts.shrink_max > 0 and ch.old_items > 0 and ch.line_ratio < opts.shrink_max


class SelectiveTrigger:
    """Stateful part of the selective trigger: recent ``||z||`` and cosines."""

    def __init__(self, opts: SelectiveOptions):
        self.opts = opts
        self.z_norms: list[float] = []
        self.cosines: list[float] = []

    def threshold(self) -> float:
        o = self.opts
        if o.tau_quantile > 0 and len(self.cosines) >= MIN_CALIBRATION:
            return min(o.tau, float(np.quantile(np.asarray(self.cosines, dtype=np.float64), o.tau_quantile)))
        return o.tau

    def z_reference(self) -> float | None:
        if not self.z_norms:
            return None
        return float(np.median(np.asarray(self.z_norms, dtype=np.float64)))

    def warmup_fires(self, ch: ChangeStats) -> TriggerVerdict:
        flag = item_flag(self.opts, ch)
        fire = self.opts.arm_warmup and flag
        return TriggerVerdict(fire, "item" if fire else "", None, None, flag)

    def fires(self, cos: float | None, z_norm: float, ch: ChangeStats) -> TriggerVerdict:
        """Verdict for one post-warm-up step (``cos`` None when there is no momentum yet). Does not mutate."""
        o = self.opts
        thr = self.threshold()
        ref = self.z_reference()
        flag = item_flag(o, ch)
        if flag:
            return TriggerVerdict(True, "item", thr, ref, True)
        big = o.magnitude_ratio <= 0 or ref is None or z_norm >= o.magnitude_ratio * ref
        if o.use_mmt and cos is not None and cos < thr and big:
            return TriggerVerdict(True, "mmt", thr, ref, False)
        return TriggerVerdict(False, "", thr, ref, False)

    def observe(self, cos: float | None, z_norm: float) -> None:
        """Record one post-warm-up step (after the decision)."""
        o = self.opts
        if math.isfinite(z_norm):
            self.z_norms = (self.z_norms + [float(z_norm)])[-o.magnitude_window:]
        if cos is not None and math.isfinite(cos):
            self.cosines = (self.cosines + [float(cos)])[-o.tau_window:]

    def state_dict(self) -> dict:
        return {"z_norms": list(self.z_norms), "cosines": list(self.cosines)}

    def load_state_dict(self, state: dict | None) -> None:
        state = state or {}
        self.z_norms = [float(x) for x in state.get("z_norms", [])][-self.opts.magnitude_window:]
        self.cosines = [float(x) for x in state.get("cosines", [])][-self.opts.tau_window:]
