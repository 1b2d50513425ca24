"""The ``--inject`` plan: ``KIND@STEP[,KIND@STEP...]`` parsed, checked against the stream and printed canonically.

Part of the injection feature (``inject/candidates.py`` builds the harmful candidates)."""
from __future__ import annotations

import dataclasses
from typing import Any

KINDS = ("wipe", "dump", "overfit", "poison", "truncate", "falsify")


class InjectSpecError(ValueError):
    """A malformed ``--inject`` value (one-line message)."""


@dataclasses.dataclass(frozen=True)
class Injection:
    kind: str
    step: int

    def __str__(self) -> str:
        return f"{self.kind}@{self.step}"


# ------------------------------------------------------------------------------------------------ spec parsing
def parse_inject(spec: Any) -> tuple[Injection, ...]:
    """Parse ``"KIND@STEP[,KIND@STEP...]"`` (or a list of such strings, as YAML gives) into injections sorted by step.

    None / "" / [] -> (). Raises :class:`InjectSpecError` (one line) for an empty item, a missing ``@``, an unknown
    kind, a step that is not a positive integer, or a step named twice."""
    if spec is None:
        return ()
    if isinstance(spec, (list, tuple)):
        if not all(isinstance(s, str) for s in spec):
            raise InjectSpecError(f"--inject list items must be strings like 'poison@5', got {spec!r:.80}")
        spec = ",".join(spec)
    if not isinstance(spec, str):
        raise InjectSpecError(f"--inject must be a string like 'poison@5,wipe@12', got {type(spec).__name__}")
    if not spec.strip():
        return ()
    out: dict[int, Injection] = {}
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            raise InjectSpecError(f"--inject {spec!r}: empty item (expected KIND@STEP[,KIND@STEP...])")
        kind, at, step_s = item.partition("@")
        kind, step_s = kind.strip().lower(), step_s.strip()
        if not at:
            raise InjectSpecError(f"--inject item {item!r}: expected KIND@STEP, e.g. poison@5")
        if kind not in KINDS:
            from ..did_you_mean import did_you_mean

            raise InjectSpecError(f"--inject item {item!r}: unknown kind {kind!r}{did_you_mean(kind, KINDS)}; "
                                  f"kinds: {', '.join(KINDS)}")
        if not (step_s.isascii() and step_s.isdigit()) or int(step_s) < 1:
            raise InjectSpecError(f"--inject item {item!r}: the step must be a positive integer (1 = first stream task)")
        step = int(step_s)
        if step in out:
            raise InjectSpecError(f"--inject: step {step} is named twice ({out[step]} and {item})")
        out[step] = Injection(kind, step)
    return tuple(out[s] for s in sorted(out))


def check_plan(plan: tuple[Injection, ...], n_steps: int) -> None:
    """Refuse injections past the stream's last step (one-line :class:`InjectSpecError`)."""
    late = [str(i) for i in plan if i.step > n_steps]
    if late:
        raise InjectSpecError(f"--inject {','.join(late)}: the stream has only {n_steps} steps")


def format_plan(plan: tuple[Injection, ...]) -> str:
    """Canonical text of a plan (what a run's config records): ``"poison@5,wipe@12"``."""
    return ",".join(str(i) for i in plan)
