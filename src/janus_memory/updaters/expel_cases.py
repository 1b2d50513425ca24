"""ExpeL's success cases: how a try's blocks are read, which documents a stored case is retrieved by, and the
retrieval itself (split from ``expel.py``; its names stay importable there).

:class:`CaseRetrieval` is the retrieval half of :class:`janus_memory.updaters.expel.ExpeL`: the success pool
(``self.pool``, question embeddings), the per-field documents (``self.docs``), the top-k search and the examples
block shown to the solver.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from janus_memory.updaters.bank import RetrievalBank
from janus_memory.updaters.base import truncate


def _last_block(text: str, tag: str) -> str | None:
    blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", text or "", flags=re.DOTALL | re.IGNORECASE)
    return blocks[-1].strip() if blocks else None


def _first_block(text: str, tag: str) -> str | None:
    """The authors' extraction: both tags present (case-sensitive), text between the first pair, stripped;
    None when absent or empty."""
    t = text or ""
    if f"<{tag}>" not in t or f"</{tag}>" not in t:
        return None
    return t.split(f"<{tag}>", 1)[1].split(f"</{tag}>", 1)[0].strip() or None


def paper_case_fields(trajectory: str, reflections: list[str]) -> list[tuple[str, str]]:
    """The retrieval documents the authors build for a success case besides its task (``retrieval="paper"``):

    the trajectory's non-empty lines, trimmed, are its steps; a line starting "> think" or "think:" (any case) is a
    thought (the "think:" prefix dropped), another line starting ">" an action (the ">" dropped). Documents:
    ``thought`` = the last 3 thoughts, or the trajectory's first 300 characters when it has none; ``step`` = the last
    5 steps; ``action`` = the last 5 actions (when any); ``reflection`` = the non-empty reflections joined by new
    lines (when any). Single-turn answers have no actions, so their documents are thought, step and reflection."""
    raw = (trajectory or "").strip()
    lines = [ln.strip() for ln in raw.splitlines() if ln.strip()]
    thoughts, actions = [], []
    for ln in lines:
        low = ln.lower()
        if low.startswith("> think") or low.startswith("think:"):
            t = re.sub(r"^>?\s*think:\s*", "", ln, flags=re.IGNORECASE).strip()
            if t:
                thoughts.append(t)
        elif ln.startswith(">"):
            a = ln[1:].strip()
            if a:
                actions.append(a)
    if not thoughts and raw:
        thoughts = [raw[:300]]
    steps = lines or ([raw] if raw else [])
    out = []
    if thoughts:
        out.append(("thought", "\n".join(thoughts[-3:])))
    if steps:
        out.append(("step", "\n".join(steps[-5:])))
    if actions:
        out.append(("action", "\n".join(actions[-5:])))
    joined = "\n".join(r.strip() for r in reflections if r and r.strip())
    if joined:
        out.append(("reflection", joined))
    return out


class CaseRetrieval:
    """Mixin of ExpeL (needs ``config``, ``pool``, ``docs`` and ``embed``): store and retrieve success cases."""

    config: dict[str, Any]
    pool: RetrievalBank
    docs: RetrievalBank
    embed: Callable[[list[str]], np.ndarray]

    def _examples_block(self, hits: list[tuple[int, float]]) -> str:
        """The retrieved cases shown to the solver: each case's raw question (``examples_input="question"``, the
        authors') or its full task prompt (``"task_prompt"``), and its trajectory."""
        if not hits:
            return "(none)"
        lim = self.config["retrieved_output_chars"]
        field = "question" if self.config["examples_input"] == "question" else "input"
        cases = [(rank, self.pool.records[i], sim) for rank, (i, sim) in enumerate(hits, start=1)]
        return "\n\n".join(
            f"### Example {rank} (similarity {sim:.2f})\nProblem: {case[field]}\n"
            f"Reasoning:\n{truncate(case['trajectory'], lim)}"
            for rank, case, sim in cases
        )

    # ---- retrieval ---------------------------------------------------------------------------
    def _add_case(self, case: dict, q_emb) -> None:
        """Add a success case; with multi-field retrieval also its documents: the task and :func:`paper_case_fields`
        (``paper``) or the trajectory and each reflection (``multi_field``)."""
        idx = len(self.pool)
        self.pool.add(case, q_emb)
        if self.config["retrieval"] == "question":
            return
        if self.config["retrieval"] == "paper":
            fields = paper_case_fields(case["trajectory"], case["reflections"])
        else:
            fields = [("trajectory", case["trajectory"])] + [("reflection", r) for r in case["reflections"]]
        fields = [(name, text) for name, text in fields if text and text.strip()]
        self.docs.add({"case": idx, "field": "task"}, q_emb)
        if fields:
            for (name, _), emb in zip(fields, self.embed([t for _, t in fields]), strict=True):
                self.docs.add({"case": idx, "field": name}, emb)

    def _retrieve(self, q_emb) -> list[tuple[int, float]]:
        """Top-k success cases: by question only, or (multi_field) the best of each case's documents among the top
        ``top_k * buffer_retrieve_ratio`` documents, best first (ties: earlier document rank)."""
        k = int(self.config["top_k"])
        if self.config["retrieval"] == "question" or not len(self.docs):
            return self.pool.top_k(q_emb, k)
        best: dict[int, float] = {}
        for i, sim in self.docs.top_k(q_emb, k * int(self.config["buffer_retrieve_ratio"])):
            case = self.docs.records[i]["case"]
            if case not in best:
                best[case] = sim  # documents arrive best first, so the first hit is the case's best score
        return list(best.items())[:k]

    def state_hints(self) -> dict:
        hints: dict = {}
        hints.update({("pool",) + p: h for p, h in self.pool.state_hints().items()})
        hints.update({("docs",) + p: h for p, h in self.docs.state_hints().items()})
        return hints
