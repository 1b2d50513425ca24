"""One registry for every plugin kind: updaters, datasets, task families, encoders and chat backends.

A plugin declares its own facts where it is defined (an updater class says whether Janus can wrap it, whether it is a
paper baseline, which prompt files it uses and how it is displayed; a dataset spec says its family, loader and display
name; a task family says how the scripted fake backend answers it). Everything else (CLI help, validation, the grid,
the report, the fake backend, the run folder's prompt provenance) reads those facts from here; nothing keeps its own
list of names.

Registering is ``REGISTRY.register(name, obj)`` (or as a decorator). ``obj`` may be a ``"module:attribute"`` string,
imported on first use, so heavy plugins cost nothing until they are used.

Plugins outside the package are imported by :func:`load_plugins`: modules named in ``$JANUS_PLUGINS`` (comma-separated;
the CLI's ``--plugin MODULE`` adds to it, so sweep/grid worker processes inherit it) and the entry points of the group
``janus_memory.plugins``. Such a module registers its updater/dataset/family at import time.
"""
from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable
from typing import Any

from .errors import ConfigError

PLUGINS_ENV = "JANUS_PLUGINS"
ENTRY_POINT_GROUP = "janus_memory.plugins"


class Registry(dict):
    """``name -> plugin`` (a dict, so ``name in REG`` and ``REG[name]`` work); lazy ``"module:attr"`` values resolve
    on first access."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def register(self, name: str, obj: Any = None) -> Any:
        """``REG.register(name, obj)``, or ``@REG.register(name)`` on a class/function. Re-registering replaces."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{self.kind} name must be a non-empty string")

        def put(o):
            self[name] = o
            return o

        return put if obj is None else put(obj)

    def class_decorator(self, name: str, base: type, caller: str) -> Callable[[type], type]:
        """A class decorator registering a subclass of ``base`` as ``name`` (re-registering replaces) and setting its
        ``name``; anything else is a TypeError naming ``caller``."""

        def deco(cls: type) -> type:
            if not (isinstance(cls, type) and issubclass(cls, base)):
                raise TypeError(f"{caller} expects an {base.__name__} subclass")
            cls.name = name  # type: ignore[attr-defined]
            self[name] = cls
            return cls

        return deco

    def __getitem__(self, name: str) -> Any:
        obj = super().__getitem__(name)
        if isinstance(obj, str):
            mod, _, attr = obj.partition(":")
            obj = getattr(importlib.import_module(mod), attr)
            super().__setitem__(name, obj)
        return obj

    def get(self, name, default=None):  # noqa: D102 - dict.get with lazy resolution
        return self[name] if name in self else default

    def values(self):  # noqa: D102
        return [self[k] for k in self]

    def items(self):  # noqa: D102
        return [(k, self[k]) for k in self]

    def unknown(self, name: str, note: str = "") -> str:
        """The one-line message for a name that is not registered: the closest name ("did you mean"), then every
        registered name (did_you_mean.unknown_name, the form every name lookup uses)."""
        from .did_you_mean import unknown_name

        return unknown_name(self.kind, name, self.names(), note)

    def check(self, name: str, note: str = "") -> None:
        """ConfigError (:meth:`unknown`) unless ``name`` is registered."""
        if name not in self:
            raise ConfigError(self.unknown(name, note))

    def lookup(self, name: str) -> Any:
        """The plugin named ``name``; ConfigError naming the closest name and the choices when there is none."""
        self.check(name)
        return self[name]

    def names(self, where: Callable[[Any], bool] | None = None) -> list[str]:
        """Registered names (sorted), optionally only those whose plugin satisfies ``where``."""
        return sorted(k for k in self if where is None or where(self[k]))


UPDATERS = Registry("updater")      # name -> Updater subclass (updaters/*.py, via updaters.base.register_updater)
DATASETS = Registry("dataset")      # name -> tasks.base.DatasetSpec
FAMILIES = Registry("task family")  # name -> TaskFamily subclass
ENCODERS = Registry("encoder")      # kind -> factory(arg: str) -> Encoder   (spec "kind" or "kind:arg")
BACKENDS = Registry("backend")      # name -> factory(cfg, tasks, family) -> ChatBackend (run/backends.py)
INTEGRATIONS = Registry("memory library")  # name -> guard adapter class (integrations/__init__.py)

_LOADED: set[str] = set()


def plugin_modules() -> list[str]:
    """Module names from ``$JANUS_PLUGINS`` (comma-separated), in order."""
    return [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]


def add_plugin_modules(modules: Iterable[str]) -> None:
    """Append modules to ``$JANUS_PLUGINS`` (so child processes load them too) and import them now."""
    cur = plugin_modules()
    cur += [m for m in modules if m not in cur]
    os.environ[PLUGINS_ENV] = ",".join(cur)
    load_plugins()


def load_plugins() -> list[str]:
    """Import every plugin module (``$JANUS_PLUGINS`` and the ``janus_memory.plugins`` entry points) once.

    Returns the modules imported by this call. Raises ConfigError naming a module that cannot be imported.
    """
    from importlib import metadata

    mods = plugin_modules()
    try:
        eps = list(metadata.entry_points(group=ENTRY_POINT_GROUP))
    except Exception:  # noqa: BLE001 - broken distribution metadata must not stop a run
        eps = []
    done = []
    for m in mods:
        if m in _LOADED:
            continue
        try:
            importlib.import_module(m)
        except ImportError as e:
            raise ConfigError(f"cannot import plugin module '{m}' ({e}); fix {PLUGINS_ENV} / --plugin") from e
        except Exception as e:  # noqa: BLE001 - the plugin's own code failed at import: one line, not a traceback
            raise ConfigError(f"plugin module '{m}' failed while it was imported ({type(e).__name__}: {e}); fix the "
                              f"module or leave it out of {PLUGINS_ENV} / --plugin") from e
        _LOADED.add(m)
        done.append(m)
    for ep in eps:
        if ep.value in _LOADED:
            continue
        try:
            ep.load()
        except Exception as e:  # noqa: BLE001 - an installed plugin that fails at import: one line naming it
            raise ConfigError(f"plugin entry point '{ep.name}' ({ep.value}) failed while it was imported "
                              f"({type(e).__name__}: {e}); fix or uninstall it") from e
        _LOADED.add(ep.value)
        done.append(ep.value)
    return done
