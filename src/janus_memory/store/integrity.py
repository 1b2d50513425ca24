"""Run-folder integrity (issue 12, items 5-7): what COMPLETE promises, checked on resume and on `janus report`.

A run folder is complete when, for every method of its stored config, the database holds steps 1..n without gaps
(n = the method's stream size), the method's result, and the exports agree with the database: decisions.jsonl and
steps.jsonl line for line, test.jsonl, final_memory.txt, and one ``memories/`` file per deployed memory version.
:func:`problems` lists what is missing or inconsistent; :func:`missing_steps` the gaps that no resume can fill.
Only reads (through RunReader); the store rebuilds exports (RunStore.rebuild_exports).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError, RunFolderError
from .reader import RunReader
from .records import config_edit, extra_memory_files, file_sha, misplaced, record_problems, same_bytes

EXPORTS = ("decisions.jsonl", "steps.jsonl", "test.jsonl", "final_memory.txt")


def stored_methods(reader: RunReader) -> list[str]:
    from pydantic import ValidationError

    from ..settings.config import RunConfig

    cfg = reader.meta("config")
    if cfg is None:
        return []
    # the seeds do not decide the methods, and a run stored before they were range-checked may hold a negative one
    # (report still reads it; resume refuses it: resume.load_run_config)
    cfg = {k: v for k, v in cfg.items() if k not in ("seed", "stream_order_seed")}
    try:
        return [m for m, _ in RunConfig(**cfg).methods()]
    except (ValidationError, TypeError) as e:
        raise ConfigError(f"{reader.root}: the stored config is not valid for this janus-memory "
                          f"({_first_error(e)}); it was probably written by a newer version") from None


def _first_error(e: Exception) -> str:
    errs = getattr(e, "errors", None)
    if callable(errs):
        err = errs()[0]
        loc = ".".join(str(x) for x in err["loc"])
        return f"unknown setting '{loc}'" if err["type"] == "extra_forbidden" else f"'{loc}': {err['msg']}"
    return str(e).splitlines()[0]


def missing_steps(reader: RunReader, method: str, upto: int) -> list[int]:
    """Step numbers in 1..upto without a row in the database (rows deleted or lost)."""
    have = {int(s) for (s,) in reader._query("SELECT step FROM steps WHERE method=?", (method,))}
    return [s for s in range(1, upto + 1) if s not in have]


def _span(steps: list[int]) -> str:
    return f"{steps[0]}" if len(steps) == 1 else f"{steps[0]}-{steps[-1]}" if steps[-1] - steps[0] == len(steps) - 1 \
        else ", ".join(map(str, steps[:5])) + (" ..." if len(steps) > 5 else "")


RESTORE = "restore run.sqlite from a copy or start a new run"


def gaps_message(root: Path, method: str, gaps: list[int]) -> str:
    return (f"{root}: the database lacks step(s) {_span(gaps)} of {method} (rows deleted?); this run cannot be "
            f"completed from it: {RESTORE}")


def saved_step(reader: RunReader, method: str) -> int:
    """The step of ``method``'s saved state (checkpoint head, else its base), without replaying it; 0 without one."""
    for sql in ("SELECT step FROM checkpoint_head WHERE method=?", "SELECT step FROM checkpoints WHERE method=?"):
        rows = reader._query(sql, (method,))
        if rows:
            return int(rows[0][0])
    return 0


DAMAGED_DB = "the database itself is damaged"


def db_problems(root: str | Path) -> tuple[list[str], list[str]]:
    """``(problems, unchecked methods)`` of the database's own hash chain and seals (store/chain.py): rows edited,
    deleted or added after their commit, named; the methods whose rows were written before the chain (store format
    < 4). From store format 5 the chain and seals are required (their absence is damage) and the memory/candidate
    texts and each method's checkpoint rows are checked against their state seals."""
    from .chain import STORE_FORMAT_SEALED, chain_problems, setup_problems, state_problems, store_format
    from .texts import damaged_text

    reader = RunReader(root)
    if not reader.has_db:
        return [], []
    out, unchecked = reader._with_db(setup_problems, []), []
    if out:  # the stored config is not to be read for the methods it names
        return out, []
    sealed = reader._with_db(store_format, 1) >= STORE_FORMAT_SEALED
    methods = stored_methods(reader) or [m for (m,) in reader._query("SELECT DISTINCT method FROM steps")]
    for method in methods:
        checked, found = reader._with_db(lambda query: chain_problems(
            query, method, lambda m: reader.method_result(m) is not None, required=sealed), (False, []))
        out += found
        if not checked and reader._query("SELECT 1 FROM steps WHERE method=? LIMIT 1", (method,)):
            unchecked.append(method)
    if sealed:
        out += reader._with_db(lambda query: state_problems(query, methods, damaged_text), [])
    return out, unchecked


def unresumable(root: str | Path) -> str | None:
    """Why ``janus run --resume`` refuses the folder before it writes anything, in one line naming what to do (None:
    nothing in the folder stops it). The database itself damaged (its hash chain, seals, state seals: a repair
    would copy the damage over the intact exports), step rows missing below a method's saved state or its result
    (the saved state is after them: the method cannot continue from it), a run made by another janus-memory
    version, or a config.json edited after the run started (records.config_edit). `janus run --resume`
    (refuse_damaged), `janus report`'s line for an unfinished folder (store/unfinished.py) and its refusal of a
    folder marked COMPLETE (check_complete) all say this, so they agree."""
    found = db_problems(root)[0]
    if not found:  # the same condition under which `janus report` says "restore" (check_complete): a stored summary
        # that differs from the stored results, test rows the result does not count, ...
        found = [p.split(f"{DAMAGED_DB}: ", 1)[1] for p in problems(root) if p.startswith(f"{DAMAGED_DB}: ")]
    if found:
        more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
        return f"{root}: {DAMAGED_DB}: {found[0]}{more}; it cannot be continued or repaired: {RESTORE}"
    reader = RunReader(root)
    for method in stored_methods(reader):
        done = reader.method_result(method)
        upto = int(done["stream_tasks"]) if done else saved_step(reader, method)
        gaps = missing_steps(reader, method, upto)
        if gaps:
            return gaps_message(reader.root, method, gaps)
    return other_version(reader) or misplaced(reader.root, stored_methods(reader)) or config_edit(root)


def other_version(reader: RunReader) -> str | None:
    """The line a resume refuses a folder with when another janus-memory version wrote it (its code would continue
    a run it did not start: the results would mix two versions)."""
    from .. import __version__

    env = reader.meta("environment")
    made = env.get("janus_memory") if isinstance(env, dict) else None
    if made is None or made == __version__:
        return None
    return (f"{reader.root}: the run was made by janus-memory {made}, this is {__version__}; continue or repair it "
            f"with janus-memory {made}")


def refuse_damaged(root: str | Path) -> None:
    """RunFolderError (:func:`unresumable`): a run is never continued or repaired from a database that is damaged
    (its rows would be copied over the intact exports) or that lacks steps below its saved state."""
    why = unresumable(root)
    if why:
        raise RunFolderError(why)


def problems(root: str | Path) -> list[str]:
    """Everything that makes the run at ``root`` not complete (empty list: complete and consistent). Problems of the
    database itself (its hash chain) come first, marked with DAMAGED_DB: no export can be rebuilt from it."""
    reader = RunReader(root)
    if not reader.has_db:
        return [] if reader.summary() is not None else ["no run.sqlite and no summary.json"]
    out: list[str] = [f"{DAMAGED_DB}: {p}" for p in db_problems(root)[0]]
    for method in stored_methods(reader):
        result = reader.method_result(method)
        if result is None:
            out.append(f"{method}: no result (the method never finished)")
            continue
        n = int(result.get("stream_tasks") or 0)
        gaps = missing_steps(reader, method, n)
        if gaps:
            out.append(gaps_message(reader.root, method, gaps))
        for table, step in reader.unstored_texts(method)[:1]:
            out.append(f"{reader.root}: the database lacks the {'memory' if table == 'memories' else 'candidate'} text "
                       f"of {method} at step {step} (rows deleted?); the database is damaged: start a new run")
        out += _export_problems(reader, method, result)
    out += _summary_problems(reader)
    return out


def _summary_problems(reader: RunReader) -> list[str]:
    """summary.json against the summary stored in the database, and that one's per-method numbers against the
    methods' stored results (the report prints the database's; an edited file must not pass unseen)."""
    from .jsonio import dumps

    out = (["config.json was edited after the run started"] if config_edit(reader.root) else []) \
        + record_problems(reader)
    stored = reader.meta("summary")
    try:
        on_disk = reader.json_file("summary.json")
    except RunFolderError:
        on_disk = "not JSON"
    if on_disk is None:
        return out + ["summary.json is missing"]
    if stored is None:  # a run finished before the summary was stored in the database: its methods' results
        methods = on_disk.get("methods") if isinstance(on_disk, dict) else None
        for method in stored_methods(reader):
            result = reader.method_result(method)
            if result is not None and (not isinstance(methods, dict) or dumps(methods.get(method)) != dumps(result)):
                out.append(f"summary.json differs from the database (its numbers of {method} are not the stored "
                           "result's)")
                break
        return out
    if dumps(on_disk) != dumps(stored):
        out.append("summary.json differs from the database")
    for method, res in (stored.get("methods") or {}).items() if isinstance(stored, dict) else ():
        result = reader.method_result(method)
        if result is not None and dumps(res) != dumps(result):  # (no result: named above; a resume recomputes it)
            out.append(f"{DAMAGED_DB}: its stored summary of {method} differs from the method's stored result")
    return out


def _export_problems(reader: RunReader, method: str, result: dict) -> list[str]:
    from .store import dumps

    d = reader.root / method
    out = [f"{method}/{name} is missing" for name in EXPORTS if not (d / name).is_file()]
    if out:
        return out
    rows = list(reader.steps(method))
    if not same_bytes(d / "decisions.jsonl", "".join(dumps(x) + "\n" for x, _ in rows).encode("utf-8")):
        out.append(f"{method}/decisions.jsonl differs from the database")
    if not same_bytes(d / "steps.jsonl", "".join(dumps(r) + "\n" for _, r in rows).encode("utf-8")):
        out.append(f"{method}/steps.jsonl differs from the database")
    tests = reader._query("SELECT record FROM tests WHERE method=? ORDER BY idx", (method,))
    if len(tests) != int(result.get("test_tasks") or 0):
        out.append(f"{DAMAGED_DB}: it holds {len(tests)} held-out test rows of {method}, its result says "
                   f"{result.get('test_tasks')}")
    elif not same_bytes(d / "test.jsonl", "".join(r + "\n" for (r,) in tests).encode("utf-8")):
        out.append(f"{method}/test.jsonl differs from the database")
    if file_sha(d / "final_memory.txt") != result.get("final_memory_sha256"):  # the bytes, as written
        out.append(f"{method}/final_memory.txt does not match the result's sha256")
    versions = reader.texts("memories", method, text=False)
    for v in versions:
        f = d / "memories" / f"{v['step']:05d}_{v['sha256'][:12]}.txt"
        if not f.is_file() or file_sha(f) != v["sha256"]:
            out.append(f"{method}/memories/{f.name} is missing or altered")
            break
    extra = extra_memory_files(reader.root, method, versions)
    if extra:
        out.append(f"{method}/memories/{extra[0].name} is not a memory version of the database"
                   + (f" (+{len(extra) - 1} more)" if len(extra) > 1 else ""))
    return out


def check_complete(root: str | Path) -> None:
    """RunFolderError naming the first problem when a folder marked COMPLETE is not (used by `janus report`)."""
    reader = RunReader(root)
    if not (reader.finished and reader.has_db):
        return
    found = problems(root)
    if found:
        found.sort(key=lambda p: DAMAGED_DB not in p)  # the database's own damage first, whatever else differs
        if any(DAMAGED_DB in p or "start a new run" in p for p in found):  # never rebuild files from damaged rows
            hint = "; the files cannot be rebuilt from it: restore run.sqlite from a copy or start a new run"
        else:
            why = unresumable(root)  # the repair refuses it (another version, an edited config.json): its words
            if why:
                raise RunFolderError(f"{root} is marked complete but is not: {why.removeprefix(f'{root}: ')}")
            hint = f"; rebuild it with `janus run --resume {root}`"
        if found[0].endswith(RESTORE):  # it names the fix already (a gap: store/integrity.gaps_message)
            hint = ""
        raise RunFolderError(f"{root} is marked complete but is not: {found[0]}"
                             f"{f' (+{len(found) - 1} more)' if len(found) > 1 else ''}{hint}")
