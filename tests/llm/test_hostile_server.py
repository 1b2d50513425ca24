"""A server that drips, hangs, fails or answers garbage: `janus run --backend openai` ends within the
limits the user set (--request-timeout, --max-retries, --request-deadline), the start-up check (GET /models)
included, with one error line and exit 2. No timing goals: pytest-timeout's generous bound only catches a hang."""
from __future__ import annotations

import pytest

from hostile_server import HostileServer
from janus_memory import cli

LIMITS = ["--request-timeout", "1", "--max-retries", "1", "--request-deadline", "3"]


def _run(srv: HostileServer, out) -> int:
    return cli.main(["run", "--backend", "openai", "--base-url", srv.base_url, "--model", "m", *LIMITS,
                     "--stream-size", "1", "--test-size", "1", "--encoder", "hashing", "--controller", "none",
                     "--updater", "memory_free", "--out", str(out), "-q"])


@pytest.mark.timeout(90)
@pytest.mark.parametrize("mode,says", [
    ("drip", "did not answer GET /models in 2 attempt(s) (TimeoutError; --request-timeout 1, --max-retries 1, "
             "--request-deadline 3)"),
    ("hang", "did not answer GET /models in 2 attempt(s) (TimeoutError; --request-timeout 1, --max-retries 1, "
             "--request-deadline 3)"),
    ("500", "HTTP 500"),
    ("badjson", "malformed JSON body"),
    ("nochoices", "malformed response"),
])
def test_a_hostile_server_ends_within_the_users_limits_in_one_line(mode, says, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    with HostileServer(mode) as srv:
        rc = _run(srv, tmp_path / "run")
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("WARNING")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], err
    assert "Traceback" not in err
