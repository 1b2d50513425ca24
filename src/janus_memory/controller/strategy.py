"""The evaluation-set seam: which seen tasks a comparison replays under both memories.

An :class:`EvalSetStrategy` plans the tasks of each comparison, observes its outcomes, saves and restores its own
state (JSON), and describes itself from the configuration alone: its size, the most evaluator calls one comparison
can cost, a phrase and a table cell for reports, progress lines and the HTML view, and the role of each task a logged
comparison read. The controller and every reader outside it ask the strategy; none branches on its name.

Strategies are registered by name in :data:`EVAL_SETS` (the paper's ``hybrid`` set and the ``panel`` are built in);
``JanusConfig.eval_set.kind`` (flat key ``eval_set``) names one, optionally with an argument after a colon
(``"last:8"``), which the strategy parses. Adding one is a class in one file::

    @register_eval_set("last")
    class LastSeen(EvalSetStrategy):
        '''The last N tasks seen before the current one (``eval_set: "last:N"``).'''

        def __init__(self, config, arg=None):
            super().__init__(config, None)
            self.n = int(arg or 5)

        def size(self):
            return self.n

        def text(self):
            return f"the last {self.n} seen tasks"

        def plan(self, store, seen_end, trigger_count, warnings):
            return EvalPlan([], [], [], list(range(max(0, store.n - 1 - self.n), store.n - 1)))
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..did_you_mean import did_you_mean
from ..registry import Registry
from .evalset import sample_fresh

if TYPE_CHECKING:
    from .decision_rules import Comparison
    from .evalset import EmbeddingStore
    from .step import Decision

# name -> EvalSetStrategy subclass; the built-ins resolve on first use (registry.Registry's "module:attr" form)
EVAL_SETS = Registry("evaluation set")
EVAL_SETS.register("hybrid", "janus_memory.controller.hybrid_set:HybridSet")
EVAL_SETS.register("panel", "janus_memory.controller.panel_set:PanelSet")


def register_eval_set(name: str) -> Callable[[type[EvalSetStrategy]], type[EvalSetStrategy]]:
    """Class decorator: ``JanusConfig(eval_set=name)`` (or ``"name:arg"``) uses this strategy. Re-registering a name
    replaces it."""
    if not isinstance(name, str) or not name or ":" in name:
        raise ValueError(f"an evaluation set's name must be a non-empty string without ':', got {name!r}")
    return EVAL_SETS.class_decorator(name, EvalSetStrategy, "register_eval_set")


def split_spec(spec: str) -> tuple[str, str | None]:
    """``"last:8"`` -> ``("last", "8")``; ``"panel"`` -> ``("panel", None)``."""
    name, colon, arg = spec.partition(":")
    return name, (arg if colon else None)


def eval_set_for(config: Any) -> EvalSetStrategy:
    """A new strategy for ``config`` (``config.eval_set.kind``); ValueError naming the choices for an unknown name or
    an argument the strategy rejects."""
    spec = config.eval_set.kind
    if not isinstance(spec, str):
        raise ValueError(f"eval_set must be a string, got {spec!r}")
    name, arg = split_spec(spec)
    if name not in EVAL_SETS:
        names = tuple(EVAL_SETS.names())
        hint = did_you_mean(name, names) or (" (an evaluation set from a plugin is registered when its module is "
                                             "loaded: janus --plugin MODULE or $JANUS_PLUGINS)")
        raise ValueError(f"eval_set must be one of {names}, got {spec!r}{hint}")
    return EVAL_SETS[name](config, arg)


@dataclass
class EvalPlan:
    """The stream indices one comparison reads (``entries``, in evaluation order) and, for the paper's set, the tasks
    of each of its roles (empty for a strategy without roles): what the Decision logs."""

    coverage: list[int]
    boundary: list[int]
    fresh: list[int]
    entries: list[int]

    def record(self, d: Decision, ids: list[str]) -> None:
        """Write the plan's task ids and the full two-memory cost onto ``d``."""
        d.coverage = [ids[i] for i in self.coverage]
        d.boundary = [ids[i] for i in self.boundary]
        d.fresh = [ids[i] for i in self.fresh]
        d.eval_ids = [ids[i] for i in self.entries]
        d.evaluator_calls_full = 2 * len(self.entries)


class EvalSetStrategy(ABC):
    """How the controller picks the tasks of a comparison (module docstring). One instance per controller; the
    description methods read the configuration only, so reports build one from a stored config.

    Subclasses implement :meth:`size`, :meth:`text` and :meth:`plan`; the rest has defaults for a strategy without
    state or roles."""

    name: ClassVar[str] = ""
    #: the JanusConfig fields this strategy reads (a size option it does not read is named as having no effect)
    SETTINGS: ClassVar[tuple[str, ...]] = ()
    #: the paper's own evaluation set: a description names where its sizes differ from the paper's
    PAPER: ClassVar[bool] = False

    # ``config`` is a JanusConfig (typed Any here: config.py validates its eval_set through this module)
    def __init__(self, config: Any, arg: str | None = None):
        if arg is not None:
            raise ValueError(f"eval_set {self.name!r} takes no argument, got {self.name}:{arg}")
        self.config = config

    # ------------------------------------------------------------------ description (from the config alone)
    @abstractmethod
    def size(self) -> int:
        """Tasks the set holds when full (|E| as configured)."""

    def calls_at_most(self, cap: int | None = None) -> int:
        """Evaluator calls one comparison costs at most: both memories on every task, or on ``cap`` tasks when the
        decision rule stops there (None: it reads the whole set)."""
        return 2 * (self.size() if cap is None else min(self.size(), cap))

    def sizes(self) -> dict[str, int]:
        """Its sizes by name, e.g. ``{"K": 20, "K_b": 8, "K_F": 5}`` or ``{"panel": 19}``."""
        return {self.name: self.size()}

    @abstractmethod
    def text(self) -> str:
        """What it is, in a few words: ``a panel of 19 seen tasks``."""

    def cell(self) -> str:
        """A table cell: ``12+8+5`` or ``panel 19``."""
        return f"{self.name} {self.size()}"

    def roles(self, decision: dict) -> list[str]:
        """The role of each task a logged comparison read (``decision["eval_ids"]``, a stored Decision), for the
        view's table of a comparison."""
        return [self.name] * len(decision.get("eval_ids") or [])

    def where(self, decision: dict) -> str:
        """Where a logged comparison's tasks came from, for the progress line: ``(the panel)``."""
        return f"({self.text()})"

    # ------------------------------------------------------------------ the controller's side
    def start(self, store: EmbeddingStore, n: int) -> list[str]:
        """The end of the warm-up (``n`` tasks seen): initialise; returns warnings."""
        return []

    def plan_warmup(self, n_seen: int, trigger_count: int) -> EvalPlan:
        """A comparison inside the warm-up (the selective trigger's ``arm_warmup``, a text gate): a seeded sample of
        up to K + K_F of the ``n_seen`` tasks so far, in the role ``fresh`` (``trigger_count`` before the
        increment)."""
        c = self.config
        entries = sample_fresh(0, n_seen, self.warmup_size(), c.seed, trigger_count)
        return EvalPlan([], [], list(entries), entries)

    def warmup_size(self) -> int:
        """The most tasks a warm-up comparison reads (:meth:`plan_warmup`)."""
        return self.config.eval_set.support_size + self.config.eval_set.fresh_size

    @abstractmethod
    def plan(self, store: EmbeddingStore, seen_end: int, trigger_count: int, warnings: list[str]) -> EvalPlan:
        """The tasks of a post-warm-up comparison. ``store`` holds every task so far (the current one last, index
        ``store.n - 1``); ``seen_end``: the tasks seen at the previous comparison (or the end of the warm-up);
        ``trigger_count``: this comparison's number (after the increment); ``warnings``: the Decision's, to append
        to."""

    def observe(self, plan: EvalPlan, comp: Comparison | None, d: Decision, ids: list[str],
                trigger_count: int) -> None:
        """The outcomes of the comparison on ``plan`` (None: the evaluator failed and the candidate was kept).
        Nothing by default (a set that does not learn from outcomes)."""
        return None

    def members(self) -> dict[str, list[int]]:
        """The tasks it holds now, by role (stream indices): ``{"coverage": [...], "boundary": [...]}``."""
        return {}

    def state_dict(self) -> dict:
        """Its state, JSON; the keys are merged into the controller state's top level."""
        return {}

    def load_state_dict(self, state: dict, n_tasks: int, trigger_count: int) -> None:
        """Restore from a controller state (the whole dict; read your own keys) holding ``n_tasks`` tasks after
        ``trigger_count`` comparisons. ValueError on inconsistent content. Nothing by default (no state)."""
        return None
