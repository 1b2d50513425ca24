"""The stored form of the controller's tasks, and the state's format name (``Janus.state_dict()``, janus.py).

The state is JSON (arrays as base64 little-endian bytes, format ``janus-controller/1``); tasks are stored through
``task_to_dict`` / ``task_from_dict`` when the caller passes them, else as a ``Task`` dataclass or a plain dict.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from janus_memory.values import Task

STATE_FORMAT = "janus-controller/1"


def default_task_to_dict(task: Any) -> dict:
    if isinstance(task, Task):
        return {"type": "Task", "data": dataclasses.asdict(task)}
    if isinstance(task, dict):
        return {"type": "dict", "data": task}
    raise TypeError(
        f"cannot serialise task of type {type(task).__name__}; pass task_to_dict/task_from_dict to Janus"
    )


def default_task_from_dict(d: dict) -> Any:
    if d["type"] == "Task":
        return Task(**d["data"])
    if d["type"] == "dict":
        return d["data"]
    raise ValueError(f"unknown stored task type {d['type']!r}; pass task_from_dict")


def tasks_from_state(stored: list[dict], from_d: Callable[[dict], Any] | None) -> list[Any]:
    tasks = []
    for t in stored:
        if t["type"] == "custom":
            if from_d is None:
                raise ValueError("state holds custom-serialised tasks: pass task_from_dict")
            tasks.append(from_d(t["data"]))
        else:
            tasks.append(default_task_from_dict(t))
    return tasks
