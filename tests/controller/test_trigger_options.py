"""Selective trigger: item-level change signals, magnitude gate, calibrated threshold, warm-up arming,
state round trip. Exact values on small recorded sequences."""
import json
import math

import numpy as np
import pytest

from controller_fakes import Ev, mk_task
from janus_memory.controller import Janus, JanusConfig, StepInput
from janus_memory.controller.changes import change_stats, changed_items_texts, memory_items, shingles
from janus_memory.controller.trigger_options import SelectiveOptions, SelectiveTrigger

RULES = [f"rule {i}: when the sum has {i} terms group them in pairs first" for i in range(8)]
BASE = "\n".join(RULES)


# ----------------------------------------------------------------------------- change signals


def test_change_stats_exact_values():
    assert memory_items("  A  b\n\n c \n") == ["a b", "c"]
    assert shingles("a b c d") == {("a", "b", "c"), ("b", "c", "d")}
    same = change_stats(BASE, BASE)
    assert (same.line_survival, same.retention, same.line_ratio, same.lines_added, same.lines_removed) == (1.0, 1.0, 1.0, 0, 0)
    # one rule reworded in one word: 7/8 lines survive, most shingles survive
    reworded = BASE.replace("rule 3: when the sum has 3 terms", "rule 3: when the total has 3 terms")
    ch = change_stats(BASE, reworded)
    assert ch.line_survival == 7 / 8
    assert (ch.lines_added, ch.lines_removed, ch.old_items, ch.new_items) == (1, 1, 8, 8)
    assert ch.retention == 53 / 54  # of 54 distinct old 3-grams only ("sum", "has", "3") is unique to rule 3
    # a dump: nothing of the old memory survives, the memory grows
    dump = change_stats(BASE, "### PREVIOUS SOLUTIONS\n" + "\n".join(f"input {i} output {i * 7}" for i in range(20)))
    assert (dump.line_survival, dump.retention, dump.line_ratio) == (0.0, 0.0, 21 / 8)
    # a wipe: two of eight rules kept
    wipe = change_stats(BASE, "\n".join(RULES[:2]))
    assert (wipe.line_survival, wipe.line_ratio) == (0.25, 0.25)
    assert wipe.retention == 18 / 54  # the wording shared by all rules survives with the two kept rules


def test_change_stats_degenerate_inputs():
    assert change_stats("", "").line_ratio == 1.0
    assert change_stats("", "x").line_ratio == math.inf
    empty_old = change_stats("", "a b c d")
    assert (empty_old.retention, empty_old.line_survival) == (1.0, 1.0)  # nothing to lose
    assert change_stats("two words", "").retention == 1.0  # fewer than 3 words: no shingles
    assert change_stats("a b c", "").retention == 0.0
    assert changed_items_texts("a\nb\nc", "b\nd\nd") == ("a\nc", "d")


# ----------------------------------------------------------------------------- the trigger object


def test_selective_trigger_gates_and_calibration():
    ch_keep = change_stats(BASE, BASE + "\nnew rule nine about primes")
    ch_dump = change_stats(BASE, "### PREVIOUS SOLUTIONS\ninput one output two three")
    t = SelectiveTrigger(SelectiveOptions(retention_min=0.25, shrink_max=0.5, magnitude_ratio=1.5, magnitude_window=3))
    v = t.fires(0.9, 1.0, ch_dump)
    assert (v.fire, v.by, v.item_flag) == (True, "item", True)
    assert t.fires(-0.2, 1.0, ch_keep).by == "mmt"  # no history: the magnitude gate passes
    for z in (1.0, 2.0, 4.0):
        t.observe(-0.5, z)
    assert t.z_reference() == 2.0
    assert t.fires(-0.2, 2.9, ch_keep).fire is False  # 2.9 < 1.5 * median 2.0
    assert t.fires(-0.2, 3.0, ch_keep).by == "mmt"
    assert t.fires(0.1, 30.0, ch_keep).fire is False  # cosine above tau
    t.observe(-0.5, 8.0)
    assert t.z_norms == [2.0, 4.0, 8.0]  # window 3
    q = SelectiveTrigger(SelectiveOptions(tau_quantile=0.25, tau_window=5))
    for c in (-0.5, -0.4, -0.3, -0.2):
        q.observe(c, 1.0)
    assert q.threshold() == 0.0  # fewer than 5 cosines: fixed tau
    q.observe(-0.1, 1.0)
    assert q.threshold() == pytest.approx(-0.4)  # numpy linear quantile of [-0.5..-0.1] at 0.25
    q.observe(0.5, 1.0)
    assert q.cosines == [-0.4, -0.3, -0.2, -0.1, 0.5]
    assert q.threshold() == pytest.approx(-0.3)
    assert q.fires(-0.35, 1.0, ch_keep).fire and not q.fires(-0.25, 1.0, ch_keep).fire


# ----------------------------------------------------------------------------- inside Janus, recorded sequence

# (memory text, 2-d embedding) per version; candidate of step i is VERSIONS[i], old memory VERSIONS[i-1]
VERSIONS = [
    (BASE, (1.0, 0.0)),
    (BASE + "\nrule 8: check parity", (0.9, 0.1)),
    (BASE + "\nrule 8: check parity\nrule 9: draw a table", (0.8, 0.25)),
    (BASE + "\nrule 8: check parity mod 4\nrule 9: draw a table", (0.85, 0.2)),  # small step back: cos < 0
    ("### PREVIOUS SOLUTIONS\nq1 answer 5\nq2 answer 7", (0.0, 1.0)),  # dump
    (BASE + "\nrule 8: check parity mod 4", (0.82, 0.22)),  # recovery
    (BASE + "\nrule 8: check parity mod 4\nrule 10: bound it", (0.5, 0.6)),  # large move, cos > 0
]


def drive(cfg, ev=None, start=1, janus=None, mems=None):
    janus = janus or Janus(cfg, ev or Ev())
    out = []
    for i in range(start, len(VERSIONS)):
        (old, oe), (new, ne) = VERSIONS[i - 1], VERSIONS[i]
        d = janus.decide(StepInput(mk_task(i), np.eye(3)[i % 3], old, new, np.array(oe), np.array(ne)))
        out.append(d)
    return janus, out


def test_mmt_on_the_recorded_sequence():
    _, ds = drive(JanusConfig(warmup=0, coverage_size=2, boundary_size=1, fresh_size=1))
    # MMT fires on the tiny step back (cos -1) and misses the dump, which continues the drift direction (cos > 0.99)
    assert [d.triggered for d in ds] == [False, False, True, False, True, False]
    assert ds[2].cosine < -0.99 and ds[3].cosine > 0.99 and ds[2].z_norm == pytest.approx(math.hypot(0.05, 0.05))
    assert all(d.trigger_signals == {} for d in ds)  # MMT: paper behaviour, no extra signals


def test_selective_fires_only_on_dump_and_large_reversal():
    cfg = JanusConfig(warmup=0, coverage_size=2, boundary_size=1, fresh_size=1, trigger="selective",
                      retention_min=0.25, shrink_max=0.5, magnitude_ratio=1.5, arm_warmup=False)
    _, ds = drive(cfg)
    assert [(d.triggered, d.trigger_signals["fired_by"]) for d in ds] == [
        (False, ""), (False, ""), (False, ""), (True, "item"), (True, "item"), (False, "")]
    assert ds[3].trigger_signals["retention"] == 0.0
    assert ds[2].trigger_signals["z_norm_ref"] == pytest.approx(np.median([math.hypot(.1, .1), math.hypot(.1, .15)]))
    assert ds[2].cosine < 0  # MMT would have fired; the step is small against the recent step sizes


def test_arm_warmup_compares_destructive_steps_inside_warmup():
    ev = Ev(lambda mem, tid: not mem.startswith("###"))  # the dump loses every task
    cfg = JanusConfig(warmup=5, coverage_size=2, boundary_size=1, fresh_size=1, trigger="selective",
                      retention_min=0.25, shrink_max=0.5, magnitude_ratio=1.5, arm_warmup=True)
    j, ds = drive(cfg, ev)
    assert [d.phase for d in ds] == ["warmup"] * 5 + ["stream"]
    dump = ds[3]
    assert (dump.triggered, dump.accept, dump.reason) == (True, False, "old_better")
    assert dump.fresh == ["t1", "t2", "t3", "t4"]  # every task seen so far (4 <= K + K_F = 4)
    assert (dump.trigger_count, dump.evaluator_calls) == (1, 8)
    rec = ds[4]  # the recorded recovery step (open loop): item gate fires, new memory wins
    assert (rec.triggered, rec.accept, rec.reason) == (True, True, "new_ge_old")
    assert j.stats["triggers"] == 2 and j.stats["rollbacks"] == 1
    assert j.n_seen == 5 and j.coverage_ids  # warm-up support still initialised at step 5
    unarmed = JanusConfig(**{**cfg.to_dict(), "arm_warmup": False})
    _, ds2 = drive(unarmed, ev)
    assert not any(d.triggered for d in ds2[:5]) and ds2[3].trigger_signals == {}


def test_selective_needs_evaluator_in_warmup_before_mutation():
    cfg = JanusConfig(warmup=5, trigger="selective", retention_min=0.25, arm_warmup=True)
    j = Janus(cfg, None)
    (old, oe), (new, ne) = VERSIONS[3], VERSIONS[4]
    with pytest.raises(RuntimeError):
        j.decide(StepInput(mk_task(0), np.eye(3)[0], old, new, np.array(oe), np.array(ne)))
    assert j.stats["steps"] == 0


@pytest.mark.parametrize("extra", [{}, {"tau_quantile": 0.3, "tau_window": 4, "magnitude_window": 2}])
def test_selective_state_round_trip_and_resume(extra):
    cfg = JanusConfig(warmup=0, coverage_size=2, boundary_size=1, fresh_size=1, trigger="selective",
                      retention_min=0.25, shrink_max=0.5, magnitude_ratio=1.5, **extra)
    ev = Ev(lambda mem, tid: not mem.startswith("###"))
    ref, ref_ds = drive(cfg, ev)
    a = Janus(cfg, ev)
    for i in range(1, 4):
        (old, oe), (new, ne) = VERSIONS[i - 1], VERSIONS[i]
        a.decide(StepInput(mk_task(i), np.eye(3)[i % 3], old, new, np.array(oe), np.array(ne)))
    s1 = json.dumps(a.state_dict(), sort_keys=True)
    assert json.loads(s1)["trigger_state"]["z_norms"]
    b = Janus.from_state_dict(json.loads(s1), ev)
    assert json.dumps(b.state_dict(), sort_keys=True) == s1
    _, rest = drive(cfg, ev, start=4, janus=b)
    assert [d.to_dict() for d in rest] == [d.to_dict() for d in ref_ds[3:]]
    assert json.dumps(b.state_dict(), sort_keys=True) == json.dumps(ref.state_dict(), sort_keys=True)


def test_state_saved_before_issue_16_loads():
    j, _ = drive(JanusConfig(warmup=0, coverage_size=2, boundary_size=1, fresh_size=1))
    st = json.loads(json.dumps(j.state_dict()))
    del st["trigger_state"]
    for k in ("retention_min", "shrink_max", "magnitude_ratio", "magnitude_window", "tau_quantile", "tau_window",
              "arm_warmup", "use_mmt"):
        del st["config"][k]
    k = Janus.from_state_dict(st, Ev())
    assert k.stats == j.stats


@pytest.mark.parametrize("bad", [{"retention_min": 1.5}, {"shrink_max": -0.1}, {"magnitude_ratio": -1.0},
                                 {"tau_quantile": 2.0}, {"magnitude_window": 0}, {"tau_window": 0},
                                 {"arm_warmup": 1}, {"use_mmt": "yes"}, {"retention_min": float("nan")},
                                 {"trigger": "selctive"}])
def test_invalid_selective_options(bad):
    with pytest.raises(ValueError):
        JanusConfig(**bad)


def test_paper_default_is_still_mmt():
    c = JanusConfig()
    assert c.trigger == "mmt" and JanusConfig.faithful().trigger == "mmt"
    assert JanusConfig.from_dict(JanusConfig(trigger="selective").to_dict()).trigger == "selective"
