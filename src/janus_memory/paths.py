"""Paths given by the user (options, config keys) checked before anything is created (issue 28): a name or a whole
path longer than the file system allows, a symlink loop, a NUL byte. Each gives one line naming the path (shortened)
instead of an OSError traceback from deep inside a run or a report."""
from __future__ import annotations

import errno
import os


def _shown(text: str) -> str:
    return text if len(text) <= 60 else f"{text[:28]}...{text[-24:]} ({len(text)} characters)"


def _limits(path: str) -> tuple[int, int]:
    """(NAME_MAX, PATH_MAX) of the file system holding ``path``'s nearest existing folder (255, 4096 if unknown)."""
    d = os.path.dirname(os.path.abspath(path)) or "/"
    while d and not os.path.isdir(d) and d != os.path.dirname(d):
        d = os.path.dirname(d)
    try:
        return os.pathconf(d, "PC_NAME_MAX"), os.pathconf(d, "PC_PATH_MAX")
    except (OSError, ValueError):
        return 255, 4096


def check_path(text: str) -> str:
    """``text`` unchanged when it can name a file here; ValueError (one line) otherwise. An empty text names no path
    (``--out ""`` is an unset variable, not the current folder)."""
    if not text.strip():
        raise ValueError("expected a path, got an empty text")
    if "\0" in text:
        raise ValueError(f"the path {_shown(text)!r} holds a NUL byte")
    path = os.path.expanduser(text)
    name_max, path_max = _limits(path)
    for part in path.split(os.sep):
        if len(os.fsencode(part)) > name_max:
            raise ValueError(f"the path {_shown(text)} holds a name of {len(os.fsencode(part))} bytes; this file "
                             f"system allows {name_max}")
    if len(os.fsencode(os.path.abspath(path))) >= path_max:
        raise ValueError(f"the path {_shown(text)} is {len(os.fsencode(os.path.abspath(path)))} bytes long; this file "
                         f"system allows {path_max - 1}")
    try:
        os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ValueError(f"{_shown(text)} is a symlink loop (it never reaches a file or folder)") from None
        if e.errno == errno.ENAMETOOLONG:
            raise ValueError(f"the path {_shown(text)} is longer than this file system allows") from None
    except ValueError:
        raise ValueError(f"the path {_shown(text)!r} is not valid") from None
    return text
