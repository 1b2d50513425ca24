"""The library example in docs/llm.md runs as written (our own documentation code, executed in a temp folder)."""
from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "llm.md"


def test_llm_quick_use_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S).group(1)
    exec(compile(code, str(DOC), "exec"), {})  # noqa: S102 - our own docs, not model output
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("The answer is 4. ")
    assert "'janus': {'calls': 2" in out[1]
