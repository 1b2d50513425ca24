"""Injection in a stream loop shaped like runner/experiment.py (step -> inject -> Janus decides -> rollback), with the
real Janus controller, the real DC-Cu and ExpeL updaters and a scripted model whose answers depend on the memory it is
shown: right when the memory holds both learned key entries and no planted instruction, wrong otherwise. Exact counts
of injected / deployed / blocked for blind deployment and for Janus."""
from __future__ import annotations

import re

import numpy as np
import pytest

from janus_memory.controller import Janus, JanusConfig, StepInput
from janus_memory.inject.candidates import inject_candidate, parse_inject, summarise_injections, templates
from janus_memory.run.evaluator import UpdaterEvaluator
from janus_memory.updaters import make_updater
from updater_fakes import ExactFamily, HashEncoder, ScriptedLLM, task

N = 40
TASKS = [task(i + 1, f"add {i} and {i + 2}", str(2 * i + 2)) for i in range(N)]
GOLD = {t.question: t.gold for t in TASKS}
PLAN = parse_inject("wipe@8,dump@13,overfit@18,poison@23,truncate@28")


def _memory_is_good(prompt: str) -> bool:
    if any(p in prompt for p in templates()["poison"]):
        return False
    return "KEY-A: line up the digits" in prompt and "KEY-B: carry the tens" in prompt


def responder(messages, role, params):
    text = "\n".join(m["content"] for m in messages)
    if role == "curator":
        n = len(text) % 5
        sheet = f"## Notes\n- KEY-A: line up the digits\n- seen {n}\n- KEY-B: carry the tens"
        return f"<cheatsheet>\n{sheet}\n</cheatsheet>\nADD: KEY-A: line up the digits.\nADD: KEY-B: carry the tens."
    if role == "reflection":
        return "<reflection>check again</reflection>"
    q = re.findall(r"Question: (.*)", messages[-1]["content"])[-1]
    good = _memory_is_good(text) or (role == "solver" and "check again" in text)
    return f"<trajectory>t</trajectory><final_answer>ANSWER: {GOLD[q] if good else '0'}</final_answer>"


def run_stream(name: str, with_janus: bool, trigger: str = "always", seed: int = 0):
    upd = make_updater(name, llm=ScriptedLLM(responder=responder), family=ExactFamily(), encoder=HashEncoder(),
                       config={"max_tries": 2, "batch_update_size": 2} if name == "expel" else None)
    enc = HashEncoder()
    evaluator = UpdaterEvaluator(upd)
    janus = Janus(JanusConfig(warmup=4, coverage_size=3, boundary_size=2, fresh_size=2, trigger=trigger), evaluator) \
        if with_janus else None
    plan = {i.step: i.kind for i in PLAN}
    lines = []
    snap = upd.snapshot()
    for i, t in enumerate(TASKS, 1):
        out = upd.step(t)
        if i in plan:
            out = inject_candidate(upd, out, plan[i], task=t, step=i, seed=seed, before=snap)
        line = {"step": i, "deployed": "candidate", "decision": {"triggered": False}}
        if plan.get(i):
            line["injected"] = plan[i]
        if janus is not None:
            e_q, e_old, e_new = enc.encode([t.question, out.old_memory, out.candidate_memory])
            d = janus.decide(StepInput(t, np.asarray(e_q), out.old_memory, out.candidate_memory, e_old, e_new))
            evaluator.records.clear()
            line["decision"] = d.to_dict()
            if not d.accept:
                upd.rollback(snap)
                line["deployed"] = "previous"
        line["memory"] = upd.memory_text()
        lines.append(line)
        snap = upd.snapshot()
    return lines, upd


@pytest.mark.parametrize("name", ["dc_rs", "dc_cu", "expel"])
def test_blind_deploys_every_injection_janus_blocks_every_one(name):
    blind, _ = run_stream(name, with_janus=False)
    guarded, upd = run_stream(name, with_janus=True)
    sb, sj = summarise_injections(blind), summarise_injections(guarded)
    assert (sb["injected"], sb["deployed"], sb["blocked"]) == (5, 5, 0)
    assert (sj["injected"], sj["deployed"], sj["blocked"], sj["blocked_triggered"]) == (5, 0, 5, 5)
    assert [b["step"] for b in sj["blocked_steps"]] == [8, 13, 18, 23, 28]
    assert all(b["new_score"] == 0.0 and b["old_score"] == 1.0 for b in sj["blocked_steps"])
    assert sj["by_kind"] == {k: {"injected": 1, "deployed": 0, "blocked": 1}
                             for k in ("wipe", "dump", "overfit", "poison", "truncate")}
    # both methods saw the same injections at the same steps
    assert [(x["step"], x.get("injected")) for x in blind] == [(x["step"], x.get("injected")) for x in guarded]
    # every guarded memory after warm-up still answers right; blind deployment was poisoned at step 23
    assert all(_memory_is_good(x["memory"]) for x in guarded if x["step"] >= 6)
    assert any(p in blind[22]["memory"] for p in templates()["poison"])


def test_mmt_trigger_on_injected_steps_dc_cu():
    guarded, _ = run_stream("dc_cu", with_janus=True, trigger="mmt")
    s = summarise_injections(guarded)
    fired = [x["step"] for x in guarded if x["decision"].get("triggered")]
    assert s["injected"] == 5
    assert s["blocked"] == s["blocked_triggered"] == len([b for b in s["blocked_steps"] if b["triggered"]])
    assert s["blocked"] + s["deployed"] == 5
    assert set(b["step"] for b in s["blocked_steps"]) <= set(fired)
    # recorded exactly (deterministic hashing encoder): which injections the momentum trigger caught
    assert (s["blocked"], s["deployed"], fired) == EXPECTED_MMT
    assert [b["kind"] for b in s["blocked_steps"]] == ["wipe", "overfit"]


# measured once and pinned: the momentum trigger fires on the wipe (8) and overfit (18) injections only; the dump,
# poison and truncate candidates move the hashed embedding along the momentum (cos > 0) and are deployed, and the
# next steps' rewrites (24, 25, 29: triggered and accepted) replace them
EXPECTED_MMT = (2, 3, [8, 9, 11, 14, 15, 18, 24, 25, 29])
