"""A model reply may hold a lone surrogate (valid JSON: ``"\\ud800"`` without its pair; Python decodes it to a code
point no UTF-8 file or SQLite text can hold). Every place a reply is written (run database, decision log, step
records, memory files, response cache, report, page) gets the same visible escape ``\\ud800`` instead, with and
without the response cache, and a resume continues such a run."""
from __future__ import annotations

import json

import pytest

from janus_memory.cli.app import main
from janus_memory.errors import escape_lone_surrogates
from janus_memory.testing.openai_stub import OpenAITestServer

ARGS = ["run", "--backend", "openai", "--model", "m", "--dataset", "gsm8k", "--stream-size", "4", "--test-size", "2",
        "--encoder", "hashing", "--warmup", "1", "--coverage-size", "1", "--boundary-size", "1", "--fresh-size", "1",
        "-q"]
LONE = "\ud800"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "x")


def _responder(messages):
    last = messages[-1]["content"]
    if "cheatsheet" in last.lower() or "curator" in last.lower():
        return f"<cheatsheet>\nVersion: 1\n- tip {LONE} keep\n</cheatsheet>"
    return f"Working {LONE} it out.\nThe answer is \\boxed{{18}}."


def test_the_escape_is_visible_and_leaves_other_text_alone():
    assert escape_lone_surrogates(f"a{LONE}b\udfff\U0001f600") == "a\\ud800b\\udfff\U0001f600"
    assert escape_lone_surrogates("plain") == "plain"


def test_stored_json_round_trips_a_lone_surrogate_and_a_dataset_record_gets_the_escape(tmp_path):
    from janus_memory.store.jsonio import dumps
    from janus_memory.tasks.data import read_jsonl

    line = dumps({"t": f"x{LONE}y", LONE: [LONE]})
    assert line == '{"t": "x\\ud800y", "\\ud800": ["\\ud800"]}' and json.loads(line) == {"t": f"x{LONE}y", LONE: [LONE]}
    line.encode("utf-8")  # a UTF-8 file or SQLite text can hold it
    f = tmp_path / "d.jsonl"
    f.write_text('{"question": "a \\ud800 b", "answer": ["#### 1"]}\n', encoding="utf-8")
    assert dict(read_jsonl(f)[0]) == {"question": "a \\ud800 b", "answer": ["#### 1"]}


def _all_text(root) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(root.rglob("*"))
                     if p.is_file() and p.suffix in (".jsonl", ".txt", ".json", ".md", ".html", ".yaml"))


@pytest.mark.parametrize("cache", [True, False])
def test_a_reply_with_a_lone_surrogate_is_stored_escaped_everywhere(tmp_path, capsys, cache):
    out = tmp_path / "r"
    extra = [] if cache else ["--no-cache"]
    with OpenAITestServer(responder=_responder) as srv:
        assert main([*ARGS, "--base-url", srv.base_url, "--out", str(out), *extra]) == 0
    assert (out / "COMPLETE").exists()
    steps = [json.loads(x) for x in (out / "dc_rs" / "steps.jsonl").read_text(encoding="utf-8").splitlines()]
    assert any("\\ud800" in json.dumps(s, ensure_ascii=False) for s in steps)  # the escape, as text
    text = _all_text(out)
    assert "\\ud800" in text
    assert main(["report", "-q", str(out)]) == 0
    assert main(["view", str(out), "--out", str(tmp_path / "v.html")]) == 0
    page = (tmp_path / "v.html").read_text(encoding="utf-8")
    assert "\\ud800" in page
    capsys.readouterr()
    if cache:  # the cache holds the escaped text: a second run replays it, the same exports
        again = tmp_path / "again"
        with OpenAITestServer(responder=_responder) as srv:
            assert main([*ARGS, "--base-url", srv.base_url, "--out", str(again)]) == 0
        assert (again / "dc_rs" / "decisions.jsonl").read_bytes() == (out / "dc_rs" / "decisions.jsonl").read_bytes()


def test_a_run_with_lone_surrogates_resumes(tmp_path, monkeypatch):
    """Stopped after 3 steps (the runner's ``stop_after``), then resumed without a cache: it ends with the decisions
    of an uninterrupted run."""
    from janus_memory.run.experiment import run_experiment
    from janus_memory.run.loop import Stopped
    from janus_memory.settings.config import RunConfig

    def cfg(out, base_url):
        return RunConfig(llm={"backend": "openai", "model": "m", "base_url": base_url}, dataset="gsm8k", stream_size=4,
                         test_size=2,
                         encoder="hashing", out=str(out), no_cache=True,
                         janus={"warmup": 1, "coverage_size": 1, "boundary_size": 1, "fresh_size": 1})

    with OpenAITestServer(responder=_responder) as srv:
        run_experiment(cfg(tmp_path / "ref", srv.base_url), log=lambda m: None)
        with pytest.raises(Stopped):
            run_experiment(cfg(tmp_path / "r", srv.base_url), log=lambda m: None, stop_after=3)
        assert not (tmp_path / "r" / "COMPLETE").exists()
        run_experiment(cfg(tmp_path / "r", srv.base_url), log=lambda m: None, resume=True)
    for m in ("dc_rs", "dc_rs+janus"):
        assert (tmp_path / "r" / m / "decisions.jsonl").read_bytes() == \
            (tmp_path / "ref" / m / "decisions.jsonl").read_bytes()
