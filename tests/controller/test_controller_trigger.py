"""MMT trigger, momentum and trigger-policy tests (paper-spec §2, §8.3, §11 items 2-4)."""
import random

import numpy as np

from controller_fakes import Ev, mk_task
from janus_memory.controller import Janus, JanusConfig, StepInput, cosine

D = 3  # task-embedding dimension






def task_emb(i):
    rng = np.random.default_rng(i)
    return rng.normal(size=D)


def step(j, i, z, old="A", new="B"):
    z = np.asarray(z, dtype=float)
    return j.decide(StepInput(mk_task(i), task_emb(i), old, new, np.zeros_like(z), z))


def run_warmup(j, n=20):
    return [step(j, i, [1.0, 0.0]) for i in range(n)]


def test_cosine_edge_cases():
    assert cosine(np.array([1.0, 0.0]), np.array([3.0, 4.0])) == 0.6
    assert cosine(np.zeros(2), np.array([1.0, 0.0])) == 0.0
    assert cosine(np.array([1e-9, 0.0]), np.array([1.0, 0.0])) == 0.0  # norm below 1e-8
    assert cosine(np.array([1.0, 0.0]), np.array([1.0, 0.0, 0.0])) == 0.0  # size mismatch
    assert cosine(np.zeros(0), np.zeros(0)) == 0.0
    assert cosine(np.array([1.0, 0.0]), np.array([-2.0, 0.0])) == -1.0


def test_warmup_accepts_everything_without_momentum():
    j = Janus(JanusConfig(), Ev())
    ds = run_warmup(j)
    assert [d.step for d in ds] == list(range(1, 21))
    assert all(d.accept and d.reason == "warmup" and d.phase == "warmup" and not d.triggered for d in ds)
    assert all(d.cosine is None and d.momentum_norm is None for d in ds)
    assert j.momentum is None
    assert j.stats["triggers"] == 0 and j.stats["evaluator_calls"] == 0


def test_momentum_initialised_at_first_post_warmup_step_and_earliest_trigger_is_k_plus_2():
    ev = Ev()
    j = Janus(JanusConfig(), ev)
    run_warmup(j)
    d21 = step(j, 20, [-1.0, 0.0])  # opposite direction but no momentum yet: no trigger
    assert (d21.phase, d21.triggered, d21.accept, d21.reason, d21.cosine) == ("stream", False, True, "not_triggered", None)
    np.testing.assert_array_equal(j.momentum, np.array([-1.0, 0.0]))
    d22 = step(j, 21, [1.0, 0.0])  # cos = -1 < 0
    assert d22.step == 22 and d22.triggered and d22.cosine == -1.0 and d22.momentum_norm == 1.0
    assert ev.calls  # evaluated


def test_strict_less_than_tau():
    # cos exactly == tau does not fire
    j = Janus(JanusConfig(tau=0.6), Ev())
    run_warmup(j)
    step(j, 20, [1.0, 0.0])
    d = step(j, 21, [3.0, 4.0])
    assert d.cosine == 0.6 and not d.triggered
    j2 = Janus(JanusConfig(tau=0.6000001), Ev())
    run_warmup(j2)
    step(j2, 20, [1.0, 0.0])
    assert step(j2, 21, [3.0, 4.0]).triggered
    # tau = 0 and an orthogonal update: cos 0 is not < 0
    j3 = Janus(JanusConfig(), Ev())
    run_warmup(j3)
    step(j3, 20, [1.0, 0.0])
    d = step(j3, 21, [0.0, 5.0])
    assert d.cosine == 0.0 and not d.triggered


def test_zero_update_never_triggers_at_tau0_and_momentum_decays():
    j = Janus(JanusConfig(), Ev())
    run_warmup(j)
    step(j, 20, [2.0, 0.0])
    for i in range(21, 31):
        d = step(j, i, [0.0, 0.0], old="SAME", new="SAME")
        assert not d.triggered and d.cosine == 0.0 and d.z_norm == 0.0
    expected = np.array([2.0, 0.0])
    for _ in range(10):
        expected = 0.9 * expected + (1.0 - 0.9) * np.zeros(2)
    np.testing.assert_array_equal(j.momentum, expected)
    # with tau > 0 an unchanged memory fires (spec §2.2 [INF])
    j2 = Janus(JanusConfig(tau=0.2), Ev())
    run_warmup(j2)
    step(j2, 20, [2.0, 0.0])
    assert step(j2, 21, [0.0, 0.0], old="SAME", new="SAME").triggered


def test_momentum_updated_with_candidate_z_even_on_rollback():
    ev = Ev(lambda m, tid: m == "OLD")  # old memory always better
    j = Janus(JanusConfig(), ev)
    run_warmup(j)
    step(j, 20, [1.0, 0.0], old="OLD", new="OLD")
    d = step(j, 21, [-1.0, 0.5], old="OLD", new="NEW")
    assert d.triggered and not d.accept and d.reason == "old_better"
    np.testing.assert_array_equal(j.momentum, 0.9 * np.array([1.0, 0.0]) + (1.0 - 0.9) * np.array([-1.0, 0.5]))
    assert j.stats["rollbacks"] == 1


def _fired_steps(cfg, n_post=15):
    j = Janus(cfg, Ev())
    run_warmup(j, cfg.warmup)
    fired = []
    zs = [[1.0, 0.0], [-1.0, 0.0]]
    for k in range(n_post):
        i = cfg.warmup + k
        d = step(j, i, zs[k % 2])
        if d.triggered:
            fired.append(d.step)
    return fired


def test_trigger_policies_fire_on_expected_steps():
    assert _fired_steps(JanusConfig(trigger="never")) == []
    assert _fired_steps(JanusConfig(trigger="always")) == list(range(21, 36))
    assert _fired_steps(JanusConfig(trigger="periodic", trigger_period=3)) == [21, 24, 27, 30, 33]
    assert _fired_steps(JanusConfig(trigger="periodic", trigger_period=4, warmup=5)) == [6, 10, 14, 18]
    expected_random = [s for s in range(21, 36) if random.Random(0 + s * 1009).random() < 0.3]
    assert _fired_steps(JanusConfig(trigger="random", trigger_rate=0.3)) == expected_random
    assert expected_random == [22, 24, 25, 30, 31]  # pinned values of the formula for seed 0
    # mmt with alternating directions: no momentum at 21, then every step reverses the trend... until the
    # momentum (dominated by +x) makes the -x steps fire and the +x steps not fire
    assert _fired_steps(JanusConfig(trigger="mmt")) == [22, 24, 26, 28, 30, 32, 34]


def test_never_policy_is_the_base_updater_without_evaluator():
    j = Janus(JanusConfig(trigger="never"), evaluator=None)
    run_warmup(j)
    ds = [step(j, i, [(-1) ** i, 0.0]) for i in range(20, 40)]
    assert all(d.accept and not d.triggered for d in ds)
    assert j.stats == dict(steps=40, triggers=0, accepts=40, rollbacks=0, evaluator_calls=0,
                           evaluator_calls_saved=0, evaluation_failures=0)
