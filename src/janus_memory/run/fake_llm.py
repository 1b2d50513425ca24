"""A deterministic scripted chat backend for `janus run --backend fake`: exercises the whole pipeline on real tasks
without a model (plumbing checks, CI). It is NOT a model and its accuracies mean nothing.

Every reply is a pure function of the request messages:
- it finds the task whose question text ends last in the last user message (the current problem; retrieved examples
  come before it), and answers it correctly unless
  ``sha256(all message text) % 4 == 0`` (then it answers wrongly), so the memory text in the prompt changes correctness and
  Janus sees real flips;
- a prompt holding a planted instruction (one of the ``poison`` templates of janus_memory/inject/templates.yaml, which
  ``--inject poison@STEP`` writes into the memory) is always answered wrongly, as a model that follows the planted
  instruction would answer; no other memory content is understood (runs without injections are unaffected);
- every reply also carries a short ``<cheatsheet>`` block and one rule operation, so curator calls of DC and ExpeL parse.
"""
from __future__ import annotations

import hashlib
import json
import re

from ..values import ChatResult, Task, Usage


def _answer_text(task: Task, right: bool) -> str:
    """The task family's own scripted answer format (TaskFamily.fake_answer; a plugin family declares its own)."""
    from ..tasks import get_family

    try:
        family = get_family(task.dataset)
    except ValueError:
        from ..tasks.base import TaskFamily

        return TaskFamily.fake_answer(None, task, right)  # type: ignore[arg-type]
    return family.fake_answer(task, right)


_PAPER_MC_PHRASE = "letter of your final choice alone"  # tasks/prompts/multiple_choice_paper.txt
_ACE_SECTIONS = ("STRATEGIES & INSIGHTS", "FORMULAS & CALCULATIONS", "COMMON MISTAKES TO AVOID",
                 "PROBLEM-SOLVING HEURISTICS", "OTHERS", "no such section")


def _method_extras(text: str, last_user: str, h: int, tip: str) -> str:
    """Lines that only ACE and ReasoningBank prompts ask for (detected by phrases of their prompt files), so the
    replies to every other updater stay byte-identical: cited bullet ids, reflector tags, curator JSON operations,
    a self-judgment, memory items."""
    ids = list(dict.fromkeys(re.findall(r"\[([a-z]+-\d{5})\]", last_user)))
    out = ""
    if "Entries used:" in text:  # ACE generator
        out += "Entries used: " + (f"[{ids[h % len(ids)]}]" if ids else "none") + "\n"
    if '"bullet_tags"' in text:  # ACE reflector
        tags = [{"id": i, "tag": ("helpful", "harmful", "neutral")[(h + n) % 3]} for n, i in enumerate(ids)]
        out += json.dumps({"reasoning": "scripted", "key_insight": tip, "bullet_tags": tags}) + "\n"
    if '"operations"' in text:  # ACE curator
        ops = [{"type": "ADD", "section": _ACE_SECTIONS[h % len(_ACE_SECTIONS)], "content": tip}]
        out += json.dumps({"reasoning": "scripted", "operations": ops}) + "\n"
    if "Status: success or failure" in text:  # ReasoningBank judge
        out += f"Thoughts: scripted.\nStatus: {'failure' if h % 3 == 0 else 'success'}\n"
    if "# Memory Item <n>" in text:  # ReasoningBank extraction
        out += f"# Memory Item 1\n## Title Tip {h % 97}\n## Description A scripted lesson.\n## Content {tip}\n\n"
    return out


def _planted() -> list[str]:
    from ..inject.candidates import templates

    return templates()["poison"]


def scripted_backend(tasks: list[Task]):
    """Build the scripted backend for ``tasks`` (stream + test). Returns an object implementing llm.base.ChatBackend."""
    return _ScriptedBackend(tasks)


class _ScriptedBackend:
    model = "scripted-fake"

    def __init__(self, tasks: list[Task]):
        self._tasks = sorted(tasks, key=lambda t: -len(t.question))
        self.identity = "fake:scripted-v2:" + hashlib.sha256("\n".join(t.id for t in tasks).encode()).hexdigest()[:12]
        self.calls = 0

    def reply(self, messages) -> str:
        text = "\n".join(m["content"] for m in messages)
        last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), text)
        h = int(hashlib.sha256(text.encode()).hexdigest(), 16)
        # the current problem comes last in every prompt (retrieved examples come before it)
        hits = [(last_user.rfind(t.question) + len(t.question), len(t.question), t) for t in self._tasks
                if t.question and t.question in last_user]
        task = max(hits, key=lambda h: (h[0], h[1]))[2] if hits else None
        answer = self.answer(task, text, h) if task else "No task recognised."
        if task and _PAPER_MC_PHRASE in last_user:  # the paper checker's multiple-choice prompt: the letter in a tag
            answer = re.sub(r"^The answer is \(([A-J])\)\.$", r"<answer>\1</answer>", answer)
        tip = f"Tip {h % 97}: restate the question, list the known quantities, check the final arithmetic."
        return _method_extras(text, last_user, h, tip) + (
            f"<cheatsheet>\nVersion: {h % 13}\n## General Problem-Solving Heuristics\n- {tip}\n</cheatsheet>\n"
            f"ADD 1: {tip}\n"
            f"<reflection>Check each step.</reflection>\n{answer}"
        )

    def answer(self, task: Task, text: str, h: int) -> str:
        """The answer to ``task`` given the whole prompt ``text`` (its hash ``h``): right unless ``h % 4 == 0`` or a
        planted instruction is in the prompt."""
        return _answer_text(task, right=h % 4 != 0 and not any(p in text for p in _planted()))

    async def acomplete(self, req) -> ChatResult:
        self.calls += 1
        out = self.reply(list(req.messages))
        prompt_tokens = sum(len(m["content"]) for m in req.messages) // 4 + 1
        return ChatResult(text=out, finish_reason="stop", usage=Usage(prompt_tokens, len(out) // 4 + 1), model=self.model)

    async def aclose(self) -> None:
        return None


# ------------------------------------------------------------------------------------------------ rules follower
RULES_MODEL = "rules"  # --backend fake --model rules[:NOISE]


def parse_model(name: str | None) -> float | None:
    """The noise of a ``--model`` name the scripted backend takes: None for the default scripted replies (no name),
    the flip rate for ``rules`` (0.0) or ``rules:0.1``; ConfigError (one line) for any other name."""
    from ..errors import ConfigError

    if name is None:
        return None
    head, _, rate = name.partition(":")
    if head == RULES_MODEL:
        try:
            noise = float(rate) if rate else 0.0
        except ValueError:
            noise = -1.0
        if 0.0 <= noise <= 1.0:
            return noise
        raise ConfigError(f"--model {name}: the noise after 'rules:' must be a number in [0, 1], e.g. rules:0.1")
    raise ConfigError(f"--backend fake takes no --model but '{RULES_MODEL}' or '{RULES_MODEL}:NOISE' (a scripted model "
                      f"that follows the rules its memory states); got {name!r}")


class _RulesFollower(_ScriptedBackend):
    """A scripted model for the generated rules tasks that follows its memory (``--backend fake --model rules``).

    For a rules task it reads, for each rule the task needs (``meta["rules"]``), the statements of that rule in the
    generator's own words anywhere in the prompt (the memory it is shown, the ticket itself: tasks.rules.
    statement_values) and uses the value stated last before the question. It answers right exactly when every
    needed rule is stated with its true value; a rule stated with another value (a falsified memory) gives the answer
    under that value (tasks.rules.answer_under), a rule not stated at all a wrong answer (the gold plus one). With
    ``rules:NOISE`` each answer is flipped (right to wrong, wrong to the gold) when the prompt's hash falls in the
    first NOISE of its range: a flip frozen per prompt, so the same memory on the same task answers the same. A task
    of another family is answered as the default scripted backend answers it. Curator and other replies are the
    default's."""

    def __init__(self, tasks: list[Task], noise: float):
        super().__init__(tasks)
        self.noise = noise
        self.model = f"scripted-rules:{noise:g}"
        self.identity = f"fake:rules-follower-v1:noise={noise:g}:" + self.identity.rsplit(":", 1)[1]

    def answer(self, task: Task, text: str, h: int) -> str:
        from ..tasks.rules import KINDS, answer_under, statement_values

        meta = task.meta or {}
        needs, world = meta.get("rules"), meta.get("world")
        if not isinstance(needs, list) or not isinstance(world, dict) or not all(k in KINDS for k in needs):
            return super().answer(task, text, h)
        values = {k: dict(v) for k, v in world.items()}
        known = True
        for key in needs:
            stated = statement_values(text, key)
            if not stated:
                known = False
                break
            values[key] = {**values.get(key, {}), **stated[-1]}
        value = answer_under(task, values) if known else int(task.gold) + 1
        right = value == int(task.gold)
        if self.noise and (h % 1_000_000) < self.noise * 1_000_000:
            right = not right
            value = int(task.gold) if right else int(task.gold) + 1
        return f"Using the rules in my memory.\nAnswer: {value}"


def rules_follower(tasks: list[Task], noise: float = 0.0) -> _RulesFollower:
    """The scripted model that follows the rules its memory states (:class:`_RulesFollower`)."""
    return _RulesFollower(tasks, noise)
