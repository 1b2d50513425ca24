"""Dynamic Cheatsheet updaters: DC-RS (retrieval & synthesis) and DC-Cu (cumulative).

Source: Suzgun et al., "Dynamic Cheatsheet" (2025), as run by the Janus paper (paper-spec §1.2, §5.1, §3.2).

DC-RS step (the candidate is synthesised BEFORE the task is answered, as in the paper's code):
  1. retrieve the top-k (default 3) past (input, model output) pairs by cosine similarity of question embeddings;
  2. the curator writes the candidate cheatsheet from the previous sheet, those pairs and the new task input
     (sampling: the base temperature, ``curator_max_tokens``, presence_penalty 1.0);
  3. the generator answers the task with the candidate sheet (the same messages Janus replays);
  4. (input, output, feedback) is appended to the retrieval bank — unconditionally by default (paper behaviour).
DC-Cu step: the generator answers with the current sheet, then the curator rewrites the sheet from the task and answer.

Candidate extraction (C24; default = explicit rejection):
  * the candidate is the content of the LAST complete ``<cheatsheet> ... </cheatsheet>`` block (a draft block
    followed by a final block yields the final one);
  * that block opens at the first ``<cheatsheet>`` tag standing alone on its line between the previous closing tag
    (or the start) and the block's closing tag; if no tag there stands alone, at the last one (so a tag mentioned
    in prose before the block does not hijack extraction);
  * no closing tag but an opening tag, or a truncated reply (finish_reason "length") whose last opening tag is
    never closed -> rejected ``"unterminated block"``; no tags -> ``"missing block"``; blank content -> ``"empty"``.
  A rejected candidate leaves the sheet unchanged and is counted in ``stats["candidates_rejected"]``.
  ``faithful=True`` reproduces DC's extractor (split on the first opening tag, then the first closing tag; no
  opening tag keeps the old sheet) and records the branch in ``info["branch"]`` and ``stats["faithful_branches"]``.

Not implemented: DC's "EXECUTE CODE!" follow-up for coding tasks (model code is never run in-process here).
"""

from __future__ import annotations

import re
from typing import Sequence

from janus_memory.types import ChatResult, Score, Task
from janus_memory.updaters.base import (
    EMPTY_MEMORY,
    LLMCall,
    RetrievalBank,
    StepOutcome,
    Updater,
    fill,
    load_prompt,
    register_updater,
    truncate,
    visible_text,
)

_OPEN = re.compile(r"<cheatsheet>", re.IGNORECASE)
_CLOSE = re.compile(r"</cheatsheet>", re.IGNORECASE)


def _alone_on_line(text: str, start: int, end: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    return text[line_start:start].strip() == "" and text[end:line_end].strip() == ""


def extract_cheatsheet(text: str, *, truncated: bool = False) -> tuple[str | None, str | None, str]:
    """Strict extraction (default mode, C24). Returns ``(candidate, rejection_reason, branch)``.

    Exactly one of candidate / rejection_reason is None. Reasons: "unterminated block", "missing block", "empty".
    """
    closes = list(_CLOSE.finditer(text))
    opens = list(_OPEN.finditer(text))
    if not closes:
        if opens:
            return None, "unterminated block", "opening tag never closed"
        return None, "missing block", "no cheatsheet tags"
    last = closes[-1]
    if truncated and opens and opens[-1].start() > last.end():
        return None, "unterminated block", "truncated reply ends inside a new block"
    seg_start = closes[-2].end() if len(closes) > 1 else 0
    cands = [m for m in opens if seg_start <= m.start() and m.end() <= last.start()]
    if not cands:
        return None, "missing block", "closing tag without opening tag"
    alone = [m for m in cands if _alone_on_line(text, m.start(), m.end())]
    opener = alone[0] if alone else cands[-1]
    content = text[opener.end() : last.start()].strip()
    if not content:
        return None, "empty", "blank block"
    return content, None, "last complete block"


def extract_cheatsheet_faithful(text: str, old: str) -> tuple[str, str]:
    """DC's original behaviour (C24 faithful mode). Returns ``(new_sheet, branch)``; never rejects."""
    t = text.strip()
    if "<cheatsheet>" not in t:
        return old, "no opening tag: previous cheatsheet kept"
    parts = t.split("<cheatsheet>")
    seg = parts[1]  # DC takes the text between the first opening tag and the next one (or the end)
    sheet = seg.strip().split("</cheatsheet>")[0].strip()
    if "</cheatsheet>" not in seg:
        if len(parts) > 2:
            branch = "text up to the next opening tag deployed"
        else:
            branch = "no closing tag: partial text deployed"
    elif not sheet:
        branch = "empty block deployed"
    else:
        branch = "first block"
    return sheet, branch


class _DCBase(Updater):
    DEFAULTS = {"curator_presence_penalty": 1.0}

    def __init__(self, **kw):
        super().__init__(**kw)
        self.cheatsheet: str = EMPTY_MEMORY

    # ---- seam --------------------------------------------------------------------------------
    def memory_text(self) -> str:
        return self.cheatsheet if self.cheatsheet.strip() else EMPTY_MEMORY

    def solving_messages(self, memory_text: str, task: Task, examples: str = "") -> list[dict]:
        """System: the generator instructions; user: the cheatsheet, optional retrieved examples, the task prompt."""
        user = fill(
            load_prompt("dc_generator_user"),
            CHEATSHEET=memory_text,
            EXAMPLES=examples,
            TASK=self.family.prompt(task),
        )
        return [{"role": "system", "content": load_prompt("dc_generator_system")}, {"role": "user", "content": user}]

    # ---- helpers -----------------------------------------------------------------------------
    def curator_params(self) -> dict:
        return {**super().curator_params(), "presence_penalty": self.config["curator_presence_penalty"]}

    def _apply_curator_output(self, result: ChatResult, info: dict) -> str | None:
        """Update ``self.cheatsheet`` from the curator reply; return the rejection reason (None if accepted).

        A reply cut off by max_tokens arrives with its partial text in ``reasoning`` (the LLM layer never treats a
        cut-off reply as an answer, C19); the curator's partial text is read from there so the rejection reason is
        the true one ("unterminated block"), and faithful mode sees what the original DC saw."""
        text = result.text or ""
        if not text and result.truncated and result.reasoning and "<think>" not in result.reasoning:
            text = result.reasoning
        if self.config["faithful"]:
            sheet, branch = extract_cheatsheet_faithful(text, self.cheatsheet)
            info["branch"] = branch
            self._count("faithful_branches", branch)
            self.cheatsheet = sheet
            return None
        cand, reason, branch = extract_cheatsheet(text, truncated=result.finish_reason == "length")
        info["branch"] = branch
        if reason is not None:
            info["rejected_curator_output"] = text
            self._count("candidates_rejected", reason)
            return reason
        self.cheatsheet = cand
        return None


@register_updater("dc_rs")
class DCRetrievalSynthesis(_DCBase):
    prompt_prefixes = ("dc_rs_", "dc_generator", "dc_examples")
    """DC-RS (paper-spec §5.1). Extra config: ``bank_under_controller`` (default False: the bank of past
    (input, output) pairs is appended to unconditionally and a Janus rollback restores only the cheatsheet)."""

    DEFAULTS = {**_DCBase.DEFAULTS, "bank_under_controller": False}

    def __init__(self, **kw):
        super().__init__(**kw)
        self.bank = RetrievalBank()

    def _pairs_block(self, hits: list[tuple[int, float]]) -> str:
        if not hits:
            return fill(load_prompt("dc_rs_pairs_block"), ITEMS="(none yet)")
        lim = self.config["retrieved_output_chars"]
        items = []
        # least similar first, so the closest example sits right before the instruction
        for rank, (idx, sim) in reversed(list(enumerate(hits, start=1))):
            rec = self.bank.records[idx]
            items.append(
                f'<problem rank="{rank}" similarity="{sim:.2f}">\n{rec["question"]}\n</problem>\n'
                f"<solution>\n{truncate(rec['output'], lim)}\n</solution>"
            )
        return fill(load_prompt("dc_rs_pairs_block"), ITEMS="\n".join(items))

    def _examples_block(self, hits: list[tuple[int, float]]) -> str:
        if not hits:
            return ""
        lim = self.config["retrieved_output_chars"]
        items = []
        for rank, (idx, sim) in enumerate(hits, start=1):
            rec = self.bank.records[idx]
            items.append(
                f"### Example {rank} (similarity {sim:.2f})\nProblem:\n{rec['input']}\n"
                f"Solution:\n{truncate(rec['output'], lim)}"
            )
        return fill(load_prompt("dc_examples_block"), ITEMS="\n\n".join(items)) + "\n\n"

    def step(self, task: Task) -> StepOutcome:
        calls: list[LLMCall] = []
        info: dict = {}
        old = self.memory_text()
        q_emb = self.embed([task.question])[0]
        hits = self.bank.top_k(q_emb, self.config["top_k"])
        info["retrieved"] = [{"id": self.bank.records[i]["id"], "similarity": round(s, 6)} for i, s in hits]
        task_prompt = self.family.prompt(task)
        cur_msgs = [
            {"role": "system", "content": load_prompt("dc_rs_curator_system")},
            {
                "role": "user",
                "content": fill(
                    load_prompt("dc_rs_curator_user"),
                    PREVIOUS_CHEATSHEET=old,
                    RETRIEVED_PAIRS=self._pairs_block(hits),
                    NEXT_INPUT=task.question,
                ),
            },
        ]
        cur = self._chat(cur_msgs, role="curator", calls=calls, params=self.curator_params())
        rejected = self._apply_curator_output(cur, info)
        new = self.memory_text()
        out = self._chat(self.solving_messages(new, task), role="solver", calls=calls, params=self.solver_params())
        score = self.score(task, out)
        self.bank.add(
            {
                "id": task.id,
                "question": task.question,
                "input": task_prompt,
                "output": visible_text(out),
                "feedback": "success" if score.correct else "failure",
            },
            q_emb,
        )
        self.stats["steps"] += 1
        return StepOutcome(out, score, old, new, rejected, calls, info)

    def solve_frozen(self, tasks: Sequence[Task], *, role: str = "test") -> list[tuple[ChatResult, Score]]:
        """Frozen cheatsheet + the top-k retrieved (input, output) pairs of the stream bank (paper-spec §5.1)."""
        tasks = list(tasks)
        if not tasks:
            return []
        embs = self.embed([t.question for t in tasks])
        mem = self.memory_text()
        msgs = [
            self.solving_messages(mem, t, self._examples_block(self.bank.top_k(e, self.config["top_k"])))
            for t, e in zip(tasks, embs, strict=True)
        ]
        return self._solve_batch(msgs, tasks, role)

    def get_state(self) -> dict:
        return {"cheatsheet": self.cheatsheet, "bank": self.bank.state()}

    def set_state(self, state: dict) -> None:
        self.cheatsheet = state["cheatsheet"]
        self.bank.set_state(state["bank"])

    def rollback(self, snap: dict) -> None:
        """Restore the cheatsheet; the bank too only with ``bank_under_controller`` (paper-spec §3.2)."""
        self._check_snapshot(snap)
        self.cheatsheet = snap["state"]["cheatsheet"]
        if self.config["bank_under_controller"]:
            self.bank.set_state(snap["state"]["bank"])
        self.stats["rollbacks"] = self.stats.get("rollbacks", 0) + 1


@register_updater("dc_cu")
class DCCumulative(_DCBase):
    prompt_prefixes = ("dc_cu_", "dc_generator")
    """DC-Cu: answer with the current sheet, then the curator rewrites it from the task and the answer."""

    def step(self, task: Task) -> StepOutcome:
        calls: list[LLMCall] = []
        info: dict = {}
        old = self.memory_text()
        out = self._chat(self.solving_messages(old, task), role="solver", calls=calls, params=self.solver_params())
        score = self.score(task, out)
        cur_msgs = [
            {"role": "system", "content": load_prompt("dc_cu_curator_system")},
            {
                "role": "user",
                "content": fill(
                    load_prompt("dc_cu_curator_user"),
                    PREVIOUS_CHEATSHEET=old,
                    QUESTION=self.family.prompt(task),
                    ANSWER=visible_text(out),
                ),
            },
        ]
        cur = self._chat(cur_msgs, role="curator", calls=calls, params=self.curator_params())
        rejected = self._apply_curator_output(cur, info)
        self.stats["steps"] += 1
        return StepOutcome(out, score, old, self.memory_text(), rejected, calls, info)

    def get_state(self) -> dict:
        return {"cheatsheet": self.cheatsheet}

    def set_state(self, state: dict) -> None:
        self.cheatsheet = state["cheatsheet"]
