"""An evaluation-set strategy registered from outside the package: a comparison replays the last N tasks seen before
the current one (``eval_set: "last:N"``, N = 5 when no argument is given). Loaded by ``janus --plugin janus_last_seen``
(tests/plugins/test_eval_set_plugin.py); docs/architecture.md shows it as the example of the seam."""
from janus_memory.controller import EvalPlan, EvalSetStrategy, register_eval_set


@register_eval_set("last")
class LastSeen(EvalSetStrategy):
    """The last ``n`` tasks before the current one, oldest first. Its state: how many comparisons it planned."""

    def __init__(self, config, arg=None):
        super().__init__(config)
        if arg is not None and not (arg.isascii() and arg.isdigit() and int(arg) >= 1):
            raise ValueError(f"eval_set last:N takes a whole number N >= 1, got last:{arg}")
        self.n = int(arg) if arg is not None else 5
        self.planned = 0

    def size(self):
        return self.n

    def text(self):
        return f"the last {self.n} seen tasks"

    def plan(self, store, seen_end, trigger_count, warnings):
        self.planned += 1
        current = store.n - 1
        return EvalPlan([], [], [], list(range(max(0, current - self.n), current)))

    def state_dict(self):
        return {"last_seen": {"planned": self.planned}}

    def load_state_dict(self, state, n_tasks, trigger_count):
        planned = (state.get("last_seen") or {}).get("planned", 0)
        if type(planned) is not int or not 0 <= planned <= trigger_count:
            raise ValueError(f"state last_seen.planned must be a whole number in [0, {trigger_count}], got {planned!r}")
        self.planned = planned
