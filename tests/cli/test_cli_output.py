"""Console output of `janus run`: plain per-step lines off a TTY, one line per trigger, the test phase, honest cost
remarks, tables that fit 80 columns on a terminal and are never cut off one."""
from __future__ import annotations

import pytest

from janus_memory.cli.progress import ConsoleProgress, diff_summary, step_line, trigger_line
from janus_memory.llm.usage import UsageMeter
from janus_memory.report.summary_table import cost_remarks, method_cost, overhead_pct
from janus_memory.store.events import MethodStarted, StepFinished, StepRecorded, TestDone, TestProgress, TestStarted
from janus_memory.values import Usage

TRIG = {"triggered": True, "accept": False, "reason": "new_lt_old", "cosine": -0.38261600234886267,
        "coverage": [f"a{i}" for i in range(12)], "boundary": [f"b{i}" for i in range(8)], "fresh": ["c0", "c1"],
        "eval_ids": ["x"] * 22,
        "old_score": 0.8181818181818182, "new_score": 0.5454545454545454}


def test_step_line_exact():
    assert step_line("dc_rs+janus", 22, 30, True, TRIG, 0.8181818, 12.345) == (
        "[dc_rs+janus] step 22/30 correct trig cos=-0.383 rolled back        acc 0.818  12.3s")
    assert step_line("dc_rs", 3, 30, False, {"reason": "no_controller"}, 2 / 3, 0.04) == (
        "[dc_rs] step  3/30 wrong   no controller                      acc 0.667  0.0s")
    assert step_line("m", 5, 9, True, {"reason": "warmup", "cosine": None}, 1.0, 1.0) == (
        "[m] step 5/9 correct skip cos=n/a (warmup)              acc 1.000  1.0s")


def test_step_lines_keep_their_columns_when_the_step_gains_a_digit():
    """Piped output: step 9/30 and step 10/30 (and 1/120 .. 120/120) line up column for column."""
    nc = {"reason": "no_controller"}
    assert step_line("dc_rs", 9, 30, True, nc, 1.0, 0.5) == (
        "[dc_rs] step  9/30 correct no controller                      acc 1.000  0.5s")
    assert step_line("dc_rs", 10, 30, True, nc, 1.0, 0.5) == (
        "[dc_rs] step 10/30 correct no controller                      acc 1.000  0.5s")
    lines = [step_line("dc_rs", k, 120, True, nc, 1.0, 0.5) for k in (1, 10, 100, 120)]
    assert [ln[:20] for ln in lines] == ["[dc_rs] step   1/120", "[dc_rs] step  10/120", "[dc_rs] step 100/120",
                                         "[dc_rs] step 120/120"]
    assert len({len(ln) for ln in lines}) == 1


def test_trigger_line_exact():
    assert trigger_line("dc_rs+janus", 22, TRIG, "+2 -1 lines (10 -> 12 chars)") == (
        "[dc_rs+janus] trigger at step 22: cos=-0.383 |E|=22 of 25 configured (coverage 12 + boundary 8 + fresh 2 of "
        "5; fewer than configured: few tasks since the last comparison) old 0.818 vs new 0.545 -> ROLLBACK "
        "(new_lt_old); candidate +2 -1 lines (10 -> 12 chars)")


def test_trigger_line_names_a_task_drawn_in_two_roles():
    """The demo's E: the current task is both a coverage representative and the fresh sample (2+1+1 = 4 roles,
    3 distinct tasks); the line names it and says how it was solved instead of an |E| that does not add up; a run
    whose configured sizes the set meets says the sizes alone, one that drew fewer says how many of how many."""
    d = dict(TRIG, coverage=["t1", "t2"], boundary=["t3"], fresh=["t2"], eval_ids=["t1", "t2", "t3"],
             accept=True, reason="new_ge_old", old_score=0.0, new_score=0.0)
    assert trigger_line("m+janus", 5, d, "+2 -0 lines (5 -> 9 chars)") == (
        "[m+janus] trigger at step 5: cos=-0.383 |E|=3 of 25 configured (coverage 2 of 12 + boundary 1 of 8 + fresh 1 "
        "of 5; fewer than configured: few tasks seen yet, few flipped tasks available, few tasks since the last "
        "comparison; t2 in two roles, solved once) old 0.000 vs new 0.000 -> ACCEPT (new_ge_old); candidate +2 -0 "
        "lines (5 -> 9 chars)")
    d2 = dict(d, boundary=["t1"], eval_ids=["t1", "t2"])
    assert "comparison; t1, t2 in two roles, solved once)" in trigger_line("m", 5, d2, "x")
    # the demo's own settings (coverage 2 + boundary 1 + fresh 1 = 4 tasks, as its header announces)
    from janus_memory.controller.strategy import eval_set_for
    from janus_memory.settings.config import demo_config, real_demo_config

    demo = eval_set_for(demo_config().janus_config())
    assert "|E|=3 of 4 configured (coverage 2 + boundary 1 + fresh 1; t2 in two roles, solved once) " in \
        trigger_line("m", 5, d, "x", demo)
    act2 = dict(d, boundary=[], coverage=["t1", "t0"], fresh=["t2"], eval_ids=["t1", "t0", "t2"])
    assert "|E|=3 of 4 configured (coverage 2 + boundary 0 of 1: no flipped task available + fresh 1) " \
        in trigger_line("m", 3, act2, "x", eval_set_for(real_demo_config().janus_config()))
    full = dict(d, coverage=["t1", "t0"], boundary=["t3"], fresh=["t2"], eval_ids=["t1", "t0", "t3", "t2"])
    assert "|E|=4 (coverage 2 + boundary 1 + fresh 1) " in trigger_line("m", 3, full, "x", demo)


def test_trigger_line_says_a_shared_task_was_solved_in_each_role_when_E_keeps_duplicates():
    """The paper preset (dedup=False) keeps a task drawn in two roles twice in E: it is solved twice, and |E|
    counts both copies (12+8+2 = 22 entries, 21 distinct tasks)."""
    cov, bnd = [f"a{i}" for i in range(12)], [f"b{i}" for i in range(8)]
    d = dict(TRIG, coverage=cov, boundary=bnd, fresh=["c0", "a3"], eval_ids=cov + bnd + ["c0", "a3"])
    assert trigger_line("dc_rs+janus", 22, d, "+2 -2 lines (136 -> 135 chars)") == (
        "[dc_rs+janus] trigger at step 22: cos=-0.383 |E|=22 of 25 configured (coverage 12 + boundary 8 + fresh 2 of "
        "5; fewer than configured: few tasks since the last comparison; a3 in two roles, solved in each "
        "role) old 0.818 vs new 0.545 -> ROLLBACK (new_lt_old); candidate +2 -2 lines (136 -> 135 chars)")
    dedup = dict(d, eval_ids=cov + bnd + ["c0"])
    assert "|E|=21 of 25 configured (coverage 12 + boundary 8 + fresh 2 of 5; fewer than configured: few tasks since " \
        "the last comparison; a3 in two roles, solved once)" in \
        trigger_line("m", 1, dedup, "x")
    two = dict(d, fresh=["a3", "b2"], eval_ids=cov + bnd + ["a3", "b2"])
    assert "comparison; a3, b2 in two roles, solved in each role)" in \
        trigger_line("m", 1, two, "x")
    part = dict(two, eval_ids=cov + bnd + ["a3"])  # a replay_limit sample kept one of the two copies
    assert "comparison; a3, b2 in two roles, 1 of them solved in each role)" in \
        trigger_line("m", 1, part, "x")


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
        "[m+janus] trigger at step 2: cos=-0.383 |E|=22 of 25 configured (coverage 12 + boundary 8 + fresh 2 of 5; "
        "fewer than configured: few tasks since the last comparison) old 0.818 vs new 0.545 -> ROLLBACK "
        "(new_lt_old); candidate +1 -2 lines (8 -> 5 chars)",
        "[m+janus] step 2/2 wrong   trig cos=-0.383 rolled back        acc 0.500  3.2s",
    ]


class _Bars:
    def __init__(self):
        self.calls = []

    def add_task(self, description, total, **fields):
        self.calls.append(("add", description, total, fields))
        return len([c for c in self.calls if c[0] == "add"]) + 6

    def update(self, task, completed, description):
        self.calls.append(("update", task, completed, description))


def test_console_progress_tty_bar_has_labels_and_no_step_lines():
    lines, bars = [], _Bars()
    prog = ConsoleProgress(lines.append, bars, clock=lambda: 0.0)
    for ev in _events():
        prog(ev)
    assert len(lines) == 1 and lines[0].startswith("[m+janus] trigger at step 2")
    assert bars.calls[0] == ("add", "m+janus stream: online acc 1.00, triggers 0 (accepted 0, rolled back 0), tokens "
                                    "paid 10", 2, {"unit": "steps"})
    assert bars.calls[-1] == ("update", 7, 2, "m+janus stream: online acc 0.50, triggers 1 (accepted 0, rolled back "
                                              "1), tokens paid 20")
    prog(StepFinished("m", 1, 3, True, {"reason": "no_controller"}, 1.0, 0, 0, 0, 0, 4))
    assert bars.calls[-1] == ("update", 8, 1, "m stream: online acc 1.00, tokens paid 0 (4 responses from the "
                                              "response cache)")


TEST_RECORDS = [{"task_id": "t1", "correct": True, "status": "ok"},
                {"task_id": "t2", "correct": False, "status": "unparsed"},
                {"task_id": "t3", "correct": True, "status": "fallback"},
                {"task_id": "t4", "correct": False, "status": "truncated"},
                {"task_id": "t5", "correct": False, "status": "unparsed"}]


def _test_events():
    return [TestStarted("m", 5, 10), TestProgress("m", 1, 10, 120, 0), TestProgress("m", 2, 10, 120, 1),
            TestDone("m", TEST_RECORDS, 2, 5, 1200, 3)]


def test_test_phase_plain_lines():
    """Off a terminal: one line when the test starts and one when it ends (n, accuracy, tokens paid in the test,
    answers from the cache, answers that could not be scored); no line per answer."""
    lines, t = [], iter([10.0, 14.5, 20.0, 20.0])
    prog = ConsoleProgress(lines.append, None, clock=lambda: next(t))
    for ev in _test_events():
        prog(ev)
    assert lines == [
        "[m] test: 5 held-out tasks with the frozen memory and 1 checkpoint memory (10 answers)",
        "[m] test done: 2/5 correct (acc 0.400), tokens paid 1,200 (3 answers from the response cache), 4.5s; 3 answers "
        "could not be scored (listed at the end)"]
    lines.clear()
    prog(TestStarted("x", 3, 3))
    prog(TestDone("x", [], 0, 0, 0, 0))
    assert lines[0] == "[x] test: 3 held-out tasks with the frozen memory"
    assert lines[1].startswith("[x] test done: 0/0 correct (acc -), tokens paid 0, ")


def test_test_phase_has_its_own_bar():
    """On a terminal: a bar of its own labelled "test", counting answers and the tokens paid in the test phase."""
    lines, bars = [], _Bars()
    prog = ConsoleProgress(lines.append, bars, clock=lambda: 0.0)
    for ev in _test_events():
        prog(ev)
    assert lines == []
    assert bars.calls == [
        ("add", "m test (frozen memory): tokens paid 0", 10, {"unit": "answers"}),
        ("update", 7, 1, "m test (frozen memory): tokens paid 120"),
        ("update", 7, 2, "m test (frozen memory): tokens paid 120 (1 answer from the response cache)"),
        ("update", 7, 10, "m test done: test acc 0.400 (2/5), tokens paid 1,200 (3 answers from the response cache)")]


def test_unscored_test_answers_are_listed_with_ids_and_why():
    from janus_memory.report.summary_table import unscored_answer_lines

    assert unscored_answer_lines("dc_rs", TEST_RECORDS) == [
        "[dc_rs] test: 3 of 5 answers could not be scored (counted wrong): unparsed (no final answer found): t2, t5; "
        "truncated (cut at the token limit before an answer): t4",
        "[dc_rs] test: 1 of 5 answers had no final-answer marker and were scored from their last number or letter: "
        "t3 (correct)"]
    assert unscored_answer_lines("m", [{"task_id": 7, "status": "weird"}, "junk"]) == [
        "[m] test: 1 of 1 answers could not be scored (counted wrong): weird (status weird): 7"]
    assert unscored_answer_lines("m", TEST_RECORDS[:1]) == []


def test_wall_time_line_names_start_up():
    from janus_memory.cli.closing import wall_line

    assert wall_line(100.04, 12.5, 8.25) == (
        "wall time: 100.0 s from start to end = start-up 12.5 s (imports, dataset, encoder, before the first step) + "
        "stream and test 87.5 s, including the model load 8.2 s")
    assert wall_line(3.0, 1.0) == ("wall time: 3.0 s from start to end = start-up 1.0 s (imports, dataset, encoder, "
                                   "before the first step) + stream and test 2.0 s")
    assert wall_line(2.0, None) == "wall time: 2.0 s (start-up and writing the summary; no stream step or test was left)"


def _summary(names):
    usage = {"solver": {"calls": 1234, "cache_hits": 5, "prompt_tokens": 1234567, "completion_tokens": 765432,
                        "wall_s": 12.5, "hit_prompt_tokens": 10, "hit_completion_tokens": 1}}
    m = {"online_accuracy": 0.8125, "test_accuracy": 0.7, "test_correct": 350, "test_tasks": 500, "triggers": 120,
         "accepts": 100, "rollbacks": 20, "usage": usage}
    return {"dataset": "mmlu_pro_phy", "updater": names[0], "methods": {n: m for n in names}, "usage_total": usage,
            "engine": None}


@pytest.mark.parametrize("names", [["reasoning_bank", "reasoning_bank+janus"], ["dc_rs", "dc_rs+janus"]])
def test_summary_tables_fit_80_columns_on_a_terminal(names):
    from rich.console import Console

    from janus_memory.report.summary_table import print_summary

    console = Console(width=80, force_terminal=True, record=True, color_system=None)
    print_summary(_summary(names), console)
    text = console.export_text()
    table_lines = [line for line in text.splitlines() if line[:1] in "┏┃┡│└"]
    assert len(table_lines) >= 20 and max(len(line) for line in table_lines) <= 80  # remarks wrap in the terminal
    assert "…" not in text
    for name in names:  # a method name is never cut or wrapped
        assert any(line.startswith(f"│ {name} ") for line in text.splitlines())


def test_summary_tables_are_never_cut_off_a_terminal(monkeypatch):
    """`| cat` (no TTY, whatever $COLUMNS says): one line per table row, every header and number whole."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr("sys.stdout.isatty", lambda: False)
    from janus_memory.cli.closing import make_console
    from janus_memory.report.summary_table import print_summary

    console = make_console()
    with console.capture() as cap:
        print_summary(_summary(["reasoning_bank", "reasoning_bank+janus"]), console)
    text = cap.get()
    assert "…" not in text
    rows = [line for line in text.splitlines() if line.startswith("│ reasoning_bank+janus ")]
    assert len(rows) == 2  # accuracy and cost tables, one line each
    assert "0.700 (350/500)" in rows[0] and "completion tokens paid" in text and "1,234,567" in text
    assert max(len(line) for line in text.splitlines()) > 80


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
        "Janus overhead: +100.0% tokens over dc_rs without Janus (stream tokens, cache hits included, held-out test "
        "excluded): dc_rs+janus needed 2,000 vs 1,000 for dc_rs (20 vs 10 LLM responses); the whole cost of guarding, "
        "against no guard at all (the README's cost figure is another ratio: the recommended controller's paid "
        "evaluations as a share of an always-compare controller's)",
        "dc_rs: every response came from the response cache (0 paid calls); its results are replayed from an earlier "
        "run with the same requests, and 'needed' is what it costs with an empty cache",
        "dc_rs+janus: 6 of 20 responses came from the response cache",
    ]


def test_console_prints_colon_words_as_written(capsys):
    """`--encoder hashing:abc:` was shown as 'hashing🔤' (rich's emoji codes): user text is printed as written."""
    from janus_memory.cli.closing import make_console

    make_console().print("encoder hashing:abc: and st:/models/:smile:")
    assert capsys.readouterr().out == "encoder hashing:abc: and st:/models/:smile:\n"
