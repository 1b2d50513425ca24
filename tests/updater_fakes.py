"""Deterministic stand-ins for the updater tests: a scripted LLM, an exact-match family, a hashing encoder."""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from typing import Callable

import numpy as np

from janus_memory.values import ChatResult, Score, Task


class ScriptedLLM:
    """Answers each role from its own queue of scripted replies (str or ChatResult), in order.

    ``responder(messages, role, params) -> str | ChatResult`` answers when a role's queue is empty;
    without it an empty queue raises AssertionError (a test asked for a call it did not script).
    Every call is recorded in ``self.calls`` as dicts {"role", "messages", "params", "text"}.
    """

    def __init__(self, script: dict[str, list] | None = None, responder: Callable | None = None):
        self.queues: dict[str, list] = defaultdict(list)
        for role, items in (script or {}).items():
            self.queues[role].extend(items)
        self.responder = responder
        self.calls: list[dict] = []

    def push(self, role: str, *items) -> None:
        self.queues[role].extend(items)

    def _answer(self, messages, role, params) -> ChatResult:
        if self.queues[role]:
            item = self.queues[role].pop(0)
        elif self.responder is not None:
            item = self.responder(messages, role, params)
        else:
            raise AssertionError(f"unscripted {role!r} call: {messages[-1]['content'][-200:]!r}")
        res = item if isinstance(item, ChatResult) else ChatResult(text=str(item))
        self.calls.append({"role": role, "messages": messages, "params": dict(params), "text": res.text})
        return res

    def chat(self, messages, *, role, sample=0, **params) -> ChatResult:
        return self._answer(messages, role, params)

    def chat_many(self, list_of_messages, *, role, **params) -> list[ChatResult]:
        return [self._answer(m, role, params) for m in list_of_messages]

    def roles(self) -> list[str]:
        return [c["role"] for c in self.calls]


class ExactFamily:
    """Prompt "Question: ...\\nEnd with 'ANSWER: <value>'."; correct iff the last ANSWER value equals the gold."""

    name = "exact"

    def prompt(self, task: Task) -> str:
        return f"Question: {task.question}\nEnd your reply with 'ANSWER: <value>'."

    def score(self, task: Task, output) -> Score:
        text = output if isinstance(output, str) else output.text
        found = re.findall(r"ANSWER:\s*([^\s<]+)", text or "")
        if not found:
            return Score(correct=False, extracted=None, status="unparsed")
        return Score(correct=found[-1] == str(task.gold), extracted=found[-1])


class HashEncoder:
    """Bag of words hashed into 256 dims, L2-normalised; empty text -> zero row. Deterministic across runs."""

    name = "hash256"
    dim = 256

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"[a-z0-9]+", t.lower()):
                h = int(hashlib.sha256(w.encode()).hexdigest(), 16)
                out[i, h % self.dim] += 1.0
            n = np.linalg.norm(out[i])
            if n > 0:
                out[i] /= n
        return out


def task(i: int, question: str, gold: str) -> Task:
    return Task(id=f"t{i}", dataset="toy", question=question, gold=gold)
