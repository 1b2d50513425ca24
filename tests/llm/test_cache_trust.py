"""The response cache knows which model answered and does not trust what it reads back: another model's stored
answers are not replayed (a probe asks the server which model answers before the first replay), a run whose answers
come from two models says so, a damaged or hand-edited entry is one warning and asked again, and a damaged file is
moved aside (one warning) while the run goes on."""
from __future__ import annotations

import json
import sqlite3
import warnings

import pytest

from janus_memory.llm.cache import ResponseCache
from janus_memory.llm.client import LLMClient
from janus_memory.llm.openai_backend import OpenAIBackend
from janus_memory.testing.openai_stub import OpenAITestServer

Q = [[{"role": "user", "content": f"What is {i} + {i}?"}] for i in range(6)]


class _Swappable(OpenAITestServer):
    """The stub server, answering as ``served`` whatever model the request names (a model swapped behind one URL),
    with a system_fingerprint when ``fingerprint`` is set."""

    served = "model-a"
    fingerprint = ""

    def _completion(self, body, messages, last_user):
        out = super()._completion(body, messages, last_user)
        out["model"] = self.served
        if self.fingerprint:
            out["system_fingerprint"] = self.fingerprint
        return out


def _client(srv, cache_dir) -> LLMClient:
    return LLMClient(OpenAIBackend(srv.base_url, "same-name", timeout=10), ResponseCache(cache_dir), max_retries=0)


def _texts(client, batch=Q) -> list[str]:
    return [r.text for r in client.chat_many(batch)]


def test_a_model_swapped_behind_the_same_url_and_name_is_not_replayed(tmp_path):
    with _Swappable() as srv:
        a = _client(srv, tmp_path)
        assert _texts(a) == [f"The answer is {2 * i}." for i in range(6)]
        assert a.answered == {"model-a": {"live": 6, "cached": 0}}
        a.cache.close()
        again = _client(srv, tmp_path)  # the same model: every answer replayed, one probe request only
        n = srv.requests
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _texts(again)
        assert srv.requests == n + 1 and again.answered == {"model-a": {"live": 0, "cached": 6}}
        again.cache.close()
        srv.served = "model-b"
        b = _client(srv, tmp_path)
        with pytest.warns(RuntimeWarning) as rec:
            _texts(b)
        assert b.answered == {"model-b": {"live": 6, "cached": 0}} and b.other_model_entries == 6
        msgs = [str(w.message) for w in rec]
        assert len(msgs) == 1 and "answers stored for model 'model-a' are not replayed" in msgs[0]
        assert "now answers as 'model-b'" in msgs[0]
        b.cache.close()
        c = _client(srv, tmp_path)  # model-b's answers replaced model-a's
        _texts(c)
        assert c.answered == {"model-b": {"live": 0, "cached": 6}}
        c.cache.close()


def test_the_fingerprint_is_part_of_the_model_identity(tmp_path):
    with _Swappable() as srv:
        srv.fingerprint = "fp_1"
        a = _client(srv, tmp_path)
        _texts(a)
        assert a.answered == {"model-a (fp_1)": {"live": 6, "cached": 0}}
        a.cache.close()
        srv.fingerprint = "fp_2"
        b = _client(srv, tmp_path)
        with pytest.warns(RuntimeWarning, match="not replayed"):
            _texts(b)
        assert b.answered == {"model-a (fp_2)": {"live": 6, "cached": 0}}
        b.cache.close()


def test_a_run_whose_server_changes_model_mid_run_is_warned_once(tmp_path):
    with _Swappable() as srv:
        c = _client(srv, tmp_path)
        _texts(c, Q[:3])
        srv.served = "model-b"
        with pytest.warns(RuntimeWarning) as rec:
            _texts(c, Q[3:])
        assert [str(w.message) for w in rec if "mixes models" in str(w.message)] == [
            f"this run mixes models: answers of 'model-a' (from the same server earlier) and now of 'model-b' from "
            f"openai:{srv.base_url}:same-name; for one model's results rerun with --no-cache or another --cache-dir"]
        assert c.answered == {"model-a": {"live": 3, "cached": 0}, "model-b": {"live": 3, "cached": 0}}
        c.cache.close()


def _entries(cache_dir) -> list[tuple[str, str]]:
    db = sqlite3.connect(cache_dir / "responses.sqlite")
    try:
        return db.execute("SELECT key, value FROM responses ORDER BY key").fetchall()
    finally:
        db.close()


def _set(cache_dir, key, value) -> None:
    db = sqlite3.connect(cache_dir / "responses.sqlite")
    with db:
        db.execute("UPDATE responses SET value=? WHERE key=?", (value, key))
    db.close()


@pytest.mark.parametrize("edit, problem", [
    (lambda v: v[: len(v) // 2], "not JSON"),
    (lambda v: json.dumps({**json.loads(v), "text": 5}), "its text is int, not a string"),
    (lambda v: json.dumps({**json.loads(v), "text": "The answer is 999."}), "its checksum does not match"),
    (lambda v: json.dumps([1, 2]), "not a JSON object but list"),
    (lambda v: json.dumps({**json.loads(v), "usage": {"prompt_tokens": "x"}}), "its usage is not"),
])
def test_a_damaged_or_edited_entry_is_one_warning_and_asked_again(tmp_path, edit, problem):
    with _Swappable() as srv:
        a = _client(srv, tmp_path)
        want = _texts(a)
        a.cache.close()
        rows = _entries(tmp_path)
        for key, value in rows[:2]:
            _set(tmp_path, key, edit(value))
        b = _client(srv, tmp_path)
        with pytest.warns(RuntimeWarning) as rec:
            assert _texts(b) == want  # the two damaged entries asked again, the others replayed
        msgs = [str(w.message) for w in rec]
        assert len(msgs) == 1 and msgs[0].startswith(f"response cache {tmp_path / 'responses.sqlite'}: a stored "
                                                     f"answer was not used ({problem}")
        assert "--no-cache" in msgs[0]
        assert b.answered == {"model-a": {"live": 2, "cached": 4}} and b.cache.damaged == 2
        b.cache.close()
        assert [v for _, v in _entries(tmp_path)] == [v for _, v in rows]  # replaced by the new (same) answers
        c = _client(srv, tmp_path)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _texts(c)
        c.cache.close()


def test_entries_without_checksum_or_model_are_refused_unless_the_file_is_format_1():
    """An entry of a current-format cache must carry its checksum and the model that answered; a file written before
    the format was marked (format 1) may hold entries without them (the stored fixtures of older run folders do);
    an entry nested past Python's recursion limit is damage (a RecursionError, not a ValueError)."""
    from janus_memory.llm.cache import _checksum, check_entry

    d = {"text": "hi", "reasoning": "", "finish_reason": "stop", "model": "m",
         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "estimated": False}}
    bare = {k: v for k, v in d.items() if k != "model"}
    assert check_entry(json.dumps({**d, "_sha256": _checksum(d)})) == (d, "")
    stripped = "it carries no checksum and no model, which every entry of a cache of format 2 has (stripped or edited)"
    assert check_entry(json.dumps(bare)) == (None, stripped)
    assert check_entry(json.dumps(d))[1].startswith("it carries no checksum, which")
    assert check_entry(json.dumps({**bare, "_sha256": _checksum(bare)}))[1].startswith("it carries no model, which")
    assert check_entry(json.dumps({**d, "model": ""}))[1].startswith("it carries no checksum and no model")
    assert check_entry(json.dumps(d), fmt=1) == (d, "") and check_entry(json.dumps(bare), fmt=1) == (bare, "")
    assert check_entry(json.dumps({**d, "_sha256": _checksum(bare)}), fmt=1)[1].startswith("its checksum does not")
    assert check_entry(json.dumps({**d, "model": None}))[1] == "its model is NoneType, not a string"
    assert check_entry(b"\xff")[1].startswith("not JSON")
    assert check_entry("[" * 100000)[1].startswith("not JSON")


def _strip(value: str, *fields: str, text: str | None = None) -> str:
    d = json.loads(value)
    for f in fields:
        d.pop(f, None)
    if text is not None:
        d["text"] = text
    return json.dumps(d)


@pytest.mark.parametrize("fields", [("_sha256", "model"), ("_sha256",), ("model",)])
def test_a_stripped_entry_of_a_current_cache_is_not_replayed(tmp_path, fields):
    """The adversarial edit: another answer written into an entry whose checksum (and model) were removed. A file
    of the current format never replays it: one warning, asked again, the run ends with the server's answers."""
    with _Swappable() as srv:
        a = _client(srv, tmp_path)
        want = _texts(a)
        a.cache.close()
        rows = _entries(tmp_path)
        for key, value in rows[:3]:
            _set(tmp_path, key, _strip(value, *fields, text="The answer is 999."))
        b = _client(srv, tmp_path)
        assert b.cache.format == 2
        with pytest.warns(RuntimeWarning) as rec:
            assert _texts(b) == want
        msgs = [str(w.message) for w in rec]
        assert len(msgs) == 1 and "a stored answer was not used (it carries no " in msgs[0] and "--no-cache" in msgs[0]
        assert b.answered == {"model-a": {"live": 3, "cached": 3}} and b.cache.damaged == 3
        b.cache.close()
        assert [v for _, v in _entries(tmp_path)] == [v for _, v in rows]


def test_a_format_1_cache_replays_its_bare_entries_and_says_once_they_are_unverified(tmp_path):
    with _Swappable() as srv:
        a = _client(srv, tmp_path)
        want = _texts(a)
        a.cache.close()
        for key, value in _entries(tmp_path):
            _set(tmp_path, key, _strip(value, "_sha256", "model"))
        db = sqlite3.connect(tmp_path / "responses.sqlite")
        assert db.execute("PRAGMA user_version").fetchone() == (2,)  # a new file is marked the current format
        db.execute("PRAGMA user_version=0")  # as every file written before the format was marked
        db.close()
        b = _client(srv, tmp_path)
        assert b.cache.format == 1
        with pytest.warns(RuntimeWarning) as rec:
            assert _texts(b) == want
        msgs = [str(w.message) for w in rec]
        assert msgs == [f"response cache {tmp_path / 'responses.sqlite'} has cache format 1 (written before its "
                        "entries had to carry a checksum and the model that answered): its answers without them are "
                        "replayed unverified (an edited one is not noticed); --no-cache or another --cache-dir asks "
                        "the server again"]
        assert b.cache.unverified == 6 and b.cache.damaged == 0
        b.cache.close()


def test_a_cache_of_a_newer_format_is_one_line(tmp_path):
    from janus_memory.llm.cache import CacheError

    ResponseCache(tmp_path).close()
    db = sqlite3.connect(tmp_path / "responses.sqlite")
    db.execute("PRAGMA user_version=3")
    db.close()
    with pytest.raises(CacheError) as e:
        ResponseCache(tmp_path)
    assert str(e.value) == (f"response cache {tmp_path / 'responses.sqlite'} has cache format 3; this janus-memory "
                            "reads formats 1-2: pass another --cache-dir, or --no-cache")


def test_a_reply_with_a_lone_surrogate_is_stored_and_replayed(tmp_path):
    """Valid JSON from a server may hold a lone surrogate escape; storing it must not raise, and it replays as the
    visible escape every reply gets (errors.escape_lone_surrogates), also from an entry stored before replies were
    escaped."""
    from janus_memory.values import ChatResult

    cache = ResponseCache(tmp_path / "c")
    cache.put("k", ChatResult(text="smile \ud83d end", finish_reason="stop", model="m"))
    got = cache.get("k")
    assert got is not None and got.text == "smile \\ud83d end" and cache.damaged == 0
    cache.close()


def test_a_truncated_cache_file_is_moved_aside_and_the_run_goes_on(tmp_path):
    with _Swappable() as srv:
        a = _client(srv, tmp_path)
        want = _texts(a)
        a.cache.close()
        f = tmp_path / "responses.sqlite"
        data = f.read_bytes()
        b = _client(srv, tmp_path)  # opened, then the file is cut under it (as a full disk or a kill would)
        f.write_bytes(data[:1024 + 100])
        with pytest.warns(RuntimeWarning) as rec:
            assert _texts(b) == want
        msgs = [str(w.message) for w in rec if "is damaged" in str(w.message)]
        assert len(msgs) == 1 and msgs[0].startswith(f"response cache {f} is damaged (") and "--no-cache" in msgs[0]
        aside = b.cache.moved_aside
        assert aside is not None and aside.exists() and aside.name.startswith("responses.sqlite.damaged-")
        b.cache.close()
        c = _client(srv, tmp_path)  # the new file holds the answers asked again
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert _texts(c) == want
        assert c.answered == {"model-a": {"live": 0, "cached": 6}}
        c.cache.close()


def test_a_run_over_a_hand_edited_cache_warns_once_and_ends_as_the_first(tmp_path):
    """`janus run` twice with one response cache, every entry edited to ``{"text": 5}`` in between: the second run
    warns once (naming the file and --no-cache), asks again, and writes the same decisions."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import janus_memory

    src = str(Path(janus_memory.__file__).resolve().parents[1])  # the package under test, for the child too
    env = {**os.environ, "PYTHONPATH": src, "JANUS_CACHE_DIR": str(tmp_path / "cache")}

    def run(out: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "janus_memory.cli", "run", "--backend", "fake", "--stream-size",
                               "6", "--test-size", "2", "--encoder", "hashing", "--warmup", "2", "--quiet", "--out",
                               str(tmp_path / out)], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)

    first = run("a")
    assert first.returncode == 0, first.stderr
    db = sqlite3.connect(tmp_path / "cache" / "llm-cache" / "responses.sqlite")
    with db:
        n = db.execute("UPDATE responses SET value='{\"text\": 5}'").rowcount
    db.close()
    assert n > 0
    second = run("b")
    assert second.returncode == 0, second.stderr
    lines = [ln for ln in second.stderr.splitlines() if "a stored answer was not used" in ln]
    assert len(lines) == 1 and "its text is int, not a string" in lines[0] and "--no-cache" in lines[0]
    for method in ("dc_rs", "dc_rs+janus"):
        assert (tmp_path / "a" / method / "decisions.jsonl").read_bytes() == \
            (tmp_path / "b" / method / "decisions.jsonl").read_bytes()


def test_answered_field_names_only_another_model():
    from janus_memory.llm.cache import answered_field
    from janus_memory.values import ChatResult

    assert answered_field(ChatResult(text="", model="m"), "m") == {}
    assert answered_field(ChatResult(text="", model="x", fingerprint="fp"), "m") == {"model": "x (fp)"}
    assert answered_field(ChatResult(text=""), "m") == {}


def test_a_run_records_which_model_answered_and_a_swapped_model_is_asked_again(tmp_path, monkeypatch):
    """Two `janus run`s with one response cache against one URL and one --model; the server's model is swapped in
    between. The second run replays nothing of the first model: every response is live and says which model gave it
    (steps.jsonl llm_calls, decisions.jsonl evaluations, summary.json answered_by)."""
    from janus_memory.cli import main
    from janus_memory.run.fake_llm import scripted_backend
    from janus_memory.tasks import load_split

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    tasks = load_split("gsm8k", "stream", limit=6).tasks + load_split("gsm8k", "test", limit=2).tasks
    fake = scripted_backend(tasks)
    args = ["run", "--backend", "openai", "--model", "same-name", "--dataset", "gsm8k", "--stream-size", "6",
            "--test-size", "2", "--encoder", "hashing", "--warmup", "2", "--trigger", "always", "--quiet"]
    with _Swappable(responder=fake.reply) as srv:
        assert main([*args, "--base-url", srv.base_url, "--out", str(tmp_path / "a")]) == 0
        srv.served = "model-b"
        with pytest.warns(RuntimeWarning, match="answers stored for model 'model-a' are not replayed"):
            assert main([*args, "--base-url", srv.base_url, "--out", str(tmp_path / "b")]) == 0
    for run, model in (("a", "model-a"), ("b", "model-b")):
        summary = json.loads((tmp_path / run / "summary.json").read_text())
        assert list(summary["answered_by"]) == [model]
        assert summary["answered_by"][model]["cached"] == (0 if run == "b" else summary["answered_by"][model]["cached"])
        steps = [json.loads(x) for x in (tmp_path / run / "dc_rs+janus" / "steps.jsonl").read_text().splitlines()]
        assert {c.get("model") for s in steps for c in s["llm_calls"]} == {model}
        decisions = [json.loads(x) for x in (tmp_path / run / "dc_rs+janus" / "decisions.jsonl").read_text().splitlines()]
        evals = [e for d in decisions for e in d["decision"].get("evaluations", [])]
        assert evals and {e.get("model") for e in evals} == {model}
