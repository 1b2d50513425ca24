"""What is read from a model server is bounded by the request (llm/reply_cap.py): a reply past 1 MiB + 64 bytes per
requested token is refused in one line without being read (declared, streamed, or expanding from gzip), not retried,
never stored; the run stays resumable. A server on 127.0.0.1 sends the bodies."""
from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading

import pytest

from janus_memory.llm import OpenAIBackend
from janus_memory.llm.base import ChatRequest, FatalLLMError
from janus_memory.llm.reply_cap import BASE_BYTES, reply_limit


def _completion(content: str) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()


class BodyServer:
    """Answers every request with ``status`` and ``body`` (``length``: the Content-Length sent, None: none, the body
    ends when the connection closes; ``gzip``: Content-Encoding gzip) in 64 KiB writes, counting the bytes the
    client took before it closed the connection."""

    def __init__(self, body: bytes, *, status: str = "200 OK", length: int | None | str = "auto",
                 encoding: str | None = None):
        self.body, self.status, self.encoding = body, status, encoding
        self.length = len(body) if length == "auto" else length
        self.sent = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn):
        with conn:
            data = b""
            conn.settimeout(5)
            try:
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, rest = data.partition(b"\r\n\r\n")
                need = int(next((ln.split(b":")[1] for ln in head.split(b"\r\n")
                                 if ln.lower().startswith(b"content-length")), b"0"))
                while len(rest) < need:
                    rest += conn.recv(65536)
                hdr = f"HTTP/1.1 {self.status}\r\nContent-Type: application/json\r\nConnection: close\r\n"
                if self.length is not None:
                    hdr += f"Content-Length: {self.length}\r\n"
                if self.encoding:
                    hdr += f"Content-Encoding: {self.encoding}\r\n"
                conn.sendall((hdr + "\r\n").encode())
                for i in range(0, len(self.body), 65536):
                    conn.sendall(self.body[i:i + 65536])
                    self.sent += len(self.body[i:i + 65536])
            except OSError:  # the client closed the connection: the rest is never sent
                pass


def _ask(url: str, max_tokens: int):
    backend = OpenAIBackend(url, "m", timeout=30)
    req = ChatRequest(messages=({"role": "user", "content": "hi"},), max_tokens=max_tokens)

    async def go():
        try:
            return await backend.acomplete(req)
        finally:
            await backend.aclose()
    return asyncio.run(go())


def test_the_limit_is_stated_per_requested_token():
    assert reply_limit(8192) == (1 << 20) + 64 * 8192 == 1_572_864
    assert reply_limit(16) == 1_049_600
    assert reply_limit(None) == reply_limit(8192)


def test_a_reply_within_the_limit_is_read():
    body = _completion("x" * 500_000)
    with BodyServer(body) as srv:
        res = _ask(srv.base_url, 8192)
    assert res.text == "x" * 500_000


@pytest.mark.parametrize("how", ["declared", "streamed", "gzip"])
def test_a_reply_past_the_limit_is_refused_and_not_read(how):
    big = _completion("y" * 50_000_000)  # the 50 MB reply to a max_tokens=16 request
    limit = reply_limit(16)
    if how == "declared":
        srv = BodyServer(big)
        says = f"declares {len(big):,} bytes"
    elif how == "streamed":
        srv = BodyServer(big, length=None)
        says = f"went past {limit:,} bytes"
    else:
        packed = gzip.compress(big)
        assert len(packed) < 200_000  # a small body that expands 250-fold
        srv = BodyServer(packed, encoding="gzip")
        says = f"went past {limit:,} bytes"
    with srv:
        url = srv.base_url
        with pytest.raises(FatalLLMError) as e:
            _ask(url, 16)
    assert str(e.value) == (f"the reply of {url}/chat/completions {says}; a reply may hold at most "
                            f"{limit:,} bytes (1 MiB + 64 bytes per requested token): the rest was not read")
    assert srv.sent < limit + 8 * 2 ** 20  # what the kernel's socket buffers took, not the 50 MB


def test_an_encoding_not_asked_for_is_refused():
    with BodyServer(b"\x00" * 100, encoding="br") as srv:
        url = srv.base_url
        with pytest.raises(FatalLLMError) as e:
            _ask(url, 16)
    assert str(e.value) == (f"the reply of {url}/chat/completions is compressed with 'br', which was not "
                            "asked for (gzip or deflate only: their decoded size is bounded); it was not read")


def test_an_error_body_past_the_limit_is_refused_too():
    body = json.dumps({"error": {"message": "z" * (30 * BASE_BYTES)}}).encode()
    with BodyServer(body, status="400 Bad Request", length=None) as srv:
        with pytest.raises(FatalLLMError) as e:
            _ask(srv.base_url, 16)
    assert "went past 1,049,600 bytes" in str(e.value)  # an error body is bounded by its request's limit
    assert srv.sent < reply_limit(16) + 8 * 2 ** 20


def test_a_run_refuses_a_huge_reply_in_one_line_stores_none_of_it_and_resumes(tmp_path, capsys, monkeypatch):
    """The 50 MB reply of the issue, scaled down: 5 MB to --solver-max-tokens 64 (limit 1 MiB + 4 KiB)."""
    from janus_memory import cli
    from janus_memory.run.fake_llm import scripted_backend
    from janus_memory.tasks import load_split
    from janus_memory.testing.openai_stub import OpenAITestServer

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    tasks = load_split("gsm8k", "stream", limit=3).tasks + load_split("gsm8k", "test", limit=1).tasks
    fake = scripted_backend(tasks)
    huge = {"on": True}

    def reply(messages):
        return fake.reply(messages) + ("\n" + "w" * 5_000_000 if huge["on"] else "")

    out = tmp_path / "r"
    args = ["--backend", "openai", "--model", "m", "--stream-size", "3", "--test-size", "1", "--encoder", "hashing",
            "--controller", "none", "--solver-max-tokens", "64", "--curator-max-tokens", "64", "-q"]
    with OpenAITestServer(responder=reply) as srv:
        url = srv.base_url
        rc = cli.main(["run", *args, "--base-url", url, "--out", str(out)])
        err = capsys.readouterr().err
        assert srv.requests == 1  # refused, not retried
    assert rc == 2
    assert err == (f"error: the model call failed: the reply of {url}/chat/completions declares 5,000,622 "
                   "bytes; a reply may hold at most 1,052,672 bytes (1 MiB + 64 bytes per requested token): the rest "
                   f"was not read; every committed step is kept: fix the server, then `janus run --resume {out}`\n")
    stored = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    assert stored < 1_500_000  # the database, the exports and the cache hold none of it
    huge["on"] = False
    with OpenAITestServer(responder=reply) as srv:
        rc = cli.main(["run", "--resume", str(out), "--base-url", srv.base_url, "-q"])
    assert rc == 0, capsys.readouterr().err
    assert (out / "COMPLETE").exists()


def test_the_start_up_check_reads_at_most_the_base_limit():
    """GET /models answered with 50 MB: the endpoint answered (reachable), and no more than 1 MiB of it was read."""
    from janus_memory.run.backends import check_endpoint

    with BodyServer(b"m" * 50_000_000, length=None) as srv:
        check_endpoint(srv.base_url, 30.0)
        assert srv.sent < BASE_BYTES + 8 * 2 ** 20
