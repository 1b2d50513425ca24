"""Data-folder resolution, reading the (possibly compressed) data files, file hashing and the seeded shuffles that
define the paper's splits.

Where the benchmark data is read from (docs/tasks.md, "Where data comes from"):
1. the explicit ``data_dir`` argument (the CLI's ``--data-dir``);
2. the ``JANUS_DATA_DIR`` environment variable;
3. the copy shipped inside the package (``tasks/shipped/<dataset>/``: xz-compressed files, each folder with a
   SOURCE.md giving the source, the licence and the sha256 of every file uncompressed, checked on every read).

A data folder has the shipped layout (``gsm8k/test.jsonl``, ``aime/aime24.jsonl``, ...); each file may be plain or
compressed (``<name>.xz``, ``<name>.gz``). Dataset-specific user files (not shipped): ``JANUS_MATH_TRAIN_PATH``
(Hendrycks MATH train) and ``JANUS_GPQA_PATH`` (the GPQA CSV files).
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import lzma
import os
import random
import re
import zlib
from pathlib import Path
from typing import Any, Iterable

from ..errors import ConfigError

ENV_DATA_DIR = "JANUS_DATA_DIR"
ENV_MATH_TRAIN = "JANUS_MATH_TRAIN_PATH"
ENV_GPQA = "JANUS_GPQA_PATH"

#: the benchmark data inside the package (tasks/shipped/README.md)
SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"
#: compressed forms a data file may take, tried in this order after the plain name
COMPRESSED_SUFFIXES = (".xz", ".gz")
_REINSTALL = "reinstall janus-memory, or pass --data-dir to a folder holding the file"


class DataFileError(ConfigError):
    """A data file that cannot be used: damaged compressed data, or bytes whose sha256 is not the one its SOURCE.md
    lists. One line naming the file and the fix."""


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The data folder to read: the explicit argument, else ``JANUS_DATA_DIR``, else the copy shipped in the package.

    Raises FileNotFoundError naming the folder and the fix when the one chosen does not exist."""
    if data_dir is not None:
        p = Path(data_dir).expanduser()
        if not p.is_dir():
            raise FileNotFoundError(f"data dir {p} {_not_a_folder(p)} (fix: pass an existing --data-dir, or leave it "
                                    "out to use the data shipped in the package)")
        return p.resolve()
    env = os.environ.get(ENV_DATA_DIR)
    if env:
        p = Path(env).expanduser()
        if not p.is_dir():
            raise FileNotFoundError(f"{ENV_DATA_DIR}={env} {_not_a_folder(p)} (fix: point it at a folder holding "
                                    f"gsm8k/, math500/, ..., or unset {ENV_DATA_DIR} to use the data shipped in the "
                                    "package)")
        return p.resolve()
    if not SHIPPED_DIR.is_dir():
        raise FileNotFoundError(f"the data shipped in the package is missing ({SHIPPED_DIR}); fix: {_REINSTALL}")
    return SHIPPED_DIR


def _not_a_folder(p: Path) -> str:
    return "is not a folder" if p.exists() else "does not exist"


def data_source(data_dir: str | os.PathLike | None = None) -> str:
    """Which data folder :func:`resolve_data_dir` picks, in words: ``--data-dir``, ``JANUS_DATA_DIR`` or
    ``shipped``."""
    if data_dir is not None:
        return "--data-dir"
    return ENV_DATA_DIR if os.environ.get(ENV_DATA_DIR) else "shipped"


def missing_fix(data_dir, rel: str) -> str:
    """The fix to print when ``rel`` is absent from the data folder :func:`resolve_data_dir` picked."""
    where = data_source(data_dir)
    if where == "--data-dir":
        return (f"pass a --data-dir holding {rel} (plain, .xz or .gz), or leave --data-dir out to use the data "
                "shipped in the package")
    if where == ENV_DATA_DIR:
        return (f"put {rel} (plain, .xz or .gz) in the folder {ENV_DATA_DIR} names, or unset {ENV_DATA_DIR} to use "
                "the data shipped in the package")
    return f"the package's shipped data lacks it: {_REINSTALL}"


def require_file(path: Path, what: str, fix: str) -> Path:
    """``path`` if it is a file, else its compressed form (``path.xz``, ``path.gz``) if that is; else
    FileNotFoundError naming the path and the fix."""
    if path.is_file():
        return path
    for suffix in COMPRESSED_SUFFIXES:
        packed = path.with_name(path.name + suffix)
        if packed.is_file():
            return packed
    raise FileNotFoundError(f"{what} not found at {path} (fix: {fix})")


def find_source(data_dir, rel: str, what: str) -> Path:
    """A dataset file ``rel`` (e.g. ``gsm8k/test.jsonl``) in the data folder :func:`resolve_data_dir` picks, plain or
    compressed. Raises FileNotFoundError naming the path tried and the fix."""
    return require_file(resolve_data_dir(data_dir) / rel, what, missing_fix(data_dir, rel))


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# SOURCE.md's table of files: a header row, a separator, then one row per file:
# | `name.xz` | `<sha256 of the uncompressed file>` | <bytes uncompressed> | ...
_TABLE_HEAD = re.compile(r"^\|\s*file\s*\|\s*sha256 of the uncompressed file\s*\|\s*bytes\s*\|")
_ROW = re.compile(r"^\|\s*`([^`/\\]+)`\s*\|\s*`([0-9a-fA-F]{64})`\s*\|\s*(\d+)\s*\|")
_SEPARATOR = re.compile(r"^\|[\s:|-]+\|?$")
_ROW_LIKE = re.compile(r"^\|\s*`[^`]*`\s*\|\s*`")  # a backticked name, then a backticked value: a file row
_IDENTITY: dict[tuple[str, int, int], tuple[str, int]] = {}  # (path, mtime_ns, size) -> (sha256, bytes) unpacked


def _source_fix(folder: Path) -> str:
    if _in_shipped(folder):
        return _REINSTALL
    return ("correct it (a table headed | file | sha256 of the uncompressed file | bytes |, one row per data file), "
            "or delete it to read the folder's files unchecked")


def _in_shipped(p: Path) -> bool:
    try:
        return Path(p).resolve().is_relative_to(SHIPPED_DIR)
    except OSError:
        return False


def listed_checksums(folder: str | os.PathLike) -> dict[str, tuple[str, int]]:
    """``{file name: (sha256, bytes)}`` of the uncompressed files the SOURCE.md in ``folder`` lists (its table of
    files; the sha256 in lower case); empty when there is no SOURCE.md.

    Read strictly: a SOURCE.md that is not a readable UTF-8 file, has no table of files, a row of that table that is
    not ``| `name` | `<64 hex digits>` | <bytes> |``, or two rows for one file (``x.jsonl`` and ``x.jsonl.xz`` are
    one file) raises :class:`DataFileError`, one line naming it and the fix: its checks are never skipped."""
    folder = Path(folder)
    sm = folder / "SOURCE.md"
    if not os.path.lexists(sm):
        return {}
    fix = _source_fix(folder)
    try:
        text = sm.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataFileError(f"{sm}: not UTF-8 text (byte offset {e.start}), so the files it lists cannot be checked; "
                            f"fix: {fix}") from None
    except OSError as e:
        raise DataFileError(f"{sm}: cannot be read ({e.strerror or e}), so the files beside it cannot be checked; "
                            f"fix: {fix}") from None
    out: dict[str, tuple[str, int]] = {}
    first: dict[str, int] = {}
    in_table = found = False
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if _TABLE_HEAD.match(line):
            in_table = found = True
            continue
        if in_table and not line.startswith("|"):
            in_table = False
        if not in_table and not _ROW_LIKE.match(line):  # a file row outside the table (appended) counts too
            continue
        if _SEPARATOR.match(line):
            continue
        m = _ROW.match(line)
        if m is None:
            raise DataFileError(f"{sm}:{n}: a row of its table of files must read | `name` | `<sha256: 64 hex "
                                f"digits>` | <bytes> |, got {line[:70]!r}; fix: {fix}")
        name, key = m.group(1), _logical(m.group(1))
        if key in first:
            raise DataFileError(f"{sm}:{n}: a second row for {key} (the first is line {first[key]}): which one holds "
                                f"cannot be told; fix: {fix}")
        first[key] = n
        out[name] = (m.group(2).lower(), int(m.group(3)))
    if not found:
        raise DataFileError(f"{sm}: has no table of files (a row | file | sha256 of the uncompressed file | bytes | "
                            f"and one row per file), so the files beside it cannot be checked; fix: {fix}")
    return out


def _logical(name: str) -> str:
    """A data file's name without its compression suffix: ``test.jsonl.xz``, ``test.jsonl.gz`` and ``test.jsonl``
    hold the same data."""
    for suffix in COMPRESSED_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def read_data_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of a data file, uncompressed when its name ends in .xz or .gz. When a SOURCE.md is beside it, the
    sha256 and size of those bytes must be the ones it lists for the file, whatever the file's compression (a plain
    ``test.jsonl`` or a ``test.jsonl.gz`` beside a listed ``test.jsonl.xz`` is checked against that row); a file it
    does not list is refused. A folder without SOURCE.md is the user's own and is read unchecked (the package's own
    copy always has one).

    Raises :class:`DataFileError` (one line naming the file and the fix) for compressed data that is cut short or
    corrupt, bytes that differ from the listed ones, a file its SOURCE.md does not list, and a SOURCE.md that cannot
    be read strictly (:func:`listed_checksums`)."""
    path = Path(path)
    listing = listed_checksums(path.parent)  # first: an unusable SOURCE.md is refused before the data is read
    if not listing and _in_shipped(path.parent):
        raise DataFileError(f"{path.parent / 'SOURCE.md'} is missing from the package's data, so {path.name} cannot "
                            f"be checked; fix: {_REINSTALL}")
    kind = {".xz": "xz", ".gz": "gzip"}.get(path.suffix)
    try:
        if kind is None:
            data = path.read_bytes()
        else:
            with (lzma.open(path) if kind == "xz" else gzip.open(path)) as f:
                data = f.read()
    except EOFError:
        raise DataFileError(f"{path}: the {kind} data is cut short (the file ends before its end-of-stream mark); "
                            f"fix: {_REINSTALL}") from None
    except (lzma.LZMAError, gzip.BadGzipFile, zlib.error) as e:
        raise DataFileError(f"{path}: not readable {kind} data ({e}); fix: {_REINSTALL}") from None
    digest = hashlib.sha256(data).hexdigest()
    if listing:
        rows = [v for k, v in listing.items() if _logical(k) == _logical(path.name)]
        if not rows:
            raise DataFileError(f"{path}: not listed in {path.parent / 'SOURCE.md'}, so its sha256 cannot be checked; "
                                f"fix: {_source_fix(path.parent)}")
        listed = rows[0]
        if listed != (digest, len(data)):
            raise DataFileError(f"{path}: uncompressed it has sha256 {digest[:16]}… and {len(data)} bytes, its "
                                f"SOURCE.md lists {listed[0][:16]}… and {listed[1]} bytes: the file is damaged or was "
                                f"changed; fix: {_REINSTALL}")
    st = path.stat()
    _IDENTITY[(str(path), st.st_mtime_ns, st.st_size)] = (digest, len(data))
    return data


def data_identity(path: str | os.PathLike) -> tuple[str, int]:
    """(sha256, size in bytes) of a data file's content, uncompressed: a run on the shipped ``test.jsonl.xz`` and one
    on a plain copy of ``test.jsonl`` record the same dataset hash."""
    path = Path(path)
    if path.suffix not in COMPRESSED_SUFFIXES:
        return sha256_file(path), path.stat().st_size
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _IDENTITY:
        read_data_bytes(path)
    return _IDENTITY[key]


class DataRecordError(ConfigError, KeyError):
    """A data record lacks a field a loader needs, or holds a field a loader cannot use (null, NaN, the wrong kind),
    or two records share a task id; the message names the file and line."""

    __str__ = Exception.__str__


class Record(dict):
    """One data record (a dict) that knows its ``file:line``: a missing field raises :class:`DataRecordError`
    (a one-line ConfigError naming both; still a KeyError for code that probes fields), and so does a field read by
    ``r[key]`` that is null or NaN (it would become the prompt "None" or "nan"). :meth:`text` also checks the kind."""

    where = ""

    def __missing__(self, key):
        raise DataRecordError(f"{self.where}: the record has no {key!r} field")

    def __getitem__(self, key):
        value = super().__getitem__(key)
        if value is None or (isinstance(value, float) and value != value):
            raise DataRecordError(f"{self.where}: the record's {key!r} field is {'null' if value is None else 'NaN'}")
        return value

    def text(self, key: str, *, number_ok: bool = False) -> str:
        """Field ``key`` as non-blank text (``number_ok``: an int or float is written as text too). Raises
        DataRecordError naming the file, line and field for anything else (a list, an object, a bool, blank)."""
        value = self[key]
        if isinstance(value, str) or (number_ok and isinstance(value, (int, float)) and not isinstance(value, bool)):
            if not str(value).strip():
                raise DataRecordError(f"{self.where}: the record's {key!r} field is blank")
            return str(value)
        kind = {list: "a list", dict: "an object", bool: "true/false"}.get(type(value), type(value).__name__)
        raise DataRecordError(f"{self.where}: the record's {key!r} field must be "
                              f"{'text or a number' if number_ok else 'text'}, got {kind}")


def _as_record(obj: dict, where: str) -> Record:
    rec = Record(obj)
    rec.where = where
    return rec


def _no_lone_surrogates(obj):
    """``obj`` (parsed JSON) with every lone surrogate in its strings written as its visible escape."""
    from ..errors import escape_lone_surrogates

    if isinstance(obj, str):
        return escape_lone_surrogates(obj)
    if isinstance(obj, list):
        return [_no_lone_surrogates(x) for x in obj]
    if isinstance(obj, dict):
        return {escape_lone_surrogates(k): _no_lone_surrogates(v) for k, v in obj.items()}
    return obj


def read_jsonl(path: str | os.PathLike) -> list[Record]:
    """Read a JSON Lines file (plain, .xz or .gz; blank lines skipped) into :class:`Record` objects.

    Raises ConfigError naming the file and line: not UTF-8, a line that is not JSON, a line that is not an object."""
    out: list[Record] = []
    try:
        with io.TextIOWrapper(io.BytesIO(read_data_bytes(path)), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ConfigError(f"{path}:{n}: not valid JSON ({e.msg}, column {e.colno})") from None
                if not isinstance(obj, dict):
                    raise ConfigError(f"{path}:{n}: expected a JSON object per line, got {type(obj).__name__}")
                if "\\u" in line.lower():  # a lone surrogate escape: written as visible text (errors.py)
                    obj = _no_lone_surrogates(obj)
                out.append(_as_record(obj, f"{path}:{n}"))
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte offset {e.start}); save the file as UTF-8") from None
    return out


def seed_from_key(key: str) -> int:
    """Integer seed derived from a string key: first 8 bytes of sha256(key), big-endian.

    This is the "stable shuffle" of docs/research-notes.md §6.2 (key e.g. ``"TIGER-Lab/MMLU-Pro:engineering:0"``,
    ``"HumanEval:0"``): identical across machines and Python versions (unlike ``hash()``).
    """
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def stable_shuffle(items: Iterable[Any], key: str) -> list[Any]:
    """Return a new list: ``random.Random(seed_from_key(key)).shuffle`` of ``items``."""
    out = list(items)
    random.Random(seed_from_key(key)).shuffle(out)
    return out


def shuffled_slice(items: Iterable[Any], key: str, split: str, stream_end: int, test_end: int | None = None,
                   *, note: str = "") -> tuple[list[Any], str]:
    """The paper's fixed-partition splits (section 6.2): :func:`stable_shuffle` by ``key``, then stream =
    ``[0:stream_end)`` and test = ``[stream_end:test_end)`` (``None`` = to the end). Returns (items, rule text)."""
    order = stable_shuffle(items, key)
    lo, hi = (0, stream_end) if split == "stream" else (stream_end, test_end)
    end = hi if hi is not None else len(order)
    return order[lo:hi], f"{note}stable shuffle key {key!r}, [{lo}:{end})"


def seeded_shuffle(items: Iterable[Any], seed: int) -> list[Any]:
    """Return a new list: ``random.Random(seed).shuffle`` of ``items`` (the stream order of section 6.2)."""
    out = list(items)
    random.Random(seed).shuffle(out)
    return out


def read_records(path: str | os.PathLike) -> list[Record]:
    """Records of a .jsonl or .parquet file (parquet needs pyarrow, only for HF-cache sources)."""
    path = Path(path)
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as e:
            raise ImportError(f"reading {path} needs pyarrow (pip install pyarrow)") from e
        return [_as_record(r, f"{path} row {i}") for i, r in enumerate(pq.read_table(path).to_pylist(), 1)]
    return read_jsonl(path)
