"""The evaluator callback that the pure controller calls: score(memory_text, tasks) -> list[bool].

Our runner solves each evaluation-set task with the updater's own solving prompt and only the given memory text
(docs/research-notes.md §3.2 step 5: no retrieval, one sample), then scores it against the stored ground truth.

Replay sampling:

* ``replay="fresh"`` (paper preset): the authors draw a fresh sample for every (evaluation entry, memory) at every
  trigger. We give every such draw its own *sample index*, so the request differs from the stream solver's
  (sample 0) and from every other trigger's, yet stays cached and a resumed run replays it byte-identically. The
  index is ``1 + sha256(salt, trigger, call, occurrence) mod 2**40`` where ``trigger`` comes from the controller's
  ``begin_comparison`` hook (part of the controller state, so resume-safe), ``call`` counts evaluator calls within
  the comparison (old memory, new memory, and the rounds of early stopping are different calls, so two identical
  memories still get independent draws), and ``occurrence`` separates a task listed twice in one call (a coverage
  representative that is also fresh). ``salt`` separates runs that must not share answers (seed, stream order).
* ``replay="frozen"`` (option): the replay request equals the stream solver's (sample 0), so the response cache
  answers it: a (memory, task) pair always gets the same verdict. Cheaper, and evaluator noise cannot flip
  identical memories, but a memory compared again keeps its old scores and DC-RS's new memory on x_t reuses the
  online answer.
"""
from __future__ import annotations

import hashlib
from typing import Any

from ..llm.cache import answered_field as _answered_field

REPLAY_MODES = ("fresh", "frozen")
# what a replay request that fails (after the client's retries) does: "zero" = that (entry, memory) is
# scored incorrect and the comparison goes on, as the authors' replay does (a failed prompt gives "" and scores 0;
# the paper preset); "abort" = the error ends the comparison and the controller keeps the deployed memory (ours)
REPLAY_FAILURES = ("zero", "abort")


def _sandbox_failure(error: BaseException) -> bool:
    """The sandbox, not a request, failed (or generated code was refused): never scored as a wrong answer, the run
    stops with its one line (tasks/sandbox.py)."""
    from ..tasks.sandbox import SandboxUnavailable, WeakSandboxRefused

    return isinstance(error, (SandboxUnavailable, WeakSandboxRefused))


def failed_result(error: BaseException):
    """(ChatResult, Score) standing for a failed replay request under ``replay_failures="zero"``: empty output,
    scored incorrect, status ``error`` with the error in ``detail["failure"]``."""
    from ..values import ChatResult, Score

    return (ChatResult(text="", finish_reason="error"),
            Score(False, None, "error", {"failure": f"{type(error).__name__}: {error}"[:300]}))


def _strict_field(score) -> dict:
    detail = score.detail or {}
    return {"strict_correct": bool(detail["strict_correct"])} if detail.get("checker") == "paper" else {}


def replay_sample_index(salt: str, trigger: int, call: int, occurrence: int) -> int:
    """The sample index of one replay draw (>= 1, so never the stream solver's sample 0)."""
    key = f"janus-replay|{salt}|{trigger}|{call}|{occurrence}".encode("utf-8")
    return 1 + int.from_bytes(hashlib.sha256(key).digest()[:5], "big")


class UpdaterEvaluator:
    """Callable ``(memory_text, tasks) -> list[bool | None]`` backed by ``updater.solve_with_memory``.

    ``records`` accumulates one dict per (memory, task) evaluation since the last :meth:`drain`, for the decision log.
    Records hold no cache/timing flags, so a resumed run logs exactly what an uninterrupted one does.

    Args:
        replay: "fresh" (paper preset) or "frozen"; see the module docstring.
        salt: separates the replay draws of different runs (e.g. ``f"seed={seed};order={order_seed}"``).
    """

    def __init__(self, updater: Any, *, role: str = "janus", replay: str = "fresh", salt: str = "",
                 failures: str = "abort"):
        if replay not in REPLAY_MODES:
            raise ValueError(f"replay must be one of {REPLAY_MODES}, got {replay!r}")
        if failures not in REPLAY_FAILURES:
            raise ValueError(f"failures must be one of {REPLAY_FAILURES}, got {failures!r}")
        self.failures = failures
        self.updater = updater
        self.role = role
        self.replay = replay
        self.salt = str(salt)
        self.records: list[dict] = []
        self._trigger: int | None = None
        self._calls = 0

    def begin_comparison(self, *, step: int, trigger: int) -> None:
        """Called by the controller before each comparison (``trigger`` = its trigger count, 1-based)."""
        self._trigger = int(trigger)
        self._calls = 0

    def _samples(self, tasks: list[Any]) -> list[int]:
        """The sample index of each task for this evaluator call; counts the comparison's calls (``_calls``, either
        replay mode)."""
        call = self._calls
        self._calls += 1
        if self.replay == "frozen":
            return [0] * len(tasks)
        if self._trigger is None:
            raise RuntimeError("replay='fresh' needs the controller's begin_comparison() before evaluating")
        seen: dict[str, int] = {}
        out = []
        for t in tasks:
            occ = seen.get(t.id, 0)
            seen[t.id] = occ + 1
            out.append(replay_sample_index(self.salt, self._trigger, call, occ))
        return out

    def __call__(self, memory_text: str, tasks: list[Any]) -> list[bool | None]:
        tasks = list(tasks)
        samples = self._samples(tasks)
        return self._finish(memory_text, tasks, self._solve(memory_text, tasks, samples), samples)

    def _solve(self, memory_text: str, tasks: list[Any], samples: list[int]) -> list:
        """(ChatResult, Score) per task, in order (run/eval_batch.py overrides this to batch both memories)."""
        results: list = [None] * len(tasks)
        # one batched call per distinct sample index (the LLM client takes one index per batch); with "frozen"
        # that is a single batch, with "fresh" one batch per draw
        by_sample: dict[int, list[int]] = {}
        for pos, s in enumerate(samples):
            by_sample.setdefault(s, []).append(pos)
        for s, positions in by_sample.items():
            try:
                part = self.updater.solve_with_memory(memory_text, [tasks[p] for p in positions], role=self.role,
                                                      sample=s)
            except Exception as e:  # noqa: BLE001 - an interrupt (BaseException) is never caught here
                if self.failures == "abort" or _sandbox_failure(e):
                    raise
                part = self._one_by_one(memory_text, [tasks[p] for p in positions], s, e)
            if len(part) != len(positions):
                raise RuntimeError(f"solve_with_memory returned {len(part)} results for {len(positions)} tasks")
            for p, r in zip(positions, part):
                results[p] = r
        return results

    def _one_by_one(self, memory_text: str, tasks: list[Any], sample: int, error: Exception) -> list:
        """``failures="zero"``: after a failed batch, each task alone (the client serves the ones already answered
        from its cache); a task whose request fails again gets :func:`failed_result`."""
        if len(tasks) == 1:
            return [failed_result(error)]
        out = []
        for t in tasks:
            try:
                out.extend(self.updater.solve_with_memory(memory_text, [t], role=self.role, sample=sample))
            except Exception as e:  # noqa: BLE001
                if _sandbox_failure(e):
                    raise
                out.append(failed_result(e))
        return out

    def _finish(self, memory_text: str, tasks: list[Any], results: list, samples: list[int]) -> list[bool | None]:
        out = []
        mem_sha = hashlib.sha256(memory_text.encode("utf-8")).hexdigest()[:12]
        for task, (chat, score), s in zip(tasks, results, samples):
            rec = {"task_id": task.id, "memory_sha256": mem_sha, "correct": bool(score.correct),
                   **_strict_field(score), "extracted": score.extracted, "status": score.status,
                   "prompt_tokens": chat.usage.prompt_tokens, "completion_tokens": chat.usage.completion_tokens}
            if "failure" in (score.detail or {}):
                rec["failure"] = score.detail["failure"]
            rec.update(_answered_field(chat, self._asked()))
            if self.replay == "fresh":  # frozen replays are always sample 0 (the stream solver's request)
                rec["sample"] = s
            self.records.append(rec)
            # a timeout (after the sandbox's serial re-run) is indeterminate: scored incorrect, never a flip (C16-C)
            out.append(None if score.status == "timeout" else bool(score.correct))
        return out

    def _asked(self) -> str:
        """The model the run asks for (its backend's), against which each record's answering model is compared."""
        llm = getattr(self.updater, "llm", None)
        return str(getattr(getattr(llm, "backend", None), "model", "") or "")

    def drain(self) -> list[dict]:
        recs, self.records = self.records, []
        return recs
