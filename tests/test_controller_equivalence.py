"""Trivially-equal memories (controller/equivalence.py) and the controller's skip_trivially_equal option."""
import json

import numpy as np
import pytest

from janus_memory.controller import Janus, JanusConfig, StepInput
from janus_memory.controller.equivalence import (
    COUNT_LINE,
    DEFAULT_BOOKKEEPING,
    VERSION_LINE,
    Unit,
    canonical_memory,
    canonical_text,
    trivially_equal,
)

from controller_fakes import Ev, mk_task

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
    assert list(JanusConfig().to_dict())[-1] == "skip_trivially_equal"


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


def test_state_round_trip_keeps_the_option():
    cfg = JanusConfig(warmup=2, skip_trivially_equal=True)
    j = Janus(cfg, Ev())
    k = Janus.from_state_dict(json.loads(json.dumps(j.state_dict())), Ev())
    assert k.config.skip_trivially_equal is True
