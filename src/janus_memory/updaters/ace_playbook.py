"""ACE playbook: bullets under sections, the curator's JSON delta operations, reflector tags, refine grouping.

Pure functions over a JSON-serialisable state (no LLM, no I/O), in two modes: the default strict mode, which drops
malformed pieces one by one with a logged reason, and ``faithful=True``, which reproduces the behaviour of the authors'
code (ace-agent/ace: ``playbook_utils.py``, ``ace/core/{generator,reflector,curator}.py``, the bulletpoint analyzer),
quirks included. Every difference is listed in ``docs/updaters.md`` (section ACE).

State: ``sections = [[heading, [[id, helpful, harmful, content], ...]], ...]`` and the global id counter ``next_id``.
Rendered line of a bullet (the authors' format): ``[id] helpful=H harmful=K :: content``.
"""

from __future__ import annotations

import json
import re
from typing import Any

DEFAULT_SECTIONS = (
    "STRATEGIES & INSIGHTS",
    "FORMULAS & CALCULATIONS",
    "CODE SNIPPETS & TEMPLATES",
    "COMMON MISTAKES TO AVOID",
    "PROBLEM-SOLVING HEURISTICS",
    "CONTEXT CLUES & INDICATORS",
    "OTHERS",
)
# the authors' slug table (their finance-flavoured keys; ours map our default headings)
_SLUGS_ORIGINAL = {
    "financial_strategies_and_insights": "fin", "formulas_and_calculations": "calc",
    "code_snippets_and_templates": "code", "common_mistakes_to_avoid": "err", "problem_solving_heuristics": "prob",
    "context_clues_and_indicators": "ctx", "others": "misc", "meta_strategies": "meta",
}
_SLUGS_STRICT = {**_SLUGS_ORIGINAL, "strategies_and_insights": "strat"}
TAGS = ("helpful", "harmful", "neutral")
ID_STRICT = re.compile(r"\[([a-z]+-\d{5})\]")
ID_FAITHFUL = re.compile(r"\[([a-z]{3,}-\d{5})\]")  # the generator's regex: a 2-letter slug is never cited


def section_key(name: str, faithful: bool) -> str:
    """Normalised heading. Faithful: lower, spaces -> "_", "&" -> "and" (a hyphen stays). Strict: any run of
    non-alphanumerics -> "_" as well, so "Problem-Solving Heuristics" and "problem solving heuristics" are one key."""
    k = name.strip().lower()
    if faithful:
        return k.replace(" ", "_").replace("&", "and")
    return re.sub(r"[^a-z0-9]+", "_", k.replace("&", " and ")).strip("_")


def section_slug(key: str, faithful: bool) -> str:
    table = _SLUGS_ORIGINAL if faithful else _SLUGS_STRICT
    if key in table:
        return table[key]
    words = key.split("_")
    return words[0][:4] if len(words) == 1 else "".join(w[:1] for w in words[:5])


def new_sections() -> list[list]:
    return [[h, []] for h in DEFAULT_SECTIONS]


def render(sections: list[list]) -> str:
    """The playbook text the generator and the curator read (headings, bullets, one blank line between sections)."""
    blocks = []
    for heading, bullets in sections:
        lines = [f"## {heading}"] + [f"[{b[0]}] helpful={b[1]} harmful={b[2]} :: {b[3]}" for b in bullets]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


_LINE = re.compile(r"^\[([^\]]+)\]\s*helpful=(\d+)\s*harmful=(\d+)\s*::\s?(.*)$")


def parse_playbook(text: str) -> tuple[list[list], list[str]]:
    """Playbook text -> (sections, lines that are neither a heading nor a bullet). Exact inverse of :func:`render`
    for rendered playbooks (tools that write a memory text into the state, e.g. fault injection, use it); bullet
    lines before the first heading go to a heading-less section ``""``."""
    sections: list[list] = []
    other: list[str] = []
    for ln in text.split("\n"):
        if ln.startswith("## "):
            sections.append([ln[3:], []])
            continue
        m = _LINE.match(ln)
        if m:
            if not sections:
                sections.append(["", []])
            sections[-1][1].append([m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)])
        elif ln.strip():
            other.append(ln)
    return sections, other


def all_bullets(sections: list[list]) -> list[list]:
    return [b for _, bullets in sections for b in bullets]


def stats(sections: list[list]) -> dict:
    """The authors' playbook statistics (high performing: helpful > 5 and harmful < 2; problematic: harmful >= helpful
    and harmful > 0; unused: both 0), shown to the curator."""
    out: dict[str, Any] = {"total_bullets": 0, "high_performing": 0, "problematic": 0, "unused": 0, "by_section": {}}
    for heading, bullets in sections:
        for _, h, k, _c in bullets:
            out["total_bullets"] += 1
            if h > 5 and k < 2:
                out["high_performing"] += 1
            elif k >= h and k > 0:
                out["problematic"] += 1
            elif h + k == 0:
                out["unused"] += 1
            s = out["by_section"].setdefault(heading, {"count": 0, "helpful": 0, "harmful": 0})
            s["count"] += 1
            s["helpful"] += h
            s["harmful"] += k
    return out


# ------------------------------------------------------------------------------------------------- JSON extraction
def _fenced(text: str) -> list[str]:
    return re.findall(r"```json\s*(.*?)\s*```", text, flags=re.DOTALL | re.IGNORECASE)


def _balanced(text: str) -> list[str]:
    """The authors' brace scanner: top-level ``{...}`` spans, skipping braces inside double-quoted strings."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text[i] != "{":
            i += 1
            continue
        depth, start, i = 1, i, i + 1
        while i < n and depth > 0:
            c = text[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            elif c == '"':
                i += 1
                while i < n and text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
            i += 1
        if depth == 0:
            out.append(text[start:i])
    return out


def extract_json_original(text: str) -> Any:
    """The authors' order: the whole reply, then ```json fences, then top-level brace spans; first that parses."""
    for cand in [text.strip(), *_fenced(text), *_balanced(text)]:
        try:
            return json.loads(cand)
        except (json.JSONDecodeError, ValueError):
            continue
    return None


def extract_json_strict(text: str, key: str) -> tuple[dict | None, str | None]:
    """The LAST JSON object in the reply that has ``key`` (a draft followed by a corrected object yields the
    correction); objects nested in another decoded object are not candidates. Returns (object, None) or
    (None, reason) with reason "no JSON object" or f"no '{key}' field"."""
    dec = json.JSONDecoder()
    found: list[dict] = []
    i, end_of_last = 0, -1
    while True:
        i = text.find("{", i)
        if i < 0:
            break
        try:
            obj, end = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        if i >= end_of_last and isinstance(obj, dict):
            found.append(obj)
            end_of_last = end
        i = end if isinstance(obj, dict) else i + 1
    if not found:
        return None, "no JSON object"
    with_key = [o for o in found if key in o]
    return (with_key[-1], None) if with_key else (None, f"no '{key}' field")


# ------------------------------------------------------------------------------------------------- generator ids
def cited_ids(text: str, known: set[str], faithful: bool) -> tuple[list[str], list[str]]:
    """Bullet ids the generator says it used. Returns (ids, unknown ids named by the reply).

    Faithful: ``bullet_ids`` of the reply when the WHOLE reply is JSON, else the bracket regex with a 3+ letter slug;
    ids are not checked against the playbook. Strict: bracketed ids with any slug, plus a ``bullet_ids`` list of the
    last JSON object that has one; kept only if the playbook has them, first mention order, no repeats."""
    if faithful:
        try:
            obj = json.loads(text)
            if isinstance(obj, dict):
                ids = obj.get("bullet_ids", [])
                return [str(x) for x in ids] if isinstance(ids, list) else [], []
        except (json.JSONDecodeError, ValueError):
            pass
        return ID_FAITHFUL.findall(text), []
    names = ID_STRICT.findall(text)
    obj, _ = extract_json_strict(text, "bullet_ids")
    if obj is not None and isinstance(obj.get("bullet_ids"), list):
        names += [str(x).strip().strip("[]") for x in obj["bullet_ids"]]
    ids = []
    unknown: list[str] = []
    for x in names:
        (ids if x in known else unknown).append(x)
    return list(dict.fromkeys(ids)), list(dict.fromkeys(unknown))


# ------------------------------------------------------------------------------------------------- reflector tags
def _tags_original(text: str) -> list:
    start = text.find('"bullet_tags"')
    if start < 0:
        return []
    b = text.find("[", start)
    if b < 0:
        return []
    depth, end = 0, b
    for j in range(b, len(text)):
        if text[j] == "[":
            depth += 1
        elif text[j] == "]":
            depth -= 1
            if depth == 0:
                end = j + 1
                break
    try:
        tags = json.loads(text[b:end])
    except (json.JSONDecodeError, ValueError):
        return []
    return tags if isinstance(tags, list) else []


def parse_tags(text: str, cited: list[str], known: set[str], faithful: bool) -> tuple[dict[str, str], list[dict]]:
    """Reflector reply -> ({bullet id: tag}, dropped entries with reasons).

    Faithful: the array after the first ``"bullet_tags"``; entry key ``id`` or ``bullet``; a later tag of an id
    overrides an earlier one; any tag string is kept (only exact "helpful"/"harmful" change a count) and any id is
    kept (ids absent from the playbook change nothing). Strict: ``bullet_tags`` of the last JSON object that has it
    (the faithful scan as fallback); tags are case-insensitive and must be helpful/harmful/neutral; the id must be
    one the generator cited; an id's first tag counts."""
    dropped: list[dict] = []
    if faithful:
        out: dict[str, str] = {}
        for t in _tags_original(text):
            if isinstance(t, dict):
                bid = t.get("id") or t.get("bullet", "")
                if bid:
                    out[str(bid)] = str(t.get("tag", "neutral"))
        return out, dropped
    obj, _ = extract_json_strict(text, "bullet_tags")
    raw = obj["bullet_tags"] if obj is not None else _tags_original(text)
    if not isinstance(raw, list):
        return {}, [{"entry": raw, "reason": "bullet_tags is not a list"}]
    out = {}
    for t in raw:
        if not isinstance(t, dict):
            dropped.append({"entry": t, "reason": "not an object"})
            continue
        bid = str(t.get("id") or t.get("bullet") or "").strip().strip("[]")
        tag = str(t.get("tag", "")).strip().lower()
        reason = None
        if not bid:
            reason = "missing id"
        elif tag not in TAGS:
            reason = "invalid tag"
        elif bid not in known:
            reason = "unknown bullet id"
        elif bid not in cited:
            reason = "not cited by the generator"
        elif bid in out:
            reason = "repeated tag"
        if reason:
            dropped.append({"entry": t, "reason": reason})
        else:
            out[bid] = tag
    return out, dropped


def apply_tags(sections: list[list], tags: dict[str, str]) -> dict[str, int]:
    """helpful -> helpful+1, harmful -> harmful+1, anything else -> no change. Returns counts by tag applied."""
    done = {"helpful": 0, "harmful": 0, "neutral": 0}
    for b in all_bullets(sections):
        tag = tags.get(b[0])
        if tag == "helpful":
            b[1] += 1
        elif tag == "harmful":
            b[2] += 1
        if tag in done:
            done[tag] += 1
    return done
