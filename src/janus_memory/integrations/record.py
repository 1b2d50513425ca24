"""The write guard's decision record: a folder with ``guard.json`` (the guard's settings and probes) and
``decisions.jsonl`` (one JSON line per decision), written by :class:`~janus_memory.integrations.core.WriteGuard`,
read by :func:`read_record` and printed by ``python -m janus_memory.integrations DIR``.

``decisions.jsonl`` is append-only: a decision whose commit then failed is corrected by an amendment line
(``{"amends": <decision id>, ...}``) that :func:`read_record` applies to the decision it names; no line is rewritten.
Appends take an exclusive ``flock`` of the file (POSIX; elsewhere plain appends), so guards of several processes may
share one record: :func:`append_row` numbers a decision after the record's last when another process took its number.
A line is JSON with UTF-8 kept, except the characters some readers end a line at (U+0085, U+2028, U+2029), written
as ``\\uXXXX``; the reader splits on ``\\n`` only.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

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
    """Append ``row`` as one line under an exclusive lock of the file. ``renumber``: when the file is no longer
    ``known_size`` bytes (another process appended since this writer's last line, or this writer just started),
    a ``row["update"]`` already in the file is moved after the file's last. Returns (the row's update number, the
    file's size after the append)."""
    with open(path, "a", encoding="utf-8") as f:
        if fcntl is not None:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            if renumber and os.fstat(f.fileno()).st_size != known_size:
                last = _last_update(path)
                if int(row["update"]) <= last:
                    row["update"] = last + 1
            f.write(_json_line(row) + "\n")
            f.flush()
            os.fsync(f.fileno())
            return int(row["update"]), os.fstat(f.fileno()).st_size
        finally:
            if fcntl is not None:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)


_LINE_BREAKERS = re.compile("[\x85\u2028\u2029]")  # JSON leaves them raw; other readers end a line at them


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
        for i, line in enumerate(dec_path.read_text(encoding="utf-8").split("\n"), 1):  # not splitlines: a
            # U+0085 or U+2028 inside a string is text, not the end of a line
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{dec_path} line {i} is not valid JSON ({e.msg}); a write cut short? remove the "
                                 "line to read the rest") from e
            if not isinstance(row, dict) or "accepted" not in row or "update" not in row:
                raise ValueError(f"{dec_path} line {i} is not a guard decision")
            if "amends" in row:  # a later correction of a decision above (a commit that failed after it)
                target = by_id.get(str(row["amends"]))
                if target is None:
                    raise ValueError(f"{dec_path} line {i} amends decision {row['amends']!r}, which no line above "
                                     "holds")
                target.update({k: row[k] for k in ("accepted", "reason", "why") if k in row})
                target["amended"] = True
                continue
            if isinstance(row.get("id"), str):
                by_id[row["id"]] = row
            decisions.append(row)
    return head, decisions


def _last_update(path: Path) -> int:
    """The highest update number in a decisions file (0 when none; damaged lines are skipped here)."""
    last = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
                last = max(last, int(row.get("update", 0)))
            except (json.JSONDecodeError, TypeError, ValueError, AttributeError):
                continue
    return last
