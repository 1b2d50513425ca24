"""Janus where agent memories live: a write guard for memory libraries (docs/integrations.md).

The shared core (``core.py``: probes, the user's evaluator, the controller's stream, the record) and one adapter per
library, each registered here under the library's name in ``registry.INTEGRATIONS`` (imported on first use, so the
library is needed only by whoever uses its adapter)::

    from janus_memory.integrations import Probe, WriteGuard
    from janus_memory.integrations.langgraph import GuardedStore      # pip install 'janus-memory[langgraph]'
    from janus_memory.integrations.mem0 import GuardedMemory          # pip install 'janus-memory[mem0]'

``python -m janus_memory.integrations RECORD_DIR`` prints a guard's decision record.

Owns: the guard's core, the library adapters, the record (``record.py``) and its printer, the replies' time limit
(``replies.py``), a scripted chat model for offline runs.
May import: the controller, the encoders and the foundation modules (registry, errors); the memory libraries
themselves (langgraph, langmem, langchain-core, mem0) only in the adapter modules. Nothing of the run, the store, the
report or the CLI.
"""
from __future__ import annotations

from ..registry import INTEGRATIONS
from .core import GuardDecision, Probe, ProbeResult, WriteGuard, contains_answer
from .record import read_record
from .replies import AnswerTimeout, GuardError

INTEGRATIONS.register("langgraph", "janus_memory.integrations.langgraph:GuardedStore")
INTEGRATIONS.register("mem0", "janus_memory.integrations.mem0:GuardedMemory")

__all__ = ["INTEGRATIONS", "AnswerTimeout", "GuardDecision", "GuardError", "Probe", "ProbeResult", "WriteGuard",
           "contains_answer", "read_record"]
