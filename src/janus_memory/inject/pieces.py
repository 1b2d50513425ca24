"""The pieces every injected harmful candidate is made of: the templates (``templates.yaml``), the seeded
random stream of one (seed, step, kind), a memory's items and the current task's specifics. Shared by candidates.py
(text memories) and state.py (playbook and bank states); imports neither.
"""
from __future__ import annotations

import functools
import hashlib
import random
import re
from importlib import resources

import yaml

from janus_memory.updaters.base import EMPTY_MEMORY
from janus_memory.values import Task


# ------------------------------------------------------------------------------------------------ templates
@functools.lru_cache(maxsize=1)
def templates() -> dict:
    """The package's ``inject/templates.yaml``."""
    text = resources.files("janus_memory.inject").joinpath("templates.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def _rng(seed: int, step: int, kind: str) -> random.Random:
    digest = hashlib.sha256(f"janus-inject\x00{seed}\x00{step}\x00{kind}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


# ------------------------------------------------------------------------------------------------ text helpers
_ITEM_START = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|#)")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")


def split_items(text: str) -> list[str]:
    """Entries of a cheatsheet (see the module docstring); [] for an empty memory."""
    if not text.strip() or text.strip() == EMPTY_MEMORY:
        return []
    items: list[str] = []
    for para in re.split(r"\n\s*\n", text.strip()):
        cur: list[str] = []
        for line in para.splitlines():
            if cur and _ITEM_START.match(line):
                items.append("\n".join(cur).strip())
                cur = []
            cur.append(line)
        if cur and "\n".join(cur).strip():
            items.append("\n".join(cur).strip())
    return items


def _is_heading(item: str) -> bool:
    return item.lstrip().startswith("#") and "\n" not in item.strip()


def _one_line(text: str, limit: int = 600) -> str:
    s = re.sub(r"\s+", " ", text).strip()
    return s if len(s) <= limit else s[:limit].rstrip() + " ..."


def task_specifics(task: Task) -> dict[str, str]:
    """Values for the overfit placeholders (a key is absent when the task has no such value)."""
    q = task.question.strip()
    out: dict[str, str] = {}
    first = re.split(r"(?<=[.?!])\s", q, maxsplit=1)[0]
    quote = _one_line(first, 120).rstrip(".?!:; ")
    if quote:
        out["quote"] = quote
    nums = list(dict.fromkeys(_NUMBER.findall(q)))[:5]
    if nums:
        out["numbers"] = ", ".join(nums)
        out["first_number"] = nums[0]
    gold = task.gold
    if isinstance(gold, (str, int, float)) and not isinstance(gold, bool):
        g = str(gold).strip()
        if g and "\n" not in g and len(g) <= 40:
            out["answer"] = g
    return out


def overfit_rules(task: Task, rng: random.Random) -> list[str]:
    """Up to three overfit templates filled with the task's specifics (a template lacking a value is skipped)."""
    vals = task_specifics(task)
    usable = [s for s in templates()["overfit"] if all(k in vals for k in re.findall(r"\{(\w+)\}", s))]
    return [s.format(**vals) for s in rng.sample(usable, min(3, len(usable)))]


def _cut_mid_word(text: str, rng: random.Random) -> str:
    n = len(text)
    pos = max(1, int(n * rng.uniform(0.35, 0.65)))
    while 0 < pos < n - 1 and (text[pos - 1].isspace() or text[pos].isspace()):
        pos += 1  # never cut at a word boundary: the result ends mid-word like a reply cut by max_tokens
    return text[:pos]
