"""APIBench-HF as the authors' task_apibench.py loads it, with exact values: the split (a stable shuffle of the 911
rows keyed "APIBench:hf:<seed>", stream [0:250), test [250:500), ids = 1-based row numbers) and the question (the
row's whole ``code`` field, which holds the reference output). Ours: ``apibench_split: registry`` (key
"apibench_hf:<seed>") and ``apibench_question: instruction``, the small preset's and that of runs stored before."""
from __future__ import annotations

import hashlib
import json
import random

import pytest

from janus_memory.cli.app import main
from janus_memory.errors import ConfigError
from janus_memory.run.build import load_splits
from janus_memory.settings.config import RunConfig, migrate_stored
from janus_memory.tasks import get_family, load_split
from janus_memory.tasks.apibench import load_apibench_hf
from shipped_data import shipped_lines

PAPER = {"apibench_split": "paper", "apibench_question": "code"}


def _rows() -> list[dict]:
    return [json.loads(line) for line in shipped_lines("apibench/huggingface_eval.jsonl") if line.strip()]


def _authors_order(seed: int, n: int) -> list[int]:
    """The rule, computed here on its own: random.Random(int(first 16 hex digits of sha256(key), 16)) shuffles the
    rows; a row's id is its 1-based number."""
    ids = list(range(1, n + 1))
    key = f"APIBench:hf:{seed}".encode("utf-8")
    random.Random(int(hashlib.sha256(key).hexdigest()[:16], 16)).shuffle(ids)
    return ids


@pytest.mark.parametrize("seed,stream_head,test_head", [
    (0, [452, 41, 467, 577, 276], [856, 286, 709]),
    (1, [725, 849, 747, 641, 623], [58, 555, 379]),
])
def test_the_paper_split_is_the_authors(seed, stream_head, test_head):
    order = _authors_order(seed, len(_rows()))
    assert order[:5] == stream_head and order[250:253] == test_head
    stream = load_split("apibench_hf", "stream", seed=seed, options=PAPER)
    test = load_split("apibench_hf", "test", seed=seed, options=PAPER)
    assert [t.id for t in stream.tasks] == [f"apibench_hf:{i}" for i in order[:250]]
    assert [t.id for t in test.tasks] == [f"apibench_hf:{i}" for i in order[250:500]]
    assert stream.info["rule"] == f"stable shuffle key 'APIBench:hf:{seed}', [0:250)"
    assert (stream.info["apibench_split"], stream.info["apibench_question"]) == ("paper", "code")


def test_the_registry_split_is_unchanged():
    stream = load_split("apibench_hf", "stream", options={"apibench_split": "registry"})
    assert [t.id for t in stream.tasks[:3]] == ["apibench_hf:215", "apibench_hf:193", "apibench_hf:348"]
    assert [t.id for t in load_split("apibench_hf", "stream").tasks] == [t.id for t in stream.tasks]  # the default
    paper = {t.id for t in load_split("apibench_hf", "test", options=PAPER).tasks}
    ours = {t.id for t in load_split("apibench_hf", "test").tasks}
    assert len(paper & ours) == 69  # another test set: 69 of the 250 tasks in common


def test_the_paper_question_is_the_whole_code_field():
    rows = _rows()
    by_id = {t.id: t for t in load_split("apibench_hf", "all", options=PAPER).tasks}
    first = by_id["apibench_hf:1"]
    assert first.question == rows[0]["code"].strip()
    assert first.question.startswith("###Instruction: Design a feature for a social media website")
    assert "###Output: <<<domain>>>: Natural Language Processing Sentence Similarity" in first.question
    assert rows[0]["api_call"] in first.question  # the reference answer is in the authors' question
    prompt = get_family("apibench_hf").prompt(first)
    assert prompt.startswith("You are a helpful API writer who can write APIs based on requirements.\n\n"
                             "###Instruction: Design a feature")
    # ours: the instruction alone
    ours = {t.id: t for t in load_split("apibench_hf", "all").tasks}["apibench_hf:1"]
    assert ours.question == ("Design a feature for a social media website to recommend articles to users based on "
                             "how similar the articles are to their previously liked articles.")
    held = sum(r["api_call"] in r["code"] for r in rows)
    assert (len(rows), sum("###Output" in r["code"] for r in rows), held) == (911, 906, 830)


def test_bad_values_are_refused():
    with pytest.raises(ValueError, match="apibench_split must be one of"):
        load_apibench_hf("stream", apibench_split="authors")
    with pytest.raises(ValueError, match="apibench_question must be one of"):
        load_apibench_hf("stream", apibench_question="full")
    for key in ("apibench_split", "apibench_question"):
        with pytest.raises(ConfigError, match=key):
            RunConfig.parse({key: "other"})


def test_presets_stored_runs_and_the_flags(tmp_path):
    assert (RunConfig().apibench_split_mode(), RunConfig().apibench_question_mode()) == ("paper", "code")
    small = RunConfig(preset="small")
    assert (small.apibench_split_mode(), small.apibench_question_mode()) == ("registry", "instruction")
    old = RunConfig.parse(migrate_stored({"preset": "paper", "twin_cache": "separate", "option_order": "question"}))
    assert (old.apibench_split_mode(), old.apibench_question_mode()) == ("registry", "instruction")
    new = migrate_stored({"preset": "paper", "twin_cache": "separate", "option_order": "question",
                          "apibench_split": "paper", "apibench_question": "code"})
    assert (new["apibench_split"], new["apibench_question"]) == ("paper", "code")
    stream, test = load_splits(RunConfig.parse({"dataset": "apibench_hf", "stream_size": 3, "test_size": 2}))
    assert [t.id for t in stream.tasks] == ["apibench_hf:452", "apibench_hf:41", "apibench_hf:467"]
    assert [t.id for t in test.tasks] == ["apibench_hf:856", "apibench_hf:286"]
    rc = main(["run", "--backend", "fake", "--encoder", "hashing", "--quiet", "--dataset", "apibench_hf",
               "--updater", "memory_free", "--controller", "none", "--apibench-split", "registry",
               "--apibench-question", "instruction", "--stream-size", "2", "--test-size", "1",
               "--out", str(tmp_path / "run"), "--no-cache"])
    assert rc == 0
    stored = json.loads((tmp_path / "run" / "config.json").read_text())
    assert (stored["apibench_split"], stored["apibench_question"]) == ("registry", "instruction")
    splits = json.loads((tmp_path / "run" / "splits.json").read_text())
    assert json.dumps(splits).count("apibench_hf:215") == 1


def test_the_run_header_names_the_loader_settings(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    args = ["run", "--backend", "fake", "--encoder", "hashing", "--updater", "memory_free", "--controller", "none",
            "--stream-size", "1", "--test-size", "1"]
    assert main(args + ["--dataset", "apibench_hf", "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2:4] == [
        "APIBench split: paper (stable shuffle key 'APIBench:hf:<seed>': the authors')",
        "APIBench question: code (the row's whole code field, as the authors' prompt shows it: it holds the reference "
        "output; --apibench-question instruction for the instruction alone)"]
    assert main(args + ["--dataset", "apibench_hf", "--preset", "small", "--out", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].startswith("APIBench split: registry (stable shuffle key 'apibench_hf:<seed>'; the authors': paper")
    assert main(args + ["--dataset", "gsm8k", "--out", str(tmp_path / "c")]) == 0
    assert not [line for line in capsys.readouterr().out.splitlines() if "APIBench" in line or "option order" in line]
