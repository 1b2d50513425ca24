"""Evaluation-set tests: coverage, bootstrap/refresh of the boundary, fresh sampling, ablations, dedup
(paper-spec §3.2, §4, §8.4, §11 items 5-7). Tests whose expected sets were measured with the scikit-learn k-means
pin clustering="sklearn"; the paper k-means has its own tests (test_kmeans_paper.py)."""
import random

import numpy as np

from controller_fakes import Ev, mk_task
from janus_memory.controller import Janus, JanusConfig, StepInput
from janus_memory.controller.evalset import EmbeddingStore, IncrementalCoverage, refresh_boundary

D = 12






def emb(i):
    """12 well-separated groups: t0..t7 at 9.8*e_i, t12..t19 at 10.2*e_(i-12), t8..t11 at 10*e_i.
    Warm-up coverage reps are t0..t11 (ties -> lowest index); later tasks repeat the pattern on e_(i % 12)."""
    v = np.zeros(D)
    if i < 8:
        v[i] = 9.8
    elif i < 12:
        v[i] = 10.0
    elif i < 20:
        v[i - 12] = 10.2
    else:
        v[i % 12] = 10.0
    return v


def step(j, i, z=(1.0, 0.0), old="A", new="B", e=None):
    z = np.asarray(z, dtype=float)
    return j.decide(StepInput(mk_task(i), emb(i) if e is None else e, old, new, np.zeros_like(z), z))


def warm(j):
    for i in range(j.config.warmup):
        step(j, i)


def test_warmup_coverage_and_bootstrap_boundary():
    j = Janus(JanusConfig(clustering="sklearn"), Ev())
    warm(j)
    assert sorted(j.coverage_ids, key=lambda s: int(s[1:])) == [f"t{i}" for i in range(12)]
    assert j.boundary_ids == [f"t{i}" for i in range(12, 20)]
    assert j.boundary_tags == ["bootstrap"] * 8
    assert j.n_seen == 20 and j.pending_ids == []


def test_bootstrap_boundary_is_first_k_b_non_representatives():
    # 6 groups (t_i at 10*e_(i%6)): reps are t0..t5, the first 8 non-reps in stream order are t6..t13
    cfg = JanusConfig(coverage_size=6, boundary_size=8)
    j = Janus(cfg, Ev())
    for i in range(20):
        e = np.zeros(D)
        e[i % 6] = 10.0
        step(j, i, e=e)
    assert sorted(j.coverage_ids, key=lambda s: int(s[1:])) == [f"t{i}" for i in range(6)]
    assert j.boundary_ids == [f"t{i}" for i in range(6, 14)]


def test_fresh_set_includes_current_task_when_few_pending():
    j = Janus(JanusConfig(trigger="always"), Ev())
    warm(j)
    d = step(j, 20)
    assert d.fresh == ["t20"]
    assert d.eval_ids == d.coverage + d.boundary + ["t20"] and len(d.eval_ids) == 21
    assert d.evaluator_calls == 42 == d.evaluator_calls_full


def test_fresh_sampled_with_spec_seed_when_more_than_five_pending():
    cfg = JanusConfig(trigger="periodic", trigger_period=8, seed=7)
    j = Janus(cfg, Ev())
    warm(j)
    d1 = step(j, 20)  # post_idx 0 fires: trigger_count 0 -> 1
    assert d1.triggered and d1.fresh == ["t20"]
    ds = [step(j, i) for i in range(21, 29)]  # fires at step 29 (t28) with 8 pending t21..t28
    assert [d.triggered for d in ds] == [False] * 7 + [True]
    pending = [f"t{i}" for i in range(21, 29)]
    expected = random.Random(7 + 1).sample(pending, 5)  # trigger_count BEFORE increment = 1
    assert ds[-1].fresh == expected
    assert len(set(expected)) == 5


def test_boundary_refresh_from_few_flips_excludes_coverage_and_tops_up():
    # flips on t0 (a coverage rep: excluded), t13, t15 (boundary) and t20 (fresh)
    flip = {"t0", "t13", "t15", "t20"}
    j = Janus(JanusConfig(trigger="always", clustering="sklearn"), Ev(lambda m, tid: m == "A" or tid not in flip))
    warm(j)
    d = step(j, 20)
    assert d.flips == ["t13", "t15", "t20"]
    assert j.boundary_ids == ["t13", "t15", "t20", "t12", "t14", "t16", "t17", "t18"]
    assert j.boundary_tags == ["flip"] * 3 + ["bootstrap"] * 5
    # old has 21 correct, new 17: rollback
    assert (d.accept, d.reason, d.old_score, d.new_score) == (False, "old_better", 1.0, 17 / 21)


def test_boundary_refresh_samples_eight_of_many_flips_with_spec_seed():
    flip = {f"t{i}" for i in range(12, 21)}  # the 8 boundary tasks and the fresh task flip
    j = Janus(JanusConfig(trigger="always", seed=3, clustering="sklearn"), Ev(lambda m, tid: (m == "B") == (tid in flip)))
    warm(j)
    d = step(j, 20)
    assert d.flips == [f"t{i}" for i in range(12, 21)]
    expected = random.Random(3 + 1 + 101).sample(d.flips, 8)  # trigger_count AFTER increment = 1
    assert j.boundary_ids == expected and j.boundary_tags == ["flip"] * 8
    # new is correct exactly on the 9 flip tasks, old on the 12 coverage reps: rollback
    assert (d.accept, d.reason, d.old_score, d.new_score) == (False, "old_better", 12 / 21, 9 / 21)


def test_ties_deploy_new_memory():
    j = Janus(JanusConfig(trigger="always"), Ev(lambda m, tid: (m == "A") == (tid in {"t12", "t13"})
                                                 if tid in {"t12", "t13", "t14", "t15"} else True))
    warm(j)
    d = step(j, 20)
    # old correct on t12, t13; new correct on t14, t15 -> tie 19 vs 19
    assert d.old_score == d.new_score == 19 / 21
    assert d.accept and d.reason == "new_ge_old"


def test_eval_set_ablations_drop_their_role():
    for flag, role in (("use_coverage", "coverage"), ("use_boundary", "boundary"), ("use_fresh", "fresh")):
        full = Janus(JanusConfig(trigger="always"), Ev())
        abl = Janus(JanusConfig(trigger="always", **{flag: False}), Ev())
        warm(full)
        warm(abl)
        df, da = step(full, 20), step(abl, 20)
        assert getattr(da, role) == [] and getattr(df, role) != []
        kept = [r for r in ("coverage", "boundary", "fresh") if r != role]
        assert da.eval_ids == sum((getattr(df, r) for r in kept), [])
        assert da.evaluator_calls == 2 * len(da.eval_ids)


def test_dedup_removes_entries_in_two_roles():
    # t20 sits exactly between t0 (9.8 e0) and t12 (10.2 e0): it becomes the coverage rep AND is fresh
    faithful = Janus(JanusConfig(trigger="always", clustering="sklearn"), Ev())
    dedup = Janus(JanusConfig(trigger="always", dedup=True, clustering="sklearn"), Ev())
    for j in (faithful, dedup):
        warm(j)
    e20 = np.zeros(D)
    e20[0] = 10.0
    d1, d2 = step(faithful, 20, e=e20), step(dedup, 20, e=e20)
    assert "t20" in d1.coverage and d1.fresh == ["t20"]
    assert d1.eval_ids.count("t20") == 2 and len(d1.eval_ids) == 21
    assert d2.eval_ids.count("t20") == 1 and len(d2.eval_ids) == 20
    assert d2.evaluator_calls == 40 and d1.evaluator_calls == 42
    assert d1.old_score == 1.0 and len(d1.old_correct) == 21  # denominator counts duplicates


def test_refresh_boundary_unit():
    old = [(5, "bootstrap"), (6, "bootstrap"), (7, "flip")]
    assert refresh_boundary(old, [9, 6], [7], 4, 0, 1) == [(9, "flip"), (6, "flip"), (5, "bootstrap")]
    assert refresh_boundary(old, [1, 2], [], 0, 0, 1) == []


def test_incremental_coverage_reps_are_real_members_and_match_full_at_init():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 16)).astype(np.float32)
    store = EmbeddingStore()
    for x in X:
        store.append(x)
    inc = IncrementalCoverage(12, seed=0, pool_size=8)
    from janus_memory.controller.evalset import FullCoverage

    full = FullCoverage(12, seed=0, algorithm="sklearn")
    assert sorted(inc.refresh(store, 20)) == sorted(full.refresh(store, 20))
    end = 20
    for end in (25, 26, 400, 1200, 3000):
        reps = inc.refresh(store, end)
        assert 1 <= len(reps) <= 12 and len(set(reps)) == len(reps)
        assert all(0 <= r < end for r in reps)
        for c, pool in enumerate(inc.pools):  # each rep is the pool member nearest to its centroid
            if pool.size:
                dist = np.linalg.norm(X[pool].astype(float) - inc.centers[c], axis=1)
                assert dist[0] == dist.min()
    assert inc.counts.sum() == 3000
