"""A run whose responses came from more than one model (summary.json ``answered_by``: a server that swapped its
model mid-run, or a cache that replayed another model's answers) is flagged by one warning line in `janus report`
(the console and report.md) and in `janus view` (its output and the page), naming the models and their counts."""
from __future__ import annotations

import json

import pytest

from janus_memory.cli.app import main
from janus_memory.report.runs import mixed_models
from janus_memory.testing.openai_stub import OpenAITestServer


class _Alternating(OpenAITestServer):
    """Answers as model-a and model-b in turn, whatever the request names."""

    n = 0

    def _completion(self, body, messages, last_user):
        out = super()._completion(body, messages, last_user)
        type(self).n += 1
        out["model"] = "model-a" if self.n % 2 else "model-b"
        return out


def test_the_line_names_each_model_and_its_counts():
    line = mixed_models({"answered_by": {"model-b": {"live": 2, "cached": 1}, "model-a": {"live": 5, "cached": 0}}})
    assert line == ("its responses came from 2 models: 'model-a' answered 5 (5 live, 0 from the response cache), "
                    "'model-b' answered 3 (2 live, 1 from the response cache); its numbers mix models (for one "
                    "model's results run it again with --no-cache or another --cache-dir)")
    assert mixed_models({"answered_by": {"m": {"live": 4, "cached": 2}}}) is None  # one model: nothing to say
    assert mixed_models({}) is None and mixed_models(None) is None
    # a hand-edited record: counts that are not counts add nothing, nothing is guessed
    assert mixed_models({"answered_by": {"a": {"live": "x"}, "b": {"live": 3}}}) is None
    assert mixed_models({"answered_by": ["a", "b"]}) is None
    evil = mixed_models({"answered_by": {"a\x1b[2J": {"live": 1}, "b": {"live": 1}}})
    assert evil is not None and "\x1b" not in evil and "'a\\\\x1b[2J'" in evil


@pytest.fixture
def mixed_run(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    out = tmp_path / "r"
    with pytest.warns(RuntimeWarning, match="this run mixes models"), _Alternating() as srv:
        assert main(["run", "--backend", "openai", "--base-url", srv.base_url, "--model", "m", "--dataset", "gsm8k",
                     "--stream-size", "3", "--test-size", "2", "--controller", "none", "--updater", "memory_free",
                     "--encoder", "hashing", "--out", str(out), "-q"]) == 0
    by = json.loads((out / "summary.json").read_text())["answered_by"]
    assert set(by) == {"model-a", "model-b"}
    return out, by


def _want(out, by) -> str:
    parts = sorted(by.items(), key=lambda kv: (-(kv[1]["live"] + kv[1]["cached"]), kv[0]))
    return (f"warning: {out}: its responses came from 2 models: " + ", ".join(
        f"'{m}' answered {c['live'] + c['cached']} ({c['live']} live, {c['cached']} from the response cache)"
        for m, c in parts) + "; its numbers mix models (for one model's results run it again with --no-cache or "
        "another --cache-dir)")


def test_report_and_view_warn_of_a_run_answered_by_two_models(mixed_run, tmp_path, capsys):
    out, by = mixed_run
    want = _want(out, by)
    capsys.readouterr()
    assert main(["report", "-q", str(out)]) == 0
    printed = capsys.readouterr().out
    assert " ".join(printed.split()).count(" ".join(want.split())) == 1
    md = (out / "report" / "report.md").read_text(encoding="utf-8")
    assert md.count(f"> **{want}**") == 1
    page = tmp_path / "v.html"
    assert main(["view", str(out), "--out", str(page)]) == 0
    printed = capsys.readouterr().out
    assert " ".join(printed.split()).count(" ".join(want.split())) == 1
    from janus_memory.view.data import view_data

    data = view_data([str(out)])
    assert data["runs"][0]["models_warning"] == want.split(": ", 2)[2]
    html = page.read_text(encoding="utf-8")
    assert "models_warning" in html and "from the response cache" in html and "note warn" in html


def test_a_run_answered_by_one_model_has_no_warning(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    out = tmp_path / "r"
    with OpenAITestServer() as srv:
        assert main(["run", "--backend", "openai", "--base-url", srv.base_url, "--model", "m", "--dataset", "gsm8k",
                     "--stream-size", "2", "--test-size", "1", "--controller", "none", "--updater", "memory_free",
                     "--encoder", "hashing", "--out", str(out), "-q"]) == 0
    capsys.readouterr()
    assert main(["report", "-q", str(out)]) == 0
    assert main(["view", str(out), "--out", str(tmp_path / "v.html")]) == 0
    assert "models:" not in capsys.readouterr().out
    assert "came from" not in (out / "report" / "report.md").read_text(encoding="utf-8")
