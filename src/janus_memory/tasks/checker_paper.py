"""The authors' checkers (``checker: paper``, the paper preset), with our strict verdict recorded beside each one.

The Janus authors score every answer (stream feedback, Janus replays, the held-out test) with their task classes'
``evaluate_entry`` (GitHub Chen-1031/Janus @ a42b1e6, ``tasks/task_gpqa.py``, ``tasks/task_mmlu_pro.py``,
``tasks/math_answer_utils.py``). Their rules, re-stated here in our own code:

* The text they check is the model's whole output. Qwen3 served by vLLM keeps its thinking in it, so the checked
  text is ``<think>REASONING</think>`` followed by the answer (:func:`checked_text`); without reasoning, the answer.
* Answer tag: the content of the last ``<answer>...</answer>`` (any case, across lines), else of the last
  ``<final_answer>...</final_answer>``, stripped; an empty content counts as no tag (:func:`answer_tag`).
* GPQA (:func:`gpqa_correct`) is correct when any of these holds: the tag's first character (after trimming and
  lower-casing) is the gold letter; the gold option text (lower-cased, runs of white space made one space) occurs in
  the tag; the first character of the whole output is the gold letter; the gold option text occurs anywhere in the
  output, the thinking included.
* MMLU-Pro and other multiple-choice sets (:func:`mmlu_pro_correct`) are correct when the letter read from the tag,
  or the letter read from the whole output, is the gold letter, or the gold option text occurs anywhere in the
  output. A letter is read (:func:`mmlu_pro_letter`, on the upper-cased text) as the last valid letter after
  "FINAL ANSWER" / "ANSWER" / "OPTION" / "CHOICE" (optionally "IS" or ":", an opening parenthesis), else the last
  valid boxed letter, else the last valid letter in a ``<final_answer>`` block, else the whole text when it is just
  a letter (parentheses, a final period allowed), else the last valid stand-alone letter anywhere: in upper-cased
  prose the article "a" is such a letter, which is part of why this checker is lenient.
* Math: the paper's normalised exact match of the last ``\\boxed{}`` (else the answer tag), the ``faithful`` math
  rule (``verify_math.paper_equal`` on ``extract_math.paper_extract``), on the checked text.
* Multiple-choice prompt: the authors ask for the option letter alone, and their GPQA rule depends on it (the first
  character of the output or of the answer tag), so the paper family asks for it too, in our words
  (``tasks/prompts/multiple_choice_paper.txt``, options listed "A. text").
* APIBench: a family with a ``paper_check(task, checked_text, strict) -> (correct, detail)`` method scores itself
  (``apibench.APIBenchFamily.paper_check``: the authors' AST evaluator, ``tasks/apibench_paper.py``).
* HumanEval: their checker executes the answer's code; we keep our own scorer there (the paper verdict is the strict
  one), see docs/fidelity.md.

:class:`PaperCheckedFamily` wraps a task family: ``score`` returns the paper verdict as ``correct`` and records the
strict verdict in ``detail`` (``checker``, ``strict_correct``, ``strict_status``), so every record can carry both.
"""
from __future__ import annotations

import re
from typing import Sequence

from janus_memory.values import ChatResult, Score, Task

from .base import TaskFamily, load_prompt

CHECKERS = ("paper", "strict")

_TAGS = tuple(re.compile(rf"<{name}>(.*?)</{name}>", re.IGNORECASE | re.DOTALL) for name in ("answer", "final_answer"))
_LETTER_AFTER_WORD = re.compile(r"(?:FINAL\s+ANSWER|ANSWER|OPTION|CHOICE)\s*(?:IS|:)?\s*\(?([A-J])")
_BOXED_LETTER = re.compile(r"\\BOXED\{\s*([A-J])\s*\}")
_BLOCK_LETTER = re.compile(r"<FINAL_ANSWER>\s*([A-J])\s*</FINAL_ANSWER>")
_ONLY_LETTER = re.compile(r"\(?([A-J])\)?\.?")
_LONE_LETTER = re.compile(r"\b([A-J])\b")


def checked_text(output: ChatResult | str) -> str:
    """The text the authors' checker sees: thinking (as Qwen3 writes it) then the answer."""
    if isinstance(output, str):
        return output
    reasoning = output.reasoning or ""
    return f"<think>\n{reasoning}\n</think>\n\n{output.text or ''}" if reasoning else (output.text or "")


def answer_tag(text: str) -> str:
    """Content of the last <answer> block, else of the last <final_answer> block, stripped ("" when neither)."""
    for pattern in _TAGS:
        found = pattern.findall(text or "")
        if found:
            return found[-1].strip()
    return ""


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", (text or "").strip().lower())


def gpqa_correct(text: str, gold_letter: str, gold_text: str) -> bool:
    """The authors' GPQA rule (module docstring)."""
    gold_norm = _squash(gold_text)
    tag = answer_tag(text)
    if tag:
        head = _squash(tag)[:1]
        if head in "abcd" and head and head.upper() == gold_letter:
            return True
        if gold_norm and gold_norm in _squash(tag):
            return True
    head = _squash(text)[:1]
    if head and head in "abcd" and head.upper() == gold_letter:
        return True
    return bool(gold_norm) and gold_norm in _squash(text)


def mmlu_pro_letter(text: str, labels: str) -> str:
    """The letter the authors' MMLU-Pro reader finds in ``text`` ("" when none); ``labels``: the valid letters."""
    upper = (text or "").strip().upper()
    if not upper:
        return ""
    for pattern in (_LETTER_AFTER_WORD, _BOXED_LETTER, _BLOCK_LETTER):
        for letter in reversed(pattern.findall(upper)):
            if letter in labels:
                return letter
    only = _ONLY_LETTER.fullmatch(upper)
    if only and only.group(1) in labels:
        return only.group(1)
    for letter in reversed(_LONE_LETTER.findall(upper)):
        if letter in labels:
            return letter
    return ""


def mmlu_pro_correct(text: str, labels: str, gold_letter: str, gold_text: str) -> bool:
    """The authors' MMLU-Pro rule (module docstring)."""
    tag = answer_tag(text)
    if tag and mmlu_pro_letter(tag, labels) == gold_letter:
        return True
    if gold_letter and mmlu_pro_letter(text, labels) == gold_letter:
        return True
    gold_norm = _squash(gold_text)
    return bool(gold_norm) and gold_norm in _squash(text)


def paper_verdict(family: TaskFamily, task: Task, output: ChatResult | str, strict: Score) -> bool:
    """The authors' verdict on ``output`` for ``task`` (``strict``: our verdict, reused where the rules agree)."""
    text = checked_text(output)
    if family.name == "mc":
        options = list((task.meta or {}).get("options") or [])
        labels = (task.meta or {}).get("labels") or "ABCDEFGHIJ"[:len(options)]
        gold = str(task.gold)
        gold_text = options[labels.index(gold)] if gold in labels and labels.index(gold) < len(options) else ""
        if task.dataset == "gpqa":
            return gpqa_correct(text, gold, gold_text)
        return mmlu_pro_correct(text, labels, gold, gold_text)
    if family.name == "math":
        from .extract_math import paper_extract
        from .verify_math import paper_equal

        return paper_equal(str(task.gold), paper_extract(text))
    return bool(strict.correct)


class PaperCheckedFamily:
    """A task family whose ``score`` is the authors' checker, with our strict verdict kept in ``detail``.

    Everything else (prompt, loaders, fake answers, sandbox settings) is the wrapped family's."""

    def __init__(self, inner: TaskFamily):
        self.inner = inner
        self._mc_template = load_prompt("multiple_choice_paper") if inner.name == "mc" else None
        # the prompt file this family uses (run/provenance.py copies it into the run folder's prompts/)
        self.prompt_name = "multiple_choice_paper" if self._mc_template is not None else inner.prompt_name

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def prompt(self, task: Task) -> str:
        """Multiple choice: the authors' answer format (the option letter alone; their GPQA checker credits the
        first character of the output or of the answer tag), in our words; other families: the family's prompt."""
        if self._mc_template is None:
            return self.inner.prompt(task)
        options = task.meta["options"]
        labels = task.meta.get("labels") or "ABCDEFGHIJ"[:len(options)]
        choices = "\n".join(f"{label}. {text}" for label, text in zip(labels, options))
        return self._mc_template.substitute(question=task.question, choices=choices, labels_slash="/".join(labels))


    def _combine(self, task: Task, output: ChatResult | str, strict: Score) -> Score:
        own = getattr(self.inner, "paper_check", None)  # a family that re-states its authors' checker itself
        if own is not None:
            paper, extra = own(task, checked_text(output), strict)
        else:
            paper, extra = paper_verdict(self.inner, task, output, strict), {}
        detail = {**(strict.detail or {}), **extra, "checker": "paper", "strict_correct": bool(strict.correct),
                  "strict_status": strict.status}
        return Score(bool(paper), strict.extracted, strict.status, detail)

    def score(self, task: Task, output: ChatResult | str) -> Score:
        return self._combine(task, output, self.inner.score(task, output))

    def score_many(self, tasks: Sequence[Task], outputs: Sequence[ChatResult | str], workers: int = 2) -> list[Score]:
        strict = self.inner.score_many(tasks, outputs, workers=workers)
        return [self._combine(t, o, s) for t, o, s in zip(tasks, outputs, strict)]


def strict_of(score: Score) -> bool:
    """Our strict verdict of a score (the paper checker records it in ``detail``; otherwise it is the score)."""
    detail = score.detail or {}
    return bool(detail["strict_correct"]) if detail.get("checker") == "paper" else bool(score.correct)


def with_checker(family: TaskFamily, checker: str):
    """``family`` scored by ``checker`` ("paper": :class:`PaperCheckedFamily`; "strict": the family itself)."""
    if checker not in CHECKERS:
        raise ValueError(f"checker must be one of {', '.join(CHECKERS)}, got {checker!r}")
    return PaperCheckedFamily(family) if checker == "paper" else family
