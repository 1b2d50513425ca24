"""Loaders and splits: exact sizes, pinned orders and hashes, user-file datasets (MATH train, GPQA), errors, prompts."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from janus_memory.tasks import DATASETS, Split, get_family, load_split
from janus_memory.tasks.data import seed_from_key, stable_shuffle
from janus_memory.tasks.multiple_choice import gpqa_task
from shipped_data import plain_copy, shipped_lines


@pytest.mark.parametrize("name,split,n,first_id,sha", [
    ("gsm8k", "stream", 500, "gsm8k:1101", "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14"),
    ("gsm8k", "test", 500, "gsm8k:692", "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14"),
    ("math500", "test", 500, "test/precalculus/807.json", "35dc41080a3680858b27fa7e0533d2d547825316fc5dafe5d316f4ccc5a06132"),
    ("math", "test", 500, "test/precalculus/807.json", "35dc41080a3680858b27fa7e0533d2d547825316fc5dafe5d316f4ccc5a06132"),
    ("aime", "stream", 30, "aime24:60", "af2b8bd2aa911b6333ad0df32f3ca05c7ae8ed10f1731f4372c8ae26990bf7ac"),
    ("aime", "test", 30, "aime25:0", "5ee6e9fb9b8c0408c8e3591709b6927063abf73ed238c029167a7eff7376cca0"),
    ("mmlu_pro_eng", "stream", 250, "12105", "32c67294bd848fbc30e57ae1c500e99919252ecd385600e57e250fb37868dde9"),
    ("mmlu_pro_eng", "test", 250, "11892", None),
    ("mmlu_pro_phy", "stream", 250, "9345", None),
    ("mmlu_pro_phy", "test", 250, "9089", None),
    ("humaneval", "stream", 50, "HumanEval/73", "1d49078ba3e2b196b9344535bef34a43021f038fad9561d6ee7c53450609a6a2"),
    ("humaneval", "test", 114, "HumanEval/27", None),
    ("apibench_hf", "stream", 250, "apibench_hf:215", None),
    ("apibench_hf", "test", 250, "apibench_hf:111", None),
])
def test_split_sizes_order_and_hash(name, split, n, first_id, sha):
    s = load_split(name, split)
    assert isinstance(s, Split) and len(s.tasks) == n and s.split == split and s.dataset == name
    assert s.tasks[0].id == first_id
    assert len(set(s.ids)) == n
    if sha:
        assert s.sha256 == sha
    assert load_split(name, split).ids_sha256 == s.ids_sha256  # deterministic
    assert all(t.dataset == name for t in s.tasks)


@pytest.mark.parametrize("name", ["gsm8k", "mmlu_pro_eng", "mmlu_pro_phy", "humaneval", "apibench_hf", "aime"])
def test_stream_and_test_are_disjoint(name):
    a, b = load_split(name, "stream"), load_split(name, "test")
    assert not set(a.ids) & set(b.ids)


def test_seed_changes_order_but_not_content():
    a, b = load_split("humaneval", "stream", seed=0), load_split("humaneval", "stream", seed=1)
    assert a.ids != b.ids and a.sha256 == b.sha256
    assert set(load_split("humaneval", "all").ids) == {f"HumanEval/{i}" for i in range(164)}
    # the stable shuffle is sha256-keyed (documented), not Python's salted hash()
    assert seed_from_key("HumanEval:0") == int.from_bytes(__import__("hashlib").sha256(b"HumanEval:0").digest()[:8], "big")
    assert stable_shuffle(range(5), "k") == stable_shuffle(range(5), "k")


def test_limit_takes_first_n_and_records():
    full = load_split("gsm8k", "stream")
    s = load_split("gsm8k", "stream", limit=7)
    assert s.ids == full.ids[:7] and s.info["limit"] == 7 and s.info["n"] == 7
    rec = s.record()
    assert rec["sha256"] == full.sha256 and rec["ids"] == s.ids and "question" not in json.dumps(rec)
    assert json.loads(json.dumps(rec)) == rec
    with pytest.raises(ValueError):
        load_split("gsm8k", "stream", limit=-1)


def test_gold_values():
    g = {t.id: t for t in load_split("gsm8k", "all").tasks}
    assert g["gsm8k:0"].gold == "18"
    assert all("," not in t.gold for t in g.values())
    m = load_split("math500", "test").tasks[0]
    assert m.gold == r"\left( 3, \frac{\pi}{2} \right)" and m.meta["level"] == 2
    aime = load_split("aime", "stream").tasks[0]
    assert aime.gold == "204"
    assert load_split("aime", "test").tasks[0].gold == "70"


def test_mmlu_pro_3983_scored_by_letter():
    s = load_split("mmlu_pro_eng", "all")  # 3983 is chemistry; read it through the raw file for the check below
    rec = next(json.loads(line) for line in shipped_lines("mmlu_pro/test.jsonl") if '"question_id": 3983,' in line)
    assert rec["answer"] == "C" and rec["answer_index"] == 1
    from janus_memory.tasks.multiple_choice import LETTERS
    from janus_memory.values import Task
    t = Task(id="3983", dataset="mmlu_pro_eng", question=rec["question"], gold=rec["answer"],
             meta={"options": rec["options"], "labels": LETTERS[:len(rec["options"])]})
    fam = get_family("mmlu_pro_eng")
    assert fam.score(t, "The answer is (C)").correct
    assert not fam.score(t, "The answer is (B)").correct
    assert len(s.tasks) == 969


def test_changed_answer_key_changes_dataset_hash(tmp_path):
    """C13: a copy where question 2634's key is the pre-fix 'E' has the same ids but a different sha256."""
    (tmp_path / "mmlu_pro").mkdir()
    out = []
    for line in shipped_lines("mmlu_pro/test.jsonl"):
        r = json.loads(line)
        if r["question_id"] == 2634:
            assert r["answer"] == "B"
            r["answer"] = "E"
            line = json.dumps(r, ensure_ascii=False) + "\n"
        out.append(line)
    (tmp_path / "mmlu_pro" / "test.jsonl").write_text("".join(out), encoding="utf-8")
    # 2634 is in 'business'; any category split of the file sees the changed hash
    a, b = load_split("mmlu_pro_eng", "stream"), load_split("mmlu_pro_eng", "stream", data_dir=tmp_path)
    assert a.ids_sha256 == b.ids_sha256 and a.sha256 != b.sha256


def test_env_var_data_dir(tmp_path, monkeypatch):
    plain_copy("gsm8k/test.jsonl", tmp_path)
    monkeypatch.setenv("JANUS_DATA_DIR", str(tmp_path))
    s = load_split("gsm8k", "test")
    assert s.info["files"][0]["path"].startswith(str(tmp_path.resolve()))


def test_errors(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"unknown dataset 'x'; choose one of: gsm8k, math500"):
        load_split("x", "stream")
    with pytest.raises(ValueError, match="unknown dataset"):
        get_family("nope")
    with pytest.raises(ValueError, match="unknown split"):
        load_split("gsm8k", "train")
    with pytest.raises(ValueError, match="test-only"):
        load_split("math500", "stream")
    with pytest.raises(FileNotFoundError, match=r"gsm8k/test.jsonl .*pass a --data-dir holding gsm8k/test.jsonl"):
        load_split("gsm8k", "stream", data_dir=tmp_path)
    monkeypatch.delenv("JANUS_GPQA_PATH", raising=False)
    with pytest.raises(FileNotFoundError, match="JANUS_GPQA_PATH"):
        load_split("gpqa", "test")
    monkeypatch.delenv("JANUS_MATH_TRAIN_PATH", raising=False)
    with pytest.raises(FileNotFoundError, match="JANUS_MATH_TRAIN_PATH"):
        load_split("math", "stream")
    assert set(DATASETS) == {"gsm8k", "math500", "math", "aime", "mmlu_pro_eng", "mmlu_pro_phy", "gpqa", "humaneval",
                             "apibench_hf", "rules", "rules_small", "rules_late"}


# ------------------------------------------------------------------------------ GPQA: synthetic files only

GPQA_COLS = ["Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3",
             "Subdomain", "Record ID"]


def _write_gpqa(path: Path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(GPQA_COLS)
        w.writerows(rows)


@pytest.fixture
def gpqa_dir(tmp_path):
    rows = [["Synthetic question one?", "alpha", "beta", "gamma", "delta", "Toy", "recA"],
            ["Synthetic question two?", "red", "green", "blue", "cyan", "Toy", "recB"],
            ["Synthetic question three?", "x", "x", "y", "z", "Toy", "recC"]]  # only 3 distinct options -> skipped
    _write_gpqa(tmp_path / "gpqa_main.csv", rows)
    _write_gpqa(tmp_path / "gpqa_diamond.csv", [rows[1]])
    return tmp_path


def test_gpqa_synthetic_csv(gpqa_dir, monkeypatch):
    monkeypatch.setenv("JANUS_GPQA_PATH", str(gpqa_dir))
    test = load_split("gpqa", "test")
    stream = load_split("gpqa", "stream")
    assert test.ids == ["recB"]
    assert stream.ids == ["recA"]  # main minus diamond, and recC (3 distinct options) skipped
    t = stream.tasks[0]
    assert sorted(t.meta["options"]) == ["alpha", "beta", "delta", "gamma"]
    assert t.meta["options"]["ABCD".index(t.gold)] == "alpha"
    assert load_split("gpqa", "stream").tasks[0].meta["options"] == t.meta["options"]  # deterministic per question
    fam = get_family("gpqa")
    p = fam.prompt(t)
    assert "(A) " in p and "(D) " in p and "A, B, C, D" in p
    assert fam.score(t, f"The answer is ({t.gold})").correct
    # option orders differ across questions/seeds (deterministic per record id and seed)
    perms = {tuple(gpqa_task({"Question": "q", "Correct Answer": "a", "Incorrect Answer 1": "b", "Incorrect Answer 2": "c",
                              "Incorrect Answer 3": "d", "Record ID": f"r{i}"}, 0).meta["options"]) for i in range(12)}
    assert len(perms) > 1


def test_gpqa_bad_csv(tmp_path, monkeypatch):
    (tmp_path / "gpqa_diamond.csv").write_text("Question,Answer\nq,a\n", encoding="utf-8")
    monkeypatch.setenv("JANUS_GPQA_PATH", str(tmp_path))
    with pytest.raises(ValueError, match="lacks GPQA columns"):
        load_split("gpqa", "test")


def test_math_train_user_dir(tmp_path, monkeypatch):
    root = tmp_path / "MATH" / "train" / "algebra"
    root.mkdir(parents=True)
    for i in range(3):
        (root / f"{i}.json").write_text(json.dumps({"problem": f"What is {i}+1?", "level": "Level 1", "type": "Algebra",
                                                    "solution": f"It is $\\boxed{{{i + 1}}}$."}), encoding="utf-8")
    monkeypatch.setenv("JANUS_MATH_TRAIN_PATH", str(tmp_path / "MATH" / "train"))
    s = load_split("math", "stream")
    assert sorted(s.ids) == ["math:algebra/0.json", "math:algebra/1.json", "math:algebra/2.json"]
    assert {t.id: t.gold for t in s.tasks}["math:algebra/2.json"] == "3"
    assert len(s.info["files"]) == 3


def test_prompts_ask_for_the_spec_items():
    fam = get_family("math500")
    t = load_split("math500", "test").tasks[0]
    p = fam.prompt(t)
    assert t.question in p and "\\boxed{" in p and "last" in p and "\\frac{a}{b}" in p
    h = load_split("humaneval", "all").tasks[2]
    hp = get_family("humaneval").prompt(h)
    assert h.meta["entry_point"] in hp and "```python" in hp and "signature" in hp
    a = load_split("apibench_hf", "all").tasks[0]
    ap = get_family("apibench_hf").prompt(a)
    for f in ("<<<domain>>>", "<<<api_call>>>", "<<<api_provider>>>", "<<<explanation>>>", "<<<code>>>",
              "Natural Language Processing Sentence Similarity"):
        assert f in ap
    m = load_split("mmlu_pro_phy", "test").tasks[0]
    mp = get_family("mmlu_pro_phy").prompt(m)
    assert "(J) " in mp and "A, B, C, D, E, F, G, H, I, J" in mp


def test_families_pickle_and_are_shared():
    import pickle
    for name in ("gsm8k", "gpqa", "humaneval", "apibench_hf"):
        fam = get_family(name)
        clone = pickle.loads(pickle.dumps(fam))
        assert type(clone) is type(fam) and clone.name == fam.name
    assert get_family("gsm8k") is get_family("math500") and get_family("gsm8k").name == "math"
    assert get_family("math500", faithful=True) is not get_family("math500")


def test_missing_gpqa_says_where_it_looked_without_python_none(tmp_path, monkeypatch):
    """A new user saw 'looked in JANUS_GPQA_PATH=None, data_dir=None': the message names what was (not) given."""
    from janus_memory.tasks.multiple_choice import load_gpqa

    monkeypatch.delenv("JANUS_GPQA_PATH", raising=False)
    with pytest.raises(FileNotFoundError) as e:
        load_gpqa("test")
    assert str(e.value).startswith("gpqa_diamond.csv not found (JANUS_GPQA_PATH is not set; no --data-dir given); "
                                   "fix: GPQA is bring-your-own-file")
    monkeypatch.setenv("JANUS_GPQA_PATH", str(tmp_path / "g"))
    with pytest.raises(FileNotFoundError) as e:
        load_gpqa("test", data_dir=tmp_path)
    assert f"(JANUS_GPQA_PATH={tmp_path / 'g'}; --data-dir {tmp_path} (and its gpqa/ folder))" in str(e.value)
    assert "None" not in str(e.value)
