"""The benchmark data the package ships (src/janus_memory/tasks/shipped), read the way the loaders read it, for tests
that need a dataset's raw lines or a plain copy of a file: nothing outside the checkout is read."""
from __future__ import annotations

from pathlib import Path

from janus_memory.tasks.data import SHIPPED_DIR, read_data_bytes

DATA = SHIPPED_DIR


def shipped_file(rel: str) -> Path:
    """The shipped (xz) file of ``rel``, e.g. ``dc-trajectories/aime_2025_gpt-4o_dc-rs.jsonl``."""
    return SHIPPED_DIR / f"{rel}.xz"


def shipped_text(rel: str) -> str:
    """The uncompressed text of a shipped file (its sha256 checked against its SOURCE.md)."""
    return read_data_bytes(shipped_file(rel)).decode("utf-8")


def shipped_lines(rel: str) -> list[str]:
    """The lines of a shipped JSONL file, each with its newline (split at "\n" only: a U+2028 may sit inside a JSON
    string)."""
    lines = shipped_text(rel).split("\n")
    return [x + "\n" for x in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def plain_copy(rel: str, root: Path) -> Path:
    """Write the uncompressed ``rel`` under ``root`` (``root/rel``), as a user's data folder would hold it."""
    dest = root / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(read_data_bytes(shipped_file(rel)))
    return dest
