"""Looking up a name the user typed: one "did you mean" helper for every list of names (registry names of datasets,
updaters, encoders and backends; run and controller presets; trigger policies; the choices of an option; the
options themselves), so every "unknown name" message has the same form:

    unknown dataset 'gsm8kk' (did you mean gsm8k?); choose one of: aime, apibench_hf, ...
"""
from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """' (did you mean gsm8k?)' for the closest name in ``options`` (difflib, cutoff 0.6), or '' when none is close.
    An option typed with its value (``--stram-size=3``) is matched on the part before '='."""
    import difflib

    key = str(word).split("=", 1)[0] if str(word).startswith("-") else str(word)
    close = difflib.get_close_matches(key, [str(o) for o in options], n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def unknown_name(kind: str, name: str, options: Iterable[str], note: str = "") -> str:
    """The one-line message for a name that is not in ``options`` (listed in the order given), e.g.
    ``unknown updater 'dc_r' (did you mean dc_rs?); choose one of: ace, dc_cu, dc_rs, ...``; ``note`` follows the
    list (e.g. the spec forms of an encoder)."""
    options = [str(o) for o in options]
    return f"unknown {kind} '{name}'{did_you_mean(name, options)}; choose one of: {', '.join(options)}{note}"
