"""The write guard's decision record: a folder with ``guard.json`` (the guard's settings and probes) and
``decisions.jsonl`` (one JSON line per decision), written by :class:`~janus_memory.integrations.core.WriteGuard`,
read by :func:`read_record` and printed by ``python -m janus_memory.integrations DIR``.

``decisions.jsonl`` is append-only: a decision whose commit then failed is corrected by an amendment line
(``{"amends": <decision id>, ...}``) that :func:`read_record` applies to the decision it names; no line is rewritten.
Appends take an exclusive ``flock`` of the file (POSIX; elsewhere plain appends), so guards of several processes may
share one record: :func:`append_row` numbers a decision after the record's last when another process took its number.
A line is JSON with UTF-8 kept, except the characters some readers end a line at (U+0085, U+2028, U+2029) and lone
surrogates (not UTF-8), written as ``\\uXXXX``; the reader splits on ``\\n`` only.

A writer killed mid-line (or a full disk) leaves a torn last line without its ``\\n``: the next append starts on a
new line, so the fragment stays a line of its own, and the reader skips a line that is not valid JSON (or not
UTF-8) with one warning naming it. A readable line of the wrong shape (a hand edit: an update number that is not a
whole number from 1 to 10**9, ``writes`` that are not a list of objects ...) is an error naming the file and line.
An amendment may only record a failed commit (``accepted`` false, of a decision that was committed); the reader
refuses any other.
"""
from __future__ import annotations

import json
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any

try:  # the record's appends are locked across processes (POSIX); elsewhere they are plain appends
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

RECORD_FORMAT = "janus-guard/1"
HEADER_FILE = "guard.json"
DECISIONS_FILE = "decisions.jsonl"


def write_header(folder: Path, head: dict) -> None:
    """``guard.json`` (replaced whole: it holds the settings of the guard started last)."""
    folder.mkdir(parents=True, exist_ok=True)
    _atomic_write(folder / HEADER_FILE, json.dumps(head, indent=1, sort_keys=True, default=str) + "\n")


def append_row(path: Path, row: dict, *, known_size: int, renumber: bool) -> tuple[int, int]:
    """Append ``row`` as one line under an exclusive lock of the file. ``renumber``: a ``row["update"]`` not above
    every number in the file is moved after the file's last (read under the lock on every append: a size equal to
    ``known_size``, this writer's last view, did not prove that no other writer took the number). Returns (the
    row's update number, the file's size after the append)."""
    with open(path, "a+b") as f:
        if fcntl is not None:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            size = os.fstat(f.fileno()).st_size
            if renumber and size:  # under the lock, whatever the size: another writer of this file may have
                # taken the number in between, even when the size matches what this writer last saw
                last = _last_update(path)
                if int(row["update"]) <= last:
                    row["update"] = last + 1
            # a torn last line (a writer killed mid-line, a full disk) is ended first: this row is a line of its own
            if size > 0:
                f.seek(size - 1)
            torn = size > 0 and f.read(1) != b"\n"
            f.write((("\n" if torn else "") + _json_line(row) + "\n").encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
            return int(row["update"]), os.fstat(f.fileno()).st_size
        finally:
            if fcntl is not None:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)


# JSON leaves them raw: other readers end a line at the first three; a lone surrogate is not UTF-8
_LINE_BREAKERS = re.compile("[\x85\u2028\u2029\ud800-\udfff]")


def _json_line(row: dict) -> str:
    """One record line: JSON, UTF-8 kept, the characters some readers take for a line end written as escapes."""
    text = json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)
    return _LINE_BREAKERS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_record(folder: str | os.PathLike) -> tuple[dict, list[dict]]:
    """The header and the decisions of a guard's record folder; ValueError naming the file and line when damaged."""
    root = Path(folder)
    head_path, dec_path = root / HEADER_FILE, root / DECISIONS_FILE
    if not head_path.is_file():
        raise ValueError(f"{root} is not a guard record: it has no {HEADER_FILE}")
    try:
        head = json.loads(head_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{head_path} is not valid JSON ({e})") from e
    if not isinstance(head, dict) or head.get("format") != RECORD_FORMAT:
        raise ValueError(f"{head_path} is not a {RECORD_FORMAT} header")
    decisions: list[dict] = []
    by_id: dict[str, dict] = {}
    if dec_path.is_file():
        for i, raw in enumerate(dec_path.read_bytes().split(b"\n"), 1):  # not splitlines: a U+0085 or U+2028
            # inside a string is text, not the end of a line
            if not raw.strip():
                continue
            row = _parse_line(raw, dec_path, i)
            if row is None:
                continue
            if "amends" in row:  # a later correction of a decision above (a commit that failed after it)
                target = by_id.get(row["amends"])
                if target is None:
                    raise ValueError(f"{dec_path} line {i} amends decision {row['amends']!r}, which no line above "
                                     "holds")
                refused = ("this one sets accepted true" if row["accepted"] is not False else
                           f"decision {row['amends']!r} (update {target['update']}) was not committed"
                           if target.get("accepted") is not True else "")
                if refused:
                    raise ValueError(f"{dec_path} line {i}: an amendment may only record a failed commit (accepted "
                                     f"false, of a committed decision); {refused}")
                target.update({k: row[k] for k in ("accepted", "reason", "why") if k in row})
                target["amended"] = True
                continue
            if isinstance(row.get("id"), str):
                by_id[row["id"]] = row
            decisions.append(row)
    return head, decisions


MAX_UPDATE = 10 ** 9  # update numbers and counts beyond this are not a guard's (a hand edit)


def _parse_line(raw: bytes, path: Path, i: int) -> dict | None:
    """One line of ``decisions.jsonl`` checked (module docstring); None, with a warning, for an unreadable one."""
    try:
        row = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        warnings.warn(f"{path} line {i} is not valid UTF-8: a write cut short (a process killed mid-write, a full "
                      "disk)? skipped", UserWarning, stacklevel=3)
        return None
    except json.JSONDecodeError as e:
        warnings.warn(f"{path} line {i} is not valid JSON ({e.msg}): a write cut short (a process killed mid-write, "
                      "a full disk)? skipped", UserWarning, stacklevel=3)
        return None
    if not isinstance(row, dict) or "accepted" not in row or "update" not in row:
        raise ValueError(f"{path} line {i} is not a guard decision")
    bad = _shape_error(row)
    if bad:
        raise ValueError(f"{path} line {i}: {bad}")
    return row


def _count(v: Any, low: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= MAX_UPDATE


def _shape_error(row: dict) -> str:
    """What is wrong with a decision or amendment line's fields ("" when nothing)."""
    if not _count(row["update"], 1):
        return f"'update' must be a whole number from 1 to {MAX_UPDATE}, got {row['update']!r}"
    if not isinstance(row["accepted"], bool):
        return f"'accepted' must be true or false, got {row['accepted']!r}"
    if "amends" in row and not isinstance(row["amends"], str):
        return f"'amends' must be a string, got {row['amends']!r}"
    for k in ("id", "reason", "why", "library", "old_memory_sha256", "new_memory_sha256"):
        if k in row and not isinstance(row[k], str):
            return f"'{k}' must be a string, got {row[k]!r}"
    for k in ("writes", "probes"):
        if k in row and not (isinstance(row[k], list) and all(isinstance(x, dict) for x in row[k])):
            return f"'{k}' must be a list of objects, got {row[k]!r}"
    for w in row.get("writes") or []:
        if not isinstance(w.get("namespace", []), (list, type(None))):
            return f"a write's 'namespace' must be a list, got {w['namespace']!r}"
    for k in ("compared", "answers", "pairs", "budget"):
        if row.get(k) is not None and not _count(row[k], 0):
            return f"'{k}' must be a whole number from 0 to {MAX_UPDATE} or null, got {row[k]!r}"
    for k in ("old_score", "new_score"):
        v = row.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1):
            return f"'{k}' must be a number from 0 to 1 or null, got {v!r}"
    v = row.get("time")
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
        return f"'time' must be a finite number or null, got {v!r}"
    if row.get("controller") is not None and not isinstance(row["controller"], dict):
        return f"'controller' must be an object or null, got {row['controller']!r}"
    return ""


def _last_update(path: Path) -> int:
    """The highest update number in a decisions file (0 when none; unreadable lines are skipped here)."""
    last = 0
    with open(path, "rb") as f:
        for raw in f:
            try:
                n = json.loads(raw.decode("utf-8")).get("update")
            except (UnicodeDecodeError, json.JSONDecodeError, AttributeError):
                continue
            if _count(n, 1):
                last = max(last, n)
    return last
