"""Memory Momentum Trigger (MMT) and the ablation trigger policies.

Source: paper-spec.md §2 (MMT), §8.3 (Table 2 trigger ablation), §11 items 2-4.

* Update direction ``z_t = phi(M_hat_t) - phi(M_{t-1})`` (zeros when the two shapes differ).
* Momentum ``m_t = beta * m_{t-1} + (1 - beta) * z_t``; ``m := z`` when there is no previous momentum
  or its shape differs.
* MMT fires iff ``cos(z_t, m_{t-1}) < tau`` (strict), never when ``m_{t-1}`` is None.
* ``cosine`` is 0.0 when either norm is below 1e-8, when a vector is empty, or when the sizes differ.

Everything here is pure: numpy in, numpy/float out.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .step import StepInput

TRIGGER_POLICIES = ("never", "always", "random", "periodic", "mmt", "selective")
COSINE_EPS = 1e-8


def as_vector(x, name: str = "vector") -> tuple[np.ndarray, list[str]]:
    """Convert an embedding to a 1-D float64 vector, sanitising non-finite values.

    Args:
        x: array-like of shape (d,) or (1, d) (anything ``np.asarray`` accepts); ``None`` is an empty vector.
        name: used in the warning text.
    Returns:
        (vector of shape (d,), warnings). A vector holding NaN/inf is replaced by a zero vector of the same
        size and a warning is returned (failure-handling rule of the controller brief: NaN -> zero vector).
    Raises:
        ValueError: when ``x`` cannot be converted to a numeric array, or holds more than one vector (shape (3, d):
            several texts' embeddings, which flattened would be one meaningless vector).
    """
    if x is None:
        return np.zeros(0, dtype=np.float64), [f"{name}: missing embedding treated as empty vector"]
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: not a numeric vector ({exc})") from exc
    if a.ndim > 2 or (a.ndim == 2 and a.shape[0] != 1):
        raise ValueError(f"{name}: expected one embedding of shape (d,) or (1, d), got shape {tuple(a.shape)}")
    v = a.reshape(-1)
    warnings: list[str] = []
    if v.size and not np.all(np.isfinite(v)):
        warnings.append(f"{name}: contains NaN/inf; treated as a zero vector")
        v = np.zeros_like(v)
    return v, warnings


def unusable(v: np.ndarray) -> bool:
    """Whether an embedding (after :func:`as_vector`) carries no direction: empty, or a norm below
    :data:`COSINE_EPS` (all zeros, or NaN/inf replaced by zeros). A working encoder gives neither for a text."""
    return v.size == 0 or exact_norm(v) < COSINE_EPS


def exact_norm(v: np.ndarray) -> float:
    """L2 norm with an exactly rounded sum (machine- and thread-independent, like :func:`cosine`)."""
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    return math.sqrt(math.fsum((v * v).tolist()))


def cosine(a: np.ndarray, b: np.ndarray, eps: float = COSINE_EPS) -> float:
    """Cosine similarity of two 1-D vectors, 0.0 in every degenerate case (spec §2.2).

    Degenerate: empty vector, different sizes, or a norm ``< eps``. Sums are exactly rounded (``math.fsum``) rather
    than BLAS dot products, whose last bits depend on the CPU kernel and thread count: the same run gives the same
    trigger cosines on every machine and in every worker process (Ray workers run with other BLAS settings).
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    if a.size == 0 or b.size == 0 or a.size != b.size:
        return 0.0
    na = exact_norm(a)
    nb = exact_norm(b)
    if na < eps or nb < eps:
        return 0.0
    return math.fsum((a * b).tolist()) / (na * nb)


def update_direction(old_vec: np.ndarray, new_vec: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """``z = new - old``; a zero vector shaped like ``new`` when the shapes differ (spec §2.2)."""
    if old_vec.shape != new_vec.shape:
        return np.zeros_like(new_vec), [
            f"embedding dimension mismatch: old {old_vec.shape[0]} vs new {new_vec.shape[0]}; z set to zero"
        ]
    return new_vec - old_vec, []


def momentum_update(prev: np.ndarray | None, z: np.ndarray, beta: float) -> np.ndarray:
    """``beta * prev + (1 - beta) * z``; a copy of ``z`` when ``prev`` is None or shaped differently."""
    if prev is None or prev.shape != z.shape:
        return z.copy()
    return beta * prev + (1.0 - beta) * z


@dataclass(frozen=True)
class TriggerPolicy:
    """Decides whether a post-warm-up step compares old vs new memory.

    Policies (spec §8.3 and the authors' ablation code):
      * ``never``: the base updater (no comparison ever).
      * ``always``: every post-warm-up step (including step warmup+1).
      * ``random``: ``random.Random(seed + step * 1009).random() < rate``.
      * ``periodic``: ``(step - warmup - 1) % period == 0``.
      * ``mmt``: ``m_prev is not None and cos(z, m_prev) < tau`` (strict).
      * ``selective``: decided by :class:`trigger_options.SelectiveTrigger` inside ``Janus``; here it is MMT.
    ``step`` is the 1-based stream step.
    """

    name: str = "mmt"
    tau: float = 0.0
    rate: float = 0.3
    period: int = 3
    warmup: int = 20
    seed: int = 0

    def __post_init__(self):
        if self.name not in TRIGGER_POLICIES:
            raise ValueError(f"unknown trigger policy {self.name!r}; expected one of {TRIGGER_POLICIES}")
        if not math.isfinite(self.tau):
            raise ValueError("tau must be finite")
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError("trigger_rate must be in [0, 1]")
        if self.period < 1:
            raise ValueError("trigger_period must be >= 1")

    def fires(self, step: int, cos: float | None) -> bool:
        """Whether the policy fires at ``step``; ``cos`` is None when there is no previous momentum."""
        if self.name == "never":
            return False
        if self.name == "always":
            return True
        if self.name == "random":
            return random.Random(self.seed + step * 1009).random() < self.rate
        if self.name == "periodic":
            return (step - self.warmup - 1) % self.period == 0
        # mmt
        return cos is not None and cos < self.tau


def broken_embeddings(inp: StepInput, vectors: tuple) -> str:
    """What shows a broken encoder in this step's embeddings ("" when nothing does): a NaN or inf in any of them, or
    all three (task, old memory, new memory) without a direction (all zeros) while a memory text is not blank."""
    names = ("task", "old memory", "new memory")
    raw = (inp.task_embedding, inp.old_embedding, inp.new_embedding)
    bad = [n for n, x in zip(names, raw) if x is not None and not np.all(np.isfinite(np.asarray(x, dtype=np.float64)))]
    if bad:
        return f"{', '.join(bad)} embedding holds NaN or inf (a broken encoder?)"
    if all(unusable(v) for v in vectors) and (inp.old_memory.strip() or inp.new_memory.strip()):
        return "every embedding is all zeros (a broken encoder?)"
    return ""
