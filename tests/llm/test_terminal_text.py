"""A server's or a model's text reaches the terminal with its control characters escaped (errors.printable): HTTP error
bodies (400, 500 after the retries, an error inside HTTP 200), memory texts in `janus memory diff`, the lines a run
logs. Before, a title change, a line erase and the alternate screen went to the terminal as they were."""
from __future__ import annotations

import json

import pytest

from janus_memory import cli
from janus_memory.errors import printable
from test_reply_cap import BodyServer

HOSTILE = "bad\x1b]0;pwned\x07 \x1b[2K\x1b[?1049h\r\u202eevil\x9b\x00 tab\tok"
SHOWN = "bad\\x1b]0;pwned\\x07 \\x1b[2K\\x1b[?1049h\\r\\u202eevil\\x9b\\x00 tab\tok"


def test_printable_escapes_controls_and_keeps_text():
    assert printable(HOSTILE) == SHOWN
    assert printable("line 1\nline 2 é ü 中") == "line 1\nline 2 é ü 中"
    assert printable("line 1\nline 2", one_line=True) == "line 1\\nline 2"


def _run(url: str, out, *extra: str) -> int:
    return cli.main(["run", "--backend", "openai", "--base-url", url, "--model", "m", "--stream-size", "1",
                     "--test-size", "1", "--encoder", "hashing", "--controller", "none", "--updater", "memory_free",
                     "--max-retries", "1", "--out", str(out), "-q", *extra])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("status,body,says", [
    ("400 Bad Request", {"error": {"message": HOSTILE}}, "HTTP 400 from {url}: " + SHOWN),
    ("500 Internal Server Error", {"error": {"message": HOSTILE}}, "TransientLLMError: HTTP 500: " + SHOWN),
    ("200 OK", {"error": {"message": HOSTILE}}, "TransientLLMError: error body with HTTP 200: " + SHOWN),
])
def test_an_error_body_is_printed_escaped(tmp_path, capsys, monkeypatch, status, body, says):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    with BodyServer(json.dumps(body).encode(), status=status) as srv:
        url = srv.base_url
        rc = _run(url, tmp_path / "r")
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith("error: the model call failed: ")
    assert says.format(url=url) in err
    assert "\x1b" not in err and "\r" not in err and "\u202e" not in err


def test_memory_diff_shows_a_models_escape_sequences_escaped(tmp_path, capsys, monkeypatch):
    from janus_memory.run.fake_llm import scripted_backend
    from janus_memory.tasks import load_split
    from janus_memory.testing.openai_stub import OpenAITestServer

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    tasks = load_split("gsm8k", "stream", limit=2).tasks + load_split("gsm8k", "test", limit=1).tasks
    fake = scripted_backend(tasks)
    out = tmp_path / "r"
    with OpenAITestServer(responder=lambda m: fake.reply(m).replace("</cheatsheet>", HOSTILE + "\n</cheatsheet>")) \
            as srv:
        rc = cli.main(["run", "--backend", "openai", "--base-url", srv.base_url, "--model", "m", "--stream-size", "2",
                       "--test-size", "1", "--encoder", "hashing", "--controller", "none", "--out", str(out), "-q"])
    assert rc == 0, capsys.readouterr().err
    assert HOSTILE.encode() in (out / "dc_rs" / "final_memory.txt").read_bytes()  # stored as the model wrote it
    capsys.readouterr()
    assert cli.main(["memory", "diff", str(out), "0", "2", "--method", "dc_rs"]) == 0
    shown = capsys.readouterr().out
    assert SHOWN in shown
    assert "\x1b" not in shown and "\r" not in shown and "\u202e" not in shown and "\x00" not in shown
