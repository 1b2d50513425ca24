"""What goes into and comes out of one ``Janus.decide`` call: StepInput, Decision, and the task id rule."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StepInput:
    """One stream step as seen by the controller.

    task: the caller's task object; needs an ``id`` (attribute, or key for dicts). Passed back to the evaluator.
    task_embedding: φ(question), shape (d,), same d for every task (L2-normalised in the paper).
    old_memory / new_memory: texts of M_{t-1} and the candidate M̂_t (what the evaluator replays).
    old_embedding / new_embedding: φ(old_memory), φ(new_memory), shape (d_m,).
    """

    task: Any
    task_embedding: Any
    old_memory: str
    new_memory: str
    old_embedding: Any
    new_embedding: Any


@dataclass
class Decision:
    """The controller's verdict for one step (JSON-serialisable through :meth:`to_dict`).

    accept: deploy the candidate (False = restore M_{t-1}). cosine: cos(z_t, m_{t-1}) or None (warm-up / no momentum).
    z_norm: ‖z_t‖; momentum_norm: ‖m_{t-1}‖ (None when absent). coverage/boundary/fresh: task ids of each role used
    in the evaluation (empty when the role is ablated). eval_ids: planned entries in evaluation order (duplicates
    kept unless dedup); old_correct/new_correct align with eval_ids[:len(...)] (all of them with full evaluation; a
    prefix under early stopping, possibly of different lengths for the two memories). n_evaluated: entries scored
    under both memories (the flip set is computed on them). old_score/new_score: accuracy over the entries each
    memory was evaluated on (denominator max(1, n)). flips: ids where the memories disagree (coverage reps excluded). evaluator_calls: (memory, task) evaluations spent; evaluator_calls_full: cost of the full two-memory
    evaluation. warnings: sanitised bad input and recovered failures.

    reoffer (``JanusConfig.seq_reoffer``, the recommended preset; empty otherwise): lines of an addition rolled back
    earlier, offered again at this step on top of the memory this step's own decision deployed. Keys: ``lines``,
    ``offer`` (1 to ``seq_reoffer``), ``accept``, ``reason``, ``memory`` (when accepted: the deployed memory plus the
    lines, the memory to deploy now), ``eval_ids`` / ``old_correct`` / ``new_correct`` and ``evaluator_calls`` (also
    in the step's). A loop of your own applies it after the step's accept or rollback::

        memory = new if d.accept else old
        if d.reoffer.get("accept"):
            memory = d.reoffer["memory"]   # GuardedUpdate does this through updater.load_memory_text

    and passes that memory as the next step's old memory (one that does not gets a warning next step).
    """

    step: int
    task_id: str
    phase: str
    triggered: bool
    accept: bool
    reason: str
    cosine: float | None = None
    z_norm: float | None = None
    momentum_norm: float | None = None
    coverage: list[str] = field(default_factory=list)
    boundary: list[str] = field(default_factory=list)
    fresh: list[str] = field(default_factory=list)
    eval_ids: list[str] = field(default_factory=list)
    n_evaluated: int = 0
    old_correct: list[bool] = field(default_factory=list)
    new_correct: list[bool] = field(default_factory=list)
    old_score: float | None = None
    new_score: float | None = None
    flips: list[str] = field(default_factory=list)
    evaluator_calls: int = 0
    evaluator_calls_full: int = 0
    p_value: float | None = None
    trigger_count: int = 0
    warnings: list[str] = field(default_factory=list)
    trigger_signals: dict = field(default_factory=dict)
    reoffer: dict = field(default_factory=dict)  # seq_reoffer: an earlier rolled-back addition offered again (reoffer.py)

    def to_dict(self) -> dict:
        """All fields; ``trigger_signals`` and ``reoffer`` only when set (the selective trigger; ``seq_reoffer``), so
        decision logs of the other settings keep their format."""
        d = dataclasses.asdict(self)
        for key in ("trigger_signals", "reoffer"):
            if not d[key]:
                del d[key]
        return d


def task_id_of(task: Any) -> str:
    """The task's id as a string (``task.id`` or ``task["id"]``). Raises TypeError when absent."""
    if isinstance(task, dict):
        if "id" not in task:
            raise TypeError("task dict has no 'id' key")
        return str(task["id"])
    tid = getattr(task, "id", None)
    if tid is None:
        raise TypeError(f"task of type {type(task).__name__} has no 'id' attribute")
    return str(tid)
