"""Dynamic Cheatsheet updaters: DC-RS (retrieval & synthesis) and DC-Cu (cumulative).

Source: Suzgun et al., "Dynamic Cheatsheet" (2025), as run by the Janus paper (docs/research-notes.md §1.2, §5.1, §3.2).

DC-RS step (the candidate is synthesised BEFORE the task is answered, as in the paper's code):
  1. retrieve the top-k (default 3) past (input, model output) pairs by cosine similarity of question embeddings;
  2. the curator writes the candidate cheatsheet from the previous sheet, those pairs and the new task input
     (sampling: the base temperature, ``curator_max_tokens``, presence_penalty 1.0);
  3. the generator answers the task with the candidate sheet (the same messages Janus replays);
  4. (input, output, feedback) is appended to the retrieval bank — unconditionally by default (paper behaviour).
DC-Cu step: the generator answers with the current sheet, then the curator rewrites the sheet from the task and answer.

Presets (``docs/fidelity.md`` has the rule-by-rule table):
  * paper (the defaults): the authors' code. Prompts with their structure in our words (uncapped sheet of
    ``<memory_item><strategy><when_to_use>`` items; generator asking for ``FINAL ANSWER: <answer>..</answer>`` with
    the "EXECUTE CODE!" protocol, its example of a choice, for a task with options, the letter in parentheses,
    "(A)", which the authors' GPQA checker does not credit by its first-character rule: ``letter_format="bare"``
    asks for "an option letter"),
    one user message each; the curator sees the full task prompt; the candidate is
    the FIRST complete ``<cheatsheet>`` block (both tags present, case-sensitive) and an unparsable reply keeps the
    previous sheet; presence_penalty 1.0 on every call; in the stream, a reply that ends a python block with
    "EXECUTE CODE!" gets the block run in our sandbox (15 s) and one follow-up generation. The block runs only in
    the strong sandbox (bubblewrap), or in the weak one when the run allows it (``allow_weak_sandbox``, the CLI's
    ``--allow-weak-sandbox``); otherwise the step is skipped (said once, ``info["exec"]`` records "not run" and why)
    and the reply is scored as it stands.
  * ``SMALL_MODEL_CONFIG`` (``janus demo``): our capped prompts (8 one-line entries), system+user messages, strict
    LAST-block extraction with explicit rejection reasons, no presence penalty, no code execution.
  Options: ``extraction`` "first" | "last"; ``fallback`` "previous" | "dc_original" (the original Dynamic
  Cheatsheet: an unparsable curator reply deploys the retrieved-pairs block, how the destructive updates in
  the shipped dc-trajectories arose); ``parse_reasoning`` (parsers also see the model's thinking text, as the
  authors' vLLM path returns it; thinking first); ``curator_input`` "task_prompt" | "question"; ``faithful=True``
  reproduces DC's own extractor (split on the first opening tag, partial text deployed) and wins over
  ``extraction``.

Strict extraction (``extraction="last"``, C24):
  * the candidate is the content of the LAST complete ``<cheatsheet> ... </cheatsheet>`` block (a draft block
    followed by a final block yields the final one);
  * that block opens at the first ``<cheatsheet>`` tag standing alone on its line between the previous closing tag
    (or the start) and the block's closing tag; if no tag there stands alone, at the last one;
  * no closing tag but an opening tag, or a truncated reply (finish_reason "length") whose last opening tag is
    never closed -> rejected ``"unterminated block"``; no tags -> ``"missing block"``; blank content -> ``"empty"``.
  A rejected candidate leaves the sheet unchanged and is counted in ``stats["candidates_rejected"]``.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from janus_memory.errors import JanusError
from janus_memory.tasks.extract_code import fenced_blocks
from janus_memory.tasks.sandbox import SandboxLimits, code_sandbox, notice_once, run_python
from janus_memory.updaters.base import (
    EMPTY_MEMORY,
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
from janus_memory.updaters.dc_extract import (  # noqa: F401  (re-exported)
    extract_cheatsheet,
    extract_cheatsheet_first,
    extract_cheatsheet_original,
)
from janus_memory.values import ChatResult, Score, Task

EXEC_SENTINEL = "EXECUTE CODE!"

# the small-model preset used by `janus demo` (our capped prompts and strict parsing); the defaults are the paper's
SMALL_MODEL_CONFIG = {"prompts": "small", "extraction": "last", "presence_penalty": None, "execute_code": False}

_REFUSED = "model-written code is not run: "


def skipped_notice(why: str) -> str:
    """The one line a run says when the "EXECUTE CODE!" step is skipped (``why``: the sandbox's refusal)."""
    return f'the "EXECUTE CODE!" step is skipped, the model\'s code is not run: {why.removeprefix(_REFUSED)}'


class _DCBase(Updater):
    # generated code may run in the weak sandbox (no bubblewrap): the run's allow_weak_sandbox setting
    allow_weak_sandbox: bool = False
    DEFAULTS = {
        "curator_presence_penalty": 1.0,
        "prompts": "paper",  # "paper" | "small"
        "extraction": "first",  # "first" (authors) | "last" (strict, ours)
        "fallback": "previous",  # "previous" | "dc_original" (DC-RS: deploy the retrieved-pairs block)
        "parse_reasoning": True,  # parsers and the stored outputs see the thinking text (the authors')
        "execute_code": True,  # DC-RS stream: run "EXECUTE CODE!" blocks in the sandbox, one follow-up
        "exec_timeout_s": 15.0,
        # the paper generator's example of a multiple-choice answer (a task with options): "parenthesized" = the
        # letter in parentheses, "(A)" (the authors'), "bare" = "an option letter" (ours; docs/fidelity.md)
        "letter_format": "parenthesized",
    }
    _CHOICES = {"prompts": ("paper", "small"), "extraction": ("first", "last"), "fallback": ("previous", "dc_original"),
                "letter_format": ("parenthesized", "bare")}
    _LETTER_EXAMPLES = {"parenthesized": "an option letter in parentheses such as (A)", "bare": "an option letter"}

    def __init__(self, **kw):
        super().__init__(**kw)
        for key, allowed in self._CHOICES.items():
            if self.config[key] not in allowed:
                raise ValueError(f"config {key!r} must be one of {allowed}, got {self.config[key]!r}")
        self.cheatsheet: str = EMPTY_MEMORY

    supports_injection = True  # the default hook: the harmful sheet goes in as the cheatsheet text

    # ---- seam --------------------------------------------------------------------------------
    def memory_text(self) -> str:
        return self.cheatsheet if self.cheatsheet.strip() else EMPTY_MEMORY

    def load_memory_text(self, text: str) -> None:
        """Make ``text`` the cheatsheet (an injected harmful candidate)."""
        self.cheatsheet = text

    def solving_messages(self, memory_text: str, task: Task, examples: str = "") -> list[dict]:
        """Paper: one user message (sheet + task prompt; test-time examples are appended to the sheet as
        "## Retrieved Nearest Examples"). Small: system = instructions; user = sheet, examples, task prompt."""
        if self.config["prompts"] == "paper":
            sheet = f"{memory_text}\n\n## Retrieved Nearest Examples\n{examples}" if examples else memory_text
            # the example of a choice is the authors' for a task with options; other tasks keep the list's wording
            letters = self.config["letter_format"] if (task.meta or {}).get("options") else "bare"
            user = fill(load_prompt("dc_generator_paper"), CHEATSHEET=sheet, QUESTION=self.family.prompt(task),
                        LETTER_EXAMPLE=self._LETTER_EXAMPLES[letters])
            return [{"role": "user", "content": user}]
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

    def parse_view(self, result: ChatResult) -> str:
        """The text the parsers read. A reply cut off by max_tokens arrives with its partial text in ``reasoning``
        (C19): that partial text is read. With ``parse_reasoning`` the thinking text comes first, as in the
        authors' outputs."""
        text = result.text or ""
        if not text and result.truncated and result.reasoning and "<think>" not in result.reasoning:
            return result.reasoning
        if self.config["parse_reasoning"] and result.reasoning:
            return f"{result.reasoning}\n{text}"
        return text

    def stored_output(self, result: ChatResult) -> str:
        """The output DC-RS keeps for retrieval: with ``parse_reasoning`` the raw output as the authors store
        ``model_output`` (:func:`thinking_output`: the thinking in ``<think>`` tags, then the answer; a reply cut off
        inside its thinking keeps the unclosed ``<think>``); otherwise the visible answer text."""
        if self.config["parse_reasoning"]:
            return thinking_output(result)
        return visible_text(result)

    def _apply_curator_output(self, result: ChatResult, info: dict, fallback: str | None = None) -> str | None:
        """Update ``self.cheatsheet`` from the curator reply; return the rejection reason (None if deployed).

        ``fallback``: what ``fallback="dc_original"`` deploys for an unparsable reply (DC-RS: the pairs block)."""
        text = self.parse_view(result)
        if self.config["faithful"]:
            sheet, branch = extract_cheatsheet_original(text, self.cheatsheet)
            info["branch"] = branch
            self._count("faithful_branches", branch)
            self.cheatsheet = sheet
            return None
        if self.config["extraction"] == "first":
            cand = extract_cheatsheet_first(text)
            reason, branch = (None, "first complete block") if cand else ("missing block", "no complete block")
        else:
            cand, reason, branch = extract_cheatsheet(text, truncated=result.finish_reason == "length")  # type: ignore[assignment]
        info["branch"] = branch
        if reason is None:
            self.cheatsheet = cand
            return None
        info["rejected_curator_output"] = text
        if self.config["fallback"] == "dc_original" and fallback is not None:
            info["branch"] = branch + "; dc_original fallback: retrieved-pairs block deployed"
            self._count("fallback_deployed", reason)
            self.cheatsheet = fallback
            return None
        self._count("candidates_rejected", reason)
        return reason

    def _maybe_execute(self, msgs: list[dict], out: ChatResult, calls: list[LLMCall], info: dict) -> ChatResult:
        """The authors' "EXECUTE CODE!" follow-up: when the reply ends a python block with the sentinel, run the last
        python block in the sandbox (never in-process) and make one follow-up generation; the output is the
        reply up to the sentinel + the execution result + the follow-up."""
        text = self.parse_view(out)
        if not self.config["execute_code"] or EXEC_SENTINEL not in text:
            return out
        pre = text.split(EXEC_SENTINEL)[0].strip()
        blocks = [body for lang, body, closed in fenced_blocks(pre) if closed and lang in ("python", "py", "python3")]
        if not pre.endswith("```") or not blocks:
            info["exec"] = {"status": "not run", "why": "no python block right before the sentinel"}
            return out
        try:  # the strong sandbox, or the weak one only with the user's opt-in; proven by its self-test
            backend = code_sandbox("auto", allow_weak=self.allow_weak_sandbox)
        except JanusError as e:
            info["exec"] = {"status": "not run", "why": str(e)}
            notice_once(skipped_notice(str(e)))
            return out
        lim = SandboxLimits(wall_s=float(self.config["exec_timeout_s"]), cpu_s=int(self.config["exec_timeout_s"]))
        res = run_python(blocks[-1], limits=lim, backend=backend)
        shown = truncate((res.stdout or "") + (res.stderr or ""), 4000)
        current = f"{pre}\n{EXEC_SENTINEL}\n\nExecution result ({res.status}, exit code {res.returncode}):\n{shown}"
        follow = msgs + [
            {"role": "assistant", "content": current},
            {"role": "user", "content": load_prompt("dc_exec_followup")},
        ]
        fu = self._chat(follow, role="solver", calls=calls, params=self.solver_params())
        info["exec"] = {"status": res.status, "returncode": res.returncode, "sandbox": backend}
        return dataclasses.replace(fu, text=f"{current}\n\n{fu.text}".strip())


@register_updater("dc_rs")
class DCRetrievalSynthesis(_DCBase):
    prompt_prefixes = ("dc_rs_", "dc_generator", "dc_examples")
    """DC-RS (docs/research-notes.md §5.1). Extra config: ``bank_under_controller`` (default False: the bank of past
    (input, output) pairs is appended to unconditionally and a Janus rollback restores only the cheatsheet)."""

    DEFAULTS = {**_DCBase.DEFAULTS, "bank_under_controller": False, "curator_input": "task_prompt"}

    @classmethod
    def llm_calls_per_step(cls, config: dict) -> tuple[float, float]:
        """Curator + solver, and one follow-up generation when the reply asks to execute code."""
        return 2, 2 + (1 if config.get("execute_code") else 0)
    _CHOICES = {**_DCBase._CHOICES, "curator_input": ("task_prompt", "question")}

    def __init__(self, **kw):
        super().__init__(**kw)
        self.bank = RetrievalBank()

    def _pairs_block(self, hits: list[tuple[int, float]]) -> str:
        if self.config["prompts"] == "paper":
            return self._pairs_block_paper(hits)
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

    def retrieved_examples(self, outcome: StepOutcome) -> str:
        """The retrieved-pairs block the curator was shown at this step (what the original DC-RS deploys when its
        curator reply cannot be parsed: an injected ``dump``)."""
        return self._pairs_block(self.bank.hits_of(outcome.info.get("retrieved") or []))

    def _pairs_block_paper(self, hits: list[tuple[int, float]]) -> str:
        """The authors' layout: "(empty)" without hits; least similar first, numbered from 1."""
        if not hits:
            return EMPTY_MEMORY
        lim = self.config["retrieved_output_chars"]
        items = []
        for num, (idx, sim) in enumerate(reversed(hits), start=1):
            rec = self.bank.records[idx]
            items.append(
                f"#### Previous Input #{num} (Similarity: {sim:.2f}):\n{rec['question']}\n\n"
                f"#### Model Solution to Previous Input #{num}:\n{truncate(rec['output'], lim)}\n---\n---\n"
            )
        return fill(load_prompt("dc_rs_pairs_block_paper"), ITEMS="\n".join(items))

    def _examples_block(self, hits: list[tuple[int, float]]) -> str:
        if self.config["prompts"] == "paper":
            return self._pairs_block_paper(hits) if hits else ""
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
        pairs = self._pairs_block(hits)
        next_input = task_prompt if self.config["curator_input"] == "task_prompt" else task.question
        cur = self._chat(self._curator_messages(old, pairs, next_input), role="curator", calls=calls,
                         params=self.curator_params())
        rejected = self._apply_curator_output(cur, info, fallback=pairs)
        new = self.memory_text()
        gen_msgs = self.solving_messages(new, task)
        out = self._chat(gen_msgs, role="solver", calls=calls, params=self.solver_params())
        out = self._maybe_execute(gen_msgs, out, calls, info)
        score = self.score(task, out)
        self.bank.add(
            {
                "id": task.id,
                "question": task.question,
                "input": task_prompt,
                "output": self.stored_output(out),
                "feedback": "success" if score.correct else "failure",
            },
            q_emb,
        )
        self.stats["steps"] += 1
        return StepOutcome(out, score, old, new, rejected, calls, info)

    def _curator_messages(self, old: str, pairs: str, next_input: str) -> list[dict]:
        if self.config["prompts"] == "paper":
            text = fill(load_prompt("dc_rs_curator_paper"), PREVIOUS_CHEATSHEET=old, RETRIEVED_PAIRS=pairs,
                        NEXT_INPUT=next_input)
            return [{"role": "user", "content": text}]
        user = fill(load_prompt("dc_rs_curator_user"), PREVIOUS_CHEATSHEET=old, RETRIEVED_PAIRS=pairs,
                    NEXT_INPUT=next_input)
        return [{"role": "system", "content": load_prompt("dc_rs_curator_system")}, {"role": "user", "content": user}]

    def solve_frozen(self, tasks: Sequence[Task], *, role: str = "test") -> list[tuple[ChatResult, Score]]:
        """Frozen cheatsheet + the top-k retrieved (input, output) pairs of the stream bank (docs/research-notes.md §5.1)."""
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

    def state_hints(self) -> dict:
        return {("bank",) + p: h for p, h in self.bank.state_hints().items()}

    def restore_as_logged(self) -> None:
        """The authors' checkpoint restore rebuilds the retrieval pool from the successful records only (their log
        keeps the deployed cheatsheet; failures are not put back)."""
        keep = [i for i, r in enumerate(self.bank.records) if r.get("feedback") == "success"]
        if len(keep) == len(self.bank):
            return
        emb = self.bank.matrix()
        bank = RetrievalBank()
        for i in keep:
            bank.add(self.bank.records[i], emb[i])  # type: ignore[index]  # (records: a matrix)
        self.bank = bank

    def get_state(self) -> dict:
        return {"cheatsheet": self.cheatsheet, "bank": self.bank.state()}

    def set_state(self, state: dict) -> None:
        self.cheatsheet = state["cheatsheet"]
        self.bank.set_state(state["bank"])

    def rollback(self, snap: dict) -> None:
        """Restore the cheatsheet; the bank too only with ``bank_under_controller`` (docs/research-notes.md §3.2)."""
        self._check_snapshot(snap)
        self.cheatsheet = snap["state"]["cheatsheet"]
        if self.config["bank_under_controller"]:
            self.bank.set_state(snap["state"]["bank"])
        self.stats["rollbacks"] = self.stats.get("rollbacks", 0) + 1


@register_updater("dc_cu")
class DCCumulative(_DCBase):
    prompt_prefixes = ("dc_cu_", "dc_generator")

    @classmethod
    def llm_calls_per_step(cls, config: dict) -> tuple[float, float]:
        return 2, 2  # solver + curator
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
