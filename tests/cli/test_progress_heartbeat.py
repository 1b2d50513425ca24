"""Progress you can trust: off a terminal a long step is never silent (a `still running` line after 30 s
without a line: the step or test answer in progress, tokens paid so far, elapsed), and a loaded machine is named at
start. Time is driven by a fake clock; no timing assertions."""
from __future__ import annotations

import threading

from janus_memory.cli.progress import ConsoleProgress, Heartbeat, load_warning
from janus_memory.store.events import MethodFinished, MethodStarted, StepFinished, TestDone, TestProgress, TestStarted


class Clock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def _progress(bars=None):
    lines: list[str] = []
    clock = Clock()
    return ConsoleProgress(lines.append, bars, clock=lambda: 0.0, beat_clock=clock, live_tokens=lambda: 0), clock, lines


def test_a_long_step_gets_a_still_running_line_every_30_seconds_without_a_line():
    prog, clock, lines = _progress()
    prog(MethodStarted("dc_rs", 5, 0, ""))
    clock.t += 29.9
    prog.tick()
    assert lines == []  # not yet 30 s
    clock.t += 0.2
    prog.tick()
    assert lines == ["[dc_rs] step 1 of 5 still running: no line for 30s (a long model call); tokens paid so far 0, "
                     "elapsed 30s"]
    clock.t += 10
    prog.tick()
    assert len(lines) == 1  # 10 s after the last line
    clock.t += 20
    prog.tick()
    assert lines[-1] == ("[dc_rs] step 1 of 5 still running: no line for 30s (a long model call); tokens paid so far 0, "
                         "elapsed 1m00s")
    prog(StepFinished("dc_rs", 1, 5, True, {"reason": "no_controller"}, 1.0, 0, 0, 0, 1234))
    assert lines[-1].startswith("[dc_rs] step 1/5 correct ")
    clock.t += 95
    prog.tick()
    assert lines[-1] == ("[dc_rs] step 2 of 5 still running: no line for 1m35s (a long model call); tokens paid so far "
                         "1,234, elapsed 2m35s")


def test_the_test_phase_names_the_answer_in_progress_and_nothing_is_said_once_the_method_is_done():
    prog, clock, lines = _progress()
    prog(MethodStarted("m", 1, 0, ""))
    prog(StepFinished("m", 1, 1, False, {"reason": "no_controller"}, 0.0, 0, 0, 0, 500))
    prog(TestStarted("m", 3, 3))
    clock.t += 31
    prog.tick()
    assert lines[-1] == ("[m] held-out test (answered 0 of 3) still running: no line for 31s (a long model call); "
                         "tokens paid so far 500, elapsed 31s")
    prog(TestProgress("m", 2, 3, 900))
    clock.t += 40
    prog.tick()
    assert lines[-1] == ("[m] held-out test (answered 2 of 3) still running: no line for 40s (a long model call); "
                         "tokens paid so far 1,400, elapsed 1m11s")  # the stream's 500 + the test's 900
    prog(TestDone("m", [], 1, 3, 950))
    prog(MethodFinished("m", {}, ""))
    n = len(lines)
    clock.t += 300
    prog.tick()
    assert len(lines) == n


def test_the_tokens_paid_so_far_are_the_runs_and_never_go_down_across_phases_and_methods():
    """A phase's counter starts at 0 (the test's, the next method's stream): the line sums them, so a user never
    sees the count fall."""
    prog, clock, lines = _progress()
    seen = []

    def beat():
        clock.t += 31
        prog.tick()
        seen.append(int(lines[-1].split("tokens paid so far ")[1].split(",  ")[0].split(", elapsed")[0]
                        .replace(",", "")))

    prog(MethodStarted("a", 2, 0, ""))
    prog(StepFinished("a", 1, 2, True, {"reason": "no_controller"}, 1.0, 0, 0, 0, 3000))
    beat()
    prog(StepFinished("a", 2, 2, True, {"reason": "no_controller"}, 1.0, 0, 0, 0, 5000))
    prog(TestStarted("a", 2, 2))
    beat()
    prog(TestProgress("a", 1, 2, 200))
    beat()
    prog(TestDone("a", [], 2, 2, 400))
    prog(MethodFinished("a", {}, ""))
    prog(MethodStarted("b", 2, 0, ""))
    beat()
    prog(StepFinished("b", 1, 2, True, {"reason": "no_controller"}, 1.0, 0, 0, 0, 100))
    beat()
    assert seen == [3000, 5000, 5200, 5400, 5500]


def test_on_a_terminal_a_long_wait_also_gets_its_line_above_the_bars():
    class Bars:
        def add_task(self, *a, **k):
            return 1

        def update(self, *a, **k):
            pass

    prog, clock, lines = _progress(Bars())
    prog(MethodStarted("m", 5, 0, ""))
    clock.t += 29
    prog.tick()
    assert lines == []
    clock.t += 271
    prog.tick()
    assert lines == ["[m] step 1 of 5 still running: no line for 5m00s (a long model call); tokens paid so far 0, "
                     "elapsed 5m00s"]


def test_the_heartbeat_thread_ticks_until_the_block_ends():
    said = threading.Event()
    lines: list[str] = []
    clock = Clock()

    def say(text):
        lines.append(text)
        said.set()

    prog = ConsoleProgress(say, None, clock=lambda: 0.0, beat_clock=clock)
    prog(MethodStarted("m", 2, 0, ""))
    clock.t += 45  # the model call has been running for 45 s
    with Heartbeat(prog, every=0.01) as beat:
        assert said.wait(30)
    assert not beat._thread.is_alive()
    assert lines[0] == ("[m] step 1 of 2 still running: no line for 45s (a long model call); tokens paid so far 0, "
                        "elapsed 45s")
    assert Heartbeat(None).__enter__()._thread is None  # --quiet: no progress, no thread


def test_the_load_warning_names_the_load_and_the_cores():
    assert load_warning(lambda: (3.46, 2.0, 1.0), lambda: 2) == (
        "warning: the 1-minute load average is 3.5 on 2 CPU cores: other processes are using the CPU; times will be "
        "longer than estimated")
    assert load_warning(lambda: (2.0, 9.0, 9.0), lambda: 2) is None  # at most one runnable process per core
    assert load_warning(lambda: (1.5, 0, 0), lambda: 1).startswith("warning: the 1-minute load average is 1.5 on 1 "
                                                                    "CPU core: ")

    def no_loadavg():
        raise OSError("not available")

    assert load_warning(no_loadavg, lambda: 2) is None


def test_a_run_on_the_embedded_model_warns_at_start_when_the_machine_is_busy(tmp_path, capsys, monkeypatch):
    """The warning comes after the header, before the run starts (the run itself is replaced by a stop here)."""
    import janus_memory.cli.progress as cp
    from janus_memory.cli import main
    from janus_memory.errors import ConfigError
    from janus_memory.run import experiment

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 64)
    monkeypatch.setattr(cp.os, "getloadavg", lambda: (9.25, 8.0, 7.0))
    monkeypatch.setattr(cp.os, "cpu_count", lambda: 2)

    def stop(*a, **k):
        raise ConfigError("stopped by the test")

    monkeypatch.setattr(experiment, "run_experiment", stop)
    rc = main(["run", "--model-path", str(gguf), "--stream-size", "2", "--test-size", "1", "--encoder", "hashing:64",
               "--no-cache", "--out", str(tmp_path / "r")])
    out, err = capsys.readouterr()
    assert rc == 2 and err.startswith("error: stopped by the test")
    lines = out.splitlines()
    assert lines[lines.index(f"run folder: {tmp_path / 'r'}") + 1] == (
        "warning: the 1-minute load average is 9.2 on 2 CPU cores: other processes are using the CPU; times will be "
        "longer than estimated")
    monkeypatch.setattr(cp.os, "getloadavg", lambda: (1.0, 8.0, 7.0))
    assert main(["run", "--model-path", str(gguf), "--stream-size", "2", "--test-size", "1", "--encoder",
                 "hashing:64", "--no-cache", "--out", str(tmp_path / "r2")]) == 2
    assert "load average" not in capsys.readouterr().out


def test_counts_read_as_counts_not_scores():
    """'answered 3 of 5', never '3/5' (which reads like 3 right of 5): the bars' count column and the still-running
    line of the held-out test."""
    from rich.console import Console

    from janus_memory.cli.progress import count_text, make_bars

    assert count_text(3, 5, "answers") == "answered 3 of 5"
    assert count_text(12, 30, "steps") == "step 12 of 30"
    console = Console(record=True, width=100, force_terminal=True)
    with make_bars(console, disable=False) as bars:
        bars.add_task("m test (frozen memory)", total=5, unit="answers", left="")
        bars.update(0, completed=3)
    text = console.export_text()
    assert "answered 3 of 5" in text and "3/5" not in text
