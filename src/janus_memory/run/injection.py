"""The runner's side of injected harmful candidates (the candidates themselves: janus_memory/inject/).

* :func:`validate` / :func:`check_stream`: one-line ConfigErrors for a plan the run cannot carry out;
* :class:`Proposer`: what the stream loop (and GuardedUpdate) drives instead of the bare updater: the updater's own
  ``step(task)``, then, at a planned step, :func:`janus_memory.inject.candidates.inject_candidate`, before Janus
  decides. Both methods of a ``--controller both`` run use the same plan, seed and task order, so they get the same
  injections;
* :func:`note` / :func:`summary`: the per-method counts kept in the loop's counters (so they survive a resume) and
  summarised for summary.json (``injections``);
* :func:`console_subscriber` and :func:`next_steps`: what ``janus run`` / ``janus demo`` print about them.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from ..inject.candidates import (
    KINDS,
    InjectSpecError,
    check_plan,
    inject_candidate,
    injectable_updaters,
    parse_inject,
    summarise_injections,
    supports,
)
from ..registry import UPDATERS

LOG_KEY = "injections"  # counters key: the decision-log lines of injected steps, reduced to what the counts need


def validate(cfg) -> None:
    """ConfigError (one line) when ``cfg.inject`` names steps past ``cfg.stream_size`` or the updater cannot take
    an injected candidate. The exact stream length is checked again after the split is loaded (:func:`check_stream`)."""
    plan = parse_inject(cfg.inject)
    if not plan:
        return
    if not supports(cfg.updater):
        why = (" (its class says supports_injection but has neither load_memory_text nor its own inject_harm)"
               if getattr(UPDATERS.get(cfg.updater), "supports_injection", False) else "")
        raise ConfigError(f"--inject: updater '{cfg.updater}' cannot take an injected candidate{why}; "
                          f"supported: {', '.join(injectable_updaters())}; an updater of your own takes them with "
                          "supports_injection = True and a load_memory_text (docs/updaters.md)")
    if cfg.stream_size is not None:
        check_stream(cfg, cfg.stream_size)


def check_stream(cfg, n_steps: int) -> None:
    try:
        check_plan(parse_inject(cfg.inject), n_steps)
    except InjectSpecError as e:
        raise ConfigError(str(e)) from None


class Proposer:
    """The updater seam GuardedUpdate needs (``snapshot``, ``step``, ``rollback``) with the plan's injections.

    Call :meth:`at` with the step number and the updater snapshot taken before the step; ``step(task)`` then runs
    the updater and, when the plan names this step, replaces the candidate with the harmful one."""

    def __init__(self, updater, plan: dict[int, str], seed: int):
        self.updater, self.plan, self.seed = updater, dict(plan), int(seed)
        self._step: int = 0
        self._before: dict | None = None

    def at(self, step: int, before: dict) -> Proposer:
        self._step, self._before = step, before
        return self

    def snapshot(self) -> dict:
        return self.updater.snapshot()

    def rollback(self, snap: dict) -> None:
        self.updater.rollback(snap)

    def memory_text(self) -> str:  # GuardedUpdate checks a rollback with it
        return self.updater.memory_text()

    def load_memory_text(self, text: str) -> object:  # GuardedUpdate applies a deployed re-offer with it
        return self.updater.load_memory_text(text)

    def load_snapshot(self, snap: dict) -> None:  # and puts the state back when the updater cannot hold the text
        self.updater.load_snapshot(snap)

    def step(self, task):
        out = self.updater.step(task)
        kind = self.plan.get(self._step)
        if kind is None:
            return out
        before = self._before if self._before is not None else self.updater.snapshot()
        return inject_candidate(self.updater, out, kind, task=task, step=self._step, seed=self.seed, before=before)


def note(counters: dict, line: dict, old_memory: str | None = None, candidate: str | None = None,
         units: Any = None) -> None:
    """Keep what the counts need of an injected step's decision-log line (``line["injected"]`` set); a blocked
    candidate also keeps the keys of the lines it added (``units``: the controller's units of re-offer, lines when
    None; an updater's records), so that a later re-offer of them is told (:func:`reoffered`)."""
    from ..controller.reoffer import LINES, added_units, unit_key

    d = line.get("decision") or {}
    entry = {"step": line["step"], "injected": line["injected"], "deployed": line["deployed"],
             "decision": {"triggered": bool(d.get("triggered")), "old_score": d.get("old_score"),
                          "new_score": d.get("new_score")}}
    if line["deployed"] != "candidate" and old_memory is not None and candidate is not None:
        entry["lines"] = sorted({unit_key(u) for u in added_units(units or LINES, old_memory, candidate)} - {""})
    counters.setdefault(LOG_KEY, []).append(entry)


def reoffered(counters: dict, reoffer: dict | None, step: int) -> list[int]:
    """``JanusConfig.seq_reoffer``: a re-offer applied at ``step`` that brings back lines of an injected candidate
    blocked earlier deploys that injection after all: its entry says ``"deployed": "reoffer"`` (counted as
    deployed) with the step. The injected steps it deployed."""
    from ..controller.reoffer import offer_deployed, unit_key

    if reoffer is None or not offer_deployed(reoffer):
        return []
    keys = {unit_key(ln) for ln in reoffer.get("lines") or []}
    hit = []
    for e in counters.get(LOG_KEY, []):
        if e["deployed"] != "candidate" and e["deployed"] != "reoffer" and keys & set(e.get("lines") or ()):
            e["deployed"], e["reoffer_step"] = "reoffer", step
            hit.append(e["step"])
    return hit


def summary(counters: dict, plan: dict[int, str]) -> dict:
    """summary.json's ``injections`` of one method: :func:`janus_memory.inject.candidates.summarise_injections` plus
    the plan."""
    out = summarise_injections(counters.get(LOG_KEY, []))
    out["plan"] = ",".join(f"{k}@{s}" for s, k in sorted(plan.items()))
    out["deployed_steps"] = [x["step"] for x in counters.get(LOG_KEY, []) if x["deployed"] in ("candidate", "reoffer")]
    out["deployed_by_reoffer"] = [{"step": x["step"], "reoffer_step": x["reoffer_step"]}
                                  for x in counters.get(LOG_KEY, []) if x["deployed"] == "reoffer"]
    return out


# ------------------------------------------------------------------------------------------------ console
def outcome_text(line: dict) -> str:
    """``deployed`` / ``blocked (trigger fired, E: old 0.75 vs injected 0.25)`` for an injected step's log line."""
    d = line.get("decision") or {}
    if line.get("deployed") == "candidate":
        reason = d.get("reason")
        why: dict[object, str] = {
            "no_controller": "no controller", "warmup": "Janus warm-up", "not_triggered": "trigger did not fire"}
        return f"deployed ({why.get(reason, f'trigger fired, accepted: {reason}')}{_scores(d)})"
    return "blocked (trigger fired" + _scores(d) + ")"


def _scores(d: dict) -> str:
    o, n = d.get("old_score"), d.get("new_score")
    if o is None or n is None:
        return ""
    return f", E: old memory {o:.2f} vs injected {n:.2f}"


def console_subscriber(say: Callable[[str], None]) -> Callable[[Any], None]:
    """An event subscriber printing ``[method] step N: injected KIND candidate -> deployed|blocked (...)``."""
    from ..store.events import StepRecorded

    def on_event(ev) -> None:
        if isinstance(ev, StepRecorded) and ev.decision_line.get("injected"):
            line = ev.decision_line
            say(f"[{ev.method}] step {ev.step}: injected {line['injected']} candidate -> {outcome_text(line)}")
        if isinstance(ev, StepRecorded) and ev.decision_line.get("reoffer_of_injected"):
            steps = ", ".join(str(s) for s in ev.decision_line["reoffer_of_injected"])
            say(f"[{ev.method}] step {ev.step}: a re-offer deployed lines of the injected candidate of step {steps}")

    return on_event


def next_steps(summary_: dict) -> list[str]:
    """Closing lines of a run with injections: where to look next (the rollback's decision-log line, the report,
    and for the first injection: the memory diff of the steps around it for each method that deployed it, and for
    each method that blocked it the diff at that step against a method that deployed it, i.e. what was kept out)."""
    run, methods = summary_["run_dir"], summary_["methods"]
    inj = {m: s.get("injections") for m, s in methods.items() if s.get("injections")}
    if not inj:
        return []
    out = ["where to look next:"]
    for method, s in inj.items():
        for b in s["blocked_steps"][:1]:
            out.append(f"  the rollback of step {b['step']} ({b['kind']}): line {b['step']} of "
                       f"{run}/{method}/decisions.jsonl")
        if methods[method].get("janus") and not s["blocked_steps"] and s["deployed_steps"]:
            step = s["deployed_steps"][0]
            out.append(f"  why {method} deployed the injected candidate of step {step}: line {step} of "
                       f"{run}/{method}/decisions.jsonl (its decision: triggered, cosine, scores)")
    first = parse_inject(next(iter(inj.values()))["plan"])[0].step  # sorted by step; the same plan for every method
    out.append(f"  janus report {run}")
    took = [m for m, s in inj.items() if first in s["deployed_steps"]]  # methods that deployed the first injection
    for method in inj:
        if method in took:  # its memory changed at that step: the step diff shows the injected lines
            out.append(f"  janus memory diff {run} {first - 1} {first} --method {method}")
        elif took:  # blocked: its memory did not change; show what it kept out next to a method that took it
            out.append(f"  janus memory diff {run} {first} --methods {took[0]} {method}")
    return out


__all__ = ["KINDS", "LOG_KEY", "Proposer", "check_stream", "console_subscriber", "next_steps", "note", "outcome_text",
           "summary", "validate"]
