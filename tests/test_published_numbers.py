"""The paper's published numbers beside ours in `janus report` (issue 27 item 7): Table 1 (Qwen3-8B) cells matched
by dataset, updater and controller; the backbone is always named and a different one is said to be different."""
from __future__ import annotations

import io

from rich.console import Console

from janus_memory.cli import main
from janus_memory.report.published import PAPER_TABLE1, published, same_backbone
from janus_memory.report.report import build_report
from janus_memory.report.console import print_report


def test_table1_cells_from_the_spec():
    assert len(PAPER_TABLE1) == 36
    assert published("dc_rs", True, "gpqa") == 81.5 and published("expel", False, "humaneval") == 91.2
    assert published("memory_free", False, "mmlu_pro_eng") == 61.2 and published("exprag", False, "apibench_hf") == 72.0
    assert published("dc_rs", True, "gsm8k") is None and published("exprag", True, "gpqa") is None
    assert published("dc_cu", False, "gpqa") is None
    assert same_backbone("Qwen/Qwen3-8B") and same_backbone("qwen3_8b-q4_k_m.gguf")
    assert not same_backbone("qwen2.5-1.5b-instruct-q4_k_m.gguf") and not same_backbone("scripted")


def test_report_prints_the_paper_number_with_its_backbone(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    for ds in ("mmlu_pro_phy", "gsm8k"):
        assert main(["run", "--backend", "fake", "--encoder", "hashing", "--quiet", "--stream-size", "4",
                     "--test-size", "4", "--dataset", ds, "--updater", "memory_free", "--controller", "none",
                     "--out", str(tmp_path / "runs" / ds)]) == 0
    res = build_report([str(tmp_path / "runs")], str(tmp_path / "rep"))
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## The paper's published numbers beside ours" in md
    assert "| memory_free | MMLU-Pro Phy | " in md and "| 84.0 | scripted (not the paper's) |" in md
    assert "GSM8K | " not in md.split("## The paper's published numbers beside ours")[1].split("##")[0]
    assert "ran on another backbone: the two numbers are not comparable" in md
    buf = io.StringIO()
    print_report(res, Console(file=buf, width=200))
    out = buf.getvalue()
    assert "Paper (%, Qwen3-8B)" in out and "84.0" in out and "scripted (not the paper's)" in out
