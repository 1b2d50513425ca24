"""Data-directory resolution, file hashing and the seeded shuffles that define the paper's splits.

Resolution order for the benchmark data folder (docs/research-notes.md §6.2; shared/data/README.md):
1. the explicit ``data_dir`` argument (the CLI's ``--data-dir``);
2. the ``JANUS_DATA_DIR`` environment variable;
3. ``../shared/data`` relative to the current directory, then relative to the repository root.

Dataset-specific user files (not shipped): ``JANUS_MATH_TRAIN_PATH`` (Hendrycks MATH train) and
``JANUS_GPQA_PATH`` (the GPQA CSV files).
"""
from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path
from typing import Any, Iterable

from ..errors import ConfigError

ENV_DATA_DIR = "JANUS_DATA_DIR"
ENV_MATH_TRAIN = "JANUS_MATH_TRAIN_PATH"
ENV_GPQA = "JANUS_GPQA_PATH"

_REPO_ROOT = Path(__file__).resolve().parents[3]


def default_data_dirs() -> list[Path]:
    """Candidate locations of the shared data folder, most specific first (may not exist)."""
    out: list[Path] = []
    env = os.environ.get(ENV_DATA_DIR)
    if env:
        out.append(Path(env).expanduser())
    out.append(Path.cwd() / ".." / "shared" / "data")
    out.append(_REPO_ROOT.parent / "shared" / "data")
    return out


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Return the data folder to read (explicit argument wins; else env var; else ../shared/data).

    Raises FileNotFoundError naming the paths tried and how to fix it.
    """
    if data_dir is not None:
        p = Path(data_dir).expanduser()
        if not p.exists():
            raise FileNotFoundError(f"data dir {p} does not exist (fix: pass an existing --data-dir or set {ENV_DATA_DIR})")
        return p.resolve()
    tried = default_data_dirs()
    for p in tried:
        if p.is_dir():
            return p.resolve()
    raise FileNotFoundError(
        "benchmark data folder not found; tried " + ", ".join(str(p) for p in tried)
        + f" (fix: pass --data-dir or set {ENV_DATA_DIR} to the folder holding math500/, gsm8k/, ...)"
    )


def require_file(path: Path, what: str, fix: str) -> Path:
    """Return ``path`` if it is a file, else raise FileNotFoundError naming the path and the fix."""
    if not path.is_file():
        raise FileNotFoundError(f"{what} not found at {path} (fix: {fix})")
    return path


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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


def read_jsonl(path: str | os.PathLike) -> list[Record]:
    """Read a JSON Lines file (blank lines skipped) into :class:`Record` objects.

    Raises ConfigError naming the file and line: not UTF-8, a line that is not JSON, a line that is not an object."""
    out: list[Record] = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ConfigError(f"{path}:{n}: not valid JSON ({e.msg}, column {e.colno})") from None
                if not isinstance(obj, dict):
                    raise ConfigError(f"{path}:{n}: expected a JSON object per line, got {type(obj).__name__}")
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


# ------------------------------------------------------------------ local Hugging Face hub cache (offline fallback)

#: our relative path -> (Hugging Face dataset repo, file glob inside a snapshot). Same records/fields as our files.
HF_SOURCES: dict[str, tuple[str, str]] = {
    "math500/test.jsonl": ("HuggingFaceH4/MATH-500", "test.jsonl"),
    "gsm8k/test.jsonl": ("openai/gsm8k", "main/test-*.parquet"),
    "humaneval/HumanEval.jsonl": ("openai/openai_humaneval", "openai_humaneval/test-*.parquet"),
    "mmlu_pro/test.jsonl": ("TIGER-Lab/MMLU-Pro", "data/test-*.parquet"),
}


def hf_hub_cache_dirs() -> list[Path]:
    out = []
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            out.append(Path(os.environ[var]).expanduser())
    if os.environ.get("HF_HOME"):
        out.append(Path(os.environ["HF_HOME"]).expanduser() / "hub")
    out.append(Path.home() / ".cache" / "huggingface" / "hub")
    return out


def hf_cached_file(repo_id: str, pattern: str) -> Path | None:
    """A file of a dataset already in the local Hugging Face hub cache (no network), newest snapshot first."""
    folder = "datasets--" + repo_id.replace("/", "--")
    for root in hf_hub_cache_dirs():
        snaps = root / folder / "snapshots"
        if not snaps.is_dir():
            continue
        for snap in sorted(snaps.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True):
            hits = sorted(snap.glob(pattern))
            if hits:
                return hits[0]
    return None


def find_source(data_dir, rel: str, what: str) -> Path:
    """Locate a dataset file: explicit ``data_dir`` only; else the default data folder, then the local HF hub cache.

    Raises FileNotFoundError naming the path tried and the fixes (``--data-dir``, JANUS_DATA_DIR, HF cache).
    """
    if data_dir is not None:
        return require_file(resolve_data_dir(data_dir) / rel, what,
                            f"pass a --data-dir (or set {ENV_DATA_DIR} and drop --data-dir) to a folder containing {rel}")
    tried = []
    try:
        p = resolve_data_dir(None) / rel
        if p.is_file():
            return p
        tried.append(str(p))
    except FileNotFoundError:
        tried.append("../shared/data (missing)")
    if rel in HF_SOURCES:
        hit = hf_cached_file(*HF_SOURCES[rel])
        if hit is not None:
            return hit
        tried.append(f"HF cache {HF_SOURCES[rel][0]}")
    raise FileNotFoundError(f"{what} not found (tried {', '.join(tried)}); fix: pass --data-dir or set {ENV_DATA_DIR} "
                            f"to a folder containing {rel}, or put the dataset in the local Hugging Face cache")


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
