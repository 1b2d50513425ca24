"""An independent reference of the authors' Janus controller loop, for the differential test.

Written from ../shared/research/paper-spec.md §2.2, §3.2, §4 and §8.3 (the authors' ``methods/janus.py``,
``janus_core.py`` and ``janus_trigger_ablation.py`` as described there), NOT from ``janus_memory.controller``.
It deliberately keeps the authors' data layout: task items are dicts, sets are lists of dicts, and "is the same
task" is object identity (``id()``), exactly where the spec says the authors compare by identity. Nothing from
``janus_memory`` is imported.

k-means: ``kmeans_pytorch_like`` is an independent reference of the authors' ``kmeans_pytorch`` call, seeded per
call (their own call is unseeded, fidelity-review A10): what the paper preset's ``clustering: paper`` must match.
``ref_kmeans`` calls scikit-learn's ``KMeans`` with the parameters our docs state for ``clustering: sklearn``
(k-means++ seeded with ``seed``, warm start from the previous centroids when their shape matches, one init, 50
iterations, float32 data, k = 1 -> the mean); ``lloyd_kmeans`` is a fast stand-in both sides can share.
"""
from __future__ import annotations

import random
import warnings

import numpy as np
from sklearn.cluster import KMeans


def ref_cosine(a, b, eps=1e-8):
    a = np.asarray(a, dtype=float).reshape(-1)
    b = np.asarray(b, dtype=float).reshape(-1)
    if a.size == 0 or b.size == 0 or a.size != b.size:
        return 0.0
    na, nb = float(np.sqrt(np.sum(a * a))), float(np.sqrt(np.sum(b * b)))
    if na < eps or nb < eps:
        return 0.0
    return float(np.sum(a * b)) / (na * nb)


def lloyd_kmeans(X, k, seed, init=None):
    """A small deterministic Lloyd k-means (numpy only), the fast stand-in both sides of the differential test share.

    Same contract as our ``kmeans_fit``: k = 1 -> the mean; ``init`` used when its shape is (k, d), else k distinct
    rows drawn with ``numpy.random.default_rng(seed)``; at most 50 iterations; an emptied cluster keeps its centre.
    """
    n = X.shape[0]
    k = max(1, min(int(k), n))
    if k == 1:
        return X.mean(axis=0, keepdims=True).astype(X.dtype), np.zeros(n, dtype=np.int64)
    if init is not None and init.shape == (k, X.shape[1]):
        centers = np.asarray(init, dtype=np.float64).copy()
    else:
        centers = X[np.random.default_rng(seed).choice(n, size=k, replace=False)].astype(np.float64)
    Xd = X.astype(np.float64)
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(50):
        d = ((Xd[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2)
        labels = np.argmin(d, axis=1)
        counts = np.bincount(labels, minlength=k)
        sums = np.zeros_like(centers)
        np.add.at(sums, labels, Xd)
        moved = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], centers)
        if np.array_equal(moved, centers):
            break
        centers = moved
    return centers.astype(X.dtype), labels


def kmeans_pytorch_like(X, k, seed, init=None):
    """The authors' k-means as ``janus_core.run_kmeans`` drives ``kmeans_pytorch`` (GitHub master 1565cb8), written
    from its described behaviour (fidelity-audit-2.md; kmeans_pytorch's own loop), seeded per call for
    reproducibility: ``np.random.seed(seed)`` and numpy's global generator, as their unseeded call would use it.

    k = 1: the mean (their short-cut). Cold start: k distinct points by ``np.random.choice(n, k, replace=False)``.
    Warm restart (``init`` of shape (k, d)): every old centre is replaced by the data point nearest to it. Then
    repeat: assign each point to its nearest centre (squared Euclidean, float32), move every centre to its members'
    mean (an empty cluster: one point drawn by ``np.random.randint(n)``), add up the centres' moves (L2) and stop
    when that sum squared is below 1e-4 or after 50 rounds. Returns the final centres and the last assignment.
    """
    pts = np.asarray(X, dtype=np.float32)
    n, d = pts.shape
    k = max(1, min(int(k), n))
    if k == 1:
        return np.asarray(X, dtype=float).mean(axis=0, keepdims=True), np.zeros(n, dtype=int)
    np.random.seed(seed)

    def dist_to(c):  # squared distance of every point to centre c, float32
        diff = pts - c
        return (diff * diff).sum(axis=1)

    if init is not None and np.shape(init) == (k, d):
        starts = []
        for c in np.asarray(init, dtype=np.float32):
            starts.append(pts[int(np.argmin(dist_to(c)))])
        cent = np.array(starts, dtype=np.float32)
    else:
        cent = pts[np.random.choice(n, k, replace=False)].astype(np.float32)
    rounds = 0
    while True:
        table = np.stack([dist_to(c) for c in cent], axis=1)
        assign = table.argmin(axis=1)
        prev = cent.copy()
        for j in range(k):
            mine = pts[assign == j]
            if len(mine) == 0:
                mine = pts[[np.random.randint(n)]]
            cent[j] = mine.sum(axis=0) / np.float32(len(mine))
        moved = np.float32(0.0)
        for j in range(k):
            moved += np.float32(np.sqrt(((cent[j] - prev[j]) ** 2).sum()))
        rounds += 1
        if moved * moved < 1e-4 or rounds >= 50:
            break
    return cent.astype(float), assign


def ref_kmeans(X, k, seed, init=None):
    """(centers, labels); see the module docstring for why this is the shared piece."""
    if k == 1:
        return X.mean(axis=0, keepdims=True), np.zeros(X.shape[0], dtype=int)
    start = init if init is not None else "k-means++"
    km = KMeans(n_clusters=k, init=start, n_init=1, max_iter=50, random_state=seed, algorithm="lloyd")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        km.fit(X)
    return km.cluster_centers_, km.labels_


class ReferenceJanus:
    """The authors' loop. ``evaluate(memory_text, [task, ...]) -> [0/1, ...]`` replays one memory on the entries.

    policy: "mmt" | "always" | "random" | "periodic" (the ablation subclasses of the authors' code).
    """

    def __init__(self, evaluate, *, k=20, k_prime=12, l_fresh=5, beta=0.9, tau=0.0, seed=0, replay_limit=None,
                 policy="mmt", rate=0.3, period=3, kmeans=None):
        self.evaluate = evaluate
        self.kmeans = kmeans or ref_kmeans
        self.k, self.k_prime, self.l_fresh = k, min(k_prime, k), l_fresh
        self.beta, self.tau, self.seed, self.replay_limit = beta, tau, seed, replay_limit
        self.policy, self.rate, self.period = policy, rate, period
        self.step_count = 0
        self.trigger_count = 0
        self.pending: list[dict] = []
        self.seen: list[dict] = []
        self.coverage: list[dict] = []   # {"rep_task": item}
        self.boundary: list[dict] = []   # {"task": item, "tag": str}
        self.momentum = None
        self.centroids = None
        self.warmup_initialized = False

    # ---------------------------------------------------------------- support sets
    def _cluster(self, items, init):
        X = np.stack([it["embedding"] for it in items])
        k = min(self.k_prime, X.shape[0])
        if init is not None and not (init.shape[0] == k and init.shape[-1] == X.shape[1]):
            init = None
        centers, labels = self.kmeans(X, k, self.seed, init)
        self.centroids = centers
        reps = []
        for ci in range(k):
            members = np.where(labels == ci)[0]
            if len(members) == 0:
                continue
            dist = np.linalg.norm(X[members].astype(float) - centers[ci].astype(float), axis=1)
            reps.append({"rep_task": items[int(members[int(np.argmin(dist))])]})
        return reps

    def _init_support(self):
        self.coverage = self._cluster(self.pending, None)
        rep_ids = {id(c["rep_task"]) for c in self.coverage}
        rest = [t for t in self.pending if id(t) not in rep_ids]
        self.boundary = [{"task": t, "tag": "bootstrap"} for t in rest[: max(0, self.k - self.k_prime)]]

    def _refresh_boundary(self, flips):
        k_b = max(0, self.k - self.k_prime)
        if k_b == 0:
            self.boundary = []
            return
        if len(flips) >= k_b:
            picked = random.Random(self.seed + self.trigger_count + 101).sample(flips, k_b)
            self.boundary = [{"task": t, "tag": "flip"} for t in picked]
            return
        cov_ids = {id(c["rep_task"]) for c in self.coverage}
        flip_ids = {id(t) for t in flips}
        older = [b for b in self.boundary if id(b["task"]) not in flip_ids and id(b["task"]) not in cov_ids]
        self.boundary = [{"task": t, "tag": "flip"} for t in flips] + older[: max(0, k_b - len(flips))]

    # ---------------------------------------------------------------- trigger policies
    def _fires(self, z, m_prev):
        if self.policy == "always":
            return True
        if self.policy == "random":
            return random.Random(self.seed + self.step_count * 1009).random() < self.rate
        if self.policy == "periodic":
            return (self.step_count - self.k - 1) % self.period == 0
        if m_prev is None:
            return False
        return ref_cosine(z, m_prev) < self.tau

    # ---------------------------------------------------------------- one step
    def update(self, task, q_emb, old_text, new_text, old_vec, new_vec) -> dict:
        """Returns {"chosen": "new"|"old", "triggered", "eval": [task ids], "fresh", "coverage", "boundary"}."""
        item = {"entry": task, "embedding": q_emb}
        self.step_count += 1
        log = {"triggered": False, "chosen": "new", "eval": [], "fresh": []}
        if self.step_count <= self.k:
            self.pending.append(item)
            if self.step_count == self.k and not self.warmup_initialized:
                self._init_support()
                self.seen.extend(self.pending)
                self.pending = []
                self.warmup_initialized = True
            return self._finish(log)
        old_v = np.asarray(old_vec, dtype=float).reshape(-1)
        new_v = np.asarray(new_vec, dtype=float).reshape(-1)
        z = new_v - old_v if old_v.shape == new_v.shape else np.zeros_like(new_v)
        m_prev = self.momentum
        fire = self._fires(z, m_prev)
        self.pending.append(item)
        if fire:
            log["triggered"] = True
            log["chosen"] = self._compare(old_text, new_text, log)
        if m_prev is None or m_prev.shape != z.shape:
            self.momentum = z.copy()
        else:
            self.momentum = self.beta * m_prev + (1 - self.beta) * z
        return self._finish(log)

    def _compare(self, old_text, new_text, log) -> str:
        fresh = list(self.pending)
        if self.l_fresh > 0 and len(fresh) > self.l_fresh:
            fresh = random.Random(self.seed + self.trigger_count).sample(fresh, self.l_fresh)
        self.seen.extend(self.pending)
        self.pending = []
        self.trigger_count += 1
        self.coverage = self._cluster(self.seen, self.centroids)
        entries = [c["rep_task"] for c in self.coverage] + [b["task"] for b in self.boundary] + fresh
        if self.replay_limit is not None and len(entries) > self.replay_limit:
            entries = random.Random(self.seed + self.trigger_count + 17).sample(entries, self.replay_limit)
        log["fresh"] = [it["entry"].id for it in fresh]
        log["eval"] = [it["entry"].id for it in entries]
        tasks = [it["entry"] for it in entries]
        old_c = [1 if c else 0 for c in self.evaluate(old_text, tasks)]
        new_c = [1 if c else 0 for c in self.evaluate(new_text, tasks)]
        total = max(1, len(entries))
        chosen = "new" if sum(new_c) / total >= sum(old_c) / total else "old"
        cov_ids = {id(c["rep_task"]) for c in self.coverage}
        flips = [it for it, a, b in zip(entries, old_c, new_c) if a != b and id(it) not in cov_ids]
        self._refresh_boundary(flips)
        return chosen

    def _finish(self, log):
        log["coverage"] = [c["rep_task"]["entry"].id for c in self.coverage]
        log["boundary"] = [(b["task"]["entry"].id, b["tag"]) for b in self.boundary]
        return log
