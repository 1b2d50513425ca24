"""janus-memory: plug-in controller for selective updates in evolving LLM memory.

    from janus_memory import Janus, JanusConfig, StepInput, Decision, GuardedUpdate, Updater

The names are imported on first use, so ``import janus_memory`` stays cheap (the CLI reads only ``__version__``).
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "Janus": "janus_memory.controller.janus",
    "JanusConfig": "janus_memory.controller.janus",
    "StepInput": "janus_memory.controller.janus",
    "Decision": "janus_memory.controller.janus",
    "GuardedUpdate": "janus_memory.controller.adapter",
    "guarded_step": "janus_memory.controller.adapter",
    "Updater": "janus_memory.updaters.base",
    "StepOutcome": "janus_memory.updaters.base",
    "register_updater": "janus_memory.updaters.base",
    "JanusError": "janus_memory.errors",
    "ConfigError": "janus_memory.errors",
    "RunConfig": "janus_memory.settings.config",
    "run_experiment": "janus_memory.run.experiment",
    "RunReader": "janus_memory.store.reader",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'janus_memory' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
