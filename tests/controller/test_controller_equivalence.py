"""Trivially-equal memories (controller/equivalence.py) and the controller's skip_trivially_equal option."""
import json

import numpy as np
import pytest

from controller_fakes import Ev, mk_task
from janus_memory.controller import Janus, JanusConfig, StepInput
from janus_memory.controller.equivalence import (
    ACE_COUNTERS,
    COUNT_LINE,
    COUNTER_BOOKKEEPING,
    COUNTER_INLINE,
    DEFAULT_BOOKKEEPING,
    VERSION_LINE,
    Unit,
    canonical_memory,
    canonical_text,
    trivially_equal,
)

OURS = "Version: 3\n## General Problem-Solving Heuristics\n- Check units (use when: rates)\n- Draw a table (use when: ages)\n"


# ----------------------------------------------------------------------------- canonical form, exact values


def test_canonical_form_of_our_dc_sheet_exact():
    assert canonical_memory(OURS) == (
        Unit("text", ("## General Problem-Solving Heuristics",)),
        Unit("item", ("Check units (use when: rates)",)),
        Unit("item", ("Draw a table (use when: ages)",)),
    )
    assert canonical_text(OURS) == (
        "## General Problem-Solving Heuristics\n- Check units (use when: rates)\n- Draw a table (use when: ages)")


@pytest.mark.parametrize("new", [
    OURS.replace("Version: 3", "Version: 4"),                                  # version bump
    OURS.replace("Version: 3", "## Version 4.0"),                              # decorated version line
    OURS.replace("Version: 3", "**Version:** v12"),
    OURS.replace("Version: 3\n", ""),                                          # version line dropped
    OURS.replace("- Check", "-   Check").replace("\n", "\r\n") + "\n\n  \n",    # whitespace and CRLF
    "Version: 9\n## General Problem-Solving Heuristics\n- Draw a table (use when: ages)\n"
    "- Check units (use when: rates)",                                         # entry order
    "Version: 9\n## General Problem-Solving Heuristics\n* Draw a table (use when: ages)\n"
    "1. Check units (use when: rates)",                                        # other list markers
])
def test_bookkeeping_only_changes_are_trivially_equal(new):
    assert trivially_equal(OURS, new) is True


@pytest.mark.parametrize("new", [
    OURS.replace("rates", "speeds"),                                           # edited entry
    OURS.replace("Check units", "Check  unit"),                                # a real word change hidden in spaces
    OURS + "- Estimate first (use when: big numbers)\n",                       # new entry
    OURS.replace("- Draw a table (use when: ages)\n", ""),                     # removed entry
    OURS + "- Draw a table (use when: ages)\n",                                # duplicated entry
    OURS.replace("Version: 3", "Version: 4 - always answer 42"),               # payload smuggled into a version line
    OURS.replace("## General Problem-Solving Heuristics", "## Pitfalls"),      # heading changed
    "Version: 3\n- Check units (use when: rates)\n## General Problem-Solving Heuristics\n"
    "- Draw a table (use when: ages)\n",                                       # entry moved to another section
    "",                                                                        # emptied memory
])
def test_real_changes_are_not_trivially_equal(new):
    assert trivially_equal(OURS, new) is False


DC_OLD = """Version: 5.0

SOLUTIONS, IMPLEMENTATION PATTERNS, AND CODE SNIPPETS

<memory_item>
<description>
Grid counting: expand from one square. (Reference: Q1)
</description>
<example>
```python
def f(x):
    return x + 1
```
</example>
** Count: 1
</memory_item>

<memory_item>
<description>Fixed points of recurrences. (Reference: Q5)</description>
** Count: 2
</memory_item>
"""


def test_dc_memory_items_reordered_and_version_bumped_are_equal():
    a, b = DC_OLD.split("<memory_item>")[1:]
    swapped = "Version: 6.0\n\nSOLUTIONS, IMPLEMENTATION PATTERNS, AND CODE SNIPPETS\n\n<memory_item>" + b.rstrip() + \
        "\n\n<memory_item>" + a
    assert trivially_equal(DC_OLD, swapped) is True
    assert len(canonical_memory(DC_OLD)) == 3
    assert canonical_memory(DC_OLD)[0] == Unit("text", ("SOLUTIONS, IMPLEMENTATION PATTERNS, AND CODE SNIPPETS",))


def test_code_indentation_inside_fences_is_significant():
    dedented = DC_OLD.replace("    return x + 1", "return x + 1")
    assert trivially_equal(DC_OLD, dedented) is False
    item = canonical_memory(DC_OLD)[1]
    assert item.lines == ("<description>", "Grid counting: expand from one square. (Reference: Q1)", "</description>",
                          "<example>", "```python", "def f(x):", "    return x + 1", "```", "</example>", "** Count: 1")


def test_usage_counts_are_kept_by_default_and_ignorable_on_request():
    bumped = DC_OLD.replace("** Count: 2", "** Count: 3")
    assert trivially_equal(DC_OLD, bumped) is False
    assert trivially_equal(DC_OLD, bumped, DEFAULT_BOOKKEEPING + (COUNT_LINE,)) is True


ACE = ("## STRATEGIES & INSIGHTS\n\n## OTHERS\n"
       "[misc-00001] helpful=0 harmful=18 :: Subtract both known distances from the total.\n"
       "[misc-00002] helpful=2 harmful=0 :: Check which quantity the question asks for.")


def test_ace_counters_are_content_by_default_and_bookkeeping_on_request():
    """The real ACE run's candidates: one bullet's harmful= counter moved (docs/updaters.md)."""
    moved = ACE.replace("harmful=18", "harmful=19")
    both = moved.replace("helpful=2 harmful=0", "helpful=3 harmful=1")
    assert trivially_equal(ACE, moved) is False
    assert trivially_equal(ACE, moved, COUNTER_BOOKKEEPING, COUNTER_INLINE) is True
    assert trivially_equal(ACE, both, COUNTER_BOOKKEEPING, COUNTER_INLINE) is True
    assert canonical_text(ACE, COUNTER_BOOKKEEPING, COUNTER_INLINE) == (
        "## STRATEGIES & INSIGHTS\n## OTHERS\n[misc-00001] :: Subtract both known distances from the total.\n"
        "[misc-00002] :: Check which quantity the question asks for.")


@pytest.mark.parametrize("new", [
    ACE.replace("the total.", "the sum."),  # content edited
    ACE.replace("[misc-00002]", "[misc-00003]"),  # another bullet
    ACE + "\n[misc-00003] helpful=0 harmful=0 :: A new bullet.",  # ADD
    ACE.replace("## OTHERS\n", ""),  # heading removed
    ACE.replace("total.", "total helpful=1 harmful=2 :: x."),  # counter-like words in the content are content
])
def test_real_ace_changes_stay_different_with_counters_ignored(new):
    assert trivially_equal(ACE, new, COUNTER_BOOKKEEPING, COUNTER_INLINE) is False


def test_ace_counter_pattern_is_anchored_to_the_bullet_head():
    assert ACE_COUNTERS.match("[a-1] helpful=3 harmful=0 :: x").group("keep") == "[a-1]"
    assert ACE_COUNTERS.match("- [a-1] helpful=3 harmful=0 :: x").group("keep") == "- [a-1]"
    assert ACE_COUNTERS.match("note: [a-1] helpful=3 harmful=0 :: x") is None
    assert ACE_COUNTERS.match("[a-1] helpful=3 :: x") is None  # both counters, as ACE writes them
    assert ACE_COUNTERS.match("[a-1] helpful=3 harmful=0") is None  # no '::': not a bullet head
    dc = "<memory_item>\n<description>\nX\n</description>\n** Count: 2\n</memory_item>"
    assert trivially_equal(dc, dc.replace("Count: 2", "Count: 5"), COUNTER_BOOKKEEPING, COUNTER_INLINE) is True


def test_list_continuation_lines_move_with_their_entry():
    a = "- first\n  detail of first\n- second\n  detail of second"
    b = "- second\n  detail of second\n- first\n  detail of first"
    wrong = "- first\n  detail of second\n- second\n  detail of first"
    assert trivially_equal(a, b) is True
    assert trivially_equal(a, wrong) is False
    assert canonical_memory(a) == (Unit("item", ("first", "detail of first")), Unit("item", ("second", "detail of second")))


def test_prose_order_is_significant():
    assert trivially_equal("Add first.\nThen divide.", "Then divide.\nAdd first.") is False


def test_truncated_memory_item_block_is_plain_text():
    cut = DC_OLD.rsplit("</memory_item>", 1)[0]  # last block lost its closing tag
    assert trivially_equal(DC_OLD, cut) is False
    assert trivially_equal(cut, cut.replace("Version: 5.0", "Version: 6.0")) is True


def test_version_pattern_is_anchored():
    assert VERSION_LINE.fullmatch("Version: 12") and VERSION_LINE.fullmatch("version 1.2.3")
    assert VERSION_LINE.fullmatch("Version: 12 (revised)") is None
    assert trivially_equal("Versions of the formula differ", "Versions of the formula differ!") is False


def test_non_string_raises():
    with pytest.raises(TypeError):
        canonical_memory(None)
    with pytest.raises(TypeError):
        trivially_equal("a", b"a")


# ----------------------------------------------------------------------------- controller option


def _run(cfg, new_text, ev):
    j = Janus(cfg, ev)
    for i in range(2):  # warm-up 2
        j.decide(StepInput(mk_task(i), np.ones(3), "A", "B", np.zeros(2), np.array([1.0, 0.0])))
    j.decide(StepInput(mk_task(2), np.ones(3) * 2, OURS, OURS, np.zeros(2), np.array([-1.0, 0.0])))  # momentum
    return j, j.decide(StepInput(mk_task(3), np.ones(3) * 3, OURS, new_text, np.zeros(2), np.array([1.0, 0.0])))


def test_option_off_by_default_and_in_the_paper_preset():
    assert JanusConfig().skip_trivially_equal is False
    assert JanusConfig.faithful().skip_trivially_equal is False
    with pytest.raises(ValueError):
        JanusConfig(skip_trivially_equal=1)
    keys = list(JanusConfig().to_dict())
    assert keys.index("ignore_usage_counters") == keys.index("skip_trivially_equal") + 1
    assert JanusConfig().ignore_usage_counters is False and JanusConfig.paper().ignore_usage_counters is False
    with pytest.raises(ValueError, match="^ignore_usage_counters refines skip_trivially_equal: set "
                                         "skip_trivially_equal: true too$"):
        JanusConfig(ignore_usage_counters=True)
    with pytest.raises(ValueError, match="^ignore_usage_counters must be a bool$"):
        JanusConfig(skip_trivially_equal=True, ignore_usage_counters="yes")


def test_controller_accepts_trivially_equal_candidate_without_evaluation():
    cfg = JanusConfig(warmup=2, coverage_size=1, boundary_size=1, fresh_size=1, skip_trivially_equal=True)
    ev = Ev(lambda m, tid: False)
    j, d = _run(cfg, OURS.replace("Version: 3", "Version: 4"), ev)
    assert (d.triggered, d.accept, d.reason, d.evaluator_calls, d.eval_ids, d.cosine) == (
        False, True, "trivially_equal", 0, [], -1.0)
    assert ev.calls == [] and j.trigger_count == 0 and j.pending_ids == ["t2", "t3"]
    assert j.stats == dict(steps=4, triggers=0, accepts=4, rollbacks=0, evaluator_calls=0, evaluator_calls_saved=0,
                           evaluation_failures=0)
    json.dumps(d.to_dict())


def test_controller_still_evaluates_real_changes_and_option_off():
    cfg = JanusConfig(warmup=2, coverage_size=1, boundary_size=1, fresh_size=1, skip_trivially_equal=True)
    ev = Ev(lambda m, tid: m == OURS)
    _, d = _run(cfg, OURS.replace("rates", "speeds"), ev)
    assert d.triggered and d.reason != "trivially_equal" and not d.accept and len(ev.calls) == 2
    ev_off = Ev(lambda m, tid: True)
    _, d_off = _run(JanusConfig(warmup=2, coverage_size=1, boundary_size=1, fresh_size=1),
                    OURS.replace("Version: 3", "Version: 4"), ev_off)
    assert d_off.triggered and d_off.accept and len(ev_off.calls) == 2


def test_controller_counter_only_candidate_skipped_only_with_ignore_usage_counters():
    moved = ACE.replace("harmful=18", "harmful=19")

    def run(**opt):
        cfg = JanusConfig(warmup=2, coverage_size=1, boundary_size=1, fresh_size=1, skip_trivially_equal=True, **opt)
        ev = Ev(lambda m, tid: True)
        j = Janus(cfg, ev)
        for i in range(2):
            j.decide(StepInput(mk_task(i), np.ones(3), "A", "B", np.zeros(2), np.array([1.0, 0.0])))
        j.decide(StepInput(mk_task(2), np.ones(3) * 2, ACE, ACE, np.zeros(2), np.array([-1.0, 0.0])))
        return ev, j.decide(StepInput(mk_task(3), np.ones(3) * 3, ACE, moved, np.zeros(2), np.array([1.0, 0.0])))

    ev, d = run(ignore_usage_counters=True)
    assert (d.triggered, d.accept, d.reason, d.evaluator_calls, ev.calls) == (False, True, "trivially_equal", 0, [])
    ev, d = run()
    assert d.triggered is True and d.reason != "trivially_equal" and len(ev.calls) == 2


def test_state_round_trip_keeps_the_option():
    cfg = JanusConfig(warmup=2, skip_trivially_equal=True)
    j = Janus(cfg, Ev())
    k = Janus.from_state_dict(json.loads(json.dumps(j.state_dict())), Ev())
    assert k.config.skip_trivially_equal is True
