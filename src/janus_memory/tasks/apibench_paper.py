"""The Janus authors' APIBench checker (``checker: paper``), re-stated in our own code.

Their code (Chen-1031/Janus @ a42b1e6, ``tasks/apibench_ast_eval.py``, a port of Gorilla's ``ast_eval_hf.py`` to
Python's ``ast``) scores the text their checker sees (the whole output, thinking included) as follows:
- the candidate: the text between the first "api_call" and the next "api_provider", from two characters after its
  first ":" to its last ")" included (no "api_call" at all: the whole text);
- it must parse as Python, else the reply is a hallucination ("parse_error"); it must hold a call ("no_call");
- the pool is ``huggingface_api.jsonl`` in file order. An entry's function is the dotted name of the first call in its
  ``api_call``; its required texts are every positional argument and every keyword value, as ``ast.unparse`` writes
  them (an entry without arguments is skipped). The entry matches when the FIRST candidate call with the same dotted
  name holds every required text (one run of quotes stripped from each end, as Gorilla's ``lstrip("'")``) in its own
  ``ast.unparse`` text. The first matching entry decides: correct iff its domain is the gold domain; no entry matches:
  a hallucination ("no_pool_match").
So ``SentenceTransformer('all-MiniLM-L6-v2')`` matches no entry (the pool writes ``sentence-transformers/...``), a shell
command never parses, and ``pipeline('text-generation', model='no/such')`` matches the entry
``pipeline('text-generation', ...)`` whose only required text it holds.
"""
from __future__ import annotations

import ast
from functools import lru_cache

from .data import read_jsonl


def candidate_text(text: str) -> str:
    """The authors' extraction of the predicted api_call from a model output."""
    parts = (text or "").split("api_call")
    if len(parts) == 1:
        return text or ""
    tail = parts[1].split("api_provider")[0]
    start = tail.index(":") if ":" in tail else 0
    end = tail.rindex(")") if ")" in tail else -2
    return tail[start + 2:end + 1]


def _name(call: ast.Call) -> str:
    node, parts = call.func, []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    try:
        return ast.unparse(call.func)
    except Exception:  # noqa: BLE001 - an odd tree: no name, as theirs returns ""
        return ""


def _calls(tree) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


@lru_cache(maxsize=4)
def load_pool(api_path: str) -> tuple[tuple[str, tuple[str, ...], str], ...]:
    """(function name, required texts, domain) of every usable pool entry, in file order."""
    out = []
    for r in read_jsonl(api_path):
        src = r.get("api_call")
        if not isinstance(src, str) or not src.strip():
            continue
        try:
            calls = _calls(ast.parse(src.strip()))
        except (SyntaxError, ValueError):
            continue
        if not calls or not _name(calls[0]):
            continue
        ref = calls[0]
        required = [ast.unparse(a) for a in ref.args] + [ast.unparse(k.value) for k in ref.keywords if k.arg]
        if required:
            out.append((_name(ref), tuple(x.lstrip("'").rstrip("'") for x in required), r.get("domain", "")))
    return tuple(out)


def authors_verdict(text: str, gold_domain: str, pool) -> tuple[bool, bool, str]:
    """(correct, hallucinated, reason) as the authors' evaluator gives them; ``pool`` from :func:`load_pool`."""
    cand = candidate_text(text)
    try:
        calls = _calls(ast.parse(cand))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False, True, "parse_error"
    if not calls:
        return False, True, "no_call"
    texts = []
    for c in calls:
        try:
            texts.append((_name(c), ast.unparse(c)))
        except Exception:  # noqa: BLE001 - a call ast cannot write back is skipped, as theirs does
            continue
    for name, required, domain in pool:
        chosen = next((t for n, t in texts if n == name), None)
        if chosen is not None and all(r in chosen for r in required):
            return domain == gold_domain, False, "correct" if domain == gold_domain else "wrong_domain"
    return False, True, "no_pool_match"
