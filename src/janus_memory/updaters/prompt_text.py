"""Text helpers shared by the updaters: prompt files (``updaters/prompts/*.txt``), ``[[NAME]]`` placeholders,
truncation marks, and the text of an earlier reply shown to the model again. Re-exported by ``updaters/base.py``."""

from __future__ import annotations

import re
from importlib import resources

from janus_memory.values import ChatResult

_PLACEHOLDER = re.compile(r"\[\[([A-Z0-9_]+)\]\]")
_PROMPT_CACHE: dict[str, str] = {}


def load_prompt(name: str) -> str:
    """Text of ``updaters/prompts/<name>.txt`` (package data, read with importlib.resources).

    The final newline of the file is removed. Raises FileNotFoundError for an unknown name.
    """
    if name not in _PROMPT_CACHE:
        ref = resources.files("janus_memory.updaters").joinpath("prompts", f"{name}.txt")
        if not ref.is_file():
            raise FileNotFoundError(f"no updater prompt file {name!r}.txt")
        _PROMPT_CACHE[name] = ref.read_text(encoding="utf-8").rstrip("\n")
    return _PROMPT_CACHE[name]


def fill(template: str, **values: str) -> str:
    """Replace every ``[[NAME]]`` in ``template`` by ``values["NAME"]`` in one pass.

    Values are inserted verbatim (a value that itself contains ``[[X]]`` is not expanded again).
    Raises KeyError when a placeholder has no value and ValueError when a value is unused.
    """
    used: set[str] = set()

    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key not in values:
            raise KeyError(f"prompt placeholder [[{key}]] has no value")
        used.add(key)
        return str(values[key])

    out = _PLACEHOLDER.sub(sub, template)
    unused = set(values) - used
    if unused:
        raise ValueError(f"values given for placeholders not in the template: {sorted(unused)}")
    return out


def truncate(text: str, limit: int | None) -> str:
    """Cut ``text`` to ``limit`` characters (None = no limit), marking the cut."""
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + " [...truncated]"


def visible_text(result: ChatResult) -> str:
    """What the model visibly wrote: the answer text, or for a reply cut off by max_tokens (whose partial text the
    LLM layer moves to ``reasoning`` so it is never scored as an answer, C19) that partial text. Used where an
    updater shows an earlier output to the model again (retrieval banks, ExpeL reflection on a failed try); scoring
    always uses the ChatResult itself."""
    if result.text:
        return result.text
    return result.reasoning if result.truncated else ""


def thinking_output(result: ChatResult) -> str:
    """A reply as a Qwen3 thinking model's raw output reads when the server does not split the thinking off (the
    authors' vLLM path): ``<think>``, the thinking, ``</think>``, then the answer text, trailing white space removed.
    A reply cut off inside its thinking (no answer text, finish_reason "length") never closed the tag: it is
    ``<think>`` and the thinking so far, with no ``</think>``, so a checker reading its first character sees "<",
    not the thinking's first word. A reply without thinking is its visible text (:func:`visible_text`)."""
    if not result.reasoning:
        return visible_text(result)
    if result.truncated and not result.text:
        return f"<think>\n{result.reasoning}"
    return f"<think>\n{result.reasoning}\n</think>\n\n{result.text or ''}".rstrip()
