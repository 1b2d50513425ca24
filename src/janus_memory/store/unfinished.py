"""What `janus report` says about a run folder it leaves out because the run has not finished (no COMPLETE).

One line per folder: how far each method got (committed stream steps of the stream size, and whether its held-out
test is done) and what to do: continue it with ``janus run --resume DIR``, wait for it when another process still
holds the folder's lock (store/lock.py), or start it again when it stopped before its settings were stored.
Its numbers are not in any table: a method without its held-out test has no accuracy to average.
"""
from __future__ import annotations

import shlex
from pathlib import Path

from ..errors import JanusError
from .reader import RunReader


def progress(run_dir: str | Path) -> dict:
    """``{"state": "running"|"interrupted"|"not set up", "pid", "methods": [(method, steps done, stream size or None,
    tested)]}`` of an unfinished run folder (read only)."""
    from .integrity import stored_methods
    from .lock import holder_pid

    reader = RunReader(run_dir)
    try:
        pid = holder_pid(reader.root)
    except OSError:  # a lock file we may not open (another user's folder): not known to be running
        pid = None
    try:
        cfg = reader.meta("config")
        done = {str(m): int(s) for m, s in reader._query("SELECT method, MAX(step) FROM steps GROUP BY method")}
        try:
            methods = stored_methods(reader) or list(done)
        except JanusError:  # a config this version cannot read: the methods that stored steps
            methods = list(done)
        n = ((reader.meta("splits") or {}).get("stream") or {}).get("n")
        if n is None and isinstance(cfg, dict):
            n = cfg.get("stream_size")
        rows = [(m, done.get(m, 0), n, reader.method_result(m) is not None) for m in methods]
    except JanusError as e:  # an unreadable database: what the folder is, not how far it got (and why)
        cfg, rows, unreadable = {}, [], str(e)
    else:
        unreadable = None
    state = "running" if pid else ("not set up" if cfg is None else "interrupted")
    return {"state": state, "pid": pid, "methods": rows, "unreadable": unreadable}


def _methods_text(rows: list[tuple]) -> str:
    return "; ".join(f"{m}: {k}/{'?' if n is None else n} steps" + (", tested" if tested else "")
                     for m, k, n, tested in rows)


def describe(run_dir: str | Path) -> str:
    """'runs/b (dc_rs: 10/10 steps, tested; dc_rs+janus: 4/10 steps) is unfinished; continue it with: janus run
    --resume runs/b' (or still running, with its pid; or stopped before it was set up)."""
    p = progress(run_dir)
    where = f"{run_dir} ({_methods_text(p['methods'])})" if p["methods"] else str(run_dir)
    if p["state"] == "running":
        pid = f" (pid {p['pid']})" if p["pid"] and p["pid"] > 0 else ""
        return f"{where} is still running{pid}; run janus report again when it has finished"
    if p["state"] == "not set up":
        return (f"{run_dir} holds a run that stopped before its settings were stored; start it again with the "
                "command that made it (without --resume)")
    from .integrity import unresumable

    try:
        why = p["unreadable"] or unresumable(run_dir)
    except JanusError as e:  # a database that does not read: what `janus run --resume` would say too
        why = str(e)
    if why:  # what `janus run --resume` says of it, word for word after the folder's name
        return f"{where} is unfinished and cannot be continued: {why.removeprefix(f'{run_dir}: ')}"
    return f"{where} is unfinished; continue it with: janus run --resume {shlex.quote(str(run_dir))}"


def note(run_dir: str | Path) -> str:
    """The report's line for an unfinished folder it leaves out."""
    return f"not in the report: {describe(run_dir)}"
