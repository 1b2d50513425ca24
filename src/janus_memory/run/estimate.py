"""The one line a run prints before its first step: how many LLM calls it will make and, for the embedded model,
how long that takes at the speed measured by earlier runs on this machine (run/timing.py).

Counted from the config, never guessed:

* stream: steps x the updater's declared calls per step (``Updater.llm_calls_per_step``: fewest and most);
* Janus evaluation (methods with Janus): an upper bound, 2 memories x the tasks one comparison reads at most
  (``eval_size``: the evaluation set's strategy says its size and worst case, controller/evalset/strategy.py: the
  paper's coverage + boundary + fresh in use capped by ``replay_limit``, or the panel; cut to the sequential rule's
  cap) for every step at which
  the controller can compare (``never``: none; ``periodic`` / ``random``: exactly the steps the policy picks, the same
  seeded rule the controller uses; ``mmt``: every post-warm-up step after the first, which has no momentum yet;
  ``selective`` and ``always``: every post-warm-up step; a text gate (``gate_compare``): every step, warm-up
  included). Early stopping, the sequential test, reused outcomes, the identical-memory shortcut, trivially-equal
  candidates, frozen replays and the response cache only make it smaller;
* test: test tasks x (1 + stream-fraction checkpoints) per method.

A resumed run counts what is left: methods already finished are skipped, the others continue after their last
committed step (a method whose stream is complete has only its test left), and the line ends with what is left per
method. Printed for the embedded backend (with the measured time, or "no measurement yet"), for servers (call count
only) and for the scripted fake backend (the same count, said to be free: a plumbing check shows what the same run on
a model will make).
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class CallCount:
    """LLM calls a run will make: ``stream_low``..``stream_high`` for the updaters' stream steps (high None = no
    fixed bound), ``janus`` at most for Janus's evaluations, ``test`` for the held-out tests; ``eval_size`` = the tasks
    one comparison reads at most."""

    stream_low: int
    stream_high: int | None
    janus: int
    test: int
    eval_size: int

    @property
    def most(self) -> int | None:
        return None if self.stream_high is None else self.stream_high + self.janus + self.test


def eval_size(jc) -> int:
    """Tasks one post-warm-up comparison reads at most (each under both memories), as the controller's description
    says (controller/describe.py): the evaluation set as configured (the paper's coverage + boundary + fresh roles in
    use, capped by replay_limit; or the panel), cut to the sequential rule's cap (``seq_max_pairs``, extended while
    tied); a text gate that forces a full paper-rule comparison reads the whole set."""
    from ..controller.describe import describe

    d = describe(jc)
    return d.tasks_at_most(d.configured, full=jc.gate_full_compare)


def janus_calls(jc, first: int, last: int) -> int:
    """At most this many evaluation calls at stream steps ``first``..``last`` (1-based, inclusive): 2 memories x
    :func:`eval_size` at every post-warm-up step where the controller may compare (the trigger's steps; every step when
    a text gate may force a comparison), plus the warm-up comparisons the selective trigger (``arm_warmup``) or a text
    gate may make: 2 x the tasks seen so far, at most K + K_F, cut to the rule's cap."""
    from ..controller.describe import describe
    from ..controller.strategy import eval_set_for
    from ..controller.trigger import TriggerPolicy

    t = jc.trigger
    gate = t.gated
    if t.kind == "never" and not gate:
        return 0
    d = describe(jc)
    per = eval_set_for(jc).calls_at_most(None if t.gate_full_compare else d.cap)  # the strategy's worst case
    post = range(max(first, jc.warmup + 1), last + 1)
    warm = 0
    if gate or (t.kind == "selective" and t.arm_warmup):  # compared on up to K + K_F of the tasks seen so far
        warm = sum(2 * d.tasks_at_most(min(d.warmup_reads, s), full=t.gate_full_compare)
                   for s in range(first, min(last, jc.warmup) + 1))
    if gate or t.kind in ("selective", "always"):
        return warm + per * len(post)
    if t.kind == "mmt":
        return warm + per * len([s for s in post if s >= jc.warmup + 2])
    policy = TriggerPolicy(t.kind, float(t.tau), float(t.rate), t.period, jc.warmup, jc.seed)
    return warm + per * sum(1 for s in post if policy.fires(s, None))


def count_calls(cfg, n_stream: int, n_test: int, done: dict[str, int | None] | None = None) -> CallCount | None:
    """The calls of ``cfg`` (resolved) over a stream of ``n_stream`` and a test of ``n_test`` tasks. ``done`` maps a
    method to its last committed step (resume), or to None when it is finished. None: the updater declares no
    calls per step."""
    from ..registry import UPDATERS
    from ..updaters.base import COMMON_DEFAULTS

    cls = UPDATERS[cfg.updater]
    per_step = cls.llm_calls_per_step({**COMMON_DEFAULTS, **cls.DEFAULTS, **cfg.updater_settings()})
    if per_step is None:
        return None
    low, high = per_step
    jc = cfg.janus_config()
    checkpoints = len({max(1, round(n_stream * f)) for f in cfg.checkpoints if f < 1.0}) if n_stream else 0
    stream_low, janus, test = 0, 0, 0
    stream_high: int | None = 0
    for method, with_janus in cfg.methods():
        start = (done or {}).get(method, 0)
        if start is None:
            continue
        steps = max(0, n_stream - start)
        stream_low += math.floor(steps * low + 1e-9)
        stream_high = None if high is None or stream_high is None else stream_high + math.ceil(steps * high - 1e-9)
        janus += janus_calls(jc, start + 1, n_stream) if with_janus else 0
        test += n_test * (1 + checkpoints)
    return CallCount(stream_low, stream_high, janus, test, eval_size(jc))


def janus_bound(jc, size: int) -> str:
    """What the Janus part of the estimate counts, in words: 2 memories x ``size`` tasks per comparison, with the
    evaluation set the controller's description names, and why the real count is usually lower."""
    from ..controller.describe import describe

    d = describe(jc)
    lower = []
    if jc.decision_rule == "sequential":
        lower.append("the sequential test stops early")
    if jc.reuse_old_results:
        lower.append("the deployed memory's outcomes are reused")
    if jc.early_stop:
        lower.append("early stopping")
    why = f"; usually fewer: {' and '.join(lower)}" if lower else ""
    return (f"upper bound: 2 memories x {size} tasks at each step the controller may compare; evaluation set: "
            f"{d.evaluation}{why}")


def duration_text(seconds: float) -> str:
    """A time ahead, rounded as an estimate deserves: '~8 s', '~40 s', '~7 min', '~1.5 h' (the run header's estimate
    and the progress line's time left say it the same way)."""
    if seconds < 90:
        return f"~{max(1, round(seconds / 10) * 10 if seconds >= 20 else round(seconds))} s"
    if seconds < 90 * 60:
        return f"~{round(seconds / 60)} min"
    return f"~{seconds / 3600:.1f} h"


def left_text(cfg, n_stream: int, done: dict[str, int | None]) -> str:
    """What a resumed run has left, per method: 'dc_rs done, dc_rs+janus steps 8-12 + test' (``done`` as in
    :func:`count_calls`)."""
    parts = []
    for method, _ in cfg.methods():
        start = done.get(method, 0)
        if start is None:
            parts.append(f"{method} done")
        elif start >= n_stream:
            parts.append(f"{method} test only (stream done {n_stream}/{n_stream})")
        else:
            parts.append(f"{method} steps {start + 1}-{n_stream} + test")
    return ", ".join(parts)


def estimate_line(cfg, count: CallCount | None, measurement=None, left: str | None = None) -> str | None:
    """The estimate line of a run (module docstring); None when nothing is left to do.
    ``left``: what a resumed run has left (:func:`left_text`), named at the end of the line."""
    line = _estimate_line(cfg, count, measurement)
    return f"{line}; left after resume: {left}" if line and left else line


def _estimate_line(cfg, count: CallCount | None, measurement=None) -> str | None:
    if count is None:
        from ..registry import UPDATERS

        return (f"estimate: none (updater '{cfg.updater}' does not declare its LLM calls per step: "
                f"{UPDATERS[cfg.updater].__name__}.llm_calls_per_step)")
    if count.most == 0:
        return None
    stream = f"{count.stream_low}" if count.stream_low == count.stream_high else \
        f"{count.stream_low}-{count.stream_high}" if count.stream_high is not None else f"{count.stream_low} or more"
    janus = (f" + Janus evaluation {count.janus} ({janus_bound(cfg.janus_config(), count.eval_size)})"
             if any(j for _, j in cfg.methods()) else "")
    parts = f"calls = stream {stream}{janus} + test {count.test}"
    bound, calls = ("at most", count.most) if count.most is not None else ("at least", count.stream_low + count.test)
    head = f"estimate: {bound} {calls} LLM calls"
    if cfg.llm.backend == "fake":
        return f"{head} (scripted replies, nothing paid; a model backend makes the same calls); {parts}"
    if cfg.llm.backend != "local":
        return f"{head}; {parts}"
    if measurement is None:
        return f"{head} (no measurement yet of this model on this machine: each finished run records one); {parts}"
    runs = f"last {measurement.runs} run{'s' if measurement.runs > 1 else ''}"
    return (f"{head} x ~{measurement.s_per_call:.1f} s per call measured on this machine ({measurement.tokens_per_s:.1f} "
            f"tokens/s, {runs}) = {bound} {duration_text(calls * measurement.s_per_call)}; {parts}")


def run_estimate(ctx, done: dict[str, int | None] | None = None) -> str | None:
    """The estimate line of a built run context (resolved settings, loaded splits, backend not loaded yet)."""
    cfg = ctx.settings
    count = count_calls(cfg, len(ctx.stream.tasks), len(ctx.test.tasks), done)
    measurement = None
    if cfg.llm.backend == "local":
        from .timing import read_measurement

        ident = ctx.backend_info.get("identity", "")
        measurement = read_measurement(ident, int(getattr(ctx.client.backend, "n_parallel", 1)))
    left = left_text(cfg, len(ctx.stream.tasks), done) if done is not None else None
    return estimate_line(cfg, count, measurement, left)


def resume_progress(root, methods) -> dict[str, int | None]:
    """{method: last committed step, or None when finished} of a run folder being resumed."""
    from ..store.reader import RunReader

    reader = RunReader(root)
    out: dict[str, int | None] = {}
    for method, _ in methods:
        if reader.method_result(method) is not None:
            out[method] = None
        else:
            ck = reader.checkpoint(method)
            out[method] = ck[0] if ck else 0
    return out


def log_estimate(ctx, root, resume: bool, log) -> None:
    """Print the estimate line (run_experiment, before the first step). An estimate that cannot be computed says so
    in its line and never stops the run."""
    try:
        line = run_estimate(ctx, resume_progress(root, ctx.settings.methods()) if resume else None)
    except Exception as e:  # noqa: BLE001 - the estimate is advice; the run goes on without it
        line = f"estimate: unavailable ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
    if line:
        log(line)


def record_timing(ctx) -> None:
    """After a finished embedded-model run: add its measured speed to the record (run/timing.py): the backend
    calls this process made, the model's busy time over them (llm/usage.py, minus the model load) and their
    generated tokens."""
    if ctx.settings.llm.backend != "local":
        return
    from .timing import record_run

    try:  # the run is already stored: a bad record file must not end it with a traceback
        _record(record_run, ctx, ctx.client.usage.total())
    except (OSError, ValueError, OverflowError, RecursionError, TypeError):
        pass


def _record(record_run, ctx, total) -> None:
    backend = ctx.client.backend
    busy = ctx.client.usage.busy_seconds() - float(getattr(backend, "load_s", 0.0) or 0.0)
    record_run(str(ctx.backend_info.get("identity", "")), int(getattr(backend, "n_parallel", 1)),
               calls=int(total["calls"]), busy_s=busy, completion_tokens=int(total["completion_tokens"]))
