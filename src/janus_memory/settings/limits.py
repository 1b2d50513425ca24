"""Upper bounds of the run settings, checked when the settings are validated (before anything is created).

A value past one of these is a typo or an attack, not an experiment, and would otherwise fail late and badly: a
dense encoder of 10^12 dimensions asks numpy for terabytes mid-run, a context window of 10^11 tokens makes the
embedded engine allocate it, a JSON value built from shared references (a YAML alias bomb reaching ``extra_body``
from Python) expands to billions of values when validated or sent. Each bound is far above any real use:

* token counts (``solver_max_tokens``, ``curator_max_tokens``, ``n_ctx``, an updater's ``*max_tokens``): 2^20;
* other counts, sizes, character limits and seconds of an updater's settings: 2^20;
* ``concurrency`` 1,024, ``n_parallel`` 256, ``max_retries`` 100, ``request_timeout`` one day, ``request_deadline``
  a week, ``checkpoints`` 100 fractions, a text setting (a name, a URL, an encoder or inject spec) 4,096 characters;
* a JSON setting (``llm.extra_body``, ``updater_config`` and the dicts in it): at most :data:`MAX_JSON_VALUES` values,
  :data:`MAX_JSON_DEPTH` levels and :data:`MAX_JSON_BYTES` bytes as JSON (each is sent with, or shapes, every call);
* the hashing encoder's dimension: 2^16 (encoders/__init__.py: a dense float32 row per text, stored per seen task).

Settings files have their own limits (settings/yaml_load.py: 1 MiB, 100,000 values with aliases counted).
"""
from __future__ import annotations

import json

MAX_TOKENS = 1 << 20
MAX_COUNT = 1 << 20
MAX_CONCURRENCY = 1024
MAX_PARALLEL = 256
MAX_RETRIES = 100
MAX_TIMEOUT_S = 86_400.0
MAX_DEADLINE_S = 7 * 86_400.0
MAX_CHECKPOINTS = 100
MAX_TEXT = 4096
MAX_JSON_VALUES = 10_000
MAX_JSON_DEPTH = 32
MAX_JSON_BYTES = 1 << 16


def json_value_problem(value) -> str | None:
    """Why ``value`` (a JSON-like setting) is too large, or None. Walks at most MAX_JSON_VALUES + 1 values whatever
    the value holds (shared references are counted at every use, as JSON would write them; a cycle exceeds the
    count), so an alias bomb is refused in bounded time."""
    stack, count = [(value, 0)], 0
    while stack:
        obj, depth = stack.pop()
        count += 1
        if count > MAX_JSON_VALUES:
            return f"holds more than {MAX_JSON_VALUES:,} values (shared references counted at every use)"
        if depth > MAX_JSON_DEPTH:
            return f"is nested more than {MAX_JSON_DEPTH} levels deep"
        if isinstance(obj, dict):
            stack.extend((v, depth + 1) for kv in obj.items() for v in kv)
        elif isinstance(obj, (list, tuple)):
            stack.extend((v, depth + 1) for v in obj)
        elif isinstance(obj, str) and len(obj) > MAX_JSON_BYTES:
            return f"holds a text of {len(obj):,} characters"
    try:
        size = len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8"))
    except (TypeError, ValueError):  # not JSON: the type check names it
        return None
    if size > MAX_JSON_BYTES:
        return f"is {size:,} bytes as JSON"
    return None


def bounded_json(value):
    """A pydantic ``mode="before"`` validator body: ``value`` unchanged, or a one-line error naming the limit."""
    from pydantic_core import PydanticCustomError

    why = json_value_problem(value)
    if why is not None:
        raise PydanticCustomError("range", "{rule}", {"rule": f"{why}; at most {MAX_JSON_VALUES:,} values, "
                                                      f"{MAX_JSON_DEPTH} levels and {MAX_JSON_BYTES // 1024} KiB"})
    return value


def bounded_text(value):
    """A pydantic ``mode="before"`` validator body for a text setting: at most MAX_TEXT characters."""
    from pydantic_core import PydanticCustomError

    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise PydanticCustomError("range", "{rule}", {"rule": f"must be at most {MAX_TEXT:,} characters, got "
                                                      f"{len(value):,}"})
    return value
