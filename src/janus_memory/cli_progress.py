"""Console progress of `janus run`/`janus demo`, built on the typed run events (runner/events.py).

- On a terminal: one rich bar per method with labelled counters (``acc``, ``trig``, ``tokens paid`` = uncached) and elapsed time.
- Not on a terminal (``| tee``, nohup, CI): one plain line per stream step, e.g.
  ``[dc_rs+janus] step 22/30 correct  trig cos=-0.383 accepted   acc 0.818  12.3s``
- Either way, one line per Janus trigger: step, cosine, |E| by role, old vs new score, decision and a one-line summary
  of the candidate's change to the memory (lines added / removed).
"""
from __future__ import annotations

import time


def diff_summary(old: str, new: str) -> str:
    """'+a -b lines' between two memory texts (multiset of lines), or 'no change'."""
    from collections import Counter

    a, b = Counter(old.splitlines()), Counter(new.splitlines())
    added, removed = sum((b - a).values()), sum((a - b).values())
    if not added and not removed:
        return "no change"
    return f"+{added} -{removed} lines ({len(old)} -> {len(new)} chars)"


def _cos(d: dict) -> str:
    c = d.get("cosine")
    return "cos=n/a" if c is None else f"cos={c:+.3f}"


def step_line(method: str, step: int, total: int, correct: bool, decision: dict, acc: float, elapsed: float) -> str:
    """The plain per-step line (non-TTY)."""
    if not decision.get("triggered"):
        reason = decision.get("reason")
        what = "no controller" if reason == "no_controller" else f"skip {_cos(decision)} ({reason})"
    else:
        what = f"trig {_cos(decision)} {'accepted' if decision.get('accept') else 'rolled back'}"
    return (f"[{method}] step {step}/{total} {'correct' if correct else 'wrong':<7} {what:<34} "
            f"acc {acc:.3f}  {elapsed:.1f}s")


def trigger_line(method: str, step: int, decision: dict, change: str) -> str:
    """One line per trigger: step, cosine, |E| by role, old vs new score, decision, one-line diff summary."""
    sizes = "+".join(str(len(decision.get(k) or [])) for k in ("coverage", "boundary", "fresh"))
    n = len(decision.get("eval_ids") or [])
    old, new = decision.get("old_score"), decision.get("new_score")
    scores = "old ? vs new ?" if old is None or new is None else f"old {old:.3f} vs new {new:.3f}"
    verdict = "ACCEPT" if decision.get("accept") else "ROLLBACK"
    return (f"[{method}] trigger at step {step}: {_cos(decision)} |E|={n} (coverage+boundary+fresh {sizes}) "
            f"{scores} -> {verdict} ({decision.get('reason')}); candidate {change}")


class ConsoleProgress:
    """An event subscriber: rich bars (``bars`` = a rich Progress) or plain lines (``bars`` None) plus trigger lines.

    ``say(text)`` prints one line. ``clock`` is injectable for tests."""

    def __init__(self, say, bars=None, *, plain_steps: bool = True, clock=time.monotonic):
        self.say, self.bars, self.plain_steps, self.clock = say, bars, plain_steps, clock
        self._task: dict[str, int] = {}
        self._memory: dict[str, str] = {}
        self._t0: dict[str, float] = {}
        self._change: dict[tuple[str, int], str] = {}

    def __call__(self, ev) -> None:
        from .runner.events import MethodStarted, StepFinished, StepRecorded

        if isinstance(ev, MethodStarted):
            self._memory[ev.method] = ev.initial_memory
            self._t0[ev.method] = self.clock()
            if ev.resumed_after:
                self.say(f"[{ev.method}] resuming after step {ev.resumed_after}/{ev.total}")
        elif isinstance(ev, StepRecorded):
            old = self._memory.get(ev.method, "")
            if (ev.decision_line.get("decision") or {}).get("triggered"):
                self._change[(ev.method, ev.step)] = diff_summary(old, ev.candidate[0] or "")
            self._memory[ev.method] = ev.deployed_memory
        elif isinstance(ev, StepFinished):
            self._finished(ev)

    def _finished(self, ev) -> None:
        now = self.clock()
        elapsed = now - self._t0.setdefault(ev.method, now)
        d = ev.decision or {}
        if d.get("triggered"):
            self.say(trigger_line(ev.method, ev.step, d, self._change.pop((ev.method, ev.step), "change unknown")))
        if self.bars is None:
            if self.plain_steps:
                self.say(step_line(ev.method, ev.step, ev.total, ev.correct, d, ev.online_acc, elapsed))
            return
        if ev.method not in self._task:
            self._task[ev.method] = self.bars.add_task(ev.method, total=ev.total)
        desc = (f"{ev.method:<16} acc {ev.online_acc:.2f} trig {ev.triggers} acc/rb {ev.accepts}/{ev.rollbacks} "
                f"tokens paid {ev.tokens:,}")
        self.bars.update(self._task[ev.method], completed=ev.step, description=desc)


def make_bars(console, disable: bool):
    """The rich Progress of a terminal run: labelled counters, 'elapsed' and 'left' times."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} steps"),
                    TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                    console=console, disable=disable, transient=False)
