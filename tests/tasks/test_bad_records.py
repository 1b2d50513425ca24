"""A damaged or hand-edited data file gives one line naming the file, the line and what is wrong, never a traceback
or a silent prompt "None"/"nan" or a gold answer that is a whole worked solution."""
from __future__ import annotations

import json

import pytest

from janus_memory.errors import ConfigError
from janus_memory.tasks import load_split

GOOD_GSM = {"question": "Two plus three?", "answer": "2 + 3 = 5\n#### 5"}
GOOD_MATH = {"problem": "1+1?", "solution": "2", "answer": "2", "subject": "Algebra", "level": 1, "unique_id": "a/1.json"}
GOOD_MC = {"question_id": 1, "question": "Which?", "options": ["a", "b"], "answer": "A", "answer_index": 0,
           "category": "engineering", "src": "x"}


def _write(tmp_path, rel: str, records: list, raw: str | None = None):
    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(raw if raw is not None else "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return p


def _one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert "\n" not in msg and isinstance(e.value, ConfigError)
    return msg


@pytest.mark.parametrize("bad, msg", [
    ({"answer": ["#### 5"]}, "the record's 'answer' field must be text, got a list"),
    ({"answer": {"x": 1}}, "the record's 'answer' field must be text, got an object"),
    ({"answer": "the answer is 5"}, "the GSM8K 'answer' field has no '#### <number>' line (the gold answer follows "
                                    "'####')"),
    ({"answer": "5\n####  "}, "the GSM8K 'answer' field has no '#### <number>' line"),
    ({"question": None}, "the record's 'question' field is null"),
    ({"question": 7}, "the record's 'question' field must be text, got int"),
    ({"question": "  "}, "the record's 'question' field is blank"),
])
def test_gsm8k_bad_field(tmp_path, bad, msg):
    p = _write(tmp_path, "gsm8k/test.jsonl", [GOOD_GSM, {**GOOD_GSM, **bad}, GOOD_GSM])
    with pytest.raises(ConfigError) as e:
        load_split("gsm8k", "all", data_dir=tmp_path)
    assert _one_line(e).startswith(f"{p}:2: {msg}")


def test_nan_question_is_named(tmp_path):
    p = _write(tmp_path, "gsm8k/test.jsonl", [], raw=json.dumps(GOOD_GSM) + '\n{"question": NaN, "answer": "#### 1"}\n')
    with pytest.raises(ConfigError) as e:
        load_split("gsm8k", "all", data_dir=tmp_path)
    assert _one_line(e) == f"{p}:2: the record's 'question' field is NaN"


def test_null_question_in_multiple_choice(tmp_path):
    p = _write(tmp_path, "mmlu_pro/test.jsonl", [GOOD_MC, {**GOOD_MC, "question_id": 2, "question": None}])
    with pytest.raises(ConfigError) as e:
        load_split("mmlu_pro_eng", "all", data_dir=tmp_path)
    assert _one_line(e) == f"{p}:2: the record's 'question' field is null"


def test_duplicate_task_ids_name_the_file_and_id(tmp_path):
    p = _write(tmp_path, "math500/test.jsonl", [GOOD_MATH, {**GOOD_MATH, "unique_id": "b/2.json"}, GOOD_MATH])
    with pytest.raises(ConfigError) as e:
        load_split("math500", "test", data_dir=tmp_path)
    assert _one_line(e) == (f"{p}: two records have the task id 'a/1.json' (math500/test); each record needs its own "
                            f"id")


def test_good_records_still_load(tmp_path):
    _write(tmp_path, "gsm8k/test.jsonl", [GOOD_GSM, {**GOOD_GSM, "answer": "#### 1,234"}])
    s = load_split("gsm8k", "all", data_dir=tmp_path)
    assert [(t.question, t.gold) for t in s.tasks] == [("Two plus three?", "5"), ("Two plus three?", "1234")]
    _write(tmp_path, "math500/test.jsonl", [GOOD_MATH, {**GOOD_MATH, "unique_id": "b", "answer": 3}])
    assert [t.gold for t in load_split("math500", "test", data_dir=tmp_path).tasks] == ["2", "3"]
