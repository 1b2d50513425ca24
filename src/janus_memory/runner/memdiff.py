"""Diff two deployed memory versions of a finished (or unfinished) run: ``janus memory diff DIR STEP_A STEP_B``.

The run folder keeps every deployed memory version (runner/store.py): the SQLite table ``memories(method, step, sha256,
parent, text)`` and the files ``<method>/memories/SSSSS_<sha12>.txt`` (SSSSS = the stream step at which that version was
deployed, 00000 = the initial memory). The memory deployed *at* step s is the latest version whose step is <= s
(paper-spec §1.2: after step s the deployed memory is M_s).
"""
from __future__ import annotations

import difflib
import hashlib
import json
import re
import sqlite3
from pathlib import Path

_FILE_RE = re.compile(r"^(\d{5,})_([0-9a-f]{12})\.txt$")


# texts an updater may start from (updaters/base.py EMPTY_MEMORY); the store keeps versions from step 1 on, so the
# initial memory is recovered from step 1's old_memory_sha256 when it is one of these
_INITIAL_TEXTS = ("(empty)", "")


def _add_initial(versions: dict[str, list[dict]], method: str, sha: str | None) -> None:
    v = versions.setdefault(method, [])
    if not sha or any(r["step"] == 0 for r in v):
        return
    for text in _INITIAL_TEXTS:
        if hashlib.sha256(text.encode("utf-8")).hexdigest() == sha:
            v.insert(0, {"step": 0, "sha256": sha, "text": text})
            return


def _read_versions_sqlite(db: Path) -> tuple[dict[str, list[dict]], dict[str, int]]:
    """{method: [{step, sha256, text}] sorted by step}, {method: last committed stream step}."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        versions: dict[str, list[dict]] = {}
        for method, step, sha, text in con.execute("SELECT method, step, sha256, text FROM memories ORDER BY method, step"):
            versions.setdefault(method, []).append({"step": int(step), "sha256": sha, "text": text})
        last = {m: int(s) for m, s in con.execute("SELECT method, MAX(step) FROM steps GROUP BY method")}
        for method, dec in con.execute("SELECT method, decision FROM steps WHERE step=1"):
            _add_initial(versions, method, json.loads(dec).get("old_memory_sha256"))
    finally:
        con.close()
    return versions, last


def _read_versions_files(run: Path) -> tuple[dict[str, list[dict]], dict[str, int]]:
    """Fallback when run.sqlite is absent: the exported memory files and decisions.jsonl."""
    versions: dict[str, list[dict]] = {}
    last: dict[str, int] = {}
    for mem_dir in sorted(run.glob("*/memories")):
        method = mem_dir.parent.name
        for f in sorted(mem_dir.iterdir()):
            m = _FILE_RE.match(f.name)
            if m:
                versions.setdefault(method, []).append(
                    {"step": int(m.group(1)), "sha256": m.group(2), "text": f.read_text(encoding="utf-8")})
        dec = mem_dir.parent / "decisions.jsonl"
        if dec.exists():
            steps = [json.loads(line)["step"] for line in dec.read_text(encoding="utf-8").splitlines() if line.strip()]
            if steps:
                last[method] = max(steps)
                first = json.loads(dec.read_text(encoding="utf-8").splitlines()[0])
                if first.get("step") == 1:
                    _add_initial(versions, method, first.get("old_memory_sha256"))
    for v in versions.values():
        v.sort(key=lambda r: r["step"])
    return versions, last


def memory_versions(run_dir: str | Path) -> tuple[dict[str, list[dict]], dict[str, int]]:
    """All deployed memory versions per method and each method's last stream step.

    Returns ``({method: [{"step", "sha256", "text"}, ...]}, {method: last_step})``; versions are sorted by step.

    Raises:
        ValueError: ``run_dir`` is not a run folder (neither run.sqlite nor memory files).
    """
    run = Path(run_dir).expanduser()
    if not run.is_dir():
        raise ValueError(f"{run} is not a folder")
    db = run / "run.sqlite"
    if db.exists():
        versions, last = _read_versions_sqlite(db)
    else:
        versions, last = _read_versions_files(run)
    if not versions:
        raise ValueError(f"{run} is not a run folder (no run.sqlite and no <method>/memories/*.txt)")
    for method, v in versions.items():
        last.setdefault(method, v[-1]["step"])
    return versions, last


def _pick_method(versions: dict, method: str | None) -> str:
    names = sorted(versions)
    if method is None:
        if len(names) == 1:
            return names[0]
        janus = [n for n in names if n.endswith("+janus")]
        if len(janus) == 1:
            return janus[0]
        raise ValueError(f"the run holds several methods ({', '.join(names)}); choose one with method=")
    if method not in versions:
        raise ValueError(f"unknown method '{method}' in this run; choose one of: {', '.join(names)}")
    return method


def memory_at(versions: list[dict], step: int) -> dict:
    """The version deployed at ``step``: the latest version with version step <= ``step``."""
    best = None
    for v in versions:
        if v["step"] <= step:
            best = v
        else:
            break
    if best is None:
        raise ValueError(f"the memory deployed at step {step} is not stored in this run (first stored version: step "
                         f"{versions[0]['step'] if versions else '?'})")
    return best


def memory_diff(run_dir: str | Path, step_a: int, step_b: int, method: str | None = None, *, context: int = 3) -> str:
    """Unified diff (``difflib``) from the memory deployed at ``step_a`` to the one deployed at ``step_b``.

    Steps are stream steps: 0 = the initial memory, 1..N = after that stream step (N = the method's last committed step).
    ``method`` is a method name of the run ("dc_rs", "dc_rs+janus", ...); None picks the only method, or the single
    "+janus" method when the run holds a base/Janus pair. The header lines name the method, the steps, the step at which
    each version was deployed and its sha256 prefix. Identical versions give a one-line "no change" message.

    Raises:
        ValueError: not a run folder, unknown/ambiguous method, a step that is not an int or is outside 0..N.
    """
    versions, last = memory_versions(run_dir)
    m = _pick_method(versions, method)
    n = last[m]
    for name, s in (("step_a", step_a), ("step_b", step_b)):
        if isinstance(s, bool) or not isinstance(s, int):
            raise ValueError(f"{name} must be an integer stream step, got {s!r}")
        if not 0 <= s <= n:
            raise ValueError(f"{name}={s} is out of range for method '{m}': steps run from 0 (initial memory) to {n}")
    va, vb = memory_at(versions[m], step_a), memory_at(versions[m], step_b)
    label_a = f"{m}@step{step_a} (deployed at step {va['step']}, sha256 {va['sha256'][:12]})"
    label_b = f"{m}@step{step_b} (deployed at step {vb['step']}, sha256 {vb['sha256'][:12]})"
    if va["sha256"] == vb["sha256"]:
        return f"no change: {label_a} and {label_b} are the same memory version\n"
    lines = difflib.unified_diff(va["text"].splitlines(keepends=True), vb["text"].splitlines(keepends=True),
                                 fromfile=label_a, tofile=label_b, n=context)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
