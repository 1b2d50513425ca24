"""An updater's own settings (``updater_config``), checked against what the updater declares: its keys (COMMON_DEFAULTS
and its DEFAULTS), the types of their defaults, its choices and the ranges of numeric settings.
"""
from __future__ import annotations

from ..errors import ConfigError


def check_updater_config(updater_cls, config: dict) -> None:
    """ConfigError unless every ``updater_config`` key is one the updater declares (COMMON_DEFAULTS + its DEFAULTS),
    with a value of the declared default's type and, where the updater lists choices, one of them."""
    from ..updaters.base import COMMON_CHOICES, COMMON_DEFAULTS, COMMON_NONE_DEFAULT_KINDS, COMMON_NULLABLE

    allowed = {**COMMON_DEFAULTS, **getattr(updater_cls, "DEFAULTS", {})}
    nullable = {*COMMON_NULLABLE, *getattr(updater_cls, "NULLABLE", ())}
    kinds = {**COMMON_NONE_DEFAULT_KINDS, **getattr(updater_cls, "NONE_DEFAULT_KINDS", {})}
    choices = {**COMMON_CHOICES, **getattr(updater_cls, "_CHOICES", {})}
    name = getattr(updater_cls, "name", updater_cls.__name__)
    for key, value in config.items():
        if key not in allowed:
            raise ConfigError(f"unknown config key 'updater_config.{key}' for updater {name}; "
                              f"allowed: {', '.join(sorted(allowed))}", key=f"updater_config.{key}")
        if key in choices and value not in choices[key]:
            raise ConfigError(f"invalid value for 'updater_config.{key}': {value!r}; choose one of {list(choices[key])}",
                              key=f"updater_config.{key}")
        default = allowed[key]
        if value is None:
            if default is not None and key not in nullable:
                raise ConfigError(f"invalid value for 'updater_config.{key}': expected {_kind_name(default)}, got None",
                                  key=f"updater_config.{key}")
            continue
        if default is None:
            if key not in kinds:
                continue
            default = kinds[key]  # the kind of value the setting takes when given
        ok = (isinstance(value, bool) if isinstance(default, bool) else
              isinstance(value, int) and not isinstance(value, bool) if isinstance(default, int) else
              isinstance(value, (int, float)) and not isinstance(value, bool) if isinstance(default, float) else
              isinstance(value, type(default)))
        if not ok:
            what = _kind_name(default)
            raise ConfigError(f"invalid value for 'updater_config.{key}': expected {what}, "
                              f"got {value!r}", key=f"updater_config.{key}")
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            lo, hi = _updater_range(updater_cls, key)
            if not (lo <= value <= hi):  # nan fails here too
                rule = f"must be >= {lo}" if hi == float("inf") else f"must be in [{lo}, {hi}]"
                raise ConfigError(f"invalid value for 'updater_config.{key}': {rule}, got {value!r}",
                                  key=f"updater_config.{key}", rule=f"{rule}, got {value!r}")


def _kind_name(default) -> str:
    return "a whole number" if isinstance(default, int) and not isinstance(default, bool) else type(default).__name__


# the ranges of numeric updater settings: an updater may declare its own (class attribute RANGES: {key: (lo, hi)});
# otherwise sampling temperatures are in [0, 2], penalties in [-2, 2] (the OpenAI API's ranges), thresholds and ratios
# named so in [0, 1], token caps (``*max_tokens``) in [1, 2^20], and every other number (counts, sizes, character
# limits, timeouts) in [0, 2^20] (settings/limits.py: a count or token limit past it is a typo that would fail late,
# or cost without end)
def _updater_range(updater_cls, key: str) -> tuple[float, float]:
    declared = getattr(updater_cls, "RANGES", {}) or {}
    if key in declared:
        return declared[key]
    if key.endswith("temperature"):
        return 0.0, 2.0
    if key.endswith("penalty"):
        return -2.0, 2.0
    if key.endswith("threshold"):
        return 0.0, 1.0
    from .limits import MAX_COUNT, MAX_TOKENS

    if key.endswith("max_tokens"):  # a reply cap of 0 tokens asks for no answer at all
        return 1, MAX_TOKENS

    return 0, MAX_COUNT
