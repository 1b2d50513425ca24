"""Console output of `janus run`: plain per-step lines off a TTY, one line per trigger, honest cost remarks."""
from __future__ import annotations

from janus_memory.cli_progress import ConsoleProgress, diff_summary, step_line, trigger_line
from janus_memory.llm.usage import UsageMeter
from janus_memory.runner.events import MethodStarted, StepFinished, StepRecorded
from janus_memory.runner.summary_table import cost_remarks, method_cost, overhead_pct
from janus_memory.types import Usage

TRIG = {"triggered": True, "accept": False, "reason": "new_lt_old", "cosine": -0.38261600234886267,
        "coverage": ["a"] * 12, "boundary": ["b"] * 8, "fresh": ["c"] * 2, "eval_ids": ["x"] * 22,
        "old_score": 0.8181818181818182, "new_score": 0.5454545454545454}


def test_step_line_exact():
    assert step_line("dc_rs+janus", 22, 30, True, TRIG, 0.8181818, 12.345) == (
        "[dc_rs+janus] step 22/30 correct trig cos=-0.383 rolled back        acc 0.818  12.3s")
    assert step_line("dc_rs", 3, 30, False, {"reason": "no_controller"}, 2 / 3, 0.04) == (
        "[dc_rs] step 3/30 wrong   no controller                      acc 0.667  0.0s")
    assert step_line("m", 5, 9, True, {"reason": "warmup", "cosine": None}, 1.0, 1.0) == (
        "[m] step 5/9 correct skip cos=n/a (warmup)              acc 1.000  1.0s")


def test_trigger_line_exact():
    assert trigger_line("dc_rs+janus", 22, TRIG, "+2 -1 lines (10 -> 12 chars)") == (
        "[dc_rs+janus] trigger at step 22: cos=-0.383 |E|=22 (coverage+boundary+fresh 12+8+2) old 0.818 vs new 0.545 "
        "-> ROLLBACK (new_lt_old); candidate +2 -1 lines (10 -> 12 chars)")


def test_diff_summary_counts_lines():
    assert diff_summary("a\nb\n", "a\nb\n") == "no change"
    assert diff_summary("a\nb", "a\nc\nd") == "+2 -1 lines (3 -> 5 chars)"
    assert diff_summary("", "x") == "+1 -0 lines (0 -> 1 chars)"


def _events():
    d_skip = {"triggered": False, "reason": "warmup", "cosine": None}
    return [
        MethodStarted("m+janus", 2, 0, "old"),
        StepRecorded("m+janus", 1, {"decision": d_skip}, {}, "old\nrule", ("old\nrule", "h", None), {}),
        StepFinished("m+janus", 1, 2, True, d_skip, 1.0, 0, 0, 0, 10),
        StepRecorded("m+janus", 2, {"decision": TRIG}, {}, "old\nrule", ("wiped", "h", None), {}),
        StepFinished("m+janus", 2, 2, False, TRIG, 0.5, 1, 0, 1, 20),
    ]


def test_console_progress_plain_lines_with_fake_clock():
    lines, t = [], iter([100.0, 101.5, 103.25])
    prog = ConsoleProgress(lines.append, None, clock=lambda: next(t))
    for ev in _events():
        prog(ev)
    assert lines == [
        "[m+janus] step 1/2 correct skip cos=n/a (warmup)              acc 1.000  1.5s",
        "[m+janus] trigger at step 2: cos=-0.383 |E|=22 (coverage+boundary+fresh 12+8+2) old 0.818 vs new 0.545 "
        "-> ROLLBACK (new_lt_old); candidate +1 -2 lines (8 -> 5 chars)",
        "[m+janus] step 2/2 wrong   trig cos=-0.383 rolled back        acc 0.500  3.2s",
    ]


class _Bars:
    def __init__(self):
        self.calls = []

    def add_task(self, name, total):
        self.calls.append(("add", name, total))
        return 7

    def update(self, task, completed, description):
        self.calls.append(("update", task, completed, description))


def test_console_progress_tty_bar_has_labels_and_no_step_lines():
    lines, bars = [], _Bars()
    prog = ConsoleProgress(lines.append, bars, clock=lambda: 0.0)
    for ev in _events():
        prog(ev)
    assert len(lines) == 1 and lines[0].startswith("[m+janus] trigger at step 2")
    assert bars.calls[0] == ("add", "m+janus", 2)
    assert bars.calls[-1] == ("update", 7, 2, "m+janus          acc 0.50 trig 1 acc/rb 0/1 tokens paid 20")


def test_usage_meter_keeps_cached_tokens_apart():
    u = UsageMeter()
    u.record_call("solver", Usage(prompt_tokens=100, completion_tokens=20))
    u.record_hit("solver", Usage(prompt_tokens=100, completion_tokens=20))
    u.record_hit("solver")
    s = u.snapshot()["solver"]
    assert (s["calls"], s["cache_hits"], s["prompt_tokens"], s["completion_tokens"]) == (1, 2, 100, 20)
    assert (s["hit_prompt_tokens"], s["hit_completion_tokens"]) == (100, 20)


def test_method_cost_and_overhead():
    base = {"solver": {"calls": 0, "cache_hits": 10, "prompt_tokens": 0, "completion_tokens": 0,
                       "hit_prompt_tokens": 900, "hit_completion_tokens": 100}}
    jan = {"solver": {"calls": 10, "cache_hits": 0, "prompt_tokens": 900, "completion_tokens": 100},
           "janus": {"calls": 4, "cache_hits": 6, "prompt_tokens": 400, "completion_tokens": 40,
                     "hit_prompt_tokens": 500, "hit_completion_tokens": 60}}
    assert method_cost(base) == {"needed_calls": 10, "needed_tokens": 1000, "paid_calls": 0, "paid_tokens": 0,
                                 "cache_hits": 10}
    assert method_cost(jan) == {"needed_calls": 20, "needed_tokens": 2000, "paid_calls": 14, "paid_tokens": 1440,
                                "cache_hits": 6}
    assert overhead_pct(1000, 2000) == 100.0
    assert overhead_pct(0, 5) is None
    assert cost_remarks({"dc_rs": {"usage": base}, "dc_rs+janus": {"usage": jan}}) == [
        "Janus overhead: +100.0% (stream tokens, cache hits included, held-out test excluded): dc_rs+janus needed "
        "2,000 vs 1,000 for dc_rs (20 vs 10 LLM responses)",
        "dc_rs: every response came from the response cache (0 paid calls); its results are replayed from an earlier "
        "run with the same requests, and 'needed' is what it costs with an empty cache",
        "dc_rs+janus: 6 of 20 responses came from the response cache",
    ]
