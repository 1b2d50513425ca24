"""What the cost columns count, on real runs: a server that drops connections shows its retries in the role table
(`janus run`'s end summary) and in `janus report`; and a run made again with a warm response cache keeps Table 3's
evaluations needed, while the Janus calls paid drop to 0 (each column says which it counts)."""
from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from janus_memory.cli import main


class DroppingServer:
    """An OpenAI-compatible chat server on 127.0.0.1 that closes every other request's connection with no reply."""

    def __init__(self):
        self.requests = self.dropped = 0
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):  # noqa: N802
                self._send({"object": "list", "data": [{"id": "m", "object": "model"}]})

            def do_POST(self):  # noqa: N802
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with lock:
                    outer.requests += 1
                    drop = outer.requests % 2 == 1
                    outer.dropped += drop
                if drop:  # no reply at all: the client sees the connection closed, a transient failure it retries
                    self.close_connection = True
                    self.connection.close()
                    return
                size = len(json.dumps(req.get("messages")))  # a token count the context check believes
                self._send({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": "The answer is 42."}}],
                            "usage": {"prompt_tokens": size, "completion_tokens": 5, "total_tokens": size + 5}})

            def _send(self, obj):
                body = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def _table_rows(lines: list[str], header_cell: str) -> tuple[list[str], list[list[str]]]:
    """The header cells and body rows of the console table whose header holds ``header_cell``."""
    at = next(k for k, x in enumerate(lines) if x.startswith("┃") and header_cell in x)
    head = [c.strip() for c in lines[at].strip("┃").split("┃")]
    rows = []
    for x in lines[at + 2:]:
        if not x.startswith("│"):
            break
        rows.append([c.strip() for c in x.strip("│").split("│")])
    return head, rows


def test_retries_of_a_server_that_drops_connections_are_in_the_role_table_and_the_report(tmp_path, capsys):
    run = tmp_path / "run"
    server = DroppingServer()
    with server as url:
        assert main(["run", "--backend", "openai", "--base-url", url, "--model", "m", "--dataset", "rules_small",
                     "--stream-size", "2", "--test-size", "1", "--controller", "none", "--encoder", "hashing:64",
                     "--no-cache", "--out", str(run)]) == 0
    assert server.dropped >= 4  # every other request: each call was retried once
    out = capsys.readouterr().out.splitlines()
    head, rows = _table_rows(out, "retries")
    assert head == ["role", "calls paid", "cache hits", "retries", "prompt tokens paid", "completion tokens paid",
                    "wall s"]
    retries = {r[0]: int(r[3]) for r in rows}
    assert sum(retries.values()) == server.dropped and all(v > 0 for v in retries.values())
    said = re.sub(r"\s+", " ", "\n".join(out))  # the caption wraps at the table's width
    assert "retries = attempts repeated after a transient failure (a dropped connection, HTTP 429 or 5xx, a timeout)" in said

    assert main(["report", str(run), "--out", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out.splitlines()
    head, rows = _table_rows(out, "retries")
    assert head[5] == "retries" and rows[0][5] == str(server.dropped)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert (f"Retries (attempts repeated after a transient failure: a dropped connection, HTTP 429 or 5xx, a timeout; "
            f"not calls paid): dc_rs {server.dropped}.") in md


@pytest.mark.parametrize("preset", ["recommended", "paper"])
def test_table3_counts_the_evaluations_a_run_needed_whatever_the_cache_held(preset, tmp_path, capsys):
    """The same run twice on one response cache: the second pays nothing, and Table 3 gives it the same evaluations
    needed (the decision log's), with 'Janus calls paid' 0 beside them."""
    from janus_memory.report.report import build_report

    args = ["run", "--backend", "fake", "--dataset", "rules_small", "--stream-size", "8", "--test-size", "2",
            "--controller", "both", "--janus-preset", preset, "--warmup", "3", "--trigger", "always",
            "--encoder", "hashing:64", "--cache-dir", str(tmp_path / "cache")]
    tables = []
    for name in ("cold", "warm"):
        assert main([*args, "--out", str(tmp_path / name)]) == 0
        rep = build_report([str(tmp_path / name)], str(tmp_path / f"rep-{name}"))
        (row,) = rep["tables"]["janus_cost"]["rows"]
        md = Path(rep["report"]).read_text()
        tables.append((row["evaluations"], row["janus_calls_paid"], md))
    capsys.readouterr()
    (cold_eval, cold_paid, md), (warm_eval, warm_paid, _) = tables
    assert cold_eval == warm_eval > 0
    assert cold_paid > 0 and warm_paid == 0
    header = next(x for x in md.splitlines() if x.startswith("| Dataset | Method | Janus | τ |"))
    assert "| Evaluations needed | Janus calls paid |" in header
    assert re.search(r"Evaluations needed = the \(memory, task\) evaluations the controller's decisions used, summed "
                     r"from the decision log .*: the same for the same run whatever the response cache held", md)
