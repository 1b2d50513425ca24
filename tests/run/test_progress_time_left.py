"""The time left a run shows (no silent minute, an honest estimate): the model's speed measured over its
recent calls (llm/live.py), calls still running included; the calls left from the run's settings and progress; replies
from the response cache never feeding the speed; a still-running line before the first step and while the model
loads. Time comes from injected clocks; nothing asserts on wall time."""
from __future__ import annotations

import re

import pytest

from janus_memory.cli.progress import ConsoleProgress, TimeLeft
from janus_memory.llm.live import LiveTokens
from janus_memory.run.estimate import duration_text
from janus_memory.store.events import MethodFinished, MethodStarted, StepFinished, TestProgress, TestStarted


class Clock:
    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_rate_is_tokens_over_busy_time_of_the_last_calls():
    clock = Clock()
    live = LiveTokens(clock=clock, window=3)
    assert live.rate() is None
    h = live.open()
    clock.t += 10
    live.close(h, 100)  # 100 tokens in 10 s
    r = live.rate()
    assert (r.tokens_per_s, r.tokens_per_call, r.s_per_call, r.calls) == (10.0, 100.0, 10.0, 1)
    a, b = live.open(), live.open()  # two calls decoded together: their time counts once
    clock.t += 20
    live.close(a, 100)
    live.close(b, 100)
    r = live.rate()
    assert (r.tokens_per_s, r.calls) == (10.0, 3) and r.s_per_call == pytest.approx(10.0)
    bad = live.open()
    clock.t += 50
    live.close(bad)  # an error: no reply, not measured
    assert live.rate().calls == 3 and live.rate().tokens_per_s == 10.0


def test_a_slow_call_still_running_slows_the_rate_at_once():
    clock = Clock()
    live = LiveTokens(clock=clock)
    h = live.open()
    clock.t += 5
    live.close(h, 50)  # 10 tokens/s
    slow = live.open()
    clock.t += 45  # the machine got busy: 5 tokens in 45 s so far
    live.add(slow, 5)
    r = live.rate()
    assert r.tokens_per_s == pytest.approx(55 / 50) and r.s_per_call == pytest.approx(50 / (55 / 50))
    live.reset()
    assert live.rate() is None


def test_window_keeps_only_the_last_calls():
    clock = Clock()
    live = LiveTokens(clock=clock, window=2)
    for secs in (100, 1, 1):  # a slow call long ago, then two fast ones
        h = live.open()
        clock.t += secs
        live.close(h, 10)
    assert live.rate().tokens_per_s == 10.0


class Rate:
    def __init__(self, s_per_call, tokens_per_s=12.5, calls=4):
        self.s_per_call, self.tokens_per_s, self.calls = s_per_call, tokens_per_s, calls


def test_time_left_text():
    seen = {}

    def calls_left(done, answered):
        seen["args"] = (dict(done), dict(answered))
        return 40

    rate = [None]
    left = TimeLeft(calls_left, rate=lambda: rate[0])
    assert left.text() == "left: measured after the first model call" and left.estimate() is None
    rate[0] = Rate(9.0)
    assert left.text() == "left <= ~6 min"
    assert left.text(long=True) == ("left <= ~6 min (at most 40 calls x 9 s at 12.5 tokens/s, measured over the last "
                                    "4 calls)")
    left.track(MethodStarted("m", 5, 2, ""))
    left.track(StepFinished("m", 3, 5, True, {}, 1.0, 0, 0, 0, 10))
    left.track(TestProgress("x", 2, 3, 5))
    left.track(MethodFinished("y", {}, ""))
    left.estimate()
    assert seen["args"] == ({"m": 3, "y": None}, {"x": 2})
    assert TimeLeft(lambda d, a: None, rate=lambda: Rate(1)).text().startswith("left: unknown")
    assert TimeLeft(lambda d, a: 0, rate=lambda: None).text() == "left: ~0 s"


@pytest.mark.parametrize("seconds,text", [(4, "~4 s"), (37, "~40 s"), (95, "~2 min"), (420, "~7 min"),
                                          (5400, "~1.5 h")])
def test_duration_rounding(seconds, text):
    assert duration_text(seconds) == text


def test_plain_lines_carry_the_time_left_and_the_still_running_line_says_it_long():
    lines: list[str] = []
    clock = Clock()
    left = TimeLeft(lambda d, a: 10 - (d.get("m") or 0) * 2, rate=lambda: Rate(6.0))
    prog = ConsoleProgress(lines.append, None, clock=lambda: 0.0, beat_clock=clock, live_tokens=lambda: 0,
                           time_left=left, note=lambda: "")
    prog(MethodStarted("m", 5, 0, ""))
    prog(StepFinished("m", 1, 5, True, {"reason": "no_controller"}, 1.0, 0, 0, 0, 10))
    assert lines[-1].endswith("  left <= ~50 s")  # 8 calls x 6 s
    clock.t += 31
    prog.tick()
    assert lines[-1].endswith("elapsed 31s; left <= ~50 s (at most 8 calls x 6 s at 12.5 tokens/s, measured over the "
                              "last 4 calls)")


def test_start_up_and_model_load_are_never_silent():
    lines: list[str] = []
    clock = Clock()
    note = [""]
    prog = ConsoleProgress(lines.append, None, clock=lambda: 0.0, beat_clock=clock, live_tokens=lambda: 0,
                           note=lambda: note[0])
    clock.t += 30
    prog.tick()  # nothing happened yet: the data, the encoder and the model are being set up
    assert lines == ["[run] start-up still running: no line for 30s (loading data and encoder); tokens paid so far 0, "
                     "elapsed 30s"]
    prog(MethodStarted("m", 5, 0, ""))
    note[0] = "loading the model (model.gguf)"
    clock.t += 40
    prog.tick()
    assert lines[-1] == ("[m] step 1 of 5 still running: no line for 40s (loading the model (model.gguf)); tokens paid "
                         "so far 0, elapsed 40s")


def test_the_bars_show_the_time_left_on_the_bar_in_progress_only():
    class Bars:
        def __init__(self):
            self.fields = {}

        def add_task(self, description, total, **fields):
            self.fields[len(self.fields) + 1] = dict(fields)
            return len(self.fields)

        def update(self, task, **kw):
            self.fields[task].update({k: v for k, v in kw.items() if k == "left"})

    bars = Bars()
    left = TimeLeft(lambda d, a: 12, rate=lambda: Rate(10.0))
    prog = ConsoleProgress(lambda s: None, bars, clock=lambda: 0.0, time_left=left)
    prog(MethodStarted("m", 2, 0, ""))
    prog(StepFinished("m", 1, 2, True, {"reason": "no_controller"}, 1.0, 0, 0, 0, 10))
    assert bars.fields[1]["left"] == "left <= ~2 min"
    prog(StepFinished("m", 2, 2, True, {"reason": "no_controller"}, 1.0, 0, 0, 0, 20))
    prog(TestStarted("m", 3, 3))
    prog(TestProgress("m", 1, 3, 30))
    assert bars.fields[1]["left"] == "" and bars.fields[2]["left"] == "left <= ~2 min"


# ------------------------------------------------------------------------------------------------ a whole run
class SlowBackend:
    """The scripted backend behind a model that generates 10 tokens per second on an injected clock, reporting
    every call it serves to ``live`` as the embedded engine does (llm/local.py)."""

    def __init__(self, inner, live: LiveTokens, clock: Clock):
        self.inner, self.live, self.clock = inner, live, clock
        self.model, self.identity = inner.model, inner.identity + ":slow"
        self.calls = 0

    async def acomplete(self, req):
        h = self.live.open()
        res = await self.inner.acomplete(req)
        self.clock.t += res.usage.completion_tokens / 10.0
        self.live.close(h, res.usage.completion_tokens)
        self.calls += 1
        return res

    async def aclose(self):
        return None


def test_a_run_whose_second_method_is_served_from_the_cache_keeps_the_measured_speed(tmp_path, monkeypatch):
    import janus_memory.run.backends  # noqa: F401  (registers the built-in backends before the patch)
    from janus_memory.registry import BACKENDS
    from janus_memory.run.build import load_splits
    from janus_memory.run.estimate import count_calls
    from janus_memory.run.experiment import run_experiment
    from janus_memory.run.fake_llm import scripted_backend
    from janus_memory.settings.config import RunConfig

    clock, live = Clock(), LiveTokens(clock=Clock())
    live.clock = clock
    made = []

    def slow(cfg, tasks):
        made.append(SlowBackend(scripted_backend(tasks), live, clock))
        return made[-1]

    monkeypatch.setitem(BACKENDS, "fake", slow)
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    cfg = RunConfig(backend="fake", dataset="rules_small", stream_size=4, test_size=2, encoder="hashing:64",
                    preset="small", controller="both", janus={"warmup": 10}, out=str(tmp_path / "run"))
    stream, test = load_splits(cfg)

    def calls_left(done, answered):
        c = count_calls(cfg, len(stream.tasks), len(test.tasks), done)
        return c.most - sum(answered.values())

    lines: list[str] = []
    speeds: list[float] = []
    left = TimeLeft(calls_left, rate=live.rate)
    prog = ConsoleProgress(lines.append, None, clock=lambda: 0.0, beat_clock=clock, live_tokens=live.total,
                           time_left=left, note=lambda: "")

    def on_event(ev):
        prog(ev)
        if isinstance(ev, StepFinished) and live.rate() is not None:
            speeds.append(round(live.rate().s_per_call, 6))

    run_experiment(cfg, log=lambda m: None, on_event=on_event)
    steps = [ln for ln in lines if " step " in ln and "/4 " in ln]
    assert len(steps) == 8
    paid = made[0].calls
    assert paid == 4 * 2 + 2  # the blind stream (curator + solver per step) and its test: the twin's are cache hits
    rate = live.rate()
    assert rate.calls == paid and rate.tokens_per_s == pytest.approx(10.0)
    assert len(set(speeds[4:])) == 1  # the twin's steps (all from the cache) do not move the measured speed
    for ln in steps:
        m = re.search(r"left <= ~(\d+) (s|min)$", ln)
        assert m, ln


def test_until_this_run_has_measured_the_speed_earlier_runs_give_it():
    from janus_memory.run.timing import Measurement

    rate = [None]
    earlier = Measurement(s_per_call=60.0, tokens_per_s=1.5, runs=2, calls=30)
    left = TimeLeft(lambda d, a: 10, rate=lambda: rate[0], earlier=earlier)
    assert left.text() == "left <= ~10 min (earlier runs' speed)"
    assert left.text(long=True) == ("left <= ~10 min (at most 10 calls x 60 s at 1.5 tokens/s, the speed of earlier "
                                    "runs on this machine until this run has measured its own)")
    assert left.estimate() == (10, 600.0)
    rate[0] = Rate(6.0)  # measured here: this run's speed wins
    assert left.text() == "left <= ~60 s" and left.estimate() == (10, 60.0)
