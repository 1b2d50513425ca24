"""The stream loop of one method: the controller's own seam (controller.adapter.GuardedUpdate) plus records.

Protocol (docs/research-notes.md §1.2, §4, §6.1): for each stream task the updater solves it and proposes a candidate memory;
with Janus, GuardedUpdate embeds, lets the pure controller decide and rolls back when the old memory wins. Each step is
turned into records and emitted as events (store/events.py): the store writes them, the progress bar and any user
callback read them. After the stream the final memory is frozen and evaluated on the held-out test split.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..controller.reoffer import offer_deployed
from ..llm.cache import answered_field
from ..store.events import (
    EventSink,
    MethodFinished,
    MethodStarted,
    StepFinished,
    StepRecorded,
    TestDone,
    TestProgress,
    TestStarted,
    Triggered,
)
from ..store.store import text_hash
from . import injection
from .evaluator import UpdaterEvaluator
from .usage import add_usage, step_usage, total_tokens, usage_delta

_TIMING_KEYS = ("overhead_ms", "wall_s", "latency_s", "elapsed_s", "timing")


def stable(d: dict) -> dict:
    """Drop wall-clock fields so the decision log is byte-identical across resumed and uninterrupted runs."""
    return {k: v for k, v in d.items() if k not in _TIMING_KEYS}


class Stopped(Exception):
    """Raised by ``stop_after`` to simulate an interruption (tests)."""

    def __init__(self, step: int):
        super().__init__(f"stopped after step {step}")
        self.step = step


@dataclass
class _Method:
    """The live pieces of one method's run."""

    name: str
    updater: Any
    evaluator: UpdaterEvaluator
    janus: Any  # controller.Janus or None
    counters: dict = field(default_factory=lambda: {"n_correct": 0, "triggers": 0, "accepts": 0, "rollbacks": 0,
                                                    "usage": {}, "wall_s": 0.0, "eval_checkpoints": {}})
    start: int = 0
    usage: Any = None  # this method's own UsageMeter (a scope of the run's client meter, llm/usage.py)


def takes_memory_text(updater: Any) -> bool:
    """The updater can load a memory text (``load_memory_text`` overridden): a re-offer deployed by the controller
    (``JanusConfig.seq_reoffer``) can be applied to it; otherwise the run's controller offers nothing again."""
    from ..updaters.base import Updater

    load = getattr(type(updater), "load_memory_text", None)
    return load is not None and load is not Updater.load_memory_text


def reoffer_units(updater: Any, jc: Any) -> Any:
    """What the run's controller offers again for ``updater`` (``Janus(units=...)``): its ``memory_units()`` when
    ``jc`` (a JanusConfig) offers again, else None (lines; nothing is offered)."""
    return updater.memory_units() if jc.decision.reoffers else None


def _open_method(ctx, name: str, with_janus: bool, resume: tuple[int, dict] | None) -> _Method:
    from ..controller import Janus

    upd = ctx.make_updater(ctx.namespace_of(with_janus))  # paper preset: the +Janus twin's own samples
    evaluator = ctx.make_evaluator(upd)  # the run's replay mode and salt (build.Context)
    jc = ctx.settings.janus_config()
    if jc.decision.reoffers and not takes_memory_text(upd):  # an offer it could not apply would be paid for nothing
        jc = jc.replace(seq_reoffer=0)
    units = reoffer_units(upd, jc) if with_janus else None  # the baseline keeps no records for offers
    m = _Method(name, upd, evaluator, Janus(jc, evaluator, units=units) if with_janus else None)
    if resume is not None:
        m.start, state = resume
        upd.load_snapshot(state["updater"])
        if m.janus is not None:
            m.janus = Janus.from_state_dict(state["janus"], evaluator, units=units)
        m.counters = state["counters"]
    return m


def _strict_field(score) -> dict:
    """``{"strict_correct": bool}`` when the paper checker scored (our strict verdict beside it), else ``{}``."""
    detail = score.detail or {}
    return {"strict_correct": bool(detail["strict_correct"])} if detail.get("checker") == "paper" else {}


def _step_records(i: int, task, out, decision: dict, deployed_candidate: bool, deployed: str,
                  asked: str = "") -> tuple[dict, dict]:
    """(decisions.jsonl line, steps.jsonl line) of one step."""
    line = {"step": i, "task_id": task.id, "correct": bool(out.score.correct),
            "old_memory_sha256": text_hash(out.old_memory), "candidate_memory_sha256": text_hash(out.candidate_memory),
            "candidate_rejected": out.candidate_rejected, "deployed": "candidate" if deployed_candidate else "previous",
            "deployed_memory_sha256": text_hash(deployed), "decision": decision}
    if offer_deployed(decision.get("reoffer")):  # "deployed" is the candidate's fate; the memory after the
        line["reoffer"] = "deployed"  # step also holds content rolled back earlier (decision.reoffer)
    record = {"step": i, "task_id": task.id, "correct": bool(out.score.correct), **_strict_field(out.score),
              "extracted": out.score.extracted, "status": out.score.status, "output": out.output.text,
              "reasoning": out.output.reasoning,
              "finish_reason": out.output.finish_reason,
              "llm_calls": [{"role": c.role, "prompt_tokens": c.result.usage.prompt_tokens,
                             "completion_tokens": c.result.usage.completion_tokens,
                             "finish_reason": c.result.finish_reason, **answered_field(c.result, asked)}
                            for c in out.calls],
              "info": out.info}
    # tokens of the responses this step used, by role; what was actually paid (cache hits excluded) is in the summary
    record["usage"] = step_usage(out.calls, decision.get("evaluations", []))
    return line, record


def _decide(m: _Method, guard, proposer, task, snap) -> tuple[Any, dict, bool]:
    """Run one step through GuardedUpdate (or the bare updater without Janus): (outcome, decision entry, deployed?).
    ``proposer`` (run/injection.py) is the updater with the run's planned injections, already set to this step."""
    if guard is None:
        return proposer.step(task), {"step": None, "triggered": False, "accept": True, "reason": "no_controller"}, True
    out, d = guard.step(task, snapshot=snap)
    decision = stable(d.to_dict())
    decision["evaluations"] = m.evaluator.drain()
    take = getattr(m.evaluator, "take_batch_stats", None)
    if callable(take):  # requests sent for the comparison, those sent ahead and those never read (run/eval_batch.py)
        sums = m.counters.setdefault("eval_batch", {})
        for k, v in take().items():
            sums[k] = sums.get(k, 0) + v
    if d.triggered:
        m.counters["triggers"] += 1
        m.counters["accepts" if d.accept else "rollbacks"] += 1
    elif d.reason == "trivially_equal":  # JanusConfig.skip_trivially_equal: accepted without evaluation
        m.counters["trivially_equal"] = m.counters.get("trivially_equal", 0) + 1
    if d.reoffer:  # JanusConfig.seq_reoffer: a rolled-back addition offered again (its calls are in the step's)
        for key, on in (("reoffers", True), ("reoffers_deployed", d.reoffer.get("applied", False))):
            m.counters[key] = m.counters.get(key, 0) + int(bool(on))
    return out, decision, bool(d.accept)


def _checkpoint_hints(m: _Method) -> dict:
    """What of the step's checkpoint only grew (store/ckpt_log.py): the updater's and the controller's declared
    appends, and the eval checkpoints (set once at their step, never changed)."""
    hints = {("updater",) + p: h for p, h in m.updater.snapshot_hints().items()}
    if m.janus is not None:
        hints.update({("janus",) + p: h for p, h in m.janus.state_hints().items()})
    for frac, ckp in m.counters["eval_checkpoints"].items():
        hints[("counters", "eval_checkpoints", frac)] = (("eval_checkpoint", ckp["step"]), None)
    return hints


def stream(ctx, m: _Method, bus: EventSink, usage0: dict, t0: float, stop_after: int | None = None) -> None:
    """Run the stream from step ``m.start + 1``, emitting StepRecorded / Triggered / StepFinished per step.
    ``usage0``/``t0``: the method's usage snapshot and the time when this process started the method."""
    from ..controller.adapter import GuardedUpdate

    tasks, c = ctx.stream.tasks, m.counters
    n = len(tasks)
    ck_steps = {max(1, round(n * f)): f for f in ctx.settings.checkpoints if f < 1.0} if n else {}
    plan = ctx.settings.inject_plan()  # {step: kind}: the same injections for every method of the run
    proposer = injection.Proposer(m.updater, plan, ctx.settings.seed)
    guard = GuardedUpdate(m.janus, proposer, ctx.encoder.encode) if m.janus is not None else None
    # state before the step; afterwards each step's own snapshot serves the next step. By reference (bank matrices as
    # RowsRef, records shared): its cost does not grow with the run, and the store writes only the new rows
    snap = m.updater.snapshot(by_reference=True)
    for i, task in enumerate(tasks[m.start:], m.start + 1):
        out, decision, deployed_candidate = _decide(m, guard, proposer.at(i, snap), task, snap)
        if guard is None:
            decision["step"] = i
        c["n_correct"] += int(out.score.correct)
        deployed = m.updater.memory_text()
        state = m.updater.snapshot(by_reference=True)  # rollback/load_snapshot deep-copy: one serves all three uses
        if i in ck_steps:
            c["eval_checkpoints"][str(ck_steps[i])] = {"step": i, "state": state}
        line, record = _step_records(i, task, out, decision, deployed_candidate, deployed,
                                     getattr(ctx.client.backend, "model", ""))
        if i in plan:  # the decision log marks injected steps; the counters keep them for the summary (resumable)
            line["injected"] = plan[i]
            injection.note(c, line, out.old_memory, out.candidate_memory,
                           units=m.janus.units if m.janus is not None else None)
        if taken := injection.reoffered(c, decision.get("reoffer"), i):
            line["reoffer_of_injected"] = taken
        usage_now = add_usage(c["usage"], usage_delta(m.usage.snapshot(), usage0))
        checkpoint = {"updater": state, "janus": m.janus.state_dict(by_reference=True) if m.janus is not None else None,
                      "counters": {**c, "usage": usage_now, "wall_s": c["wall_s"] + time.time() - t0}}
        bus.emit(StepRecorded(m.name, i, line, record, deployed,
                              (out.candidate_memory, text_hash(out.old_memory), out.candidate_rejected), checkpoint,
                              _checkpoint_hints(m)))
        if decision.get("triggered"):
            bus.emit(Triggered(m.name, i, bool(decision.get("accept")), str(decision.get("reason"))))
        bus.emit(StepFinished(m.name, i, n, bool(out.score.correct), decision, c["n_correct"] / i, c["triggers"],
                              c["accepts"], c["rollbacks"], total_tokens(usage_now),
                              sum(r.get("cache_hits") or 0 for r in usage_now.values())))
        if stop_after is not None and i >= stop_after:
            raise Stopped(i)
        snap = state


def frozen_test(ctx, updater) -> list[dict]:
    """test.jsonl lines: the frozen memory on the held-out split."""
    results = updater.solve_frozen(ctx.test.tasks, role="test") if ctx.test.tasks else []
    return [{"task_id": task.id, "correct": bool(score.correct), **_strict_field(score), "extracted": score.extracted,
             "status": score.status,
             "output": chat.text, "finish_reason": chat.finish_reason}
            for task, (chat, score) in zip(ctx.test.tasks, results)]


def test_wave(ctx, m: _Method) -> tuple[list[dict], list[dict]]:
    """The held-out test of the final memory and of every stream-fraction checkpoint memory (paper Fig. 4), sent at
    once: each memory's test is one batch, and the batches run side by side (run/streams.run_parallel), so the whole
    test costs one round of requests when the budget allows. Returns (test.jsonl lines, checkpoint accuracies)."""
    from .streams import run_parallel

    as_logged = ctx.settings.checkpoint_restore_mode() == "paper"
    n = len(ctx.stream.tasks)

    def probe_test(state):
        probe = ctx.make_updater(ctx.namespace_of(m.janus is not None))
        probe.load_snapshot(state)
        if as_logged:  # the authors' Fig. 4 restore (DC-RS: successes-only pool; ExpeL: counts 2)
            probe.restore_as_logged()
        res = probe.solve_frozen(ctx.test.tasks, role="test") if ctx.test.tasks else []
        return sum(int(sc.correct) for _, sc in res) / len(res) if res else None

    points = sorted(m.counters["eval_checkpoints"].items(), key=lambda kv: float(kv[0]))
    final_in_log = any(ckp["step"] == n for _, ckp in points)
    # the 100% point restored as the authors restore it too, when that gives the final memory another test state
    restored_final = bool(ctx.settings.checkpoints and ctx.test.tasks and as_logged and not final_in_log
                          and _restore_changes(ctx, m))
    jobs: list[Callable[..., Any]] = [lambda: frozen_test(ctx, m.updater)]
    jobs += [lambda st=ckp["state"]: probe_test(st) for _, ckp in points]
    if restored_final:
        final_state = m.updater.snapshot()
        jobs.append(lambda: probe_test(final_state))
    got = run_parallel(jobs, side_by_side=getattr(ctx.client, "concurrency", 1) > 1)
    records = got[0]
    out = [{"fraction": float(frac), "step": ckp["step"], "test_accuracy": acc}
           for (frac, ckp), acc in zip(points, got[1:1 + len(points)])]
    if ctx.settings.checkpoints and ctx.test.tasks:
        acc = got[-1] if restored_final else sum(r["correct"] for r in records) / len(ctx.test.tasks)
        out.append({"fraction": 1.0, "step": n, "test_accuracy": acc})
    return records, out


def _restore_changes(ctx, m) -> bool:
    """Whether the authors' restore gives the final memory another test state (DC-RS with a failure in its pool)."""
    probe = ctx.make_updater(ctx.namespace_of(m.janus is not None))
    probe.load_snapshot(m.updater.snapshot())
    before = probe.get_state()
    probe.restore_as_logged()
    return probe.get_state() != before


class TestPhase:
    """The held-out test phase of one method as events: TestStarted on entry, then one TestProgress per test answer
    (paid or from the cache; counted from the LLM client's usage listener, role ``test``), with the tokens paid in
    this phase so far."""

    def __init__(self, ctx, bus: EventSink, method: str, n_checkpoints: int, usage=None):
        self.usage, self.bus, self.method = usage if usage is not None else ctx.client.usage, bus, method
        self.tasks = len(ctx.test.tasks)
        self.answers = self.tasks * (1 + n_checkpoints)
        self.done, self.tokens, self.cached = 0, 0, 0

    def __enter__(self) -> TestPhase:
        self.bus.emit(TestStarted(self.method, self.tasks, self.answers))
        self.usage.add_listener(self._reply)
        return self

    def __exit__(self, *exc) -> None:
        self.usage.remove_listener(self._reply)

    def _reply(self, role: str, cached: bool, tokens: int) -> None:
        if role != "test":
            return
        self.done, self.tokens = min(self.answers, self.done + 1), self.tokens + tokens
        self.cached += int(cached)
        self.bus.emit(TestProgress(self.method, self.done, self.answers, self.tokens, self.cached))


def method_summary(ctx, m: _Method, test_records: list[dict], checkpoints: list[dict], final_memory: str,
                   usage: dict, wall_s: float) -> dict:
    c, n, with_janus = m.counters, len(ctx.stream.tasks), m.janus is not None
    n_test, test_correct = len(ctx.test.tasks), sum(r["correct"] for r in test_records)
    checker = ctx.settings.checker_mode()
    strict_correct = sum(r.get("strict_correct", r["correct"]) for r in test_records)
    post_warmup = max(0, n - int(ctx.settings.janus_config().warmup)) if with_janus else 0
    janus_only = lambda v: v if with_janus else None  # noqa: E731
    return {
        "method": m.name, "janus": with_janus, "stream_tasks": n,
        "online_accuracy": c["n_correct"] / n if n else None,
        "test_tasks": n_test, "test_correct": test_correct, "test_accuracy": test_correct / n_test if n_test else None,
        # the paper checker's accuracy above; our strict checker's on the same answers here
        **({"checker": checker, "test_correct_strict": strict_correct,
            "test_accuracy_strict": strict_correct / n_test if n_test else None} if checker == "paper" else {}),
        "triggers": janus_only(c["triggers"]),
        "trigger_rate": janus_only(c["triggers"] / post_warmup if post_warmup else 0.0),
        "accepts": janus_only(c["accepts"]), "rollbacks": janus_only(c["rollbacks"]),
        # JanusConfig.seq_reoffer: rolled-back additions offered again (not in the triggers above; janus_stats counts
        # each offer as a trigger) and how many of them were deployed
        **({"reoffers": c.get("reoffers", 0), "reoffers_deployed": c.get("reoffers_deployed", 0)}
           if with_janus and m.janus.config.decision.reoffers else {}),
        "janus_stats": m.janus.stats if with_janus else None,
        # only with the option on (the demo preset): candidates accepted unevaluated as trivially equal
        **({"trivially_equal": c.get("trivially_equal", 0)}
           if with_janus and m.janus.config.skip_trivially_equal else {}),
        # the batched evaluation's requests when some were sent ahead and never read (speculation, early stopping):
        # batches, requests (all paid), prefetched (sent ahead), served, unused (sent ahead, never read)
        **({"eval_batch": c["eval_batch"]} if with_janus and (c.get("eval_batch") or {}).get("unused") else {}),
        "updater_stats": getattr(m.updater, "stats", {}),
        "final_memory_sha256": text_hash(final_memory), "checkpoints": checkpoints,
        "usage": usage, "wall_s": round(wall_s, 2),
        **({"injections": injection.summary(c, plan)} if (plan := ctx.settings.inject_plan()) else {}),
    }


def run_method(ctx, method: str, with_janus: bool, bus: EventSink, *, resume: tuple[int, dict] | None = None,
               stop_after: int | None = None, rank: int = 0) -> dict:
    """Run one method (updater, optionally wrapped by Janus) over the stream, then the frozen test. Returns its summary.

    ``resume``: ``(last committed step, checkpoint)`` to continue from. ``stop_after`` (tests only) raises
    :class:`Stopped` after that many steps as if the process had been killed. ``rank``: the method's place in the
    run order; the method's usage is counted in its own scope of the client's meter (llm/usage.py), so methods running
    side by side (run/streams.py) count exactly what they would one after another.
    """
    with ctx.client.usage.scope(rank) as meter:
        m = _open_method(ctx, method, with_janus, resume)
        m.usage = meter
        bus.emit(MethodStarted(method, len(ctx.stream.tasks), m.start, m.updater.memory_text()))
        usage0, t0 = meter.snapshot(), time.time()
        stream(ctx, m, bus, usage0, t0, stop_after)
        final_memory = m.updater.memory_text()
        with TestPhase(ctx, bus, method, len(m.counters["eval_checkpoints"]), meter) as phase:
            test_records, checkpoints = test_wave(ctx, m)
            correct = sum(r["correct"] for r in test_records)
        usage = add_usage(m.counters["usage"], usage_delta(meter.snapshot(), usage0))
    bus.emit(TestDone(method, test_records, correct, len(test_records), phase.tokens, phase.cached))
    summary = method_summary(ctx, m, test_records, checkpoints, final_memory, usage,
                             m.counters["wall_s"] + time.time() - t0)
    bus.emit(MethodFinished(method, summary, final_memory))
    return summary
