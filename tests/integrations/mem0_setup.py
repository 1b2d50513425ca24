"""A fully local mem0 Memory for the tests: its "openai" LLM and embedder at a 127.0.0.1 server (lib_fakes.Mem0Server),
qdrant in-process under a folder, its history SQLite in the same folder, telemetry off (set before mem0 is imported)."""
from __future__ import annotations

import os
import re
import tempfile
from typing import Any

os.environ["MEM0_TELEMETRY"] = "false"
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="janus-mem0-"))

from lib_fakes import WORD, words  # noqa: E402


def local_memory(base_url: str, folder: str, dims: int = 32) -> Any:
    from mem0 import Memory

    cfg = {
        "llm": {"provider": "openai", "config": {"model": "scripted", "api_key": "x", "openai_base_url": base_url}},
        "embedder": {"provider": "openai", "config": {"model": "hash", "api_key": "x", "openai_base_url": base_url,
                                                      "embedding_dims": dims}},
        "vector_store": {"provider": "qdrant", "config": {"collection_name": "t", "path": os.path.join(folder, "q"),
                                                          "embedding_model_dims": dims, "on_disk": True}},
        "history_db_path": os.path.join(folder, "history.db"),
    }
    return Memory.from_config(cfg)


def newest_agent(query: str, view) -> str:
    """Replies with the memory sharing the most content words with the query, the newest among equals."""
    q = words(query)
    res = view.get_all()["results"]
    scored = [(len(q & words(m["memory"])), str(m.get("updated_at") or m.get("created_at") or ""), i, m)
              for i, m in enumerate(res)]
    scored = [x for x in scored if x[0] > 0]
    if not scored:
        return "I don't know."
    scored.sort(key=lambda x: x[:3])
    return scored[-1][3]["memory"]


def facts_of(body: dict) -> list[str]:
    """The scripted extraction: the sentences of the conversation's user turns that end with '.'."""
    text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    m = re.findall(r"USER SAID: ([^\n\"]*\.)", text)
    return m


__all__ = ["WORD", "facts_of", "local_memory", "newest_agent"]
