"""The evaluator callback that the pure controller calls: score(memory_text, tasks) -> list[bool].

Our runner solves each evaluation-set task with the updater's own solving prompt and only the given memory text
(paper-spec §3.2 step 5: no retrieval, one sample), then scores it against the stored ground truth. Identical
(memory, task, sampling) requests are served by the LLM response cache, so re-scoring a pair costs nothing and
server nondeterminism cannot create fake flips (failure case C23).
"""
from __future__ import annotations

import hashlib
from typing import Any


class UpdaterEvaluator:
    """Callable ``(memory_text, tasks) -> list[bool]`` backed by ``updater.solve_with_memory``.

    ``records`` accumulates one dict per (memory, task) evaluation since the last :meth:`drain`, for the decision log.
    Records hold no cache/timing flags, so a resumed run logs exactly what an uninterrupted one does.
    """

    def __init__(self, updater: Any, *, role: str = "janus"):
        self.updater = updater
        self.role = role
        self.records: list[dict] = []

    def __call__(self, memory_text: str, tasks: list[Any]) -> list[bool | None]:
        results = self.updater.solve_with_memory(memory_text, list(tasks), role=self.role)
        if len(results) != len(tasks):
            raise RuntimeError(f"solve_with_memory returned {len(results)} results for {len(tasks)} tasks")
        out = []
        mem_sha = hashlib.sha256(memory_text.encode("utf-8")).hexdigest()[:12]
        for task, (chat, score) in zip(tasks, results):
            self.records.append(
                {
                    "task_id": task.id,
                    "memory_sha256": mem_sha,
                    "correct": bool(score.correct),
                    "extracted": score.extracted,
                    "status": score.status,
                    "prompt_tokens": chat.usage.prompt_tokens,
                    "completion_tokens": chat.usage.completion_tokens,
                }
            )
            # a timeout (after the sandbox's serial re-run) is indeterminate: scored incorrect, never a flip (C16-C)
            out.append(None if score.status == "timeout" else bool(score.correct))
        return out

    def drain(self) -> list[dict]:
        recs, self.records = self.records, []
        return recs
