"""Memory updaters behind one seam (see ``base.py`` and ``docs/updaters.md``).

``make_updater(name, llm=..., family=..., encoder=..., config=...)`` with ``name`` in ``UPDATERS``:
"dc_rs", "dc_cu", "expel", "exprag", "memory_free", "ace", "reasoning_bank" (plus any class registered with ``register_updater``).

Owns the memory updaters (Dynamic Cheatsheet, ExpeL, ExpRAG, ACE, ReasoningBank), their prompts and stored state.
May import the foundation modules (values, errors, registry), ``tasks`` (task families' parsing) and nothing above:
not the controller, the run, the store or the CLI.
"""

from janus_memory.updaters import ace as _ace  # noqa: F401
from janus_memory.updaters import dc as _dc  # noqa: F401  (registers dc_rs, dc_cu)
from janus_memory.updaters import expel as _expel  # noqa: F401
from janus_memory.updaters import exprag as _exprag  # noqa: F401
from janus_memory.updaters import memory_free as _memory_free  # noqa: F401
from janus_memory.updaters import reasoning_bank as _reasoning_bank  # noqa: F401
from janus_memory.updaters.ace import ACE
from janus_memory.updaters.base import (
    EMPTY_MEMORY,
    UPDATERS,
    LLMCall,
    RetrievalBank,
    StepOutcome,
    Updater,
    fill,
    load_prompt,
    make_updater,
    register_updater,
)
from janus_memory.updaters.dc import DCCumulative, DCRetrievalSynthesis, extract_cheatsheet, extract_cheatsheet_original
from janus_memory.updaters.expel import ExpeL
from janus_memory.updaters.exprag import ExpRAG
from janus_memory.updaters.memory_free import MemoryFree
from janus_memory.updaters.reasoning_bank import ReasoningBank

__all__ = [
    "EMPTY_MEMORY",
    "UPDATERS",
    "LLMCall",
    "RetrievalBank",
    "StepOutcome",
    "Updater",
    "fill",
    "load_prompt",
    "make_updater",
    "register_updater",
    "ACE",
    "ReasoningBank",
    "DCCumulative",
    "DCRetrievalSynthesis",
    "ExpeL",
    "ExpRAG",
    "MemoryFree",
    "extract_cheatsheet",
    "extract_cheatsheet_original",
]
