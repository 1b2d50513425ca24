"""The README says what the embedded model's download is, in the numbers the fetch code checks: the package names,
their version and count, the assembled file's size and name; and the act-2 time it gives carries its load."""
from __future__ import annotations

import re
from pathlib import Path

from janus_memory.llm.model_fetch import DEFAULT_MODEL

README = Path(__file__).resolve().parents[2] / "README.md"


def _text() -> str:
    return re.sub(r"\s+", " ", README.read_text(encoding="utf-8"))


def test_the_readme_names_the_model_packages_and_their_size():
    text, m = _text(), DEFAULT_MODEL
    assert f"{m.parts} data-only packages from PyPI" in text
    assert f"`{m.package_prefix}1` to `{m.package_prefix}{m.parts}` (version {m.version})" in text
    assert f"{m.size:,}-byte file ({m.size / 1e9:.2f} GB)" in text
    assert f"~/.cache/janus-memory/models/{m.filename}" in text


def test_the_readme_gives_act_two_times_with_their_load():
    text = _text()
    assert "Measured on 2 cores at load about 2 (model already fetched)" in text and "in 217 s" in text
    assert "at load 3-5 the same act took 18 min" in text
