"""What an updater talks to and what one step reports: the collaborator protocols (LLM, task family, encoder)
and the records ``LLMCall`` / ``StepOutcome``. Re-exported by ``updaters/base.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from janus_memory.values import ChatResult, Score, Task


# structural protocols; the real collaborators live in janus_memory.llm / .tasks / .encoders
class ChatLLM(Protocol):
    def chat(self, messages: list[dict], *, role: str, sample: int = 0, **params: Any) -> ChatResult: ...

    def chat_many(self, list_of_messages: list[list[dict]], *, role: str, **params: Any) -> list[ChatResult]: ...


class Family(Protocol):
    def prompt(self, task: Task) -> str: ...

    def score(self, task: Task, output: ChatResult | str) -> Score: ...


class Encoder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray: ...


class Harm(Protocol):
    """A harmful candidate of one kind at one stream step (``--inject KIND@STEP``; built by janus_memory.inject).

    An updater's injection hook (:meth:`Updater.inject_harm`) hands it its memory of M_{t-1} in the structure the
    updater keeps and writes back what it returns; each method is deterministic in (kind, task, step, seed) and its
    arguments, and never modifies them. ``kind`` is one of wipe, dump, overfit, poison, truncate, falsify."""

    kind: str
    task: Task
    step: int
    seed: int

    def sheet(self, memory: str, *, examples: str = "", answer: str = "") -> str:
        """A cheatsheet (entries split on blank lines, bullets, numbers, headings): the harmful sheet text.
        ``examples``: the retrieved-examples block the step showed (dump); ``answer``: its visible answer (dump)."""
        ...

    def rules(self, rules: list[tuple[str, int]], *, examples: str = "",
              answer: str = "") -> list[tuple[str, int]]:
        """A rule list ``(text, count)``: the harmful rules (new rules count 2, a planted one the top count + 1)."""
        ...

    def playbook(self, sections: list[list], *, next_id: int, faithful: bool, answer: str = "",
                 reflection: str = "") -> tuple[list[list], int]:
        """A playbook (``[heading, [[id, helpful, harmful, content], ...]]`` sections) and its id counter."""
        ...

    def bank(self, entries: list[dict], *, answer: str = "", status: str | None = None) -> list[dict]:
        """A bank of entries ``{"id", "question", "status", "body"}`` whose bodies hold memory items."""
        ...

    def experience(self, records: list[dict], *, new_record: dict | None = None) -> list[dict]:
        """Raw experience records ``{"id", "question", "input", "output", "feedback"}``; ``new_record``: the step's."""
        ...


# --------------------------------------------------------------------------------------------------
# records
# --------------------------------------------------------------------------------------------------
@dataclass
class LLMCall:
    """One LLM call made by an updater. ``role`` is "solver", "curator" or "reflection"."""

    role: str
    messages: list[dict]
    result: ChatResult
    params: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        r = self.result
        return {
            "role": self.role,
            "messages": self.messages,
            "params": self.params,
            "result": {
                "text": r.text,
                "reasoning": r.reasoning,
                "finish_reason": r.finish_reason,
                "cached": r.cached,
                "prompt_tokens": r.usage.prompt_tokens,
                "completion_tokens": r.usage.completion_tokens,
            },
        }


@dataclass
class StepOutcome:
    """What one ``Updater.step(task)`` produced.

    output: the answer that was scored (for multi-try methods, the last try).
    score: its Score against the ground truth (docs/research-notes.md §1.2: feedback = correctness).
    old_memory / candidate_memory: ``memory_text()`` before and after the step (M_{t-1}, M̂_t).
    candidate_rejected: None, or the reason the method's proposal was refused by our validation
        (e.g. "missing block"); the memory is then unchanged (candidate_memory == old_memory).
    calls: every LLM call made, in order.
    info: method-specific log (branches taken, dropped operations with reasons, retrieved ids ...).
    """

    output: ChatResult
    score: Score
    old_memory: str
    candidate_memory: str
    candidate_rejected: str | None
    calls: list[LLMCall]
    info: dict = field(default_factory=dict)

    @property
    def rejected_candidate(self) -> str | None:  # spelling used in docs/architecture.md
        return self.candidate_rejected

    @property
    def changed(self) -> bool:
        return self.candidate_memory != self.old_memory
