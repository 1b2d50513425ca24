"""Memory-world benchmark (`janus bench world`): world, updater, evaluator, policies, metrics, grid, CLI."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from janus_memory.bench.grid import order_policies, run_grid, run_seed
from janus_memory.bench.metrics import episode_metrics, markdown_table, mean_ci
from janus_memory.bench.policies import PolicySpec, default_policies, matched_config, parse_policy, run_episode
from janus_memory.bench.updater import WorldUpdater
from janus_memory.bench.world import Item, World, WorldConfig, WorldEvaluator, make_memory, parse_mix, sigmoid
from janus_memory.controller import JanusConfig
from janus_memory.controller.config import RECOMMENDED_LEAD_TO_DEPLOY

SMALL = WorldConfig(n_steps=60, n_clusters=4, n_subtopics=2, test_per_cell=4)


def pols(*names):
    d = {p.name: p for p in default_policies()}
    return [d[n] for n in names]


# ----------------------------------------------------------------------------- world and truth


def test_world_is_a_function_of_the_seed():
    a, b, c = World(SMALL, 3), World(SMALL, 3), World(SMALL, 4)
    assert [t.text for t in a.stream] == [t.text for t in b.stream]
    assert [t.text for t in a.stream] != [t.text for t in c.stream]
    assert np.array_equal(a.task_u, b.task_u)
    assert len(a.test) == 4 * 2 * 4 and {(t.cluster, t.subtopic) for t in a.test} == {(i, j) for i in range(4) for j in range(2)}


def test_true_accuracy_is_the_logistic_of_base_plus_item_effects():
    w = World(SMALL, 0)
    eff = np.zeros((4, 2))
    eff[1, 0] = 2.0
    eff[2, :] = -1.0
    m = w.register(make_memory((Item("a", "general", 1, ("x",), eff),), 1, "Version: 1\nx", 4, 2))
    expect = np.mean([sigmoid(SMALL.base_logit + w.cluster_offset[t.cluster] + t.difficulty + eff[t.cluster, t.subtopic])
                      for t in w.test])
    assert w.true_accuracy(m) == pytest.approx(float(expect), abs=1e-12)
    base = np.mean([sigmoid(SMALL.base_logit + w.cluster_offset[t.cluster] + t.difficulty) for t in w.test])
    assert w.true_accuracy(w.empty) == pytest.approx(float(base), abs=1e-12)


def test_candidate_kinds_change_text_and_truth_as_documented():
    cfg = dataclasses.replace(SMALL, mix={"general": 1.0})
    w = World(cfg, 0)
    up = WorldUpdater(w)
    m = w.empty
    for t in range(cfg.max_items + 3):  # the sheet is bounded: the oldest item goes first
        m, kind = up.propose(m, t)
        assert kind == "general"
    assert len(m.items) == cfg.max_items and m.items[0].uid == "i3"
    assert m.text.startswith(f"Version: {cfg.max_items + 3}\n")
    # a reword keeps the effect and changes the text
    wr = World(dataclasses.replace(SMALL, mix={"reword": 1.0}), 0)
    r0, k0 = WorldUpdater(wr).propose(wr.empty, 0)
    assert k0 == "general"  # nothing to reword in an empty memory
    r1, k1 = WorldUpdater(wr).propose(r0, 1)
    assert k1 == "reword" and r1.text != r0.text and wr.true_accuracy(r1) == wr.true_accuracy(r0)
    # a dump replaces the sheet by retrieved examples; the next sheet does not keep them
    wd = World(dataclasses.replace(SMALL, mix={"dump": 1.0}), 0)
    d, kd = WorldUpdater(wd).propose(r0, 5)
    assert kd == "dump" and d.dump and d.text.startswith("### PREVIOUS SOLUTIONS (START)")
    assert [it.kind for it in d.items] == ["example"] * 3


def test_over_specific_rule_helps_its_subtopic_and_hurts_the_distribution():
    w = World(dataclasses.replace(SMALL, mix={"specific": 1.0}), 0)
    task = w.stream[0]
    cand, kind = WorldUpdater(w).propose(w.empty, 0)
    assert kind == "specific"
    assert w.solve_prob(cand, [task])[0] > w.solve_prob(w.empty, [task])[0]
    assert w.true_accuracy(cand) < w.true_accuracy(w.empty)


def test_evaluator_keyed_coupled_and_fresh():
    cfg = dataclasses.replace(SMALL, mix={"general": 1.0}, coupling=1.0)
    w = World(cfg, 1)
    better, _ = WorldUpdater(w).propose(w.empty, 0)
    ev = WorldEvaluator(w)
    tasks = w.stream[:40]
    old, new = ev(w.empty.text, tasks), ev(better.text, tasks)
    assert all(n or not o for o, n in zip(old, new))  # coupled: better on every task never scores worse
    assert ev(better.text, tasks) == new and (ev.calls, ev.raw_calls) == (80, 120)  # the repeat is a cache hit
    with pytest.raises(KeyError):
        ev("a memory nobody wrote", tasks)
    wf = World(dataclasses.replace(cfg, eval_noise="fresh"), 1)
    evf = WorldEvaluator(wf)
    draws = {tuple(evf(wf.empty.text, wf.stream[:40])) for _ in range(5)}
    assert len(draws) > 1 and (evf.calls, evf.raw_calls) == (200, 200)  # fresh noise: every request is paid


def test_keyed_evaluator_pays_each_memory_task_pair_once():
    """Under keyed noise the evaluator is a response cache: a pair is solved and paid the first time it is asked,
    repeats (in one call or later ones) are free and answer as the first time; the same task under another text is a
    new evaluation."""
    w = World(SMALL, 2)
    cand, _ = WorldUpdater(w).propose(w.empty, 0)
    ev = WorldEvaluator(w)
    t = w.stream
    first = ev(w.empty.text, [t[3], t[5], t[3]])
    assert first[0] == first[2] and (ev.calls, ev.raw_calls) == (2, 3)
    assert ev(w.empty.text, [t[5], t[7]])[0] == first[1] and (ev.calls, ev.raw_calls) == (3, 5)
    ev(cand.text, [t[3], t[5]])
    assert (ev.calls, ev.raw_calls) == (5, 7)
    assert ev(w.empty.text, []) == [] and (ev.calls, ev.raw_calls) == (5, 7)
    fresh = WorldEvaluator(World(dataclasses.replace(SMALL, eval_noise="fresh"), 2))
    fresh(fresh.world.empty.text, [t[3], t[3]])
    assert (fresh.calls, fresh.raw_calls) == (2, 2)


def test_world_counts_what_a_cached_run_pays_per_policy():
    """Exact paid (distinct) and raw evaluations of blind, always, the paper preset and recommended on a small
    world. Always re-asks the deployed memory on mostly the same tasks, which a response cache answers for free;
    the recommended controller reuses those outcomes itself, so its two counts agree (but for a re-offer that asks
    a pair again). Under fresh noise nothing is cached: paid = raw for every policy."""
    r = run_grid(SMALL, [0, 1], pols("blind", "always", "janus", "recommended"), workers=1)
    got = {n: [(x["evaluator_calls"], x["raw_calls"]) for x in r.per_seed[n]] for n in r.policies}
    assert got == {"blind": [(0, 0), (0, 0)], "always": [(780, 1452), (895, 1678)],
                   "janus": [(649, 914), (711, 998)], "recommended": [(267, 267), (335, 336)]}
    assert [round(x["final"], 4) for x in r.per_seed["janus"]] == [e[0] for e in EXPECT_JANUS]  # decisions unchanged
    from janus_memory.bench.metrics import share_table

    rows = share_table(r.per_seed, r.policies).splitlines()
    # call share = (267 + 335) / (780 + 895) = 0.36 of always's paid evaluations; 603 / 3130 = 0.19 of its requests
    # (0.30 and 0.16 before additions were judged on the tasks they lose and offered again)
    assert rows[0] == "| policy | gain share [95%] | call share [95%] (paid evaluations) | raw-request share |"
    assert rows[3] == "| recommended | 0.83 [0.72, 0.92] | 0.36 [0.34, 0.37] | 0.19 |"
    f = run_grid(dataclasses.replace(SMALL, eval_noise="fresh"), [0], pols("always", "recommended"), workers=1)
    assert [(x["evaluator_calls"], x["raw_calls"]) for n in f.policies for x in f.per_seed[n]] == [
        (1506, 1506), (276, 276)]


# ----------------------------------------------------------------------------- policies


def test_oracle_never_loses_to_blind_on_seeded_worlds():
    finals = {}
    for seed in range(4):
        out = run_seed(SMALL, seed, pols("blind", "oracle"))
        finals[seed] = (out["metrics"]["oracle"]["final"], out["metrics"]["blind"]["final"])
        assert finals[seed][0] >= finals[seed][1]
        assert out["metrics"]["oracle"]["regret"] == 0.0
        assert out["metrics"]["oracle"]["harm_through"] == 0
    assert [round(o, 4) for o, _ in finals.values()] == EXPECT_ORACLE
    assert [round(b, 4) for _, b in finals.values()] == EXPECT_BLIND


def test_zero_harmful_candidates_every_policy_equals_blind():
    cfg = dataclasses.replace(SMALL, n_steps=45, mix={"general": 0.7, "reword": 0.3}, max_items=100, coupling=1.0)
    specs = pols("blind", "never", "oracle", "janus", "always", "random", "periodic", "no-fresh", "janus-fast",
                 "janus-sign", "recommended")
    specs.append(PolicySpec("lead_to_deploy", "janus", JanusConfig(**RECOMMENDED_LEAD_TO_DEPLOY)))
    out = run_seed(cfg, 2, specs)
    m = out["metrics"]
    assert m["blind"]["harmful"] == 0 and m["blind"]["final"] > m["never"]["final"]
    for name in m:
        if name not in ("never", "lead_to_deploy"):
            assert m[name]["final"] == m["blind"]["final"], name
            assert m[name]["harm_through"] == 0 and m[name]["genuine_rolled_back"] == 0, name
            assert m[name]["rejected"] == (2 if name == "recommended" else 0), name  # two rewordings (no gain)
    assert m["janus"]["triggers"] > 0 and m["always"]["triggers"] == 25
    # the controller recommended before deployed a candidate only with a lead of one task: a useful candidate that no
    # task of its short read separated from the deployed memory was rolled back (22 of the 25 compared here, 16 of
    # them genuine: their true accuracy above the deployed memory's, the rest rewordings); the
    # recommended controller holds an update that only adds lines innocent until shown harmful and keeps them all
    assert (round(m["lead_to_deploy"]["final"], 4), m["lead_to_deploy"]["rejected"],
            m["lead_to_deploy"]["genuine_rolled_back"]) == (96.9192, 22, 16)


def test_matched_trigger_configs():
    spec_r = PolicySpec("r", "janus", JanusConfig(), match="random")
    spec_p = PolicySpec("p", "janus", JanusConfig(), match="periodic")
    assert matched_config(spec_r, 7, 300, 70).trigger_rate == 0.25
    c = matched_config(spec_p, 7, 300, 70)
    assert (c.trigger, c.trigger_period, c.seed) == ("periodic", 4, 7)
    assert matched_config(spec_r, 7, 300, 0).trigger == "never"
    with pytest.raises(ValueError):
        matched_config(spec_r, 7, 300, None)
    with pytest.raises(ValueError):
        order_policies([spec_r])  # its reference "janus" is absent
    with pytest.raises(ValueError):
        order_policies(pols("blind", "blind"))


def test_custom_policy_plugs_in():
    class RejectDumps:
        def __init__(self, world, evaluator):
            pass

        def decide(self, step):
            return not step.new.text.startswith("### PREVIOUS SOLUTIONS"), False

    cfg = dataclasses.replace(SMALL, mix={"general": 0.5, "dump": 0.5})
    out = run_seed(cfg, 0, [PolicySpec("nodump", "custom", factory=RejectDumps), *pols("blind")])
    assert out["metrics"]["nodump"]["destr_through"] == 0
    assert out["metrics"]["blind"]["destr_through"] == out["metrics"]["blind"]["destr"] > 0


def test_parsers_reject_malformed_input():
    assert parse_mix("general=0.5, dump=0.5") == {"general": 0.5, "dump": 0.5}
    for bad in ("general", "general=x"):
        with pytest.raises(ValueError):
            parse_mix(bad)
    with pytest.raises(ValueError):
        WorldConfig(mix={"telepathy": 1.0})
    with pytest.raises(ValueError):
        WorldConfig(mix={"general": 0.0})
    with pytest.raises(ValueError):
        WorldConfig(eval_noise="loud")
    p = parse_policy("tau02=janus:tau=0.2;dedup=true")
    assert (p.name, p.config.tau, p.config.dedup, p.match) == ("tau02", 0.2, True, None)
    assert parse_policy("no-fresh").config.use_fresh is False
    q = parse_policy('rnd=janus:tau=0.2;match="random";reference="tau02"')
    assert (q.match, q.reference, q.config.tau) == ("random", "tau02", 0.2)
    assert [s.name for s in order_policies([q, p])] == ["tau02", "rnd"]
    for bad in ("nonsense", "x=blind:tau=1", "x=janus:tau", "x=janus:warp=1", "x=janus:match=\"sometimes\""):
        with pytest.raises(ValueError):
            parse_policy(bad)


# ----------------------------------------------------------------------------- metrics, grid, CLI


def test_episode_metrics_and_ci_exact():
    ep = {"acc": np.array([0.5, 0.6, 0.6, 0.7]), "cand_gain": np.array([0.1, -0.2, -0.005, 0.1]),
          "accepted": np.array([True, False, True, False]), "triggered": np.array([False, True, True, True]),
          "kinds": ["general", "dump", "reword", "general"], "evaluator_calls": 9}
    m = episode_metrics(ep, 0.8, warmup=1)
    assert (m["final"], m["regret"], m["triggers"], m["trigger_rate"]) == (70.0, pytest.approx(10.0), 3, 1.0)
    assert (m["harmful"], m["rejected"], m["precision"], m["recall"], m["recall_1pt"]) == (2, 2, 0.5, 0.5, 1.0)
    assert (m["harm_through"], m["harm_pts"], m["destr"], m["destr_through"]) == (1, pytest.approx(0.5), 1, 0)
    assert (m["trig_recall"], m["trig_recall_1pt"], m["trig_recall_dump"]) == (1.0, 1.0, 1.0)
    m0 = episode_metrics(ep, 0.8, warmup=2)  # the dump falls inside the warm-up: no post-warm-up dump
    # the step-1 comparison falls inside the warm-up (a gate armed there): counted in triggers, not in the rate
    assert m0["trig_recall"] == 1.0 and math.isnan(m0["trig_recall_dump"]) and m0["trigger_rate"] == 1.0
    assert m0["triggers"] == 3
    assert math.isnan(episode_metrics(ep, None, None)["regret"])
    mean, half, n = mean_ci([1.0, 2.0, 3.0, float("nan")])
    assert (mean, n) == (2.0, 3) and half == pytest.approx(4.302652729749464 / math.sqrt(3), abs=1e-9)
    assert mean_ci([]) == (pytest.approx(float("nan"), nan_ok=True), pytest.approx(float("nan"), nan_ok=True), 0)


def test_fixed_seed_gives_fixed_table_and_workers_do_not_matter():
    specs = pols("blind", "janus", "random", "periodic")
    r1 = run_grid(SMALL, [0, 1], specs, workers=1)
    r2 = run_grid(SMALL, [0, 1], specs, workers=2)
    t1, t2 = markdown_table(r1.agg, r1.policies), markdown_table(r2.agg, r2.policies)
    assert t1 == t2
    assert np.array_equal(r1.traj["janus"], r2.traj["janus"])
    j = r1.per_seed["janus"]
    assert [(round(x["final"], 4), x["triggers"], x["raw_calls"]) for x in j] == EXPECT_JANUS
    assert [x["triggers"] for x in r1.per_seed["periodic"]] == EXPECT_PERIODIC_TRIGGERS


def test_a_policy_does_not_depend_on_the_policies_run_before_it_on_the_same_world():
    """A dump's text has no version line, so two policies reach the same text with different version counters. The
    world used to hand the second policy the first one's memory object, so its next sheet's text (and with it the
    keyed evaluator luck) depended on which policies ran before it: janus after blind/oracle ended elsewhere than
    janus alone. Each policy now keeps its own object; the text still fixes the truth."""
    rec = PolicySpec("rec", "janus", JanusConfig.recommended(warmup=5))
    alone = {n: run_grid(SMALL, [0, 1], pols(n) if n == "janus" else [rec], workers=1) for n in ("janus", "rec")}
    after = run_grid(SMALL, [0, 1], pols("blind", "never", "oracle", "janus") + [rec], workers=1)
    for n in ("janus", "rec"):
        assert [x["final"] for x in alone[n].per_seed[n]] == [x["final"] for x in after.per_seed[n]]
        assert [x["evaluator_calls"] for x in alone[n].per_seed[n]] == [x["evaluator_calls"] for x in after.per_seed[n]]
        assert np.array_equal(alone[n].traj[n], after.traj[n])
    assert [(round(x["final"], 4), x["raw_calls"]) for x in after.per_seed["janus"]] == [
        (e[0], e[2]) for e in EXPECT_JANUS]


def test_one_text_with_two_truths_stays_inside_its_episode():
    """An overwrite's new item draws its effect after a policy-dependent number of drops, so two policies can reach
    one text with two truths (found on seed 3 of a dump/overwrite-heavy 4-cluster world). Each episode has its own
    registry and the accuracy is cached on the memory object, so neither policy sees the other's truth."""
    w = World(SMALL, 0)
    eff = np.zeros((SMALL.n_clusters, SMALL.n_subtopics))
    eff[0, 0] = 3.0
    a = make_memory((), 7, "same text", SMALL.n_clusters, SMALL.n_subtopics)
    b = make_memory((Item("u", "general", 0, ("l",), eff),), 9, "same text", SMALL.n_clusters, SMALL.n_subtopics)
    e1, e2 = w.episode(), w.episode()
    assert e1.register(a) is a and e2.register(b) is b
    assert e1.memory("same text") is a and e2.memory("same text") is b
    assert e1.true_accuracy(a) == w.true_accuracy(w.empty) < e2.true_accuracy(b)
    with pytest.raises(KeyError):
        w.memory("same text")  # the world itself registered nothing
    cfg = WorldConfig(n_steps=60, n_clusters=4, n_subtopics=2, test_per_cell=4,
                      mix=parse_mix("general=0.3,overwrite=0.2,dump=0.2,reword=0.3"))
    nb = pols("no-boundary")
    alone = run_grid(cfg, [3], nb, workers=1)
    after = run_grid(cfg, [3], pols("janus") + nb, workers=1)
    assert alone.per_seed["no-boundary"][0]["final"] == after.per_seed["no-boundary"][0]["final"]
    assert np.array_equal(alone.traj["no-boundary"], after.traj["no-boundary"])


def test_cli_writes_report_and_rejects_bad_settings(tmp_path, capsys):
    from janus_memory.cli import main

    out = tmp_path / "bw"
    rc = main(["bench", "world", "--seeds", "2", "--steps", "40", "--policies", "blind,oracle,janus", "--set",
               "n_clusters=4", "--out", str(out), "--workers", "1"])
    assert rc == 0
    err = capsys.readouterr().err.splitlines()  # a long grid is never silent: one line per seed, on stderr
    assert [e.split(", ")[0] for e in err] == ["bench world: seed 1/2 done", "bench world: seed 2/2 done"]
    text = (out / "report.md").read_text()
    assert "| janus |" in text and "| oracle | " in text and "| sanity | oracle − blind |" in text
    assert sorted(np.load(out / "trajectories.npz").files) == ["blind", "janus", "oracle"]
    for name in ("trajectory.png", "final.png", "cost.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["bench", "world", "--set", "warp=1", "--out", str(out)]) == 2
    assert main(["bench", "world", "--mix", "general", "--out", str(out)]) == 2
    assert "error:" in capsys.readouterr().err


def test_run_episode_trajectory_is_the_deployed_memory():
    w = World(SMALL, 5)
    ep = run_episode(w, PolicySpec("never", "never"), None, None)
    assert np.all(ep["acc"] == w.true_accuracy(w.empty)) and not ep["accepted"].any()


# exact values of the small seeded worlds (hashing:1024 encoder, paper-preset controller)
EXPECT_ORACLE = [96.3264, 92.7123, 97.6991, 97.4792]
EXPECT_BLIND = [47.1968, 47.9724, 49.481, 82.1649]
# the paper preset's controller (the authors' k-means; with scikit-learn k-means these were
# (65.7174, 19, 788), (53.6906, 28, 1192) and periodic [20, 40])
# (final, triggers, raw requests) since the world stopped sharing memory objects between policies
EXPECT_JANUS = [(54.3179, 23, 914), (53.6906, 23, 998)]
EXPECT_PERIODIC_TRIGGERS = [20, 20]  # period = round(40 post-warm-up steps / janus triggers), the paper's rule


def test_degenerate_worlds_run():
    tiny = WorldConfig(n_steps=5, n_clusters=1, n_subtopics=1, test_per_cell=1,
                       mix={"dump": 1.0, "overwrite": 1.0, "reword": 1.0})
    out = run_seed(tiny, 0, pols("blind", "oracle", "janus", "random", "periodic"))
    m = out["metrics"]
    assert m["janus"]["triggers"] == 0 and m["random"]["triggers"] == 0 and m["periodic"]["triggers"] == 0
    assert m["janus"]["final"] == m["blind"]["final"]  # the whole stream is warm-up: Janus deploys everything
    assert math.isnan(m["janus"]["trig_recall"]) and m["oracle"]["final"] >= m["blind"]["final"]
    for bad in (dict(n_steps=0), dict(drift=1.5), dict(coupling=-0.1)):
        with pytest.raises(ValueError):
            WorldConfig(**bad)


@pytest.mark.parametrize("kw, msg", [
    (dict(n_clusters=2.5), "n_clusters must be a whole number, got 2.5"),
    (dict(max_items=True), "max_items must be a whole number, got True"),
    (dict(dump_gain=float("nan")), "dump_gain must be a finite number, got nan"),
    (dict(dump_gain="x"), "dump_gain must be a finite number, got 'x'"),
    (dict(coupling=float("inf")), "coupling must be a finite number, got inf"),
    (dict(general_gain=(float("nan"), 1.0)), "general_gain must be two finite numbers [low, high], got (nan, 1.0)"),
    (dict(specific_harm=(0.4,)), "specific_harm must be two finite numbers [low, high], got (0.4,)"),
])
def test_world_settings_that_would_crash_or_mislead_are_refused(kw, msg):
    """A NaN gain used to surface as an unrelated crash, 2.5 clusters as a traceback, 1.5 items as 1."""
    with pytest.raises(ValueError) as e:
        WorldConfig(**kw)
    assert str(e.value) == msg


def test_share_table_is_the_issue_24_yardstick():
    from janus_memory.bench.metrics import boot_ratio, share_table

    per = {"blind": [{"final": 50.0, "evaluator_calls": 0}, {"final": 60.0, "evaluator_calls": 0}],
           "always": [{"final": 70.0, "evaluator_calls": 100}, {"final": 80.0, "evaluator_calls": 300}],
           "rec": [{"final": 65.0, "evaluator_calls": 20}, {"final": 70.0, "evaluator_calls": 30}]}
    t = share_table(per, ["blind", "always", "rec"])
    # gain share (15 + 10) / (20 + 20) = 0.625; call share 25 / 200 = 0.125; intervals over the 2-seed resamples
    # no raw counts given: the raw share falls back to the paid one
    assert t.splitlines()[2] == "| rec | 0.62 [0.50, 0.75] | 0.12 [0.10, 0.20] | 0.12 |"
    assert share_table({k: v for k, v in per.items() if k != "always"}, ["blind", "rec"]) is None
    e, lo, hi = boot_ratio([1.0, 2.0], [0.0, 0.0])
    assert all(math.isnan(x) for x in (e, lo, hi))  # always gained nothing: no share, not a division error
    assert all(math.isnan(x) for x in boot_ratio([], []))  # no seeds
    # always and rec both lose to blind: -2 / -1 would read as a share of 2.00; a gain share needs a gain
    lost = {"blind": per["blind"], "always": [{"final": 49.0, "evaluator_calls": 100}, {"final": 59.0, "evaluator_calls": 300}],
            "rec": [{"final": 48.0, "evaluator_calls": 20}, {"final": 58.0, "evaluator_calls": 30}]}
    assert share_table(lost, ["blind", "always", "rec"]).splitlines()[2] == (
        "| rec | n/a (always − blind is -1.00: no gain to share) | 0.12 [0.10, 0.20] | 0.12 |")
    assert boot_ratio([-2.0, -2.0], [-1.0, -1.0])[0] == 2.0  # a plain ratio stays a ratio
    assert all(math.isnan(x) for x in boot_ratio([-2.0, -2.0], [-1.0, -1.0], positive_den=True))


# ----------------------------------------------------------------------------- late knowledge and noise settings


def test_a_late_candidate_is_worth_nothing_on_every_task_seen_and_something_on_tasks_to_come():
    from janus_memory.bench.world import SETTINGS

    cfg = WorldConfig.from_dict({**WorldConfig().to_dict(), **SETTINGS["s5"]})
    w = World(cfg, 7)
    up = WorldUpdater(w)
    mem, lates = w.empty, 0
    for t in range(cfg.n_steps):
        cand, kind = up.propose(mem, t)
        if kind == "late":
            lates += 1
            item = cand.items[-1]
            assert item.kind == "late"
            seen = {(x.cluster, x.subtopic) for x in w.stream[:t + 1]}
            assert all(item.effect[c_, s_] == 0 for c_, s_ in seen)  # worth nothing on every task seen so far
            assert any(item.effect[x.cluster, x.subtopic] > 0 for x in w.stream[t + 1:])  # and something later
            if len(mem.items) < cfg.max_items and not mem.dump:  # nothing dropped: the whole candidate ties on them
                past = w.stream[:t + 1]
                assert np.array_equal(w.solve_prob(cand, past), w.solve_prob(mem, past))
                assert w.true_accuracy(cand) > w.true_accuracy(mem)
        mem = cand
    assert lates >= 0.3 * cfg.n_steps  # the setting's promise: at least 30% of candidates are late knowledge


def test_a_late_candidate_falls_back_to_general_once_every_cell_was_seen():
    w = World(dataclasses.replace(SMALL, mix={"late": 1.0}), 0)
    up = WorldUpdater(w)
    last = int(w.first_seen.max())
    assert last < SMALL.n_steps - 1  # every cell is seen before the end of this small stream
    assert up.propose(w.empty, last)[1] == "general" and up.propose(w.empty, 0)[1] == "late"


def test_a_noisy_flip_is_represented_in_both_noise_models():
    from janus_memory.bench.world import SETTINGS

    # fresh: the same memory on the same task answers differently across calls
    cfg = WorldConfig.from_dict({**WorldConfig().to_dict(), **SETTINGS["s6"]})
    w = World(cfg, 3)
    ev = WorldEvaluator(w)
    task = w.stream[0]
    answers = {tuple(ev(w.empty.text, [task] * 40))}
    answers |= {tuple(ev(w.empty.text, [task] * 40)) for _ in range(3)}
    flat = [a for run in answers for a in run]
    assert True in flat and False in flat and ev.calls == 160
    # keyed, coupling < 1: a rewording (the same truth) answers some task differently from the memory it rewords
    wk = World(dataclasses.replace(SMALL, mix={"reword": 1.0}), 0)
    up = WorldUpdater(wk)
    m0, _ = up.propose(wk.empty, 0)
    m1, kind = up.propose(m0, 1)
    assert kind == "reword" and wk.true_accuracy(m1) == wk.true_accuracy(m0)
    evk = WorldEvaluator(wk)
    a0, a1 = evk(m0.text, wk.stream), evk(m1.text, wk.stream)
    assert a0 != a1
    assert evk(m0.text, wk.stream) == a0  # a repeat is the cached answer


def test_the_named_settings_are_listed_and_apply(capsys):
    import argparse

    from janus_memory.bench.cli import add_world_parser, world_config_from_args
    from janus_memory.bench.world import SETTING_TEXT, SETTINGS

    assert set(SETTINGS) == set(SETTING_TEXT) and {"s5", "s6"} <= set(SETTINGS)
    p = argparse.ArgumentParser()
    sub = p.add_subparsers()
    add_world_parser(sub)
    args = p.parse_args(["world", "--setting", "s6", "--set", "coupling=0.2"])
    c = world_config_from_args(args)
    assert (c.eval_noise, c.drift, c.mix["late"], c.coupling) == ("fresh", 0.9, 0.4, 0.2)
    with pytest.raises(SystemExit):
        p.parse_args(["world", "--setting", "s9"])
    assert "s9" in capsys.readouterr().err
    help_text = sub.choices["world"].format_help()
    assert "s5" in help_text and "late knowledge" in help_text


def test_episode_metrics_count_genuine_and_late_candidates_rolled_back():
    ep = {"acc": np.array([0.5, 0.5, 0.6, 0.6]), "cand_gain": np.array([0.1, -0.05, 0.1, 0.02]),
          "accepted": np.array([False, False, True, False]), "triggered": np.ones(4, bool),
          "kinds": ["late", "specific", "general", "late"], "evaluator_calls": 8}
    m = episode_metrics(ep, None, 0)
    assert (m["genuine"], m["genuine_rolled_back"], m["late"], m["late_rolled_back"]) == (3, 2, 2, 2)
