"""Saving and restoring the controller: ``Janus.state_dict()`` / ``load_state_dict()`` / ``from_state_dict()``.

The state is JSON (arrays as base64 little-endian bytes, format ``janus-controller/1``); tasks are stored through
``task_to_dict`` / ``task_from_dict`` when the caller passes them, else as a ``Task`` dataclass or a plain dict.
``StateMixin`` reads and writes the controller's private fields; ``Janus`` (controller/janus.py) inherits it.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from janus_memory.types import Task

from .config import JanusConfig
from .evalset import EmbeddingStore, decode_array, encode_array

STATE_FORMAT = "janus-controller/1"


def _default_task_to_dict(task: Any) -> dict:
    if isinstance(task, Task):
        return {"type": "Task", "data": dataclasses.asdict(task)}
    if isinstance(task, dict):
        return {"type": "dict", "data": task}
    raise TypeError(
        f"cannot serialise task of type {type(task).__name__}; pass task_to_dict/task_from_dict to Janus"
    )


def _default_task_from_dict(d: dict) -> Any:
    if d["type"] == "Task":
        return Task(**d["data"])
    if d["type"] == "dict":
        return d["data"]
    raise ValueError(f"unknown stored task type {d['type']!r}; pass task_from_dict")


def _tasks_from_state(stored: list[dict], from_d: Callable[[dict], Any] | None) -> list[Any]:
    tasks = []
    for t in stored:
        if t["type"] == "custom":
            if from_d is None:
                raise ValueError("state holds custom-serialised tasks: pass task_from_dict")
            tasks.append(from_d(t["data"]))
        else:
            tasks.append(_default_task_from_dict(t))
    return tasks


class StateMixin:
    """Persistence of a :class:`~janus_memory.controller.janus.Janus` (the fields it sets in ``__init__``)."""

    def state_dict(self, *, by_reference: bool = False) -> dict:
        """Full controller state, JSON-serialisable (arrays as base64 little-endian bytes).

        ``json.dumps(state, sort_keys=True)`` is byte-identical after a save -> load -> save round trip, and a
        restored controller makes exactly the decisions the original would have made.
        Raises TypeError when a task cannot be serialised (pass ``task_to_dict``).

        ``by_reference=True``: the run store's form (its cost does not grow with the stream): the embedding matrix is
        a :class:`~janus_memory.rows.RowsRef` (``.encode()`` gives the plain form) and the task entries are the
        controller's cached ones (serialised once per task; read-only: shared with later calls).
        """
        if by_reference:
            tasks = self._task_entries()
        else:
            tasks = [self._task_entry(t) for t in self._tasks]
        extra = {}
        if self.config.reuse_old_results:  # only then, so other configs keep their stored form
            extra["old_results"] = {"sha256": self._old_key,
                                    "results": [[i, v] for i, v in sorted(self._old_cache.items())]}
        if self.config.seq_recent_pairs:  # only then, as old_results
            extra["recent_close"] = list(self._recent_close)
        if self.config.near_copy_anchor:  # only then, as old_results; the text only while another memory is deployed
            extra["near_copy_anchor"] = {
                "sha256": self._anchor_sha,
                "text": self._anchor_text if self._anchor_sha not in (None, self._old_key) else None}
        return {
            **extra,
            "format": STATE_FORMAT,
            "config": self.config.to_dict(),
            "step": self._step,
            "trigger_count": self._trigger_count,
            "seen_end": self._seen_end,
            "warmup_initialized": self._warmup_initialized,
            "momentum": encode_array(self._momentum),
            **self._evalset.state_dict(),
            "embeddings": self._store.state_dict(self._grow_token if by_reference else None),
            "ids": list(self._ids),
            "tasks": tasks,
            "stats": dict(self._stats),
            "trigger_state": self._selective.state_dict(),
        }

    def _task_entry(self, task: Any) -> dict:
        to_d = self._task_to_dict
        return {"type": "custom", "data": to_d(task)} if to_d else _default_task_to_dict(task)

    def _task_entries(self) -> list[dict]:
        """The stored form of every task, serialised once per task (tasks are only appended; a restore starts a new
        cache); a new list of the shared entries."""
        cache = self._task_cache
        for t in self._tasks[len(cache):]:
            cache.append(self._task_entry(t))
        return list(cache)

    def state_hints(self) -> dict:
        """What of :meth:`state_dict` only grows: ``{key path: (token, stable)}``; while ``token`` is the same object,
        the first ``stable`` items (tasks, ids) or base64 characters (the embedding matrix) stay as they are. The run
        store uses it to write appends without comparing the whole state (store/ckpt_log.py)."""
        n, tok = self._store.n, self._grow_token
        return {("tasks",): (tok, n), ("ids",): (tok, n),
                ("embeddings", "data", "b64"): (tok, 4 * (n * (self._store.dim or 0) * 4 // 3))}

    def load_state_dict(self, state: dict) -> None:
        """Restore from :meth:`state_dict` (the config stored in the state replaces the current one).

        Raises ValueError on an unknown format or inconsistent content.
        """
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise ValueError(f"not a Janus controller state (format {STATE_FORMAT!r} expected)")
        fresh = type(self)(JanusConfig.from_dict(state["config"]), self.evaluator,
                           task_to_dict=self._task_to_dict, task_from_dict=self._task_from_dict)
        store = EmbeddingStore.from_state_dict(state["embeddings"])
        n = store.n
        if len(state["ids"]) != n or len(state["tasks"]) != n:
            raise ValueError("state has inconsistent numbers of tasks, ids and embeddings")
        fresh._store = store
        fresh._ids = [str(i) for i in state["ids"]]
        fresh._tasks = _tasks_from_state(state["tasks"], self._task_from_dict)
        fresh._step = int(state["step"])
        fresh._trigger_count = int(state["trigger_count"])
        fresh._seen_end = int(state["seen_end"])
        fresh._warmup_initialized = bool(state["warmup_initialized"])
        fresh._momentum = decode_array(state["momentum"])
        fresh._evalset.load_state_dict(state, n, fresh._trigger_count)
        fresh._stats = {k: int(v) for k, v in state["stats"].items()}
        fresh._selective.load_state_dict(state.get("trigger_state"))  # absent in states saved before issue 16
        old = state.get("old_results") or {}
        fresh._old_key = old.get("sha256")
        fresh._old_cache = {int(i): bool(v) for i, v in old.get("results", [])}
        fresh._recent_close = [bool(v) for v in state.get("recent_close", [])]
        anchor = state.get("near_copy_anchor") or {}
        sha, text = anchor.get("sha256"), anchor.get("text")
        if not (sha is None or isinstance(sha, str)) or not (text is None or isinstance(text, str)):
            raise ValueError("state near_copy_anchor must hold a sha256 string and a text string (or null)")
        from .reuse import _sha

        if text is not None and _sha(text) != sha:
            raise ValueError("state near_copy_anchor text does not match its sha256")
        if fresh.config.near_copy_anchor and sha is not None and text is None and sha != fresh._old_key:
            raise ValueError("state near_copy_anchor holds no text for an anchor that is not the deployed memory")
        fresh._anchor_sha, fresh._anchor_text = sha, text
        self.__dict__.update(fresh.__dict__)

    @classmethod
    def from_state_dict(
        cls,
        state: dict,
        evaluator: Callable[[str, list], list] | None = None,
        *,
        task_to_dict: Callable[[Any], dict] | None = None,
        task_from_dict: Callable[[dict], Any] | None = None,
    ):
        """Build a controller from :meth:`state_dict` output."""
        j = cls(JanusConfig.from_dict(state["config"]), evaluator,
                task_to_dict=task_to_dict, task_from_dict=task_from_dict)
        j.load_state_dict(state)
        return j
