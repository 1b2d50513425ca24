"""Injected harmful memory candidates: make Janus's job - keeping a harmful candidate out - measurable.

``--inject KIND@STEP[,KIND@STEP...]`` replaces the updater's candidate M̂_t at those steps with a harmful one built
from the run's own memory and task, deterministically from (seed, step, kind):

* ``wipe``     a rewrite that keeps at most one item of the memory (one seeded cheatsheet entry / rule);
* ``dump``     the retrieved-examples block in place of the memory, as the original DC-RS deploys it when its curator
               reply cannot be parsed (DC-RS: its curator's pairs block; ExpeL: one rule per retrieved success case;
               DC-Cu, which retrieves nothing: the problem and answer its curator was shown);
* ``overfit``  the memory replaced by "rules" copied from the current task's specifics (its wording, numbers, answer);
* ``poison``   a plausible-looking instruction that makes answers wrong (templates in ``inject/templates.yaml``),
               written in front of the memory;
* ``truncate`` the memory cut mid-way (at a seeded point between 35% and 65% of its length, mid-word);
* ``falsify``  one number the memory states (a rate, a limit, a price) given another value, preferring the numbers
               of the rules the current task needs; without such a number, the task's rule with a wrong number
               planted on top; a memory and task with neither: unchanged (inject/falsify.py).

Items of a cheatsheet: its blank-line separated paragraphs, each split further before every bullet (``-``, ``*``,
``+``), numbered (``1.``/``1)``) or heading (``#``) line; headings are kept only with the entry chosen by ``wipe``.
An ExpeL memory is its rule list: injected rules keep the count of the rule they come from; new rules get count 2
(an ADD), a poison rule the highest count plus one, so it is listed first. ACE's playbook and ReasoningBank's bank
hold ids, counters and embeddings besides text: their candidates are built as states (``inject/state.py``).

The updater hook: :func:`inject_candidate` is called by the stream loop right after ``updater.step(task)`` and
before Janus decides. It hands the updater's ``inject_harm`` hook a :class:`HarmfulCandidate` (the
``updaters.records.Harm`` protocol), which builds the harmful form of whichever structure the updater keeps (a sheet
text, a rule list with counts, a playbook, a bank of entries, experience records: the last three in
``inject/state.py``); the updater writes it into its own state (DC: the cheatsheet; ExpeL: the rules with counts,
the success pool and ``recent_success`` left as the step made them; ACE: playbook and id counter; ReasoningBank and
ExpRAG: the bank with its embeddings), so ``memory_text()``, ``snapshot()`` and a later ``rollback(before)`` all see
the injected candidate exactly as they would see a genuine one. Which updaters take one is their class fact
``supports_injection``; a new updater with a text memory needs only that and ``load_memory_text`` (the base class's
hook). Note for DC-RS: the step's own stream answer was generated with the genuine candidate (the curator runs
before the solver); the injection affects every later step and the frozen test.
"""
from __future__ import annotations

import dataclasses
import hashlib
import re

from janus_memory.inject.falsify import fact_numbers, false_fact, falsify_text, numbers, task_facts
from janus_memory.inject.pieces import (
    _cut_mid_word,
    _is_heading,
    _one_line,
    _rng,
    overfit_rules,
    split_items,
    templates,
)
from janus_memory.inject.plan import KINDS, Injection, InjectSpecError, check_plan, format_plan, parse_inject
from janus_memory.inject.state import harmful_bank, harmful_experience, harmful_playbook
from janus_memory.registry import UPDATERS
from janus_memory.updaters.base import EMPTY_MEMORY, StepOutcome, Updater
from janus_memory.values import Task

# the plan API (plan.py) and the pieces' split_items / templates are importable from here too
__all__ = ["KINDS", "HarmfulCandidate", "InjectSpecError", "Injection", "check_plan", "falsified_cheatsheet",
           "format_plan", "harmful_candidate", "inject_candidate", "injectable_updaters", "parse_inject",
           "poisoned_cheatsheet", "split_items", "summarise_injections", "supports", "templates"]



# ------------------------------------------------------------------------------------------------ the candidates
def _harmful_items(kind: str, items: list[tuple[str, int]], task: Task, *, structure: str, seed: int, step: int,
                  examples: str = "", answer: str = "") -> list[tuple[str, int]]:
    """The harmful memory as ``(text, count)`` items, from the current items (counts are ExpeL's; 0 for sheets).

    ``structure`` is "cheatsheet" or "rules". ``examples`` is the retrieved-examples block the updater showed
    (dump); ``answer`` the model's visible answer at this step (DC-Cu dump)."""
    if kind not in KINDS:
        raise ValueError(f"unknown injection kind {kind!r}; kinds: {', '.join(KINDS)}")
    rng = _rng(seed, step, kind)
    t = templates()
    new_count = 2 if structure == "rules" else 0
    if kind == "wipe":
        content = [i for i, (txt, _) in enumerate(items) if not _is_heading(txt)]
        if not content:
            return []
        k = content[rng.randrange(len(content))]
        if structure == "cheatsheet" and k > 0 and _is_heading(items[k - 1][0]):
            return [items[k - 1], items[k]]  # the entry keeps the heading right above it
        return [items[k]]
    if kind == "dump":
        if structure == "rules":
            parts = [p for p in re.split(r"(?=^### Example \d+)", examples, flags=re.M) if p.strip() and p.strip() != "(none)"]
            if not parts:
                parts = [f"Example: Problem: {task.question} Answer: {answer}"]
            return [(_one_line(p), new_count) for p in parts]
        block = examples.strip() or t["dump_cu"].format(question=task.question.strip(), answer=answer.strip() or "(none)")
        return [(block, 0)]
    if kind == "overfit":
        rules = [(r, new_count) for r in overfit_rules(task, rng)]
        if structure == "rules":
            return rules
        return [(t["dc_overfit_header"], 0)] + [(f"- {r}", 0) for r, _ in rules]
    if structure != "rules":  # cheatsheet poison and truncate work on the text itself (harmful_candidate)
        raise ValueError(f"{kind!r} on a cheatsheet is built by harmful_candidate")
    if kind == "poison":
        top = max((c for _, c in items), default=1) + 1
        return [(rng.choice(t["poison"]), top)] + list(items)
    if kind == "falsify":
        return _falsified_items(items, task, rng)
    if not items:  # truncate
        return []
    cut = max(1, round(len(items) * rng.uniform(0.35, 0.65)))
    kept = list(items[:cut])
    last_text, last_count = kept[-1]
    kept[-1] = (_cut_mid_word(last_text, rng), last_count)
    return kept


class HarmfulCandidate:
    """The harmful candidate of ``kind`` at ``step`` of a run seeded ``seed`` (the :class:`~janus_memory.updaters.
    records.Harm` an updater's ``inject_harm`` hook asks for its memory's harmful form); ValueError for an unknown
    kind."""

    def __init__(self, kind: str, task: Task, *, step: int, seed: int):
        if kind not in KINDS:
            raise ValueError(f"unknown injection kind {kind!r}; kinds: {', '.join(KINDS)}")
        self.kind, self.task, self.step, self.seed = kind, task, step, seed

    def sheet(self, memory: str, *, examples: str = "", answer: str = "") -> str:
        kind, rng = self.kind, _rng(self.seed, self.step, self.kind)
        if kind == "falsify":
            return falsified_cheatsheet(memory, self.task, rng)
        if kind == "poison":
            return poisoned_cheatsheet(memory, rng.choice(templates()["poison"]))
        items = _items_of(memory, "cheatsheet")
        if kind == "truncate":
            return _cut_mid_word(memory.strip(), rng) if items else EMPTY_MEMORY
        out = _harmful_items(kind, items, self.task, structure="cheatsheet", seed=self.seed, step=self.step,
                             examples=examples, answer=answer)
        return _render(out, "cheatsheet")

    def rules(self, rules: list[tuple[str, int]], *, examples: str = "", answer: str = "") -> list[tuple[str, int]]:
        return _harmful_items(self.kind, rules, self.task, structure="rules", seed=self.seed, step=self.step,
                              examples=examples, answer=answer)

    def playbook(self, sections: list[list], *, next_id: int, faithful: bool, answer: str = "",
                 reflection: str = "") -> tuple[list[list], int]:
        return harmful_playbook(self.kind, sections, self.task, next_id=next_id, faithful=faithful, seed=self.seed,
                                step=self.step, answer=answer, reflection=reflection)

    def bank(self, entries: list[dict], *, answer: str = "", status: str | None = None) -> list[dict]:
        return harmful_bank(self.kind, entries, self.task, seed=self.seed, step=self.step, answer=answer,
                            status=status)

    def experience(self, records: list[dict], *, new_record: dict | None = None) -> list[dict]:
        return harmful_experience(self.kind, records, self.task, seed=self.seed, step=self.step,
                                  new_record=new_record)


def harmful_candidate(kind: str, memory: str, task: Task, *, updater_kind: str, seed: int, step: int,
                      examples: str = "", answer: str = "") -> str:
    """The harmful candidate memory text (what ``memory_text()`` shows after :func:`inject_candidate`) of the
    updater registered as ``updater_kind``, built from the memory text ``memory`` (M_{t-1}) alone: its class's
    ``harmful_text`` (ValueError for an updater whose candidate is built from its state: use inject_candidate).
    Deterministic in (kind, memory, task, updater_kind, seed, step, examples, answer)."""
    cls = _injectable(updater_kind)
    return cls.harmful_text(HarmfulCandidate(kind, task, step=step, seed=seed), memory, examples=examples,
                            answer=answer)


def poisoned_cheatsheet(memory: str, instruction: str) -> str:
    """A cheatsheet (DC-RS, DC-Cu) with ``instruction`` planted on top under the poison header, as ``poison`` writes
    it (benchmarks/probes/poison_follow.py plants each template this way)."""
    entry = f"{templates()['dc_poison_header']}\n- {instruction}"
    return entry + (f"\n\n{memory.strip()}" if _items_of(memory, "cheatsheet") else "")


def falsified_cheatsheet(memory: str, task: Task, rng) -> str:
    """The ``falsify`` candidate of a cheatsheet (inject/falsify.py): one of its numbers changed, else the task's rule
    with a wrong number as a new entry on top, else the sheet unchanged."""
    if split_items(memory):
        text, changed = falsify_text(memory, task_facts(task), rng)
        if changed:
            return text
    fact = false_fact(task_facts(task), rng)
    if fact is None:
        return memory
    return f"- {fact}" + (f"\n\n{memory.strip()}" if split_items(memory) else "")


def _falsified_items(items: list[tuple[str, int]], task: Task, rng) -> list[tuple[str, int]]:
    """``falsify`` on a rule list (ExpeL): one rule's number changed, else the task's false rule on top (listed first,
    as poison's), else the list unchanged."""
    facts = task_facts(task)
    with_numbers = [i for i, (txt, _) in enumerate(items) if numbers(txt)]
    if with_numbers:
        wanted = fact_numbers(facts)
        preferred = [i for i in with_numbers if any(v in wanted for _, _, v in numbers(items[i][0]))]
        k = rng.choice(preferred or with_numbers)
        text, _ = falsify_text(items[k][0], facts, rng)
        return items[:k] + [(text, items[k][1])] + items[k + 1:]
    fact = false_fact(facts, rng)
    if fact is None:
        return list(items)
    return [(fact, max((c for _, c in items), default=1) + 1)] + list(items)


def can_inject(cls: type) -> bool:
    """Whether an updater class takes an injected candidate: it says ``supports_injection`` and can hold one (its own
    ``inject_harm``, or a ``load_memory_text`` for the base class's text-memory hook)."""
    return bool(getattr(cls, "supports_injection", False)) and (
        getattr(cls, "inject_harm", None) is not Updater.inject_harm
        or getattr(cls, "load_memory_text", None) is not Updater.load_memory_text)


def injectable_updaters() -> list[str]:
    """The registered updaters that take an injected candidate (:func:`can_inject`)."""
    return UPDATERS.names(can_inject)


def supports(updater_name: str) -> bool:
    """Whether :func:`inject_candidate` can write a harmful candidate into this updater's state."""
    return updater_name in injectable_updaters()


def _injectable(updater_name: str) -> type[Updater]:
    if not supports(updater_name):
        raise ValueError(f"updater {updater_name!r} does not support injection; "
                         f"supported: {', '.join(injectable_updaters())}")
    return UPDATERS[updater_name]


def _items_of(memory: str, structure: str) -> list[tuple[str, int]]:
    if structure == "cheatsheet":
        return [(i, 0) for i in split_items(memory)]
    if memory.strip() == EMPTY_MEMORY:
        return []
    return [(re.sub(r"^\d+\.\s?", "", line), 2) for line in memory.splitlines() if line.strip()]


def _render(items: list[tuple[str, int]], structure: str) -> str:
    if not items:
        return EMPTY_MEMORY
    if structure == "rules":
        return "\n".join(f"{i}. {txt}" for i, (txt, _) in enumerate(items, start=1))
    return "\n".join(txt for txt, _ in items)


# ------------------------------------------------------------------------------------------------ the hook
def inject_candidate(updater: Updater, outcome: StepOutcome, kind: str, *, task: Task, step: int, seed: int,
                     before: dict) -> StepOutcome:
    """Replace the candidate the updater just proposed with a harmful one of ``kind`` (see the module docstring),
    through the updater's own hook ``inject_harm``.

    ``before`` is the updater snapshot taken before the step (ExpeL rule counts come from it; the loop's rollback
    uses the same snapshot). Returns the outcome with ``candidate_memory`` replaced, ``candidate_rejected`` None and
    ``info["injected"]`` = {kind, step, seed, genuine_candidate_sha256, genuine_candidate_rejected, noop}."""
    _injectable(updater.name)
    updater.inject_harm(HarmfulCandidate(kind, task, step=step, seed=seed), outcome, before)
    cand = updater.memory_text()
    info = dict(outcome.info)
    info["injected"] = {
        "kind": kind,
        "step": step,
        "seed": seed,
        "genuine_candidate_sha256": hashlib.sha256(outcome.candidate_memory.encode("utf-8")).hexdigest(),
        "genuine_candidate_rejected": outcome.candidate_rejected,
        "noop": cand == outcome.old_memory,
    }
    return dataclasses.replace(outcome, candidate_memory=cand, candidate_rejected=None, info=info)


# ------------------------------------------------------------------------------------------------ counting
def summarise_injections(log_lines: list[dict]) -> dict:
    """Per-method counts from decision-log lines (the runner marks an injected step with ``"injected": KIND``):
    ``{"injected", "deployed", "blocked", "blocked_triggered", "by_kind": {kind: {"injected", "deployed",
    "blocked"}}, "blocked_steps": [{"step", "kind", "triggered", "old_score", "new_score"}]}``. A step counts as
    deployed when the log says ``"deployed": "candidate"`` (or ``"reoffer"``: blocked at its step, its lines deployed
    later by a re-offer, run/injection.py); blocked otherwise."""
    out: dict = {"injected": 0, "deployed": 0, "blocked": 0, "blocked_triggered": 0, "by_kind": {},
                 "blocked_steps": []}
    for line in log_lines:
        kind = line.get("injected")
        if not kind:
            continue
        per = out["by_kind"].setdefault(kind, {"injected": 0, "deployed": 0, "blocked": 0})
        out["injected"] += 1
        per["injected"] += 1
        if line.get("deployed") in ("candidate", "reoffer"):  # "reoffer": blocked, then deployed by a re-offer
            out["deployed"] += 1
            per["deployed"] += 1
            continue
        d = line.get("decision") or {}
        out["blocked"] += 1
        per["blocked"] += 1
        out["blocked_triggered"] += int(bool(d.get("triggered")))
        out["blocked_steps"].append({"step": line.get("step"), "kind": kind, "triggered": bool(d.get("triggered")),
                                     "old_score": d.get("old_score"), "new_score": d.get("new_score")})
    return out
