"""Injected harmful memory candidates (issue 15): make Janus's job - keeping a harmful candidate out - measurable.

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

Consistency with the updater seam: :func:`inject_candidate` is called by the stream loop right after
``updater.step(task)`` and before Janus decides. It writes the harmful memory into the updater's state (DC: the
cheatsheet string; ExpeL: the rules list with counts; the retrieval bank, success pool and ExpeL's ``recent_success``
are left as the step made them; ACE: playbook and id counter; ReasoningBank: the bank with its embeddings), so ``memory_text()``, ``snapshot()`` and a later ``rollback(before)`` all see the
injected candidate exactly as they would see a genuine one. Note for DC-RS: the step's own stream answer was
generated with the genuine candidate (the curator runs before the solver); the injection affects every later step
and the frozen test.
"""
from __future__ import annotations

import dataclasses
import hashlib
import re

from janus_memory.inject.plan import (  # noqa: F401 (the plan API is re-exported from here)
    KINDS, InjectSpecError, Injection, check_plan, format_plan, parse_inject)
from janus_memory.inject.pieces import (  # noqa: F401 (re-exported from here)
    _ITEM_START, _NUMBER, _cut_mid_word, _is_heading, _one_line, _rng, overfit_rules, split_items, task_specifics,
    templates)
from janus_memory.inject.falsify import fact_numbers, false_fact, falsify_text, numbers, task_facts
from janus_memory.types import Task
from janus_memory.updaters.base import EMPTY_MEMORY, StepOutcome, Updater, visible_text

UPDATER_KINDS = {"dc_rs": "cheatsheet", "dc_cu": "cheatsheet", "expel": "rules", "ace": "playbook",
                 "reasoning_bank": "bank", "exprag": "experience"}


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


def harmful_candidate(kind: str, memory: str, task: Task, *, updater_kind: str, seed: int, step: int,
                      examples: str = "", answer: str = "") -> str:
    """The harmful candidate memory text (what ``memory_text()`` shows after :func:`inject_candidate`).

    ``memory``: the current memory text (M_{t-1}); ``updater_kind``: dc_rs, dc_cu or expel. Deterministic in
    (kind, memory, task, updater_kind, seed, step, examples, answer)."""
    structure = _structure(updater_kind)
    if structure in ("playbook", "bank", "experience"):
        raise ValueError(f"updater {updater_kind!r}: its candidate depends on its state (ids, counters, embeddings); "
                         "build it with inject_candidate")
    items = _items_of(memory, structure)
    if structure == "cheatsheet" and kind == "falsify":
        return falsified_cheatsheet(memory, task, _rng(seed, step, kind))
    if structure == "cheatsheet" and kind in ("truncate", "poison"):
        if kind == "poison":
            return poisoned_cheatsheet(memory, _rng(seed, step, kind).choice(templates()["poison"]))
        return _cut_mid_word(memory.strip(), _rng(seed, step, kind)) if items else EMPTY_MEMORY
    out = _harmful_items(kind, items, task, structure=structure, seed=seed, step=step, examples=examples, answer=answer)
    return _render(out, structure)


def poisoned_cheatsheet(memory: str, instruction: str) -> str:
    """A cheatsheet (DC-RS, DC-Cu) with ``instruction`` planted on top under the poison header, as ``poison`` writes
    it (benchmarks/poison_follow.py plants each template this way)."""
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


def supports(updater_name: str) -> bool:
    """Whether :func:`inject_candidate` can write a harmful candidate into this updater's state."""
    return updater_name in UPDATER_KINDS


def _structure(updater_kind: str) -> str:
    if updater_kind not in UPDATER_KINDS:
        raise ValueError(f"updater {updater_kind!r} does not support injection; supported: {', '.join(UPDATER_KINDS)}")
    return UPDATER_KINDS[updater_kind]


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
def _examples_for(updater: Updater, outcome: StepOutcome) -> str:
    """The retrieved-examples block the updater used at this step, rebuilt from ``info["retrieved"]``."""
    hits_info = outcome.info.get("retrieved") or []
    bank = getattr(updater, "bank", None) if updater.name == "dc_rs" else getattr(updater, "pool", None)
    if bank is None:
        return ""
    index: dict[str, int] = {}
    for i, rec in enumerate(bank.records):
        index.setdefault(rec["id"], i)
    hits = [(index[h["id"]], float(h["similarity"])) for h in hits_info if h["id"] in index]
    if updater.name == "dc_rs":
        return updater._pairs_block(hits)
    return updater._examples_block(hits)


def inject_candidate(updater: Updater, outcome: StepOutcome, kind: str, *, task: Task, step: int, seed: int,
                     before: dict) -> StepOutcome:
    """Replace the candidate the updater just proposed with a harmful one of ``kind`` (see the module docstring).

    ``before`` is the updater snapshot taken before the step (ExpeL rule counts come from it; the loop's rollback
    uses the same snapshot). Returns the outcome with ``candidate_memory`` replaced, ``candidate_rejected`` None and
    ``info["injected"]`` = {kind, step, seed, genuine_candidate_sha256, genuine_candidate_rejected, noop}."""
    structure = _structure(updater.name)
    answer = visible_text(outcome.output)
    dumps_examples = kind == "dump" and structure in ("cheatsheet", "rules")
    examples = _examples_for(updater, outcome) if dumps_examples else ""
    if structure in ("playbook", "bank", "experience"):  # ACE / ReasoningBank / ExpRAG: inject/state.py
        from janus_memory.inject.state import inject_state

        inject_state(updater, outcome, kind, task=task, step=step, seed=seed, before=before)
    elif structure == "rules":
        items = [(r[0], int(r[1])) for r in before["state"]["rules"]]
        new = _harmful_items(kind, items, task, structure="rules", seed=seed, step=step, examples=examples, answer=answer)
        updater.rules = [[txt, int(c)] for txt, c in new]
    else:
        text = harmful_candidate(kind, outcome.old_memory, task, updater_kind=updater.name, seed=seed, step=step,
                                 examples=examples, answer=answer)
        updater.cheatsheet = text
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
    deployed when the log says ``"deployed": "candidate"``; blocked otherwise."""
    out: dict = {"injected": 0, "deployed": 0, "blocked": 0, "blocked_triggered": 0, "by_kind": {},
                 "blocked_steps": []}
    for line in log_lines:
        kind = line.get("injected")
        if not kind:
            continue
        per = out["by_kind"].setdefault(kind, {"injected": 0, "deployed": 0, "blocked": 0})
        out["injected"] += 1
        per["injected"] += 1
        if line.get("deployed") == "candidate":
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
