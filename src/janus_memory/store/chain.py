"""The database's own integrity check (store format 4, issue 28): a per-method hash chain of the committed rows.

Each step commit stores, in the same transaction as the step, ``chain(method, step, hash)`` with

    hash_s = sha256(hash_{s-1} | s | decision line | step record | deployed memory sha256 (a new version) | candidate sha256)

(``hash_0 = ""``), and the held-out test and the method result are sealed the same way in ``seals(method, tests,
result)`` (sha256 of the test rows, and of the result, written with them). :func:`chain_problems` recomputes them from
the rows: a step row edited after its commit (its hash differs), deleted (a chain row without its step), added or
re-numbered (a step without a chain row), test rows edited, deleted or added, an edited result, test rows or a result
whose seal was deleted or set to NULL (once a method has a chain, its tests and result are sealed): each is named.

Not detected (said in docs/run-folder.md): someone who edits a row *and* recomputes the chain after it (the hash is
not secret: it finds damage and careless edits, not a forger); the checkpoint rows (checked when they load: the
resume probes them) and the memory/candidate texts (each checked against its own sha256 when read, store/texts.py).
A folder written before format 4 has no chain: it reads as before, and its rows are reported "not checked".
"""
from __future__ import annotations

import hashlib
from typing import Callable


SCHEMA = """
CREATE TABLE IF NOT EXISTS chain (method TEXT NOT NULL, step INTEGER NOT NULL, hash TEXT NOT NULL,
                                  PRIMARY KEY (method, step));
CREATE TABLE IF NOT EXISTS seals (method TEXT PRIMARY KEY, tests TEXT, result TEXT);
"""


def link(prev: str, step: int, decision: str, record: str, memory_sha: str | None, candidate_sha: str | None) -> str:
    """hash_s from hash_{s-1} and step s's stored texts (``decision``/``record``: the stored JSON lines)."""
    h = hashlib.sha256()
    for part in (prev, str(step), decision, record, memory_sha or "", candidate_sha or ""):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def tests_hash(lines: list[str]) -> str:
    """sha256 of a method's stored test rows (their JSON lines, in order)."""
    return hashlib.sha256("".join(x + "\n" for x in lines).encode("utf-8")).hexdigest()


def result_hash(line: str) -> str:
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


SETUP_SEAL = "seal:setup"  # meta key: sha256 of the stored config, splits and environment (written with them)
SEALED_META = ("config", "splits", "environment")


def setup_seal(meta: dict[str, str]) -> dict[str, str]:
    """``{key: sha256 of its stored JSON text}`` for the SEALED_META keys present in ``meta`` (key -> stored text)."""
    return {k: result_hash(meta[k]) for k in SEALED_META if k in meta}


def setup_problems(query: Callable[..., list]) -> list[str]:
    """The stored config, splits or environment edited or deleted after the run was set up (a folder set up before
    this seal has none: nothing to check against)."""
    import json

    row = query("SELECT value FROM meta WHERE key=?", (SETUP_SEAL,))
    if not row:
        return []
    try:
        seal = json.loads(row[0][0])
    except (json.JSONDecodeError, TypeError):
        seal = None
    if not isinstance(seal, dict):
        return ["its seal of the stored config, splits and environment is not valid JSON"]
    out = []
    for key in SEALED_META:
        if key not in seal:
            continue
        have = query("SELECT value FROM meta WHERE key=?", (key,))
        if not have or result_hash(have[0][0]) != seal[key]:
            out.append(f"the stored {key} (in run.sqlite) was changed or deleted after the run was set up "
                       "(its seal does not match)")
    return out


def span(steps: list[int]) -> str:
    """``4``, ``2-3`` (a run of steps) or ``2, 5, 7 ...``."""
    return f"{steps[0]}" if len(steps) == 1 else f"{steps[0]}-{steps[-1]}" if steps[-1] - steps[0] == len(steps) - 1 \
        else ", ".join(map(str, steps[:5])) + (" ..." if len(steps) > 5 else "")


def chain_problems(query: Callable[..., list], method: str,
                   count_result: Callable[[str], bool] = lambda m: True) -> tuple[bool, list[str]]:
    """``(checked, problems)`` for ``method``: ``checked`` is False for rows written before the chain (store format
    < 4, nothing to check against). ``query(sql, args)`` runs on the run database (a missing table reads as []).
    ``count_result(method)``: whether the method's stored result is one a resume would keep (False: it is missing or
    incomplete, the method counts as unfinished and its result is computed again, never copied: not a problem)."""
    chain = {int(s): h for s, h in query("SELECT step, hash FROM chain WHERE method=?", (method,))}
    seal = query("SELECT tests, result FROM seals WHERE method=?", (method,))
    if not chain and not seal:
        return False, []
    rows = query("SELECT step, decision, record FROM steps WHERE method=? ORDER BY step", (method,))
    mems = {int(s): sha for s, sha in query("SELECT step, sha256 FROM memories WHERE method=? AND step>0", (method,))}
    cands = {int(s): sha for s, sha in query("SELECT step, sha256 FROM candidates WHERE method=?", (method,))}
    out: list[str] = []
    edited, unchained, have, prev_h = [], [], set(), ""
    for step, dec, rec in rows:
        step = int(step)
        have.add(step)
        # the link before: the stored one when there is one (an edited or deleted row is named once, not with
        # every row after it), else the one computed from the row before
        prev = chain.get(step - 1, prev_h) if step > 1 else ""
        h = link(prev, step, dec, rec, mems.get(step), cands.get(step))
        if step not in chain:
            unchained.append(step)
        elif chain[step] != h:
            edited.append(step)
        prev_h = h
    deleted = sorted(set(chain) - have)
    if edited:
        out.append(f"the step row(s) {span(edited)} of {method} were changed after they were committed "
                   "(their hash chain does not match)")
    if deleted:
        out.append(f"it lacks step(s) {span(deleted)} of {method}: deleted after they were committed")
    if unchained:
        out.append(f"the step row(s) {span(unchained)} of {method} were not committed by the run (no hash chain link)")
    # the seal is written in the same transaction as the test rows (tests) and the result (result): test rows or a
    # result without their seal (the row deleted, or set to NULL) is damage, never a reason to trust the rows
    t_hash, r_hash = seal[0] if seal else (None, None)
    lines = [r for (r,) in query("SELECT record FROM tests WHERE method=? ORDER BY idx", (method,))]
    if t_hash is not None:
        if tests_hash(lines) != t_hash:
            out.append(f"the held-out test rows of {method} were changed, deleted or added after they were committed "
                       f"({len(lines)} rows now)")
    elif lines:
        out.append(f"the seal of the held-out test rows of {method} was deleted or emptied after they were committed "
                   f"({len(lines)} rows now, not sealed)")
    if count_result(method):
        res = query("SELECT summary FROM method_results WHERE method=?", (method,))
        if r_hash is not None:
            if not res or result_hash(res[0][0]) != r_hash:
                out.append(f"the stored result of {method} was changed or deleted after it was committed")
        elif res:
            out.append(f"the seal of the stored result of {method} was deleted or emptied after it was committed (not sealed)")
    return True, out
