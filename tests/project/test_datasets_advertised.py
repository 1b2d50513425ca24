"""Every dataset the help and the README advertise runs as they say: the ones "ready with the shipped data" load
their stream and test splits from the data shipped in the package, with no setting and from any working folder, the
ones to fetch first say what to fetch, and a test-only name (math500, the test split of math) is listed as such and
refused with the fix, in one line."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from janus_memory.cli import main
from janus_memory.tasks import load_split
from janus_memory.tasks.base import DATASETS, dataset_groups

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ["gsm8k", "aime", "mmlu_pro_eng", "mmlu_pro_phy", "humaneval", "apibench_hf"]
GENERATED = ["rules", "rules_small", "rules_late"]


def test_the_groups_are_what_the_shipped_data_holds():
    assert dataset_groups() == {"shipped": SHIPPED, "generated": GENERATED, "fetch": ["math", "gpqa"],
                                "test_only": ["math500"]}
    assert "github.com/hendrycks/math" in DATASETS["math"].fetch and "JANUS_MATH_TRAIN_PATH" in DATASETS["math"].fetch
    assert "github.com/idavidrein/gpqa" in DATASETS["gpqa"].fetch and "JANUS_GPQA_PATH" in DATASETS["gpqa"].fetch
    assert DATASETS["math500"].fetch.startswith("it is the test split of 'math'")


@pytest.mark.parametrize("name", SHIPPED + GENERATED)
def test_a_shipped_dataset_loads_both_splits_without_any_setting(name, monkeypatch, tmp_path):
    for var in ("JANUS_DATA_DIR", "JANUS_MATH_TRAIN_PATH", "JANUS_GPQA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # an empty folder: nothing beside it, the package's own copy is read
    n = 10 if DATASETS[name].sized else 3  # a stream laid out for its length (rules_late) needs 10 tickets
    stream, test = load_split(name, "stream", limit=n), load_split(name, "test", limit=2)
    assert (len(stream), len(test)) == (n, 2)
    assert not set(stream.ids) & set(test.ids)


def test_the_help_lists_the_datasets_by_what_they_need(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("--dataset NAME dataset name (ready with the shipped data: gsm8k, aime, mmlu_pro_eng, mmlu_pro_phy, "
            "humaneval, apibench_hf; generated from the seed, no data: rules, rules_small, rules_late; after you fetch a "
            "file, docs/tasks.md: math, gpqa; test split only, no stream: math500) (default: gsm8k)") in text


def test_math500_is_refused_in_one_line_with_the_fix(tmp_path, capsys):
    rc = main(["run", "--backend", "fake", "--dataset", "math500", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == [
        "error: math500 is test-only: MATH-500 is the test split of dataset 'math', whose stream is Hendrycks MATH "
        "train (not shipped; fetch the train/ folder of github.com/hendrycks/math, set JANUS_MATH_TRAIN_PATH to it, "
        "then --dataset math); with the shipped data, math streams are --dataset gsm8k or aime"]
    assert not (tmp_path / "r" / "run.sqlite").exists()


def test_math_without_its_train_files_says_where_to_get_them(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("JANUS_MATH_TRAIN_PATH", raising=False)
    rc = main(["run", "--backend", "fake", "--dataset", "math", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "github.com/hendrycks/math; not in the shipped data" in err[0]


def test_the_readme_advertises_only_what_runs():
    """The README names the datasets ready with the shipped data and, for the others, what to fetch."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    para = " ".join(readme[readme.index("Datasets ready with the shipped data"):].split("\n\n")[0].split())
    ready, _, rest = para.partition("To fetch first:")
    shipped, _, generated = ready.partition("Generated from a seed, no data:")
    assert re.findall(r"`([a-z0-9_]+)`", shipped) == SHIPPED
    assert re.findall(r"`([a-z0-9_]+)`", generated) == GENERATED
    assert re.findall(r"`(math|math500|gpqa)`", rest) == ["math", "math500", "gpqa"]
    assert "`math500` is only its test split, not a stream" in rest
    assert "hendrycks/math" in rest and "JANUS_MATH_TRAIN_PATH" in rest and "JANUS_GPQA_PATH" in rest
