"""The files of a run folder beside its database, and how each is checked against it (docs/run-folder.md).

``run.sqlite`` is the truth. Every other file a run writes is written from it, and `janus report` checks each one
before it reports a folder marked COMPLETE (integrity.problems); `janus run --resume` rewrites what differs:

==========================  ==============================================================================
file                        checked against the database
==========================  ==============================================================================
config.json                 the stored config, value for value (``preset_summary`` is derived, not checked);
                            an edited one is refused, by the report and the resume alike (:func:`config_edit`)
config.yaml                 the same values, read back as YAML
splits.json                 the stored splits, value for value
environment.json            the stored environment, value for value
prompts/*                   the stored prompt texts, byte for byte, and no other file (store format 5 folders
                            set up from this version on; older ones store no prompts: not checked)
summary.json                the stored summary (else the methods' stored results)
<method>/*.jsonl            the step and test rows, byte for byte (integrity.py)
<method>/final_memory.txt   the result's sha256, of the bytes
<method>/memories/*         one file per stored version, the sha256 of its bytes; no other memory file
==========================  ==============================================================================

Only records, never read back by janus: ``report/``, ``view.html``, a grid cell's ``cell.json`` and ``sweep.log``,
and any file of yours beside them. A folder without ``run.sqlite`` has nothing to be checked against: `janus report`
refuses it (finder.scan_run_dirs).
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

from ..errors import RunFolderError
from .reader import RunReader

JSON_RECORDS = (("splits.json", "splits"), ("environment.json", "environment"))
MEMORY_FILE = re.compile(r"^\d{5,}_[0-9a-f]{12}\.txt$")


def file_sha(path: Path) -> str:
    """sha256 of a file's bytes as written (read as text, a model's CRLF would be translated to LF and not match)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def same_bytes(path: Path, expected: bytes) -> bool:
    """Whether the file holds exactly ``expected`` (its size is compared first: a huge file is not read)."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(expected):
            return False
        return path.read_bytes() == expected
    except OSError:
        return False


def config_diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    """``key: old -> new`` lines for every differing (nested) key, sorted by key."""
    out = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k), b.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += config_diff(va, vb, prefix + k + ".")
        elif va != vb:
            out.append(f"{prefix}{k}: {va!r} -> {vb!r}")
    return out


def _without_summary(value):
    return {k: v for k, v in value.items() if k != "preset_summary"} if isinstance(value, dict) else value


def config_edit(root: str | Path) -> str | None:
    """The one line `janus run --resume` refuses with, and `janus report` names, when config.json differs from the
    config stored in run.sqlite (a user who edits it may think the resume will run the new settings; it never
    does). None when it matches or is absent (a missing config.json is written back by the resume)."""
    from .jsonio import dumps

    reader = RunReader(root)
    stored = reader.meta("config")
    if stored is None:
        return None
    try:
        on_disk = reader.json_file("config.json")
    except RunFolderError:  # not JSON: an edit like any other
        on_disk = "not JSON"
    if on_disk is None:
        return None
    on_disk = _without_summary(on_disk)
    if isinstance(on_disk, dict) and dumps(on_disk) == dumps(stored):
        return None
    diff = config_diff(stored, on_disk) if isinstance(on_disk, dict) else ["not a JSON object"]
    what = ("; ".join(diff[:3]) + (f"; +{len(diff) - 3} more" if len(diff) > 3 else "") if diff
            else "a value's type changed")
    return (f"{reader.root / 'config.json'} was edited after the run started ({what}); the run's config is the one "
            f"stored in run.sqlite: delete config.json and run `janus run --resume {root}` (it writes the file back "
            "from run.sqlite), or start a new run with --config")


def _yaml_value(path: Path):
    from ..settings.yaml_load import load_unique, read_settings_text

    return load_unique(read_settings_text(path, "config.yaml"))


def stored_prompts(reader: RunReader) -> dict[str, str] | None:
    """The prompt texts stored with the run's settings (None: set up before they were stored)."""
    value = reader.meta("prompts")
    return value if isinstance(value, dict) else None


def record_problems(reader: RunReader) -> list[str]:
    """What differs between the provenance files and the database (config.json itself: :func:`config_edit`)."""
    from .jsonio import dumps

    out = []
    stored = reader.meta("config")
    if stored is not None:
        if not (reader.root / "config.json").is_file():
            out.append("config.json is missing")
        if not (reader.root / "config.yaml").is_file():
            out.append("config.yaml is missing")
        else:
            try:
                same = dumps(_without_summary(_yaml_value(reader.root / "config.yaml"))) == dumps(stored)
            except Exception:  # noqa: BLE001 - unreadable, not YAML, too large: it differs
                same = False
            if not same:
                out.append("config.yaml differs from the database")
    for name, key in JSON_RECORDS:
        value = reader.meta(key)
        if value is None:
            continue
        try:
            file_value = reader.json_file(name)
        except RunFolderError:  # not JSON
            file_value = "not JSON"
        if file_value is None:
            out.append(f"{name} is missing")
        elif dumps(value) != dumps(file_value):
            out.append(f"{name} differs from the database")
    prompts = stored_prompts(reader)
    if prompts is not None:
        folder = reader.root / "prompts"
        for name, text in sorted(prompts.items()):
            p = folder / name
            if not p.is_file():
                out.append(f"prompts/{name} is missing")
            elif not same_bytes(p, text.encode("utf-8")):
                out.append(f"prompts/{name} differs from the database")
        extra = sorted(p.name for p in folder.iterdir() if p.name not in prompts) if folder.is_dir() else []
        if extra:
            out.append(f"prompts/{extra[0]} is not one of the run's prompts"
                       + (f" (+{len(extra) - 1} more)" if len(extra) > 1 else ""))
    return out


def extra_memory_files(root: Path, method: str, versions: list[dict]) -> list[Path]:
    """Files in ``<method>/memories/`` named like a memory version that is not one of the stored ``versions`` (a
    reader without the database would take them for one)."""
    folder = root / method / "memories"
    if not folder.is_dir():
        return []
    want = {f"{v['step']:05d}_{v['sha256'][:12]}.txt" for v in versions}
    return sorted(p for p in folder.iterdir() if MEMORY_FILE.match(p.name) and p.name not in want)


FILES = ("config.json", "config.yaml", "splits.json", "environment.json", "summary.json", "COMPLETE")
METHOD_FILES = ("decisions.jsonl", "steps.jsonl", "test.jsonl", "final_memory.txt")


def _kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a file")


def misplaced(root: str | Path, methods: list[str]) -> str | None:
    """The line naming a path where the run writes a file (or a folder) that holds something of another kind: a
    folder or a FIFO named summary.json, a file named memories. A resume would fail to write there, and replacing it
    could destroy what it holds: it is moved away by you, then the resume writes the file again. None: none."""
    root = Path(root).expanduser()
    want: dict[str, bool] = {name: False for name in FILES}  # path -> whether a folder belongs there
    want["prompts"] = True
    for method in methods:
        want[method] = want[f"{method}/memories"] = True
        want.update({f"{method}/{name}": False for name in METHOD_FILES})
    for rel, folder in want.items():
        try:
            mode = os.lstat(root / rel).st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode) or stat.S_ISDIR(mode) == folder and (folder or stat.S_ISREG(mode)):
            continue
        what = "folder" if folder else "file"
        return (f"{root / rel} is {_kind(mode)}, not the {what} the run writes there: move it out of the folder, then "
                f"run `janus run --resume {root}` (it writes the {what} again)")
    return None
