"""The roles of the paper's hybrid evaluation set (``hybrid_set.py``): coverage, boundary and fresh, and the task
embedding store they read.

Source: paper-spec.md §3 (and §4 pseudo-code, §11 items 5-7).

Tasks are referred to by their *stream index* (0-based position in the stream), which plays the role of the
object identity the authors' code uses. Seen tasks are always the stream prefix ``[0, seen_end)`` and pending
tasks the suffix ``[seen_end, n)``, so no per-step list is ever re-scanned.

* Coverage (``FullCoverage``): k-means over **all** seen task embeddings with ``k = min(coverage_size, n_seen)``
  at every trigger, warm-started from the previous centroids when their shape matches; ``k = 1`` is the mean.
  The representative of each cluster is the member nearest (L2) to its centroid; empty clusters are dropped.
  Two k-means (``JanusConfig.clustering``):
  - ``paper`` (the paper preset, :func:`kmeans_paper`): the behaviour of the ``kmeans_pytorch`` build the
    authors call (GitHub master 1565cb8 through ``janus_core.run_kmeans``), in numpy: initial centres = k distinct
    points drawn by ``RandomState(seed).choice(n, k, replace=False)`` (what ``np.random.seed(seed)`` then
    ``np.random.choice`` gives); a warm restart snaps each old centroid to its nearest data point; squared
    Euclidean distances in float32; an empty cluster takes one random point (``randint`` of the same generator;
    kmeans_pytorch draws it from torch's generator, which we do not reproduce bit for bit); stop when the squared
    sum of the centre shifts is below 1e-4 or after 50 iterations; the labels returned are those of the last
    assignment (before the final centre update), as kmeans_pytorch returns them. Seeded per call, so a run
    reproduces (the authors' own call leaves numpy's global generator unseeded).
  - ``sklearn``: scikit-learn ``KMeans``, ``k-means++`` with ``random_state=seed`` (or the exact previous
    centroids as the warm start), ``n_init=1``, ``max_iter=50`` (:func:`kmeans_fit`).
* Coverage (beyond the paper, ``IncrementalCoverage``): one full fit once, then a mini-batch k-means update
  (per-centroid counts, learning rate 1/count, no reassignment: the update ``MiniBatchKMeans.partial_fit``
  performs) on the *new* seen embeddings only, plus per-cluster candidate pools holding the ``pool_size``
  members nearest to their centroid. The representative is the pool member nearest to the moved centroid.
  Approximation (documented): a point keeps the cluster it was assigned on arrival, and a point that has left
  a pool never re-enters it; cost per trigger is O((pending + k * pool_size) * d), independent of history.
  We do the update with numpy instead of calling ``partial_fit`` because its state (counts, RNG, step counters)
  lives in private attributes that cannot be saved and restored byte-identically.
* Boundary: bootstrap = first ``boundary_size`` non-representative warm-up tasks (stream order); after each
  trigger: ``>= size`` flips -> ``random.Random(seed + trigger_count + 101).sample(flips, size)``, else
  flips + older boundary entries not in the flips and not coverage reps, truncated to ``size``.
* Fresh: the pending tasks (current one included); more than ``fresh_size`` ->
  ``random.Random(seed + trigger_count).sample(pending, fresh_size)`` with ``trigger_count`` before the increment.
  ``fresh_size == 0`` means "no cap" as in the authors' code (use ``use_fresh=False`` to drop the role).
"""
from __future__ import annotations

import base64
import random
import warnings as _warnings

import numpy as np
from sklearn.cluster import KMeans

from janus_memory.rows import RowsRef

# ----------------------------------------------------------------------------- array (de)serialisation


def encode_array(a: np.ndarray | None) -> dict | None:
    """JSON-safe, byte-exact encoding of a numpy array (little-endian raw bytes in base64)."""
    if a is None:
        return None
    a = np.ascontiguousarray(a)
    dt = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    return {
        "dtype": dt.str,
        "shape": list(a.shape),
        "b64": base64.b64encode(a.astype(dt, copy=False).tobytes()).decode("ascii"),
    }


def decode_array(d: dict | RowsRef | None) -> np.ndarray | None:
    """Inverse of :func:`encode_array` (a RowsRef, the run store's form of the embedding matrix, gives a copy)."""
    if d is None:
        return None
    if isinstance(d, RowsRef):
        return d.copy_array()
    raw = base64.b64decode(d["b64"].encode("ascii"))
    return np.frombuffer(raw, dtype=np.dtype(d["dtype"])).reshape(d["shape"]).copy()


# ----------------------------------------------------------------------------- embedding store


class EmbeddingStore:
    """Task embeddings in a preallocated float32 array of shape (capacity, d) that doubles when full.

    ``append`` is amortised O(d); ``view(a, b)`` is a zero-copy slice of rows ``[a, b)``.
    """

    def __init__(self, dim: int | None = None, capacity: int = 64):
        self.dim = dim
        self.n = 0
        self._data = None if dim is None else np.zeros((max(1, capacity), dim), dtype=np.float32)
        self._capacity = max(1, capacity)

    def check(self, v: np.ndarray) -> None:
        """Raise ValueError when ``v`` cannot be stored (empty or wrong dimension)."""
        if v.size == 0:
            raise ValueError("task_embedding is empty")
        if self.dim is not None and v.size != self.dim:
            raise ValueError(f"task_embedding has dimension {v.size}, expected {self.dim} (as earlier tasks)")

    def append(self, v: np.ndarray) -> int:
        self.check(v)
        if self._data is None:
            self.dim = int(v.size)
            self._data = np.zeros((self._capacity, self.dim), dtype=np.float32)
        if self.n == self._data.shape[0]:
            grown = np.zeros((2 * self._data.shape[0], self.dim), dtype=np.float32)
            grown[: self.n] = self._data[: self.n]
            self._data = grown
        self._data[self.n] = v
        self.n += 1
        return self.n - 1

    def view(self, start: int = 0, end: int | None = None) -> np.ndarray:
        end = self.n if end is None else end
        if self._data is None:
            return np.zeros((0, 0), dtype=np.float32)
        return self._data[start:end]

    def state_dict(self, token: object | None = None) -> dict:
        """``token``: the owner's "only grew" token; given, the matrix is a RowsRef (the run store's form, rows.py)."""
        if token is not None and self.n:
            return {"dim": self.dim, "n": self.n, "data": RowsRef(self.view(0, self.n), token, "array")}
        return {"dim": self.dim, "n": self.n, "data": encode_array(self.view(0, self.n) if self.n else None)}

    @classmethod
    def from_state_dict(cls, d: dict) -> EmbeddingStore:
        n = int(d["n"])
        cap = 64
        while cap < n:
            cap *= 2
        s = cls(d["dim"], capacity=cap)
        if n:
            s._data[:n] = decode_array(d["data"])
            s.n = n
        return s


# ----------------------------------------------------------------------------- k-means helpers


def kmeans_fit(X: np.ndarray, k: int, seed: int, init: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Cluster rows of ``X`` (n, d) into ``k`` clusters with scikit-learn ``KMeans``.

    Returns (centers (k, d) in X's dtype, labels (n,) int64). ``k == 1``: the mean and all-zero labels
    (authors' special case). ``init`` (k, d) warm-starts when its shape matches, else ``k-means++`` seeded.
    """
    n = X.shape[0]
    k = max(1, min(int(k), n))
    if k == 1:
        return X.mean(axis=0, keepdims=True).astype(X.dtype), np.zeros(n, dtype=np.int64)
    use_init = init is not None and init.shape == (k, X.shape[1])
    km = KMeans(
        n_clusters=k,
        init=np.asarray(init, dtype=X.dtype) if use_init else "k-means++",
        n_init=1,
        max_iter=50,
        random_state=seed,
        algorithm="lloyd",
    )
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")  # ConvergenceWarning on duplicate points: harmless here
        km.fit(X)
    return km.cluster_centers_.astype(X.dtype, copy=False), km.labels_.astype(np.int64)


PAPER_KMEANS_TOL = 1e-4  # kmeans_pytorch's default tolerance on the squared sum of centre shifts
PAPER_KMEANS_ITER_LIMIT = 50  # janus_core.run_kmeans passes iter_limit=50


def _sq_dists32(X32: np.ndarray, C32: np.ndarray) -> np.ndarray:
    """(n, k) squared Euclidean distances in float32, as kmeans_pytorch's pairwise_distance computes them."""
    diff = X32[:, None, :] - C32[None, :, :]
    return (diff * diff).sum(axis=2, dtype=np.float32)


def kmeans_paper(X: np.ndarray, k: int, seed: int, init: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The authors' k-means (kmeans_pytorch's algorithm, numpy, seeded per call; see the module docstring).

    Returns (centers (k, d) float64, labels (n,) int64); ``k == 1``: the mean and all-zero labels (the authors'
    special case, kmeans_pytorch fails on one cluster). ``init`` (k, d) is a warm restart when its shape matches.
    """
    n = X.shape[0]
    k = max(1, min(int(k), n))
    if k == 1:
        return X.astype(np.float64).mean(axis=0, keepdims=True), np.zeros(n, dtype=np.int64)
    X32 = np.asarray(X, dtype=np.float32)
    rng = np.random.RandomState(seed)
    if init is not None and init.shape == (k, X.shape[1]):
        snap = np.argmin(_sq_dists32(X32, np.asarray(init, dtype=np.float32)), axis=0)  # nearest point per centre
        centers = X32[snap].copy()
    else:
        centers = X32[rng.choice(n, k, replace=False)].copy()
    iteration = 0
    while True:
        labels = np.argmin(_sq_dists32(X32, centers), axis=1)
        before = centers.copy()
        for c in range(k):
            members = X32[labels == c]
            if members.shape[0] == 0:
                members = X32[rng.randint(n)][None, :]
            centers[c] = members.mean(axis=0, dtype=np.float32)
        shift = np.float32(np.sqrt(((centers - before) ** 2).sum(axis=1, dtype=np.float32)).sum(dtype=np.float32))
        iteration += 1
        if shift * shift < PAPER_KMEANS_TOL or iteration >= PAPER_KMEANS_ITER_LIMIT:
            break
    return centers.astype(np.float64), labels.astype(np.int64)


def nearest_members(X: np.ndarray, centers: np.ndarray, labels: np.ndarray) -> list[int]:
    """For each cluster in index order: the row index of its member nearest to the centroid (empty -> skipped).

    Ties go to the lowest index (``argmin``). Distances in float64.
    """
    reps = []
    for c in range(centers.shape[0]):
        idx = np.flatnonzero(labels == c)
        if idx.size == 0:
            continue
        d = np.linalg.norm(X[idx].astype(np.float64) - centers[c].astype(np.float64), axis=1)
        reps.append(int(idx[int(np.argmin(d))]))
    return reps


class FullCoverage:
    """Faithful coverage: full re-clustering of all seen embeddings at every trigger (spec §3.2 step 3).

    ``algorithm``: ``"paper"`` (:func:`kmeans_paper`, state kind ``paper``) or ``"sklearn"`` (:func:`kmeans_fit`,
    state kind ``full``, the name stored before the paper k-means existed)."""

    def __init__(self, size: int, seed: int, algorithm: str = "paper"):
        if algorithm not in ("paper", "sklearn"):
            raise ValueError(f"algorithm must be 'paper' or 'sklearn', got {algorithm!r}")
        self.size = size
        self.seed = seed
        self.algorithm = algorithm
        self.kind = "paper" if algorithm == "paper" else "full"
        self.centroids: np.ndarray | None = None

    def refresh(self, store: EmbeddingStore, seen_end: int) -> list[int]:
        """Return coverage representatives (stream indices) for seen tasks ``[0, seen_end)``.

        Raises whatever scikit-learn raises; the caller keeps the previous coverage on failure.
        """
        if seen_end == 0 or self.size == 0:
            return []
        X = store.view(0, seen_end)
        fit = kmeans_paper if self.algorithm == "paper" else kmeans_fit  # looked up per call (tests patch them)
        centers, labels = fit(X, min(self.size, seen_end), self.seed, self.centroids)
        self.centroids = centers
        return nearest_members(X, centers, labels)

    def state_dict(self) -> dict:
        return {"kind": self.kind, "centroids": encode_array(self.centroids)}

    def load_state_dict(self, d: dict) -> None:
        self.centroids = decode_array(d["centroids"])


class IncrementalCoverage:
    """Beyond the paper: history-independent coverage refresh (see module docstring)."""

    kind = "incremental"

    def __init__(self, size: int, seed: int, pool_size: int = 32):
        self.size = size
        self.seed = seed
        self.pool_size = pool_size
        self.centers: np.ndarray | None = None  # (k, d) float64
        self.counts: np.ndarray | None = None  # (k,) float64
        self.pools: list[np.ndarray] = []  # per cluster, int64 stream indices sorted by distance
        self.assigned = 0  # seen tasks [0, assigned) already absorbed

    def _rebuild_pools(self, X: np.ndarray, idx_by_cluster: list[np.ndarray]) -> None:
        pools = []
        for c, idx in enumerate(idx_by_cluster):
            if idx.size == 0:
                pools.append(np.zeros(0, dtype=np.int64))
                continue
            d = np.linalg.norm(X[idx].astype(np.float64) - self.centers[c], axis=1)
            order = np.lexsort((idx, d))[: self.pool_size]
            pools.append(idx[order].astype(np.int64))
        self.pools = pools

    def refresh(self, store: EmbeddingStore, seen_end: int) -> list[int]:
        if seen_end == 0 or self.size == 0:
            return []
        X = store.view(0, seen_end)
        k = min(self.size, seen_end)
        if self.centers is None or self.centers.shape[0] != k:
            init = None
            if self.centers is not None and self.centers.shape == (k, X.shape[1]):
                init = self.centers
            centers, labels = kmeans_fit(X, k, self.seed, init)
            self.centers = centers.astype(np.float64)
            self.counts = np.bincount(labels, minlength=k).astype(np.float64)
            self._rebuild_pools(X, [np.flatnonzero(labels == c) for c in range(k)])
        else:
            new_idx = np.arange(self.assigned, seen_end, dtype=np.int64)
            if new_idx.size:
                Xn = X[self.assigned:seen_end].astype(np.float64)
                d2 = (
                    (Xn * Xn).sum(1)[:, None]
                    - 2.0 * Xn @ self.centers.T
                    + (self.centers * self.centers).sum(1)[None, :]
                )
                labels = np.argmin(d2, axis=1)
                for c in np.unique(labels):
                    m = labels == c
                    n_c = float(m.sum())
                    self.counts[c] += n_c
                    self.centers[c] += (Xn[m].sum(0) - n_c * self.centers[c]) / self.counts[c]
                cand = [
                    np.concatenate([self.pools[c], new_idx[labels == c]]) for c in range(self.centers.shape[0])
                ]
            else:
                cand = list(self.pools)
            self._rebuild_pools(X, cand)
        self.assigned = seen_end
        return [int(p[0]) for p in self.pools if p.size]

    def state_dict(self) -> dict:
        return {
            "kind": self.kind,
            "centers": encode_array(self.centers),
            "counts": encode_array(self.counts),
            "pools": [encode_array(p) for p in self.pools],
            "assigned": self.assigned,
        }

    def load_state_dict(self, d: dict) -> None:
        self.centers = decode_array(d["centers"])
        self.counts = decode_array(d["counts"])
        self.pools = [decode_array(p) for p in d["pools"]]
        self.assigned = int(d["assigned"])


def coverage_model(config) -> FullCoverage | IncrementalCoverage:
    """The coverage model ``config.eval_set.clustering`` names (``coverage_size``, ``seed``, ``pool_size``), not yet
    fitted."""
    if config.eval_set.clustering == "incremental":
        return IncrementalCoverage(config.eval_set.coverage_size, config.seed, config.eval_set.pool_size)
    return FullCoverage(config.eval_set.coverage_size, config.seed, config.eval_set.clustering)


# ----------------------------------------------------------------------------- boundary and fresh


def sample_fresh(seen_end: int, n: int, size: int, seed: int, trigger_count: int) -> list[int]:
    """Fresh role: stream indices of pending tasks ``[seen_end, n)`` (spec §3.2 step 1).

    ``trigger_count`` is the count *before* this trigger's increment. ``size == 0`` means no cap (authors' code).
    """
    pending = range(seen_end, n)
    if size > 0 and len(pending) > size:
        return list(random.Random(seed + trigger_count).sample(pending, size))
    return list(pending)


def bootstrap_boundary(n_warm: int, reps: list[int], size: int) -> list[tuple[int, str]]:
    """First ``size`` non-representative warm-up tasks in stream order, tagged ``bootstrap``."""
    rep_set = set(reps)
    out = []
    for i in range(n_warm):
        if len(out) >= size:
            break
        if i not in rep_set:
            out.append((i, "bootstrap"))
    return out


def refresh_boundary(
    old: list[tuple[int, str]], flips: list[int], coverage: list[int], size: int, seed: int, trigger_count: int
) -> list[tuple[int, str]]:
    """Boundary refresh after a comparison (spec §3.2 step 9).

    ``flips`` are already stripped of coverage reps; ``trigger_count`` is the count *after* the increment.
    """
    if size <= 0:
        return []
    if len(flips) >= size:
        rng = random.Random(seed + trigger_count + 101)
        return [(i, "flip") for i in rng.sample(flips, size)]
    flip_set = set(flips)
    cov_set = set(coverage)
    prev = [(i, tag) for i, tag in old if i not in flip_set and i not in cov_set]
    return [(i, "flip") for i in flips] + prev[: max(0, size - len(flips))]


def build_entries(coverage: list[int], boundary: list[int], fresh: list[int], dedup: bool) -> list[int]:
    """Evaluation entries = coverage ++ boundary ++ fresh; duplicates kept unless ``dedup`` (first kept)."""
    entries = list(coverage) + list(boundary) + list(fresh)
    if not dedup:
        return entries
    seen: set[int] = set()
    out = []
    for i in entries:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out
