"""Deprecated: the old import path of :mod:`janus_memory.values` (Task, Score, ScoreStatus, Usage, ChatResult).

The module was renamed because ``types`` shadows the standard library's module of that name. Importing this one
still works and warns once; import from ``janus_memory.values`` instead.
"""
from __future__ import annotations

import warnings

from janus_memory.values import ChatResult, Score, ScoreStatus, Task, Usage

__all__ = ["ChatResult", "Score", "ScoreStatus", "Task", "Usage"]

warnings.warn("janus_memory.types is deprecated: import Task, Score, ScoreStatus, Usage and ChatResult from "
              "janus_memory.values", DeprecationWarning, stacklevel=2)
