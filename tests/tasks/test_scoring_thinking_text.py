"""Reasoning left in the text a scorer gets (a server without a reasoning parser, logs re-scored from text): only the
text after the reasoning counts, for every family, for strings and ChatResults alike; a reasoning block left open is
unscorable ("truncated")."""
from __future__ import annotations

import pytest

from janus_memory.llm.reasoning import split_answer, split_reasoning
from janus_memory.tasks import get_family
from janus_memory.tasks.base import output_text
from janus_memory.values import ChatResult, Task


def mc_task(gold="C"):
    return Task(id="t", dataset="gpqa", question="q", gold=gold, meta={"options": ["w", "x", "y", "z"],
                                                                     "labels": "ABCD"})


def math_task(gold="42"):
    return Task(id="m", dataset="gsm8k", question="q", gold=gold)


def chat(text, finish="stop"):
    return ChatResult(text=text, finish_reason=finish)


# ------------------------------------------------------------------------------------------ the splitter itself

@pytest.mark.parametrize("text,answer,left_open", [
    ("<think>\nMaybe (A).\n</think>\n\nThe answer is (C).", "The answer is (C).", False),
    # Qwen3-Thinking-2507: no opening tag, only the closing one
    ("Okay, (A) fits at first.\n</think>\n\nThe answer is (C).", "The answer is (C).", False),
    # repeated pairs, empty pairs (no-think mode)
    ("<think></think>\n<think>\n</think>\nThe answer is (C).", "The answer is (C).", False),
    ("<thinking>(A)?</thinking>\nAnswer: C", "Answer: C", False),
    ("<reasoning>(A)?</reasoning>\n<answer>C</answer>", "<answer>C</answer>", False),
    ("[THINK]Is it (A)?[/THINK]The answer is (C).", "The answer is (C).", False),
    ("◁think▷Is it (A)?◁/think▷The answer is (C).", "The answer is (C).", False),
    ("<seed:think>(A)?</seed:think>The answer is (C).", "The answer is (C).", False),
    ("<|channel|>analysis<|message|>Maybe (A).<|end|><|start|>assistant<|channel|>final<|message|>"
     "The answer is (C).<|return|>", "The answer is (C).", False),
    # left open: the reply stopped while reasoning, whatever came before the tag
    ("<think>\nThe answer is (C), I think. Let me verify", "", True),
    ("The answer is (C).\n<think>Hmm, is it", "", True),
    ("<|channel|>analysis<|message|>The answer is (C), let me check", "", True),
    ("The answer is (C).", "The answer is (C).", False),
])
def test_split_answer(text, answer, left_open):
    assert split_answer(text) == (answer, left_open)


def test_chat_results_get_the_same_tags_split():
    text, reasoning = split_reasoning("[THINK]Is it (A)?[/THINK]The answer is (C).", None, "stop")
    assert (text, reasoning) == ("The answer is (C).", "Is it (A)?")
    assert output_text(chat("<think>(A)</think>The answer is (C).")) == ("The answer is (C).", False)
    assert output_text(chat("<think>The answer is (C)")) == ("", True)
    assert output_text("<think>The answer is (C)") == ("", True)


# ------------------------------------------------------------------------------------------ multiple choice

MC_THOUGHT = "<think>\nOkay. Option (A) looks right at first... so the answer is (A).\nWait, no.\n</think>\n\n"


@pytest.mark.parametrize("output", [
    MC_THOUGHT + "The answer is (C).",
    chat(MC_THOUGHT + "The answer is (C)."),
    "Option (A) fits the first clue, so the answer is (A)... no.\n</think>\n\nThe answer is (C).",
    "<thinking>The answer is (A).</thinking>\nAnswer: C",
])
def test_mc_reads_the_answer_after_the_thinking(output):
    s = get_family("gpqa").score(mc_task("C"), output)
    assert (s.correct, s.extracted, s.status) == (True, "C", "ok")
    s = get_family("gpqa").score(mc_task("A"), output)  # the tentative (A) inside the thinking is never read
    assert (s.correct, s.extracted) == (False, "C")


@pytest.mark.parametrize("output", [
    "<think>\nThe answer is (C), I think. Let me verify the second option",
    chat("<think>\nThe answer is (C), I think. Let me verify the second option"),
    "The answer is (C).\n<think>Hmm, option (A) again:",
    "<think>I think (C)</think>\n<think>but (A)?",
])
def test_mc_unclosed_thinking_is_unscorable(output):
    s = get_family("gpqa").score(mc_task("C"), output)
    assert (s.correct, s.extracted, s.status) == (False, None, "truncated")


def test_mc_nothing_after_the_thinking_is_unparsed():
    s = get_family("gpqa").score(mc_task("A"), "<think>I think (A)</think>")
    assert (s.correct, s.extracted, s.status) == (False, None, "unparsed")


# ------------------------------------------------------------------------------------------ math

@pytest.mark.parametrize("output", [
    "<think>\n6 * 7 = 42, or is it \\boxed{40}? Try again.\n</think>\n\nThe total is \\boxed{42}.",
    chat("<think>\nSo the answer is 40.\n</think>\nThe answer is 42."),
    "Counting gives 40... wait.\n</think>\n\n#### 42",
])
def test_math_reads_the_answer_after_the_thinking(output):
    assert get_family("gsm8k").score(math_task("42"), output).correct is True
    s = get_family("gsm8k").score(math_task("40"), output)
    assert (s.correct, s.extracted) == (False, "42")


@pytest.mark.parametrize("output", [
    "<think>\nThe answer is 42, let me double-check 6 * 7",
    chat("<think>\n\\boxed{42}"),
    "The answer is 42.\n<think>Hmm, but the tax",
])
def test_math_unclosed_thinking_is_unscorable(output):
    s = get_family("gsm8k").score(math_task("42"), output)
    assert (s.correct, s.extracted, s.status) == (False, None, "truncated")


def test_math_number_inside_thinking_is_no_fallback():
    s = get_family("gsm8k").score(math_task("42"), "<think>42</think>\nI could not finish this one.")
    assert (s.correct, s.extracted, s.status) == (False, None, "unparsed")


# ------------------------------------------------------------------------------------------ code and APIBench

def he_task():
    return Task(id="HumanEval/2", dataset="humaneval", question="q", gold="",
                meta={"entry_point": "truncate_number", "test": "def check(c):\n    assert c(3.5) == 0.5\n",
                      "prompt": "def truncate_number(number: float) -> float:\n    \"\"\"Decimal part.\"\"\"\n"})


def test_humaneval_never_runs_a_draft_from_an_unclosed_think():
    fam = get_family("humaneval")
    draft = "<think>\n```python\ndef truncate_number(number):\n    return number % 1.0\n```\nbut maybe"
    for out in (draft, chat(draft)):
        prog, early = fam._prepare(he_task(), out)
        assert prog is None and (early.correct, early.status) == (False, "truncated")


def test_humaneval_takes_the_block_after_the_thinking():
    fam = get_family("humaneval")
    text = ("<think>def truncate_number(x): return 0  # draft\n</think>\nHere it is:\n```python\n"
            "def truncate_number(number: float) -> float:\n    return number % 1.0\n```")
    prog, early = fam._prepare(he_task(), text)
    assert early is None and "return number % 1.0" in prog[0] and "draft" not in prog[0]


def test_apibench_reads_the_field_after_the_thinking():
    fam = get_family("apibench_hf")
    dom = "Natural Language Processing Text Generation"
    t = Task(id="a", dataset="apibench_hf", question="q", gold="", meta={"domain": dom})
    field = f"<<<domain>>>: {dom}\n<<<api_call>>>: pipeline('text-generation', model='gpt2')\n<<<api_provider>>>: HF"
    thought = "<think>maybe <<<api_call>>>: pipeline('text-generation', model='made-up/gpt-9')</think>\n"
    s = fam.score(t, thought + field)
    assert (s.correct, s.detail["hallucination"]) == (True, False)
    s = fam.score(t, "<think>\n" + field)
    assert (s.correct, s.status, s.detail["hallucination"]) == (False, "truncated", False)
