"""Reasoning/answer separation and response normalisation: failure cases C19, C20, C22-A (failure-cases.md)."""
import re

import pytest

from janus_memory.llm.reasoning import (
    estimate_prompt_tokens,
    is_context_truncated,
    normalise_response,
    split_reasoning,
)

MSGS = [{"role": "user", "content": "What is 17 times 23?"}]


def last_number(text):
    nums = re.findall(r"-?\d+(?:\.\d+)?", text)
    return nums[-1] if nums else None


def test_c19_length_cut_inside_reasoning_gives_no_answer():
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "reasoning": None,
                                                 "content": "Okay, 17 times 23: 17*20=340, plus 51 is 391. Let me "
                                                            "double-check by"},
                         "finish_reason": "length"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 512, "total_tokens": 552}}
    r = normalise_response(body, MSGS)
    assert r.text == ""
    assert r.reasoning == "Okay, 17 times 23: 17*20=340, plus 51 is 391. Let me double-check by"
    assert r.truncated is True and r.finish_reason == "length"
    assert last_number(r.text) is None
    assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.estimated) == (40, 512, False)


def test_c19_unclosed_think_with_length():
    text, reasoning = split_reasoning("<think>Let me compute 17*23 = 39", None, "length")
    assert text == "" and reasoning == "Let me compute 17*23 = 39"


@pytest.mark.parametrize("finish", ["stop", "length", None, "content_filter"])
def test_an_unclosed_think_is_never_an_answer_whatever_the_finish(finish):
    """A reply that ended inside a reasoning block has no answer: what came before the tag was being revised."""
    text, reasoning = split_reasoning("The answer is 5.\n<think>Wait, 17*23 is", None, finish)
    assert text == "" and reasoning == "The answer is 5.\n\nWait, 17*23 is"
    r = normalise_response({"choices": [{"message": {"content": "Answer: 5 <think>hmm"}, "finish_reason": finish}]},
                           MSGS)
    assert r.text == "" and r.reasoning == "Answer: 5\n\nhmm"
    # the same reply as a plain string reads the same way
    from janus_memory.llm.reasoning import split_answer

    assert split_answer("The answer is 5.\n<think>Wait, 17*23 is") == ("", True)
    # a closed block followed by an answer is untouched
    assert split_reasoning("<think>r</think>Answer: 5", None, finish) == ("Answer: 5", "r")


@pytest.mark.parametrize("message", [
    {"content": "The answer is 5.", "reasoning": "Try x=4 first…"},                     # C20-A
    {"content": "The answer is 5.", "reasoning_content": "Try x=4 first…"},             # C20-B
])
def test_c20_separate_reasoning_fields(message):
    r = normalise_response({"choices": [{"message": message, "finish_reason": "stop"}]}, MSGS)
    assert r.text == "The answer is 5."
    assert r.reasoning == "Try x=4 first…"
    assert last_number(r.text) == "5"


def test_c20_c_lone_closing_tag():
    content = "Try 12 apples, no, x=4 fails.\n</think>\n\nThe answer is 5."
    r = normalise_response({"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}, MSGS)
    assert r.text == "The answer is 5."
    assert r.reasoning == "Try 12 apples, no, x=4 fails."
    assert last_number(r.text) == "5"


def test_c20_d_repeated_empty_pairs():
    content = "<think>\n\n</think>\n\n<think>\n</think>\n\nThe answer is 5."
    text, reasoning = split_reasoning(content, None, "stop")
    assert (text, reasoning) == ("The answer is 5.", "")


def test_multiple_pairs_and_field_are_all_kept_in_reasoning():
    text, reasoning = split_reasoning("<think>a</think>The answer <think>b</think>is 5.", "field", "stop")
    assert text == "The answer is 5."
    assert reasoning == "field\n\na\n\nb"


def test_plain_answer_untouched_and_length_with_closed_think_keeps_answer():
    assert split_reasoning("The answer is 7.", None, "stop") == ("The answer is 7.", "")
    # the think block closed before the cut: the partial answer stays the answer
    assert split_reasoning("<think>r</think>The answer is", None, "length") == ("The answer is", "r")


def test_c22_a_missing_usage_is_estimated_never_zero():
    r = normalise_response({"choices": [{"message": {"content": "The answer is 5."}, "finish_reason": "stop"}],
                            "usage": None}, MSGS)
    assert r.usage.estimated is True
    assert r.usage.prompt_tokens == estimate_prompt_tokens(MSGS) == 11
    assert r.usage.completion_tokens == 4


def test_c22_b_truncation_check_uses_a_lower_bound():
    cheatsheet = " ".join(f"rule{i} apply" for i in range(2000))  # 4,000 words
    msgs = [{"role": "system", "content": cheatsheet}, {"role": "user", "content": "What is 2 + 3?"}]
    assert is_context_truncated(2048, msgs) == (True, 4005)  # 4,000 + 5 words
    assert is_context_truncated(4100, msgs)[0] is False


@pytest.mark.parametrize("bad", [{}, {"choices": []}, {"choices": [{"finish_reason": "stop"}]}, "x"])
def test_malformed_bodies_raise_value_error(bad):
    with pytest.raises(ValueError):
        normalise_response(bad, MSGS)
