"""ExpeL, online multi-try variant ("ExpeL-Online-MT", as the Janus paper runs it; docs/research-notes.md §5.2).

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

Presets (docs/fidelity.md): the defaults are the authors' code: rule operations found anywhere in the
reply with two-way text containment (``rule_ops="paper"``, :func:`expel_rules.apply_ops_paper`), the FIRST
``<final_answer>`` block is scored in the stream, Janus replays are scored on the RAW output with the task's
checker (``replay_scoring="raw"``), presence_penalty 1.0 on every call, and retrieval over several fields of each
success case, the authors' fields (``retrieval="paper"``, :func:`paper_case_fields`: the task, its thought, its
last steps, its actions, the joined reflections; the top ``top_k * buffer_retrieve_ratio`` documents, aggregated per
case by their best score); ``retrieval="multi_field"`` indexes our fields instead (question, the whole trajectory,
each reflection). ``SMALL_MODEL_CONFIG`` restores our strict
parser, last block, block scoring in replay, no penalty, question-only retrieval, the answer text as the stored
output and the task prompt in the examples. ``parse_reasoning`` lets the parsers see the thinking text (the
authors' vLLM outputs include it). ``outputs="paper"`` (default) keeps each try as the authors do: the raw output
(thinking in ``<think>`` tags, then the answer), its ``<trajectory>`` block (else the raw output) and its
``<final_answer>`` block (``answer``); the reflection reads the raw failed output and takes the first
``<reflection>`` block of its raw reply; the checker sees the answer block alone, as the authors' checker does.
``examples_input="question"`` (default) shows each retrieved case's raw question, as the authors' examples do.
``message_shape="one_text"`` (default) sends the solver prompt as one user message with ``[SYSTEM]`` and ``[HUMAN]``
sections in the authors' order (``solver_layout="paper"``); ``ops_format="paper"`` (default) gives the curators
format lines that the authors' operation pattern cannot read as an operation when a reply's thinking restates them.

Retrieval of success cases: the pool (``self.pool``, question embeddings), the per-field documents (``self.docs``,
:func:`paper_case_fields`), the top-k search and the examples block shown to the solver.

Memory text: "1. rule\\n2. rule" (no counts), "(empty)" when there is no rule.
Rollback (docs/research-notes.md §3.2): the rules with their counts and the ``recent_success`` buffer; the success pool is kept.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Sequence

from janus_memory.updaters.base import (
    EMPTY_MEMORY,
    Harm,
    LLMCall,
    RetrievalBank,
    StepOutcome,
    Updater,
    fill,
    load_prompt,
    register_updater,
    thinking_output,
    truncate,
    visible_text,
)
from janus_memory.updaters.expel_rules import apply_curator_reply, normalize_rule_paper, render_rules
from janus_memory.values import ChatResult, Score, Task


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


SMALL_MODEL_CONFIG = {"rule_ops": "strict", "answer_block": "last", "replay_scoring": "answer_block",
                      "presence_penalty": None, "retrieval": "question", "outputs": "visible",
                      "examples_input": "task_prompt", "test_scoring": "answer_block",
                      "message_shape": "system_user", "ops_format": "short", "solver_layout": "rules_first"}


@register_updater("expel")
class ExpeL(Updater):
    prompt_prefixes = ("expel_",)
    """ExpeL online (see module docstring). Extra config: max_tries, batch_update_size, max_num_rules,
    reflection_max_tokens."""

    RANGES = {"batch_update_size": (1, 1 << 20)}  # curate per batch of n failures; 0 would divide by zero

    DEFAULTS = {"max_tries": 3, "batch_update_size": 8, "max_num_rules": 20, "reflection_max_tokens": 256,
                "rule_ops": "paper", "answer_block": "first", "replay_scoring": "raw",
                "parse_reasoning": True, "retrieval": "paper", "buffer_retrieve_ratio": 5,
                # what the rule curator is shown of each case: the raw question (the authors') or the task prompt
                "curator_input": "question",
                # what the solver's retrieved examples show of each case: the raw question (the authors') or the prompt
                "examples_input": "question",
                # "paper": a try is kept, reflected on, retrieved and checked as the authors' raw output (the
                # thinking in <think> tags, then the answer, with parse_reasoning; the answer block alone is checked);
                # "visible": the answer text only (what this updater showed before it matched the authors')
                "outputs": "paper",
                # held-out test answers: the raw output through the checker (the authors' batched test) or the
                # answer block, as the stream checks it
                "test_scoring": "raw",
                # the solver prompt: "one_text" = one user message with a [SYSTEM] and a [HUMAN] section (the
                # authors'), "system_user" = a system message and a user message (the chat roles)
                "message_shape": "one_text",
                # the curators' operation format lines: "paper" = a placeholder between the operation and its colon
                # ("ADD <k>: ..."), which the authors' operation pattern cannot read as an operation; "short" =
                # "ADD: <a new rule>", which that pattern reads as the rule "<a new rule>." when the curator's
                # thinking restates it (safe with rule_ops "strict", which drops a <...> placeholder)
                "ops_format": "paper",
                # the solver's sections: "paper" = the authors' order and placeholders (examples "(none)", rules,
                # notes "(empty)", attempt, answer format, problem); "rules_first" = rules first, notes "(none)"
                "solver_layout": "paper"}
    _CHOICES = {"rule_ops": ("paper", "strict"), "answer_block": ("first", "last"),
                "replay_scoring": ("raw", "answer_block"), "retrieval": ("paper", "multi_field", "question"),
                "curator_input": ("question", "task_prompt"), "examples_input": ("question", "task_prompt"),
                "outputs": ("paper", "visible"), "test_scoring": ("raw", "answer_block"),
                "message_shape": ("one_text", "system_user"), "ops_format": ("paper", "short"),
                "solver_layout": ("paper", "rules_first")}

    @classmethod
    def llm_calls_per_step(cls, config: dict) -> tuple[float, float]:
        """At least the first try; at most ``max_tries`` tries, a reflection after each failed one, a pair curation
        per failed try when a later one succeeds, and one batch curation per ``batch_update_size`` successes."""
        tries = int(config["max_tries"])
        return 1, tries + 2 * (tries - 1) + 1 / int(config["batch_update_size"])

    def __init__(self, **kw):
        super().__init__(**kw)
        for key, allowed in self._CHOICES.items():
            if self.config[key] not in allowed:
                raise ValueError(f"config {key!r} must be one of {allowed}, got {self.config[key]!r}")
        self.docs = RetrievalBank()  # multi-field retrieval documents {"case": pool index, "field": name}
        for key in ("max_tries", "batch_update_size", "max_num_rules"):
            if int(self.config[key]) < 1:
                raise ValueError(f"config {key!r} must be >= 1, got {self.config[key]!r}")
        self.rules: list[list] = []  # [[text, count], ...] sorted by count
        self.recent_success: list[dict] = []
        self.pool = RetrievalBank()  # success cases (not rolled back)

    supports_injection = True  # an injected candidate is a rule list with counts (inject_harm)

    # ---- seam --------------------------------------------------------------------------------
    def memory_text(self) -> str:
        return render_rules(self.rules) or EMPTY_MEMORY

    # ---- hook: an injected harmful candidate -------------------------------------------------
    @classmethod
    def harmful_text(cls, harm: Harm, memory: str, *, examples: str = "", answer: str = "") -> str:
        """The harmful rule list of a memory text (each numbered line a rule of count 2), rendered."""
        rules = [] if memory.strip() == EMPTY_MEMORY else \
            [(re.sub(r"^\d+\.\s?", "", line), 2) for line in memory.splitlines() if line.strip()]
        return render_rules(harm.rules(rules, examples=examples, answer=answer)) or EMPTY_MEMORY

    def inject_harm(self, harm: Harm, outcome: StepOutcome, before: dict) -> None:
        """The harmful rule list built from the rules of M_{t-1} with their counts; the success pool and
        ``recent_success`` stay as the step left them."""
        examples = self.retrieved_examples(outcome) if harm.kind == "dump" else ""
        rules = [(r[0], int(r[1])) for r in before["state"]["rules"]]
        new = harm.rules(rules, examples=examples, answer=visible_text(outcome.output))
        self.rules = [[text, int(count)] for text, count in new]

    def retrieved_examples(self, outcome: StepOutcome) -> str:
        """The success cases the solver was shown at this step (what an injected ``dump`` turns into rules)."""
        return self._examples_block(self.pool.hits_of(outcome.info.get("retrieved") or []))

    def no_notes(self) -> str:  # the solver and reflection prompts' text for "no note from a failed try yet"
        return "(empty)" if self.config["solver_layout"] == "paper" else "(none)"

    def solving_messages(
        self, memory_text: str, task: Task, examples: str = "(none)", reflections: str | None = None, attempt: int = 1
    ) -> list[dict]:
        """The solver instructions, then the examples, rules, reflections (``None``: :meth:`no_notes`), attempt,
        answer format and task prompt (``solver_layout="paper"``; ``"rules_first"``: the rules first): one user
        message with a ``[SYSTEM]`` and a ``[HUMAN]`` section (``message_shape="one_text"``, as the authors send it)
        or a system and a user message (``"system_user"``)."""
        layout = "expel_solver_user_paper" if self.config["solver_layout"] == "paper" else "expel_solver_user"
        user = fill(load_prompt(layout), RULES=memory_text, EXAMPLES=examples, ATTEMPT=str(attempt),
                    REFLECTIONS=self.no_notes() if reflections is None else reflections, TASK=self.family.prompt(task))
        system = load_prompt("expel_solver_system")
        if self.config["message_shape"] == "one_text":
            return [{"role": "user", "content": fill(load_prompt("expel_solver_sections"), SYSTEM=system, HUMAN=user)}]
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def parse_view(self, result: ChatResult) -> str:
        if self.config["parse_reasoning"] and result.reasoning:
            return f"{result.reasoning}\n{result.text or ''}"
        return result.text or ""

    def raw_output(self, result: ChatResult) -> str:
        """A reply as the authors' vLLM path returns it (``outputs="paper"`` with ``parse_reasoning``,
        :func:`thinking_output`): the thinking in ``<think>`` tags, then the answer text, and a reply cut off inside
        its thinking still opening with ``<think>`` (so the stream check never reads the thinking's first word as
        a letter); otherwise the visible answer text."""
        if self.config["outputs"] == "paper" and self.config["parse_reasoning"]:
            return thinking_output(result)
        return visible_text(result)

    def _block(self, text: str, tag: str) -> str | None:
        return (_first_block if self.config["answer_block"] == "first" else _last_block)(text, tag)

    def score(self, task: Task, result: ChatResult) -> Score:
        """Score the ``<final_answer>`` content (first block in the paper preset; the whole text when missing).
        ``outputs="paper"``: the checker sees that content alone (or the raw output), as the authors' checker does;
        ``"visible"``: the content with the reply's reasoning still attached."""
        if self.config["outputs"] == "paper":
            raw = self.raw_output(result)
            ans = self._block(raw, "final_answer")
            return self.family.score(task, dataclasses.replace(result, text=raw if ans is None else ans, reasoning=""))
        text = self.parse_view(result)
        ans = self._block(text, "final_answer")
        return self.family.score(task, dataclasses.replace(result, text=text if ans is None else ans))

    def replay_score(self, task: Task, result: ChatResult) -> Score:
        """Janus replay: the authors score the raw output with the task's checker (``replay_scoring="raw"``)."""
        if self.config["replay_scoring"] == "raw":
            return self._raw_score(task, result)
        return self.score(task, result)

    def test_score(self, task: Task, result: ChatResult) -> Score:
        """Held-out test: the authors' batched test checks the raw output too (``test_scoring="raw"``)."""
        if self.config["test_scoring"] == "raw":
            return self._raw_score(task, result)
        return self.score(task, result)

    def _raw_score(self, task: Task, result: ChatResult) -> Score:
        if self.config["outputs"] == "paper":  # the checker composes thinking + answer itself
            return self.family.score(task, result)
        return self.family.score(task, dataclasses.replace(result, text=self.parse_view(result)))

    def _pp(self, params: dict) -> dict:
        if self.config["presence_penalty"] is not None:
            params.setdefault("presence_penalty", self.config["presence_penalty"])
        return params

    def step(self, task: Task) -> StepOutcome:
        """Retrieve success cases, solve with up to ``max_tries`` tries (a reflection after each failed try), then
        on success store the case and curate the rules (pair prompts for failed tries, a batch prompt every
        ``batch_update_size`` successes)."""
        calls: list[LLMCall] = []
        old = self.memory_text()
        task_prompt = self.family.prompt(task)
        q_emb = self.embed([task.question])[0]
        hits = self._retrieve(q_emb)
        info: dict = {"retrieved": [{"id": self.pool.records[i]["id"], "similarity": round(s, 6)} for i, s in hits]}
        out, score, attempts, reflections = self._solve_with_reflection(
            task, old, self._examples_block(hits), task_prompt, calls)
        info["attempts"] = attempts
        info["reflections"] = list(reflections)
        info["ops"] = []
        if score.correct:
            self._learn_success(task, task_prompt, out, attempts, reflections, q_emb, calls, info)
        self.stats["steps"] += 1
        return StepOutcome(out, score, old, self.memory_text(), None, calls, info)

    def _solve_with_reflection(self, task: Task, old: str, examples: str, task_prompt: str,
                               calls: list[LLMCall]) -> tuple[ChatResult, Score, list[dict], list[str]]:
        """The tries of one step: (last output, its score, per-try log, reflections written)."""
        attempts: list[dict] = []
        reflections: list[str] = []
        out: ChatResult | None = None
        score: Score | None = None
        max_tries = int(self.config["max_tries"])
        for attempt in range(1, max_tries + 1):
            note = "\n".join(f"- {r}" for r in reflections) or self.no_notes()
            msgs = self.solving_messages(old, task, examples=examples, reflections=note, attempt=attempt)
            out = self._chat(msgs, role="solver", calls=calls, params=self.solver_params())
            score = self.score(task, out)
            shown = self.raw_output(out)
            traj = self._block(shown, "trajectory") or shown
            item = {"attempt": attempt, "output": shown, "trajectory": traj, "correct": score.correct}
            if self.config["outputs"] == "paper":  # the authors keep the answer block (their model_output) too
                item["answer"] = self._block(shown, "final_answer") or shown
            attempts.append(item)
            if score.correct or attempt == max_tries:
                break
            text = self._reflect(note, task_prompt, shown, calls)
            if text:
                reflections.append(text)
        assert out is not None and score is not None
        return out, score, attempts, reflections

    def _reflect(self, note: str, task_prompt: str, shown: str, calls: list[LLMCall]) -> str:
        """One reflection call on a failed try; the ``<reflection>`` block (or the whole reply) stripped."""
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
        params = self._pp(self._with_extra(
            {
                "temperature": self.config["temperature"],
                "max_tokens": min(int(self.config["reflection_max_tokens"]), int(self.config["solver_max_tokens"])),
            }
        ))
        ref = self._chat(ref_msgs, role="reflection", calls=calls, params=params)
        if self.config["outputs"] == "paper":  # the authors read the block (first, by default) off the raw reply
            raw = self.raw_output(ref)
            return self._block(raw, "reflection") or raw.strip()
        return _last_block(ref.text, "reflection") or ref.text.strip()

    def _learn_success(self, task: Task, task_prompt: str, out: ChatResult, attempts: list[dict],
                       reflections: list[str], q_emb, calls: list[LLMCall], info: dict) -> None:
        """A solved task: store the success case, curate on each failed try, and on a full batch of successes."""
        case = {
            "id": task.id,
            "question": task.question,
            "input": task_prompt,
            "output": attempts[-1]["output"],
            "trajectory": attempts[-1]["trajectory"],
            "reflections": list(reflections),
        }
        if "answer" in attempts[-1]:
            case["answer"] = attempts[-1]["answer"]
        self._add_case(case, q_emb)
        self.recent_success.append(case)
        for failed in attempts[:-1]:
            self._curate("pair", self._pair_prompt(case, failed), calls, info)
        if len(self.recent_success) >= int(self.config["batch_update_size"]):
            self._curate("batch", self._batch_prompt(self.recent_success), calls, info)
            self.recent_success = []

    def solve_frozen(self, tasks: Sequence[Task], *, role: str = "test") -> list[tuple[ChatResult, Score]]:
        """Frozen rules + top-k retrieved success cases; 1 try, no reflection (docs/research-notes.md §5.2)."""
        tasks = list(tasks)
        if not tasks:
            return []
        embs = self.embed([t.question for t in tasks])
        mem = self.memory_text()
        msgs = [
            self.solving_messages(mem, t, examples=self._examples_block(self._retrieve(e)))
            for t, e in zip(tasks, embs, strict=True)
        ]
        return self._solve_batch(msgs, tasks, role)

    # ---- success cases -----------------------------------------------------------------------
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

    # ---- rules -------------------------------------------------------------------------------
    def apply_curator_text(self, text: str, source: str = "manual") -> dict:
        """Parse a curator reply and apply it to the rule list; returns the log entry (also kept in stats).

        Public so tests and tools can drive the exact rule semantics without an LLM.
        """
        self.rules, applied, dropped = apply_curator_reply(
            self.rules, text, int(self.config["max_num_rules"]),
            faithful=self.config["faithful"], rule_ops=self.config["rule_ops"])
        for a in applied:
            self._count("ops_applied", a["applied_as"])
            if "note" in a:
                self._count("ops_notes", a["note"] if "wrapped" not in a["note"] else "edit index wrapped")
        for d in dropped:
            self._count("ops_dropped", d["reason"])
        return {"source": source, "applied": applied, "dropped": dropped}

    def _curate(self, source: str, prompt: str, calls: list[LLMCall], info: dict) -> None:
        msgs = [{"role": "user", "content": prompt}]
        params = self._pp(self._with_extra(
            {"temperature": self.config["temperature"], "max_tokens": max(int(self.config["curator_max_tokens"]), 512)}
        ))
        res = self._chat(msgs, role="curator", calls=calls, params=params)
        info["ops"].append(self.apply_curator_text(self.parse_view(res), source))

    def _curator_text(self, case: dict) -> str:
        """What the rule curator sees of a case: its raw question (``curator_input="question"``, the authors') or
        the full task prompt with options and answer format (``"task_prompt"``)."""
        if self.config["curator_input"] == "question" and case.get("question"):
            return case["question"]
        return case["input"]

    def _pair_prompt(self, success: dict, failed: dict) -> str:
        lim = self.config["retrieved_output_chars"]
        return fill(
            load_prompt("expel_pair_curator"),
            RULES=self.memory_text(),
            SUCCESS_QUESTION=self._curator_text(success),
            SUCCESS_TRAJECTORY=truncate(success["trajectory"], lim),
            FAIL_QUESTION=self._curator_text(success),
            FAIL_TRAJECTORY=truncate(failed["trajectory"], lim),
            OPS_FORMAT=self._ops_format(),
        )

    def _batch_prompt(self, cases: list[dict]) -> str:
        lim = self.config["retrieved_output_chars"]
        items = "\n\n".join(
            f"[Success {i}]\nProblem: {self._curator_text(c)}\nReasoning: {truncate(c['trajectory'], lim)}"
            for i, c in enumerate(cases, start=1)
        )
        return fill(
            load_prompt("expel_batch_curator"),
            RULES=self.memory_text(),
            SUCCESSES=items,
            OPS_FORMAT=self._ops_format(),
        )

    def _ops_format(self) -> str:
        return load_prompt("expel_ops_format_paper" if self.config["ops_format"] == "paper" else "expel_ops_format")

    # ---- state -------------------------------------------------------------------------------
    def restore_as_logged(self) -> None:
        """The authors' checkpoint restore reads each logged memory line back as a rule: stripped, its leading "N."
        dropped, normalised as the paper parser does (a period appended, a placeholder dropped), count 2. So the
        "(empty)" logged for no rule becomes the rule "(empty)." ("1. (empty)." in the test prompts)."""
        lines = self.memory_text().splitlines()
        texts = [normalize_rule_paper(re.sub(r"^\d+\.\s*", "", line.strip())) for line in lines]
        self.rules = [[text, 2] for text in texts if text]

    def get_state(self) -> dict:
        return {
            "rules": [[r[0], int(r[1])] for r in self.rules],
            "recent_success": copy.deepcopy(self.recent_success),
            "pool": self.pool.state(),
            "docs": self.docs.state(),
        }

    def set_state(self, state: dict) -> None:
        self.rules = [[r[0], int(r[1])] for r in state["rules"]]
        self.recent_success = copy.deepcopy(state["recent_success"])
        self.pool.set_state(state["pool"])
        self.docs.set_state(state.get("docs", {"records": []}))

    def rollback(self, snap: dict) -> None:
        """Restore the rules (with counts) and the recent_success buffer; keep the success pool."""
        self._check_snapshot(snap)
        self.rules = [[r[0], int(r[1])] for r in snap["state"]["rules"]]
        self.recent_success = copy.deepcopy(snap["state"]["recent_success"])
        self.stats["rollbacks"] = self.stats.get("rollbacks", 0) + 1
