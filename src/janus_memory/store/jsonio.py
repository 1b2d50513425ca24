"""Canonical JSON and atomic file writes used by the run folder (store.py) and its checkpoint log (ckpt_log.py)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def dumps(obj: Any) -> str:
    """Canonical JSON used for every stored record (sorted keys, so exports are byte-stable). A lone surrogate in a
    string (which UTF-8 cannot hold) is written as its JSON escape, so the line reads back to the same value (model
    text arrives with its surrogates already escaped as visible text: errors.escape_lone_surrogates)."""
    out = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=_json_default)
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", out) if _LONE.search(out) else out


_LONE = re.compile("[\ud800-\udfff]")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temp file renamed into place. A path that exists and is not a regular
    file (a device such as /dev/null, a pipe, a socket) is refused with OSError(EINVAL): renaming over it would
    replace the device node itself, which as root breaks the machine (found when `--out /dev/null` was tried)."""
    import errno
    import stat

    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise OSError(errno.EINVAL, "exists and is not a regular file (a device, pipe or socket is never replaced)",
                      str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            # mkstemp makes the temp file 0600; the file it becomes gets the mode a plain open() would give it (the
            # umask's), or keeps the mode of the file it replaces, so run folders can be shared as the user expects
            os.fchmod(f.fileno(), stat.S_IMODE(mode) if mode is not None and stat.S_ISREG(mode) else 0o666 & ~_umask())
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask() -> int:
    """The process's umask, read without changing it (Linux: /proc/self/status; elsewhere set and restored at once)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    u = os.umask(0o022)
    os.umask(u)
    return u


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, default=_json_default) + "\n")


def _json_default(o: Any):
    import dataclasses

    import numpy as np

    from ..rows import RowsRef

    if isinstance(o, RowsRef):  # an embedding matrix by reference (the store writes its rows; here: the plain form)
        return o.encode()
    if dataclasses.is_dataclass(o):
        return dataclasses.asdict(o)  # type: ignore[arg-type]  # an instance: classes are not stored
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer, np.bool_)):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON-serialisable: {type(o).__name__}")
