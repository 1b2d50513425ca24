"""Diff two deployed memory versions of a finished (or unfinished) run: ``janus memory diff DIR STEP_A STEP_B``.

The run folder keeps every deployed memory version (store/store.py): a row of the SQLite table ``memories(method,
step, sha256, parent, text)`` per version (from store format 3 the text itself is stored once, as a delta, in table
``texts``: RunReader reads it back and checks its sha256, store/texts.py) and the files
``<method>/memories/SSSSS_<sha12>.txt`` (SSSSS = the stream step at which that version was deployed, 00000 = the
initial memory). The memory deployed *at* step s is the latest version whose step is <= s
(paper-spec §1.2: after step s the deployed memory is M_s).
"""
from __future__ import annotations

import difflib
import re
import hashlib
from pathlib import Path

from ..errors import RunFolderError
from ..store.reader import RunReader


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


def memory_versions(run_dir: str | Path) -> tuple[dict[str, list[dict]], dict[str, int]]:
    """All deployed memory versions per method and each method's last stream step.

    Returns ``({method: [{"step", "sha256", "text"}, ...]}, {method: last_step})``; versions are sorted by step.

    Raises:
        ValueError: ``run_dir`` is not a run folder (neither run.sqlite nor memory files).
    """
    run = Path(run_dir).expanduser()
    if not run.is_dir():
        raise RunFolderError(f"{run} is not a folder")
    versions, last, first = RunReader(run).memory_versions()
    for method, sha in first.items():
        _add_initial(versions, method, sha)
    if not versions:
        raise RunFolderError(f"{run} is not a run folder (no run.sqlite and no <method>/memories/*.txt)")
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
        raise RunFolderError(f"the run holds several methods ({', '.join(names)}); choose one with method=")
    if method not in versions:
        raise RunFolderError(f"unknown method '{method}' in this run; choose one of: {', '.join(names)}")
    return method


def _lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of a memory text, ending at "\n" only (str.splitlines would also end one at a \r, \x1c or U+2028
    that a model wrote inside it, and the diff would show lines the text does not have)."""
    lines = re.findall(r"[^\n]*\n|[^\n]+$", text)
    return lines if keepends else [x[:-1] if x.endswith("\n") else x for x in lines]


def memory_at(versions: list[dict], step: int) -> dict:
    """The version deployed at ``step``: the latest version with version step <= ``step``."""
    best = None
    for v in versions:
        if v["step"] <= step:
            best = v
        else:
            break
    if best is None:
        raise RunFolderError(f"the memory deployed at step {step} is not stored in this run (first stored version: step "
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
            raise RunFolderError(f"{name} must be an integer stream step, got {s!r}")
        if not 0 <= s <= n:
            raise RunFolderError(f"{name}={s} is out of range for method '{m}': steps run from 0 (initial memory) to {n}")
    va, vb = memory_at(versions[m], step_a), memory_at(versions[m], step_b)
    label_a = f"{m}@step{step_a} (deployed at step {va['step']}, sha256 {va['sha256'][:12]})"
    label_b = f"{m}@step{step_b} (deployed at step {vb['step']}, sha256 {vb['sha256'][:12]})"
    if va["sha256"] == vb["sha256"]:
        return f"no change: {label_a} and {label_b} are the same memory version\n"
    lines = difflib.unified_diff(_lines(va["text"], keepends=True), _lines(vb["text"], keepends=True),
                                 fromfile=label_a, tofile=label_b, n=context)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def line_diff(old: str, new: str, *, context: int = 3, max_lines: int | None = None) -> tuple[list[list[str]], int]:
    """The line diff from ``old`` to ``new`` as ``[[tag, text], ...]``, for views that draw it themselves (`janus view`):
    tag ``"@"`` a hunk header (``-a,b +c,d`` as in a unified diff), ``" "`` a context line, ``"-"`` a removed and ``"+"``
    an added line; texts without their line ends. The hunks are difflib's, as in :func:`memory_diff` (``context``
    lines around each change). Returns ``(lines, cut)``: at most ``max_lines`` lines and how many more were left out
    (0 when none). Equal texts give ``([], 0)``."""
    a, b = _lines(old), _lines(new)
    out: list[list[str]] = []
    total = 0
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(context):
        (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
        hunk = [["@", f"-{_span(i1, i2)} +{_span(j1, j2)}"]]
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                hunk += [[" ", line] for line in a[x1:x2]]
                continue
            hunk += [["-", line] for line in a[x1:x2]] + [["+", line] for line in b[y1:y2]]
        total += len(hunk)
        if max_lines is None or len(out) < max_lines:
            out += hunk
    if max_lines is not None and len(out) > max_lines:
        out = out[:max_lines]
    return out, total - len(out)


def _span(start: int, stop: int) -> str:
    """A unified diff's range: 1-based start and length (``3,0`` for an empty range after line 3)."""
    n = stop - start
    return f"{start + 1}" if n == 1 else f"{start + 1 if n else start},{n}"


def cross_method_diff(run_dir: str | Path, step: int, methods: tuple[str, str], *, context: int = 3) -> str:
    """Diff of the memories two methods of one run deployed at the same stream ``step``, e.g. ("dc_rs", "dc_rs+janus").

    The first lines count what the second method kept out (lines of the first method's memory it does not hold) and
    what it holds that the first does not; then the unified diff from the first to the second.

    Raises:
        RunFolderError: not a run folder, unknown method, a step outside 0..N of either method.
    """
    from collections import Counter

    versions, last = memory_versions(run_dir)
    a, b = (_pick_method(versions, m) for m in methods)
    if isinstance(step, bool) or not isinstance(step, int):
        raise RunFolderError(f"step must be an integer stream step, got {step!r}")
    n = min(last[a], last[b])
    if not 0 <= step <= n:
        raise RunFolderError(f"step={step} is out of range: both methods have steps 0 (initial memory) to {n}")
    va, vb = memory_at(versions[a], step), memory_at(versions[b], step)
    la, lb = _lines(va["text"]), _lines(vb["text"])
    out_only = sum((Counter(la) - Counter(lb)).values())
    in_only = sum((Counter(lb) - Counter(la)).values())
    head = (f"memory at step {step}: {a} ({len(la)} lines, sha256 {va['sha256'][:12]}) vs {b} ({len(lb)} lines, "
            f"sha256 {vb['sha256'][:12]})\n{b} kept out {out_only} line(s) of {a}'s memory and holds {in_only} line(s) "
            f"{a}'s memory does not\n")
    if va["sha256"] == vb["sha256"]:
        return head + "the two memories are identical\n"
    lines = difflib.unified_diff([x + "\n" for x in la], [x + "\n" for x in lb],
                                 fromfile=f"{a}@step{step} (deployed at step {va['step']})",
                                 tofile=f"{b}@step{step} (deployed at step {vb['step']})", n=context)
    return head + "".join(lines)
