"""The paper preset's coverage k-means (``clustering: paper``, controller/evalset.kmeans_paper): the authors'
kmeans_pytorch behaviour, seeded. Checked against the independent ``reference_janus.kmeans_pytorch_like`` (exact
representatives on several growing streams with warm restarts) and on hand-made cases with exact values."""
from __future__ import annotations

import numpy as np
import pytest

from janus_memory.controller import Janus, JanusConfig
from janus_memory.controller.evalset import EmbeddingStore, FullCoverage, kmeans_paper, nearest_members
from reference_janus import kmeans_pytorch_like


def _reps(X, centers, labels):  # the authors' representative rule, written again here
    out = []
    for c in range(centers.shape[0]):
        idx = np.where(labels == c)[0]
        if len(idx):
            out.append(int(idx[np.argmin(np.linalg.norm(X[idx].astype(float) - centers[c], axis=1))]))
    return out


@pytest.mark.parametrize("stream", range(6))
def test_representatives_equal_the_reference_on_growing_streams(stream):
    rng = np.random.default_rng(100 + stream)
    d = (8, 16, 384)[stream % 3]
    X = rng.normal(size=(6, d))[rng.integers(0, 6, 160)] + 0.4 * rng.normal(size=(160, d))
    X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    ours_c = ref_c = None
    compared = 0
    for n in range(20, 161, 7):  # a trigger every 7 tasks: warm restarts from the previous centroids
        k = min(12, n)
        oc, ol = kmeans_paper(X[:n], k, seed=stream, init=ours_c)
        rc, rl = kmeans_pytorch_like(X[:n], k, stream, ref_c)
        assert nearest_members(X[:n], oc, ol) == _reps(X[:n], rc, rl), f"n={n}"
        assert np.array_equal(ol, rl)
        np.testing.assert_allclose(oc, rc, rtol=0, atol=1e-6)
        ours_c, ref_c = oc, rc
        compared += 1
    assert compared == 21


def test_cold_start_is_numpy_choice_after_seeding():
    """The initial centres are the points np.random.seed(s); np.random.choice(n, k, replace=False) picks: with one
    Lloyd round impossible to improve (k = n), every point is its own cluster in that order."""
    X = np.arange(10, dtype=np.float32).reshape(5, 2) * 10
    c, labels = kmeans_paper(X, 5, seed=3)
    order = np.random.RandomState(3).choice(5, 5, replace=False)
    assert labels.tolist() == np.argsort(order).tolist()
    assert np.array_equal(c, X[order].astype(float))


def test_warm_restart_snaps_old_centres_to_data_points():
    X = np.array([[0, 0], [0, 1], [10, 0], [10, 1]], dtype=np.float32)
    # old centres far off the data: they snap to the nearest points (0,1) and (10,0) before the first round
    c, labels = kmeans_paper(X, 2, seed=0, init=np.array([[-5.0, 3.0], [30.0, -4.0]]))
    assert labels.tolist() == [0, 0, 1, 1]
    assert c.tolist() == [[0.0, 0.5], [10.0, 0.5]]


def test_an_empty_cluster_takes_a_random_point():
    """Two old centres snap to the same point: the second cluster is empty in round one and takes the point
    RandomState(seed).randint(n) draws (kmeans_pytorch draws it from torch's generator)."""
    X = np.array([[0, 0], [1, 0], [50, 0]], dtype=np.float32)
    c, labels = kmeans_paper(X, 2, seed=1, init=np.array([[0.2, 0.0], [0.1, 0.0]]))
    drawn = np.random.RandomState(1).randint(3)
    assert drawn == 1
    # round 1: all near points go to centre 0 -> centre 0 = mean of all 3 at (17, 0); centre 1 = point 1 = (1, 0)
    # round 2: (0,0) and (1,0) -> centre 1, (50,0) -> centre 0; round 3 is stable
    assert labels.tolist() == [1, 1, 0]
    assert c.tolist() == [[50.0, 0.0], [0.5, 0.0]]


def test_one_cluster_is_the_mean_and_runs_reproduce():
    X = np.array([[1, 2], [3, 6]], dtype=np.float32)
    c, labels = kmeans_paper(X, 1, seed=0)
    assert c.tolist() == [[2.0, 4.0]] and labels.tolist() == [0, 0]
    rng = np.random.default_rng(7)
    Y = rng.normal(size=(50, 5)).astype(np.float32)
    a, b = kmeans_paper(Y, 12, 0), kmeans_paper(Y, 12, 0)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(kmeans_paper(Y, 12, 1)[1], a[1])  # the seed is used


def test_iteration_limit_is_50(monkeypatch):
    """A point set that keeps moving: the loop stops after 50 assignment rounds."""
    from janus_memory.controller import evalset

    calls = []
    real = evalset._sq_dists32

    def counting(X32, C32):
        calls.append(1)
        return real(X32, C32)

    monkeypatch.setattr(evalset, "PAPER_KMEANS_TOL", -1.0)  # never converges
    monkeypatch.setattr(evalset, "_sq_dists32", counting)
    rng = np.random.default_rng(0)
    evalset.kmeans_paper(rng.normal(size=(30, 4)).astype(np.float32), 3, 0)
    assert len(calls) == 50


def test_config_names_and_state_kinds():
    assert JanusConfig().clustering == "paper"
    assert JanusConfig(clustering="full").clustering == "sklearn"  # the old stored name
    with pytest.raises(ValueError, match="clustering must be one of paper, sklearn, incremental"):
        JanusConfig(clustering="kmeans")
    assert FullCoverage(12, 0, "paper").kind == "paper" and FullCoverage(12, 0, "sklearn").kind == "full"
    # a state written with the scikit-learn k-means (kind "full") loads under clustering "full"/"sklearn" only
    j = Janus(JanusConfig(clustering="sklearn"))
    st = j.state_dict()
    assert st["coverage_model"]["kind"] == "full"
    back = Janus(JanusConfig())
    back.load_state_dict(st)  # the stored config replaces the current one
    assert back.config.clustering == "sklearn"


def test_full_coverage_paper_refresh_uses_the_paper_kmeans():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 6)).astype(np.float32)
    store = EmbeddingStore()
    for v in X:
        store.append(v)
    cov = FullCoverage(5, 0, "paper")
    reps = cov.refresh(store, 30)
    c, labels = kmeans_pytorch_like(X, 5, 0)
    assert reps == _reps(X, c, labels)
