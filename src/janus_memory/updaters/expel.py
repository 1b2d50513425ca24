"""ExpeL, online multi-try variant ("ExpeL-Online-MT", as the Janus paper runs it; paper-spec §5.2).

Step t:
  1. retrieve the top-k (default 3) successful past cases from the success pool (cosine of question embeddings);
  2. up to ``max_tries`` (3) tries with the rules M_{t-1}; a try is judged against the ground truth on the content
     of its ``<final_answer>`` block (the whole reply when the block is missing); after a failed try that is
     followed by another one, a self-reflection call (``reflection_max_tokens``, 256) adds a note for the retry
     (the original also reflects after the last failed try, a call whose output nothing uses: skipped here);
  3. only on success: the case enters the success pool and the ``recent_success`` buffer; one "success vs
     failure" curator call per failed try emits rule operations; when the buffer reaches ``batch_update_size`` (8),
     an "all successes" curator call runs and the buffer is cleared.
Operations are parsed and applied by :mod:`janus_memory.updaters.expel_rules` (strict by default; ``faithful=True``
reproduces the original ExpeL). Every dropped operation is logged in ``info["ops"]`` and ``stats["ops_dropped"]``.

Memory text: "1. rule\\n2. rule" (no counts), "(empty)" when there is no rule.
Rollback (paper-spec §3.2): the rules with their counts and the ``recent_success`` buffer; the success pool is kept.
Deviation: retrieval ranks success cases by their question embedding only (the original also indexes thoughts,
steps and reflections of each case).
"""

from __future__ import annotations

import copy
import dataclasses
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
from janus_memory.updaters.expel_rules import (
    apply_ops_faithful,
    apply_ops_strict,
    parse_ops_faithful,
    parse_ops_strict,
    render_rules,
)


def _last_block(text: str, tag: str) -> str | None:
    blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", text or "", flags=re.DOTALL | re.IGNORECASE)
    return blocks[-1].strip() if blocks else None


@register_updater("expel")
class ExpeL(Updater):
    prompt_prefixes = ("expel_",)
    """ExpeL online (see module docstring). Extra config: max_tries, batch_update_size, max_num_rules,
    reflection_max_tokens."""

    DEFAULTS = {"max_tries": 3, "batch_update_size": 8, "max_num_rules": 20, "reflection_max_tokens": 256}

    def __init__(self, **kw):
        super().__init__(**kw)
        for key in ("max_tries", "batch_update_size", "max_num_rules"):
            if int(self.config[key]) < 1:
                raise ValueError(f"config {key!r} must be >= 1, got {self.config[key]!r}")
        self.rules: list[list] = []  # [[text, count], ...] sorted by count
        self.recent_success: list[dict] = []
        self.pool = RetrievalBank()  # success cases (not rolled back)

    # ---- seam --------------------------------------------------------------------------------
    def memory_text(self) -> str:
        return render_rules(self.rules) or EMPTY_MEMORY

    def solving_messages(
        self, memory_text: str, task: Task, examples: str = "(none)", reflections: str = "(none)", attempt: int = 1
    ) -> list[dict]:
        """System: solver instructions; user: rules, retrieved examples, reflections, attempt number, task prompt."""
        user = fill(
            load_prompt("expel_solver_user"),
            RULES=memory_text,
            EXAMPLES=examples,
            REFLECTIONS=reflections,
            ATTEMPT=str(attempt),
            TASK=self.family.prompt(task),
        )
        return [{"role": "system", "content": load_prompt("expel_solver_system")}, {"role": "user", "content": user}]

    def score(self, task: Task, result: ChatResult) -> Score:
        """Score the ``<final_answer>`` content (the whole text when the block is missing)."""
        ans = _last_block(result.text, "final_answer")
        view = result if ans is None else dataclasses.replace(result, text=ans)
        return self.family.score(task, view)

    def step(self, task: Task) -> StepOutcome:
        calls: list[LLMCall] = []
        old = self.memory_text()
        task_prompt = self.family.prompt(task)
        q_emb = self.embed([task.question])[0]
        hits = self.pool.top_k(q_emb, self.config["top_k"])
        examples = self._examples_block(hits)
        info: dict = {"retrieved": [{"id": self.pool.records[i]["id"], "similarity": round(s, 6)} for i, s in hits]}
        attempts: list[dict] = []
        reflections: list[str] = []
        out: ChatResult | None = None
        score: Score | None = None
        max_tries = int(self.config["max_tries"])
        for attempt in range(1, max_tries + 1):
            note = "\n".join(f"- {r}" for r in reflections) or "(none)"
            msgs = self.solving_messages(old, task, examples=examples, reflections=note, attempt=attempt)
            out = self._chat(msgs, role="solver", calls=calls, params=self.solver_params())
            score = self.score(task, out)
            shown = visible_text(out)
            traj = _last_block(shown, "trajectory") or shown
            attempts.append({"attempt": attempt, "output": shown, "trajectory": traj, "correct": score.correct})
            if score.correct or attempt == max_tries:
                break
            ref_msgs = [
                {
                    "role": "user",
                    "content": fill(
                        load_prompt("expel_reflection"),
                        REFLECTIONS=note,
                        TASK=task_prompt,
                        FAILED_OUTPUT=shown,
                    ),
                }
            ]
            params = self._with_extra(
                {
                    "temperature": self.config["temperature"],
                    "max_tokens": min(int(self.config["reflection_max_tokens"]), int(self.config["solver_max_tokens"])),
                }
            )
            ref = self._chat(ref_msgs, role="reflection", calls=calls, params=params)
            text = _last_block(ref.text, "reflection") or ref.text.strip()
            if text:
                reflections.append(text)
        assert out is not None and score is not None
        info["attempts"] = attempts
        info["reflections"] = list(reflections)
        info["ops"] = []
        if score.correct:
            case = {
                "id": task.id,
                "question": task.question,
                "input": task_prompt,
                "output": visible_text(out),
                "trajectory": attempts[-1]["trajectory"],
                "reflections": list(reflections),
            }
            self.pool.add(case, q_emb)
            self.recent_success.append(case)
            for failed in attempts[:-1]:
                self._curate("pair", self._pair_prompt(case, failed), calls, info)
            if len(self.recent_success) >= int(self.config["batch_update_size"]):
                self._curate("batch", self._batch_prompt(self.recent_success), calls, info)
                self.recent_success = []
        self.stats["steps"] += 1
        return StepOutcome(out, score, old, self.memory_text(), None, calls, info)

    def solve_frozen(self, tasks: Sequence[Task], *, role: str = "test") -> list[tuple[ChatResult, Score]]:
        """Frozen rules + top-k retrieved success cases; 1 try, no reflection (paper-spec §5.2)."""
        tasks = list(tasks)
        if not tasks:
            return []
        embs = self.embed([t.question for t in tasks])
        mem = self.memory_text()
        msgs = [
            self.solving_messages(mem, t, examples=self._examples_block(self.pool.top_k(e, self.config["top_k"])))
            for t, e in zip(tasks, embs, strict=True)
        ]
        return self._solve_batch(msgs, tasks, role)

    # ---- rules -------------------------------------------------------------------------------
    def apply_curator_text(self, text: str, source: str = "manual") -> dict:
        """Parse a curator reply and apply it to the rule list; returns the log entry (also kept in stats).

        Public so tests and tools can drive the exact rule semantics without an LLM.
        """
        max_rules = int(self.config["max_num_rules"])
        if self.config["faithful"]:
            ops, dropped = parse_ops_faithful(text)
            self.rules, applied, dropped2 = apply_ops_faithful(self.rules, ops, max_rules)
        else:
            ops, dropped = parse_ops_strict(text)
            self.rules, applied, dropped2 = apply_ops_strict(self.rules, ops, max_rules)
        dropped = dropped + dropped2
        for a in applied:
            self._count("ops_applied", a["applied_as"])
            if "note" in a:
                self._count("ops_notes", a["note"] if "wrapped" not in a["note"] else "edit index wrapped")
        for d in dropped:
            self._count("ops_dropped", d["reason"])
        return {"source": source, "applied": applied, "dropped": dropped}

    def _curate(self, source: str, prompt: str, calls: list[LLMCall], info: dict) -> None:
        msgs = [{"role": "user", "content": prompt}]
        params = self._with_extra(
            {"temperature": self.config["temperature"], "max_tokens": max(int(self.config["curator_max_tokens"]), 512)}
        )
        res = self._chat(msgs, role="curator", calls=calls, params=params)
        info["ops"].append(self.apply_curator_text(res.text, source))

    def _pair_prompt(self, success: dict, failed: dict) -> str:
        lim = self.config["retrieved_output_chars"]
        return fill(
            load_prompt("expel_pair_curator"),
            RULES=self.memory_text(),
            SUCCESS_QUESTION=success["input"],
            SUCCESS_TRAJECTORY=truncate(success["trajectory"], lim),
            FAIL_QUESTION=success["input"],
            FAIL_TRAJECTORY=truncate(failed["trajectory"], lim),
            OPS_FORMAT=load_prompt("expel_ops_format"),
        )

    def _batch_prompt(self, cases: list[dict]) -> str:
        lim = self.config["retrieved_output_chars"]
        items = "\n\n".join(
            f"[Success {i}]\nProblem: {c['input']}\nReasoning: {truncate(c['trajectory'], lim)}"
            for i, c in enumerate(cases, start=1)
        )
        return fill(
            load_prompt("expel_batch_curator"),
            RULES=self.memory_text(),
            SUCCESSES=items,
            OPS_FORMAT=load_prompt("expel_ops_format"),
        )

    def _examples_block(self, hits: list[tuple[int, float]]) -> str:
        if not hits:
            return "(none)"
        lim = self.config["retrieved_output_chars"]
        return "\n\n".join(
            f"### Example {rank} (similarity {sim:.2f})\nProblem: {self.pool.records[i]['input']}\n"
            f"Reasoning:\n{truncate(self.pool.records[i]['trajectory'], lim)}"
            for rank, (i, sim) in enumerate(hits, start=1)
        )

    # ---- state -------------------------------------------------------------------------------
    def get_state(self) -> dict:
        return {
            "rules": [[r[0], int(r[1])] for r in self.rules],
            "recent_success": copy.deepcopy(self.recent_success),
            "pool": self.pool.state(),
        }

    def set_state(self, state: dict) -> None:
        self.rules = [[r[0], int(r[1])] for r in state["rules"]]
        self.recent_success = copy.deepcopy(state["recent_success"])
        self.pool.set_state(state["pool"])

    def rollback(self, snap: dict) -> None:
        """Restore the rules (with counts) and the recent_success buffer; keep the success pool."""
        self._check_snapshot(snap)
        self.rules = [[r[0], int(r[1])] for r in snap["state"]["rules"]]
        self.recent_success = copy.deepcopy(snap["state"]["recent_success"])
        self.stats["rollbacks"] = self.stats.get("rollbacks", 0) + 1
