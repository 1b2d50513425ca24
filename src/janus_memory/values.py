"""The values every layer passes around: a benchmark ``Task``, the ``Score`` of an answer, the token ``Usage`` of one
LLM call and the ``ChatResult`` it returns (tasks, LLM layer, updaters, controller, runner).

Kept dependency-free (stdlib only) so any module can import it without cycles.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Task:
    """One benchmark item.

    Attributes:
        id: stable identifier, unique within ``dataset`` (e.g. ``"gsm8k/test/17"``, MMLU-Pro ``question_id``).
        dataset: registry name of the task family/dataset (``"gsm8k"``, ``"math500"``, ``"mmlu_pro_eng"`` ...).
        question: the raw question text; this is what retrieval and Janus's task embedding φ(x) use.
        gold: the ground-truth answer in the dataset's own form (string for math/MC, tests for code ...).
        meta: family-specific extra fields (options, entry_point, test code, domain ...). JSON-serialisable.
    """

    id: str
    dataset: str
    question: str
    gold: Any
    meta: dict = field(default_factory=dict, hash=False, compare=False)


ScoreStatus = Literal["ok", "fallback", "unparsed", "truncated", "timeout", "error"]


@dataclass(frozen=True)
class Score:
    """Result of extraction + scoring of one model output against one task.

    correct: the paper's correctness indicator (pass@1 / exact match), bool.
    extracted: the extracted final answer (None when nothing could be extracted).
    status: "ok" (extracted and scored), "fallback" (no final-answer marker: scored through the last number/letter,
            counted so reports show format failures), "unparsed" (no answer found: scored incorrect, C12),
            "truncated" (generation hit max_tokens before an answer, C19), "timeout" (sandbox/verify timeout, C16),
            "error" (checker failed; scored incorrect).
    detail: free text for the log (e.g. sandbox stderr tail, hallucination flag).
    """

    correct: bool
    extracted: str | None = None
    status: ScoreStatus = "ok"
    detail: dict = field(default_factory=dict)


@dataclass
class Usage:
    """Token usage of one LLM call. ``estimated`` is True when the server gave no usage (C22)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False


@dataclass
class ChatResult:
    """One chat completion, normalised across backends.

    text: the answer channel with all reasoning removed (C19/C20): never parse reasoning as the answer.
    reasoning: reasoning text (``<think>`` content, ``reasoning``/``reasoning_content`` fields), kept for the log.
    finish_reason: "stop", "length", ...; "length" means the output was cut by max_tokens.
    cached: served from the persistent response cache (adds zero tokens to cost accounting).
    """

    text: str
    reasoning: str = ""
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    cached: bool = False
    latency_s: float = 0.0
    model: str = ""  # the model the server reported it answered as (else the one asked for)
    fingerprint: str = ""  # the server's system_fingerprint, where it gives one (its build and model configuration)

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"
