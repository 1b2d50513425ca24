"""Test helpers for the memory-library guards: a scripted chat model LangMem can bind tools to, a recency agent that
answers probes from a store view, and a small OpenAI-compatible server on 127.0.0.1 for Mem0 (chat + embeddings)."""
from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from janus_memory.integrations.scripted import ScriptedChat, once, tool_call  # noqa: F401  (re-exported)

NS = ("memories", "u1")


def content_of(value: dict) -> str:
    c = value.get("content")
    if isinstance(c, dict):
        c = c.get("content")
    return str(c)


WORD = re.compile(r"[a-z0-9$]+")
STOP = {"the", "what", "who", "where", "which", "does", "and", "for", "from", "now", "user", "user's", "users", "our",
        "your", "you", "are", "was", "with", "this", "that", "per"}


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if len(w) >= 3 and w not in STOP}


def recency_agent(ns: tuple = NS) -> Callable[[str, Any], str]:
    """Answers with the memory sharing the most content words with the query, the most recently written among equals
    (an agent that follows the newest instruction): the reply is that memory's text, or "I don't know"."""

    def answer(query: str, view) -> str:
        q = words(query)
        scored = [(len(q & words(content_of(it.value))), it.updated_at, it.key, it) for it in view.search(ns, limit=100)]
        scored = [x for x in scored if x[0] > 0]
        if not scored:
            return "I don't know."
        scored.sort(key=lambda x: x[:3])
        return content_of(scored[-1][3].value)
    return answer


def hash_embed(texts: list[str], dims: int = 32) -> list[list[float]]:
    """A deterministic bag-of-words embedding (no model)."""
    out = []
    for t in texts:
        v = [0.0] * dims
        for w in WORD.findall(t.lower()):
            v[int(hashlib.sha256(w.encode()).hexdigest(), 16) % dims] += 1.0
        n = sum(x * x for x in v) ** 0.5 or 1.0
        out.append([x / n for x in v])
    return out


class Mem0Server:
    """A 127.0.0.1 OpenAI-compatible server for Mem0: ``/chat/completions`` answers with ``facts(last user text)`` as
    Mem0 2.x's extraction JSON, ``/embeddings`` with :func:`hash_embed`. ``chat(body) -> str`` may replace the reply."""

    def __init__(self, chat: Callable[[dict], str] | None = None, dims: int = 32):
        self.chat = chat
        self.dims = dims
        self.bodies: list[dict] = []
        self._srv: ThreadingHTTPServer | None = None

    def __enter__(self) -> Mem0Server:
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                outer.bodies.append(body)
                if self.path.endswith("/embeddings"):
                    inp = body.get("input")
                    texts = [inp] if isinstance(inp, str) else list(inp)
                    data = [{"object": "embedding", "index": i, "embedding": e}
                            for i, e in enumerate(hash_embed(texts, outer.dims))]
                    out = {"object": "list", "data": data, "model": body.get("model", "e"),
                           "usage": {"prompt_tokens": 1, "total_tokens": 1}}
                else:
                    text = outer.chat(body) if outer.chat else '{"memory": []}'
                    out = {"id": "c1", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": text}}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                raw = json.dumps(out).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self._srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self._srv.daemon_threads = True
        threading.Thread(target=self._srv.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        assert self._srv is not None
        self._srv.shutdown()
        self._srv.server_close()

    @property
    def base_url(self) -> str:
        assert self._srv is not None
        return f"http://127.0.0.1:{self._srv.server_address[1]}/v1"
