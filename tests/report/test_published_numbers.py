"""The paper's published numbers beside ours in `janus report`: Table 1 (Qwen3-8B) cells matched
by dataset, updater and controller; the backbone is always named and a different one is said to be different."""
from __future__ import annotations

import io

from rich.console import Console

from janus_memory.cli import main
from janus_memory.report.console import print_report
from janus_memory.report.published import PAPER_TABLE1, published, same_backbone
from janus_memory.report.report import build_report


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


def test_controller_differences_name_every_non_paper_janus_setting():
    from janus_memory.controller import JanusConfig
    from janus_memory.report.published import PAPER_TEST_N, controller_differences

    assert controller_differences(JanusConfig.paper().to_dict()) == []
    assert controller_differences(JanusConfig.paper(seed=3).to_dict()) == []  # any seed is the paper's controller
    assert controller_differences(JanusConfig.paper(tau=0.2, clustering="sklearn").to_dict()) == [
        "tau=0.2", "clustering=sklearn"]
    assert "early_stop=True" in controller_differences(JanusConfig.fast().to_dict())
    assert PAPER_TEST_N == {"math500": 500, "gpqa": 198, "mmlu_pro_eng": 250, "mmlu_pro_phy": 250,
                            "apibench_hf": 250, "humaneval": 114}


def test_report_flags_checker_and_controller_and_shows_the_test_n(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    base = ["run", "--backend", "fake", "--encoder", "hashing", "--quiet", "--stream-size", "4", "--dataset",
            "mmlu_pro_phy"]
    assert main(base + ["--test-size", "3", "--updater", "memory_free", "--controller", "none",
                        "--out", str(tmp_path / "runs" / "free")]) == 0
    assert main(base + ["--test-size", "4", "--updater", "dc_rs", "--controller", "janus", "--checker", "strict",
                        "--clustering", "sklearn", "--out", str(tmp_path / "runs" / "dc")]) == 0
    res = build_report([str(tmp_path / "runs")], str(tmp_path / "rep"))
    md = (tmp_path / "rep" / "report.md").read_text()
    assert ("| Method | Dataset | Ours (%) | Test n (ours / paper) | Paper (%, Qwen3-8B) | Our backbone | "
            "Setting not the paper's |") in md
    assert "| 3 / 250 | 84.0 | scripted (not the paper's) | — |" in md  # the paper checker, no Janus
    assert "| 4 / 250 | 89.2 | scripted (not the paper's) | checker: strict; Janus: clustering=sklearn |" in md
    assert ("A row with a setting in the last column ran with our strict checker, or with Janus, data, replay or "
            "updater settings other than the paper preset's: it is not the paper's setting.") in md
    rows = {p["label"]: p for sec in res["sections"] for p in sec["tables"]["published"]["rows"]}
    assert (rows["dc_rs+janus"]["test_n"], rows["dc_rs+janus"]["controller_diff"], rows["dc_rs+janus"]["checker"]) == (
        [4], ["clustering=sklearn"], "strict")
    assert (rows["memory_free"]["test_n"], rows["memory_free"]["controller_diff"], rows["memory_free"]["checker"]) == (
        [3], [], "paper")


def test_report_flags_data_replay_and_updater_settings(tmp_path, monkeypatch):
    """APIBench with our question text, ExpeL with our operation format lines and section order, frozen replays and
    the small preset: each named in the last column; the same runs on the paper preset are not flagged."""
    from janus_memory.report.published import setting_differences

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    cfg = tmp_path / "expel.yaml"
    cfg.write_text("updater_config:\n  ops_format: short\n  solver_layout: rules_first\n")
    base = ["run", "--backend", "fake", "--encoder", "hashing", "--quiet", "--stream-size", "3", "--test-size", "2"]
    runs = tmp_path / "runs"
    assert main(base + ["--dataset", "apibench_hf", "--updater", "memory_free", "--controller", "none",
                        "--apibench-question", "instruction", "--out", str(runs / "api")]) == 0
    assert main(base + ["--dataset", "mmlu_pro_eng", "--updater", "expel", "--controller", "janus", "--config",
                        str(cfg), "--replay", "frozen", "--out", str(runs / "expel")]) == 0
    assert main(base + ["--dataset", "mmlu_pro_phy", "--updater", "exprag", "--controller", "none", "--preset", "small",
                        "--out", str(runs / "small")]) == 0
    assert main(base + ["--dataset", "mmlu_pro_phy", "--updater", "dc_rs", "--controller", "both",
                        "--out", str(runs / "paper")]) == 0
    res = build_report([str(runs)], str(tmp_path / "rep"))
    rows = {(p["label"], p["dataset"]): p for sec in res["sections"] for p in sec["tables"]["published"]["rows"]}
    assert rows["memory_free", "apibench_hf"]["setting_diff"] == ["apibench_question=instruction"]
    assert rows["expel+janus", "mmlu_pro_eng"]["setting_diff"] == [
        "replay=frozen", "updater ops_format=short", "updater solver_layout=rules_first"]
    assert rows["exprag", "mmlu_pro_phy"]["setting_diff"] == ["updater presence_penalty=None", "updater sampling=backend"]
    assert rows["exprag", "mmlu_pro_phy"]["checker"] == "strict"
    assert rows["dc_rs", "mmlu_pro_phy"]["setting_diff"] == rows["dc_rs+janus", "mmlu_pro_phy"]["setting_diff"] == []
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| scripted (not the paper's) | apibench_question=instruction |" in md
    assert ("| scripted (not the paper's) | replay=frozen, updater ops_format=short, updater "
            "solver_layout=rules_first |") in md
    # option order and APIBench settings only where the dataset's loader takes them; replays only with Janus
    small = {"preset": "small", "option_order": None, "apibench_split": None, "replay": "frozen"}
    assert setting_differences(small, "gpqa", "memory_free", False) == ["option_order=seeded"]
    assert setting_differences(small, "gsm8k", "memory_free", False) == []
    assert setting_differences(small, "apibench_hf", "memory_free", True) == [
        "apibench_split=registry", "apibench_question=instruction", "replay=frozen", "replay_failures=abort",
        "twin_cache=shared"]
