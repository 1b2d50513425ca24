"""The built-in plugins: importing the encoder, task and updater packages registers their names in the registry.

They import the registry to register themselves; the registry never imports them (so no import circle). Whatever needs
every built-in name registered (the CLI's choices, the grid, the report tables, building a run) calls
:func:`ensure_builtins`; plugins from outside the package are imported by ``registry.load_plugins``.
"""
from __future__ import annotations


def ensure_builtins() -> None:
    """Import the built-in plugin packages so their registrations exist."""
    import janus_memory.encoders  # noqa: F401
    import janus_memory.integrations  # noqa: F401  (the memory-library guards; their libraries load on first use)
    import janus_memory.tasks  # noqa: F401
    import janus_memory.updaters  # noqa: F401
