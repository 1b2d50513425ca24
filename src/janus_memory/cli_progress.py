"""Console progress of `janus run`/`janus demo`, built on the typed run events (runner/events.py).

- On a terminal: per method and phase one labelled line plus a bar below it (two lines, so nothing is cut in an
  80-column terminal): the stream (``online acc``, triggers, ``tokens paid`` in the stream) and then the held-out
  test (answers so far, ``tokens paid`` in the test phase), each with steps/answers, elapsed and time left.
- Not on a terminal (``| tee``, nohup, CI): one plain line per stream step, e.g.
  ``[dc_rs+janus] step 22/30 correct  trig cos=-0.383 accepted   acc 0.818  12.3s``, and one line when a method's
  test starts and one when it ends (n, accuracy, tokens paid in the test, answers that could not be scored).
- Not on a terminal, a step or test answer that takes long (a slow model call, a loaded machine) is never silent: every
  ``interval`` seconds (30) without a line, one ``... still running`` line says which step or test answer the run is
  on, the tokens paid so far and the elapsed time (``Heartbeat`` calls ``ConsoleProgress.tick`` from a thread).
- At start (embedded model only): a warning when the 1-minute load average exceeds the CPU cores (``load_warning``).
- Either way, one line per Janus trigger: step, cosine, |E| by role, old vs new score, decision and a one-line summary
  of the candidate's change to the memory (lines added / removed). A task drawn in two roles is named, with whether it
  was solved once (E de-duplicated) or once per role (the paper preset keeps duplicates).
"""
from __future__ import annotations

import os
import threading
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
    """The plain per-step line (non-TTY); the step number is right-aligned to the width of the total, so the
    columns stay put from step 9/30 to step 10/30."""
    if not decision.get("triggered"):
        reason = decision.get("reason")
        what = "no controller" if reason == "no_controller" else f"skip {_cos(decision)} ({reason})"
    else:
        what = f"trig {_cos(decision)} {'accepted' if decision.get('accept') else 'rolled back'}"
    return (f"[{method}] step {step:>{len(str(total))}}/{total} {'correct' if correct else 'wrong':<7} {what:<34} "
            f"acc {acc:.3f}  {elapsed:.1f}s")


def trigger_line(method: str, step: int, decision: dict, change: str) -> str:
    """One line per trigger: step, cosine, |E| by role, old vs new score, decision, one-line diff summary. When
    fewer than |E| tasks were compared (early stopping), and always under the sequential rule, the line says how
    many, and the scores are over those."""
    roles = [list(decision.get(k) or []) for k in ("coverage", "boundary", "fresh")]
    sizes = "+".join(str(len(r)) for r in roles)
    eval_ids = list(decision.get("eval_ids") or [])
    n = len(eval_ids)
    shared = sum(len(r) for r in roles) - len({t for r in roles for t in r})  # a task drawn in two roles
    if shared:
        # E is de-duplicated (JanusConfig.dedup) or not (the paper preset): eval_ids then holds such a task once
        # per role, and each copy was solved under both memories
        repeats = n - len(set(eval_ids))
        how = ("solved once" if not repeats else "solved in each role" if repeats >= shared
               else f"{repeats} of them solved in each role")
        sizes += f"; {shared} task{'s' if shared > 1 else ''} in two roles, {how}"
    old, new = decision.get("old_score"), decision.get("new_score")
    scores = "old ? vs new ?" if old is None or new is None else f"old {old:.3f} vs new {new:.3f}"
    oc, nc = decision.get("old_correct"), decision.get("new_correct")
    seq = str(decision.get("reason") or "").startswith("sprt_")
    if oc is not None and nc is not None and n and (seq or len(oc) < n or len(nc) < n):
        # the sequential test (always said) or early stopping compared on a prefix of E: the scores are over it
        scores = (f"compared on 0 of {n}" if not oc and not nc else
                  f"compared on {len(oc)} of {n}: {scores}" if len(oc) == len(nc) else
                  f"old scored on {len(oc)}, new on {len(nc)} of {n}: {scores}")
    verdict = "ACCEPT" if decision.get("accept") else "ROLLBACK"
    return (f"[{method}] trigger at step {step}: {_cos(decision)} |E|={n} (coverage+boundary+fresh {sizes}) "
            f"{scores} -> {verdict} ({decision.get('reason')}); candidate {change}")


def test_start_line(method: str, tasks: int, answers: int) -> str:
    """The plain line when a method's held-out test starts."""
    k = answers // tasks - 1 if tasks else 0
    extra = f" and {k} checkpoint memor{'y' if k == 1 else 'ies'} ({answers} answers)" if k > 0 else ""
    return f"[{method}] test: {tasks} held-out tasks with the frozen memory{extra}"


def paid(tokens: int, cached: int, what: str = "responses") -> str:
    """'tokens paid 1,234' plus, when some came from the response cache, how many (they cost no tokens)."""
    return f"tokens paid {tokens:,}" + (f" ({cached:,} {what} from the response cache)" if cached else "")


def test_done_line(method: str, correct: int, total: int, tokens: int, unscored: int, elapsed: float,
                   cached: int = 0) -> str:
    """The plain line when a method's held-out test ends."""
    acc = f"acc {correct / total:.3f}" if total else "acc -"
    bad = f"; {unscored} answers could not be scored (listed at the end)" if unscored else ""
    return (f"[{method}] test done: {correct}/{total} correct ({acc}), {paid(tokens, cached, 'answers')}, "
            f"{elapsed:.1f}s{bad}")


def stream_description(ev) -> str:
    """The label above a method's stream bar (terminal)."""
    trig = "" if (ev.decision or {}).get("reason") == "no_controller" else \
        f", triggers {ev.triggers} (accepted {ev.accepts}, rolled back {ev.rollbacks})"
    return f"{ev.method} stream: online acc {ev.online_acc:.2f}{trig}, {paid(ev.tokens, ev.cache_hits)}"


def test_description(ev) -> str:
    """The label above a method's test bar (terminal): answers so far, or the result once done."""
    from .runner.events import TestDone

    if not isinstance(ev, TestDone):
        return f"{ev.method} test (frozen memory): {paid(ev.tokens, ev.cached, 'answers')}"
    acc = f"test acc {ev.correct / ev.total:.3f} ({ev.correct}/{ev.total})" if ev.total else "no test tasks"
    return f"{ev.method} test done: {acc}, {paid(ev.tokens, ev.cached, 'answers')}"


def _unscored(records) -> int:
    return sum(1 for r in records if isinstance(r, dict) and r.get("status") not in (None, "ok", "fallback"))


def load_warning(loadavg=None, cores=None) -> str | None:
    """The start-of-run warning when the 1-minute load average exceeds the CPU cores, else None (``loadavg`` and
    ``cores`` default to os.getloadavg and os.cpu_count)."""
    try:
        load, n = (loadavg or os.getloadavg)()[0], (cores or os.cpu_count)() or 1
    except OSError:  # no load average on this system
        return None
    if load <= n:
        return None
    return (f"warning: the 1-minute load average is {load:.1f} on {n} CPU core{'s' if n != 1 else ''}: other "
            "processes are using the CPU; times will be longer than estimated")


def _clock_text(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class ConsoleProgress:
    """An event subscriber: rich bars (``bars`` = a rich Progress) or plain lines (``bars`` None) plus trigger lines.

    ``say(text)`` prints one line. ``clock`` (elapsed times of the lines) and ``beat_clock`` (the heartbeat's) are
    injectable for tests; ``interval``: seconds without a line after which :meth:`tick` prints a ``still running``
    line (plain lines only)."""

    def __init__(self, say, bars=None, *, plain_steps: bool = True, clock=time.monotonic, interval: float = 30.0,
                 beat_clock=time.monotonic):
        self.bars, self.plain_steps, self.clock, self.interval = bars, plain_steps, clock, interval
        self.beat_clock = beat_clock
        self._say = say
        self._task: dict[tuple[str, str], int] = {}
        self._total: dict[tuple[str, str], int] = {}
        self._memory: dict[str, str] = {}
        self._t0: dict[str, float] = {}
        self._change: dict[tuple[str, int], str] = {}
        self._lock = threading.Lock()
        self._last_line = beat_clock()
        self._doing: dict | None = None  # what the run works on now: method, what, tokens paid so far, since

    def say(self, text: str) -> None:
        with self._lock:
            self._last_line = self.beat_clock()
        self._say(text)

    def tick(self) -> None:
        """Called every few seconds (Heartbeat): after ``interval`` seconds without a line, one line naming the step or
        test answer in progress, the tokens paid so far and the elapsed time."""
        if self.bars is not None:
            return
        with self._lock:
            doing, now = self._doing, self.beat_clock()
            if doing is None or now - self._last_line < self.interval:
                return
            quiet = now - self._last_line
        elapsed = now - doing["since"]
        self.say(f"[{doing['method']}] {doing['what']} still running: no line for {_clock_text(quiet)} (a long model "
                 f"call); tokens paid so far {doing['tokens']:,}, elapsed {_clock_text(elapsed)}")

    def _doing_now(self, method: str, what: str, tokens: int, *, start: bool = False) -> None:
        with self._lock:
            since = self.beat_clock() if start or not self._doing else self._doing["since"]
            self._doing = {"method": method, "what": what, "tokens": tokens, "since": since}

    def __call__(self, ev) -> None:
        from .runner import events as E

        self._track(ev)
        if isinstance(ev, E.MethodStarted):
            self._memory[ev.method] = ev.initial_memory
            self._t0[ev.method] = self.clock()
            if ev.resumed_after:
                self.say(f"[{ev.method}] resuming after step {ev.resumed_after}/{ev.total}")
        elif isinstance(ev, E.StepRecorded):
            old = self._memory.get(ev.method, "")
            if (ev.decision_line.get("decision") or {}).get("triggered"):
                self._change[(ev.method, ev.step)] = diff_summary(old, ev.candidate[0] or "")
            self._memory[ev.method] = ev.deployed_memory
        elif isinstance(ev, E.StepFinished):
            self._finished(ev)
        elif isinstance(ev, (E.TestStarted, E.TestProgress, E.TestDone)):
            self._test(ev)

    def _track(self, ev) -> None:
        """What the run works on after ``ev`` (for tick)."""
        from .runner import events as E

        if isinstance(ev, E.MethodStarted):
            self._doing_now(ev.method, f"step {ev.resumed_after + 1}/{ev.total}", 0, start=True)
        elif isinstance(ev, E.StepFinished):
            self._doing_now(ev.method, f"step {ev.step + 1}/{ev.total}" if ev.step < ev.total else "held-out test",
                            ev.tokens)
        elif isinstance(ev, E.TestStarted):
            self._doing_now(ev.method, f"test answer 1/{ev.answers}", (self._doing or {}).get("tokens", 0))
        elif isinstance(ev, E.TestProgress):
            self._doing_now(ev.method, f"test answer {min(ev.done + 1, ev.answers)}/{ev.answers}", ev.tokens)
        elif isinstance(ev, (E.TestDone, E.MethodFinished)):
            with self._lock:
                self._doing = None

    def _bar(self, method: str, phase: str, total: int, unit: str, description: str) -> int:
        key = (method, phase)
        if key not in self._task:
            self._task[key] = self.bars.add_task(description, total=total, unit=unit)
            self._total[key] = total
        return self._task[key]

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
        task = self._bar(ev.method, "stream", ev.total, "steps", stream_description(ev))
        self.bars.update(task, completed=ev.step, description=stream_description(ev))

    def _test(self, ev) -> None:
        from .runner import events as E

        key = (ev.method, "test")
        if isinstance(ev, E.TestStarted):
            self._t0[key] = self.clock()
            if self.bars is None:
                self.say(test_start_line(ev.method, ev.tasks, ev.answers))
            else:
                self._bar(ev.method, "test", ev.answers, "answers", test_description(E.TestProgress(ev.method, 0, 0, 0)))
        elif isinstance(ev, E.TestProgress):
            if self.bars is not None:
                task = self._bar(ev.method, "test", ev.answers, "answers", test_description(ev))
                self.bars.update(task, completed=ev.done, description=test_description(ev))
        elif self.bars is None:
            now = self.clock()
            self.say(test_done_line(ev.method, ev.correct, ev.total, ev.tokens, _unscored(ev.records),
                                    now - self._t0.get(key, now), ev.cached))
        elif key in self._task:
            self.bars.update(self._task[key], completed=self._total[key], description=test_description(ev))


class Heartbeat:
    """A daemon thread calling ``progress.tick()`` every ``every`` seconds while the block runs."""

    def __init__(self, progress: ConsoleProgress | None, every: float = 2.0):
        self.progress, self.every = progress, every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.progress.tick()
            except Exception:  # noqa: BLE001 - a closed stdout: the main thread sees it at its next line
                return

    def __enter__(self) -> "Heartbeat":
        if self.progress is not None and self.progress.bars is None:
            self._thread = threading.Thread(target=self._loop, name="janus-progress-heartbeat", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def make_bars(console, disable: bool):
    """The rich Progress of a terminal run: per task a label line (folded, never cut) and a bar line with
    steps/answers, 'elapsed' and 'left' times."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from rich.text import Text

    class TwoLineProgress(Progress):
        def get_renderables(self):
            shown = [t for t in self.tasks if t.visible]
            if not shown:  # before the first task (start-up): one stable empty line, redrawn in place (an empty
                yield Text("")  # render made rich's live display add a fresh blank line at every refresh)
            for task in shown:
                yield Text(task.description, overflow="fold")
                yield self.make_tasks_table([task])

    return TwoLineProgress(TextColumn(" "), BarColumn(bar_width=None),
                           TextColumn("{task.completed}/{task.total} {task.fields[unit]}"),
                           TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                           console=console, disable=disable, transient=False, expand=True)
