"""Injected harmful candidates built as states: ACE's playbook, ReasoningBank's bank and ExpRAG's records.

Their memory is more than a text: ACE's playbook has ids, helpful/harmful counters and a global id counter;
ReasoningBank's bank and ExpRAG's records have one question embedding per entry for retrieval. So the harmful
candidate is built as a state, from the state before the step (M_{t-1}, the snapshot the loop's rollback uses); the
updater's ``inject_harm`` hook writes it into its state, and ``memory_text()``, ``snapshot()`` and
``rollback(before)`` then treat it like a genuine candidate. The builders here take plain data and import no updater
class.

ACE playbook (bullets ``[id] helpful=H harmful=K :: content`` under ``##`` headings; every heading is kept, so the
curator can keep adding to its sections, except by ``truncate``, which cuts the text):

* ``wipe``     one seeded bullet kept, with its id and counters;
* ``dump``     every bullet replaced by the raw material of the step, one bullet per line of ``playbook_dump``:
               the problem, the generator's first answer and the reflector's last raw reply (ACE retrieves nothing;
               this is what its curator distils, as DC-RS's curator distils its retrieved pairs);
* ``overfit``  every bullet replaced by the overfit rules copied from the task (as for DC and ExpeL);
* ``poison``   one poison bullet on top of the first section, the playbook kept below it;
* ``truncate`` the first 35-65 % of the bullets (rendering order), the last one cut mid-word inside its content;
               the headings after it are cut off with it;
* ``falsify``  one number of one bullet's content changed (ids and counters kept), preferring the numbers of the
               current task's rules; without one, the task's rule with a wrong number as a new bullet on top of the
               first section (inject/falsify.py).

New bullets get fresh ids from the updater's id counter (never reused, as ACE's own ADD), in the first section's
slug, with ``helpful=0 harmful=0`` (what a curator ADD gives: a planted bullet looks like any new one); the id
counter moves past them. Kept bullets keep their ids and counters. A rollback restores the playbook and counters of
M_{t-1} and keeps the id counter, as for a genuine candidate.

ReasoningBank (entries: question key, status, memory items ``# Memory Item`` / ``## Title`` / ``## Description`` /
``## Content``):

* ``wipe``     one seeded item of one entry kept (as written), under that entry's key;
* ``dump``     the bank replaced by one entry, keyed on the task, whose body is the step's raw trajectory (problem and
               answer, the ``dump_cu`` text) instead of distilled items. The bank keeps no trajectories of past
               entries (only their items), so the only raw trajectory there is is the one the extraction call was
               about to distil: the same analogue as DC-Cu's dump;
* ``overfit``  the bank replaced by one entry keyed on the task with one item whose content is the overfit rules;
* ``poison``   the bank of M_{t-1} with entry t (keyed on the task, status success) holding one poison item:
               what a crafted task would plant; it is retrieved for the tasks whose question is nearest to this one;
* ``truncate`` the first 35-65 % of the entries, the last one's body cut mid-word (inside an item);
* ``falsify``  one number of one entry's items changed, preferring the numbers of the current task's rules; without
               one, entry t holds one item stating the task's rule with a wrong number (as ``poison`` plants).

The bank is rebuilt with ``load_memory_text``, which embeds every question again with the run's encoder, so each
entry's embedding is the one of its question; a rollback restores the bank of M_{t-1} with its stored embeddings.

ExpRAG (records ``Q`` = the task prompt, ``A`` = the model's answer, ``Feedback``; one question embedding each; its
memory is raw experience, so the kinds act on records):

* ``wipe``     one seeded record of M_{t-1} kept;
* ``dump``     the bank replaced by this step's record alone (the raw trajectory of the step, the one analogue there is:
               ExpRAG distils nothing);
* ``overfit``  M_{t-1} plus a record keyed on the task whose answer is the overfit rules;
* ``poison``   M_{t-1} plus a record keyed on the task whose answer is the poison instruction (feedback success);
* ``truncate`` the first 35-65 % of the records, the last one's answer cut mid-word;
* ``falsify``  one record tampered with: a number changed wherever the record says it (question, prompt, answer), its
               worked answer recomputed with it (``falsify.rework``: "4 orders x $4 = $16", not "= $28"). The
               record and number: one whose question holds a number of the current task's rules first (the ticket
               that stated the rule), else one whose answer does, else any; without a number, a record stating the
               task's rule with a wrong number.

Records whose question changed are embedded again with the run's encoder; the others keep their embeddings.
"""
from __future__ import annotations

import copy

from janus_memory.inject.falsify import fact_numbers, false_fact, falsify_text, numbers, rework, task_facts
from janus_memory.inject.pieces import _cut_mid_word, _one_line, _rng, overfit_rules, templates
from janus_memory.updaters.ace_playbook import section_key, section_slug
from janus_memory.updaters.reasoning_bank import item_blocks, render_bank, render_items, sanitize
from janus_memory.values import Task

# item_blocks and render_bank read and write ReasoningBank's format (updaters/reasoning_bank.py); kept importable here
__all__ = ["harmful_bank", "harmful_experience", "harmful_playbook", "item_blocks", "render_bank"]


def _poison(seed: int, step: int) -> str:
    """The poison template of (seed, step): the same one DC and ExpeL get at this step."""
    return _rng(seed, step, "poison").choice(templates()["poison"])


def _cut(rng, n: int) -> int:
    return max(1, round(n * rng.uniform(0.35, 0.65)))


# ------------------------------------------------------------------------------------------------ ACE
def harmful_playbook(kind: str, sections: list[list], task: Task, *, next_id: int, faithful: bool, seed: int,
                     step: int, answer: str = "", reflection: str = "") -> tuple[list[list], int]:
    """The harmful playbook ``(sections, next_id)`` built from ``sections`` (M_{t-1}; not modified) and the
    updater's id counter ``next_id``. ``answer``/``reflection``: the step's first answer and last reflection (dump)."""
    secs = [[h, [list(b) for b in bs]] for h, bs in copy.deepcopy(sections)] or [["OTHERS", []]]
    rng = _rng(seed, step, kind)
    where = [(si, bi) for si, (_, bs) in enumerate(secs) for bi in range(len(bs))]
    if kind == "wipe":
        keep = where[rng.randrange(len(where))] if where else None
        return [[h, [bs[keep[1]]] if keep and keep[0] == si else []] for si, (h, bs) in enumerate(secs)], next_id
    if kind == "truncate":
        if not where:
            return secs, next_id
        si, bi = where[_cut(rng, len(where)) - 1]
        out = secs[:si + 1]
        out[si][1] = out[si][1][:bi + 1]
        out[si][1][bi][3] = _cut_mid_word(out[si][1][bi][3], rng)
        return out, next_id
    if kind == "falsify":
        spots = [(si, bi) for si, bi in where if numbers(secs[si][1][bi][3])]
        if spots:
            wanted = fact_numbers(task_facts(task))
            preferred = [(si, bi) for si, bi in spots if any(v in wanted for _, _, v in numbers(secs[si][1][bi][3]))]
            si, bi = rng.choice(preferred or spots)
            secs[si][1][bi][3] = falsify_text(secs[si][1][bi][3], task_facts(task), rng)[0]
            return secs, next_id
        fact = false_fact(task_facts(task), rng)
        if fact is None:
            return secs, next_id
        new = [fact]
    elif kind == "poison":
        new = [_poison(seed, step)]
    elif kind == "overfit":
        new = overfit_rules(task, rng)
    elif kind == "dump":
        vals = {"question": task.question, "answer": answer.strip() or "(none)", "reflection": reflection.strip()}
        new = [_one_line(s.format(**vals)) for s in templates()["playbook_dump"]
               if vals["reflection"] or "{reflection}" not in s]  # no reflection line when no reflector ran
    else:
        raise ValueError(f"unknown injection kind {kind!r}")
    slug = section_slug(section_key(secs[0][0], faithful), faithful)
    fresh = [[f"{slug}-{next_id + n:05d}", 0, 0, c] for n, c in enumerate(new)]
    out = secs if kind in ("poison", "falsify") else [[h, []] for h, _ in secs]
    out[0][1] = fresh + out[0][1]
    return out, next_id + len(fresh)


# ------------------------------------------------------------------------------------------------ ReasoningBank
def harmful_bank(kind: str, records: list[dict], task: Task, *, seed: int, step: int, answer: str = "",
                 status: str | None = None) -> list[dict]:
    """The harmful bank as entries ``{"id", "question", "status", "body"}`` built from ``records`` (M_{t-1}; not
    modified). ``answer``: the step's visible answer (dump); ``status``: the step's self-judgment (dump)."""
    recs = [dict(r) for r in records]
    rng = _rng(seed, step, kind)
    t = templates()
    mine = {"id": task.id, "question": task.question, "status": "success"}
    if kind == "wipe":
        pool = [(i, blk) for i, r in enumerate(recs) for blk in item_blocks(r["body"])]
        if not pool:
            return []
        i, blk = pool[rng.randrange(len(pool))]
        return [{**recs[i], "body": sanitize(blk)}]
    if kind == "truncate":
        if not recs:
            return []
        kept = recs[:_cut(rng, len(recs))]
        kept[-1]["body"] = sanitize(_cut_mid_word(kept[-1]["body"], rng))
        return kept
    if kind == "dump":
        raw = t["dump_cu"].format(question=task.question.strip(), answer=answer.strip() or "(none)")
        return [{**mine, "status": status or "success", "body": sanitize(raw)}]
    if kind == "overfit":
        item = [t["bank_overfit"]["title"], t["bank_overfit"]["description"], " ".join(overfit_rules(task, rng))]
        return [{**mine, "body": render_items([item])}]
    if kind == "poison":
        item = [t["bank_poison"]["title"], t["bank_poison"]["description"], _poison(seed, step)]
        return recs + [{**mine, "body": render_items([item])}]
    if kind == "falsify":
        facts = task_facts(task)
        spots = [i for i, r in enumerate(recs) if numbers(r["body"])]
        if spots:
            wanted = fact_numbers(facts)
            preferred = [i for i in spots if any(v in wanted for _, _, v in numbers(recs[i]["body"]))]
            i = rng.choice(preferred or spots)
            recs[i]["body"] = sanitize(falsify_text(recs[i]["body"], facts, rng)[0])
            return recs
        fact = false_fact(facts, rng)
        if fact is None:
            return recs
        item = [t["bank_falsify"]["title"], t["bank_falsify"]["description"], fact]
        return recs + [{**mine, "body": render_items([item])}]
    raise ValueError(f"unknown injection kind {kind!r}")


# ------------------------------------------------------------------------------------------------ ExpRAG
def harmful_experience(kind: str, records: list[dict], task: Task, *, seed: int, step: int,
                       new_record: dict | None = None) -> list[dict]:
    """The harmful ExpRAG bank as records (module docstring), built from ``records`` (M_{t-1}; not modified);
    ``new_record``: the record the step added (dump)."""
    recs = [dict(r) for r in records]
    rng = _rng(seed, step, kind)
    mine = {"id": task.id, "question": task.question, "input": task.question, "feedback": "success"}
    if kind == "wipe":
        return [recs[rng.randrange(len(recs))]] if recs else []
    if kind == "truncate":
        if not recs:
            return []
        kept = recs[:_cut(rng, len(recs))]
        kept[-1]["output"] = _cut_mid_word(kept[-1]["output"], rng)
        return kept
    if kind == "dump":
        return [dict(new_record)] if new_record else []
    if kind == "overfit":
        return recs + [{**mine, "output": " ".join(overfit_rules(task, rng))}]
    if kind == "poison":
        return recs + [{**mine, "output": _poison(seed, step)}]
    if kind == "falsify":
        facts = task_facts(task)
        wanted = fact_numbers(facts)
        spots = [(i, f) for i, r in enumerate(recs) for f in ("question", "output") if numbers(str(r.get(f) or ""))]
        if spots:
            preferred = [(i, f) for i, f in spots if any(v in wanted for _, _, v in numbers(str(recs[i][f])))]
            # a ticket that states the rule comes first, and then the number in the statement itself (a parcel weight
            # that happens to equal the rate is no rule)
            stated = [(i, f) for i, f in preferred if f == "question"
                      and any(fact in str(recs[i][f]) for fact in facts)]
            i, field = rng.choice(stated or preferred or spots)
            text = str(recs[i][field])
            fact = next((x for x in facts if x in text and numbers(x)), None) if (i, field) in stated else None
            changed = falsify_text(fact if fact is not None else text, facts, rng)[1]
            assert changed is not None  # every spot (and every stated fact chosen) holds a number
            # the ticket is tampered with as a whole: the number changes wherever this record says it (its question,
            # its prompt, its answer), and the answer's worked arithmetic follows it (falsify.rework), so the record
            # states the false rule and computes with it
            recs[i] = {**recs[i], **{f: rework(str(recs[i].get(f) or ""), changed["old"], changed["new"])
                                     for f in ("question", "input", "output")}}
            return recs
        fact = false_fact(facts, rng)
        if fact is None:
            return recs
        return recs + [{**mine, "question": fact, "input": fact, "output": fact}]
    raise ValueError(f"unknown injection kind {kind!r}")
