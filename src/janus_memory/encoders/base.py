"""Encoder seam: texts -> L2-normalised float32 vectors, with an in-memory LRU and an optional SQLite cache.

Every encoder satisfies :class:`Encoder`: ``name`` (stable id, part of the cache key), ``dim`` and
``encode(texts) -> np.ndarray`` of shape ``(len(texts), dim)``, dtype float32, rows of unit L2 norm, except that
an empty (or whitespace-only) text gives a zero row. Janus embeds tasks and memory states with it (paper
Sec. 3: the MMT trigger's cosine between consecutive memory embeddings).
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections import OrderedDict
from typing import Protocol, runtime_checkable

import numpy as np

from janus_memory.encoders.sqlite_wal import WriteFailures, cache_file, connect_shared, open_failure
from janus_memory.errors import ConfigError


@runtime_checkable
class Encoder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


def check_texts(texts: object) -> list[str]:
    """Validate the input of ``encode``: a list/tuple of str (a bare str is rejected: wrap it in a list)."""
    if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
        raise TypeError(f"encode() takes a list of str, got {type(texts).__name__}")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] must be str, got {type(t).__name__}")
    return list(texts)


def l2_normalise(x: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation; zero rows stay zero. Returns float32."""
    x = np.asarray(x, dtype=np.float32)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, n, out=np.zeros_like(x), where=n > 0).astype(np.float32)


def text_key(encoder_name: str, text: str) -> str:
    """Cache key: hex sha256 of ``encoder name + NUL + text`` (UTF-8)."""
    return hashlib.sha256(f"{encoder_name}\x00{text}".encode()).hexdigest()


class EmbeddingDiskCache:
    """SQLite store of embeddings (``embeddings.sqlite`` inside ``path`` when ``path`` is a folder). WAL mode,
    safe for concurrent writers; values are raw float32 bytes."""

    def __init__(self, path: str | os.PathLike, *, busy_timeout: float = 30.0):
        self.path = cache_file(path, "embeddings.sqlite")
        self._lock = threading.Lock()
        self._failures = WriteFailures("embedding cache", self.path,
                                       "embeddings could not be stored",
                                       "a rerun computes them again")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._con = connect_shared(self.path, "CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, dim INTEGER, "
                                                  "vec BLOB)", timeout=busy_timeout)
        except (OSError, sqlite3.Error) as e:
            raise ConfigError(open_failure("embedding cache", self.path, e, busy_timeout)) from None

    @property
    def write_failures(self) -> int:
        return self._failures.count

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                q = f"SELECT key, vec FROM emb WHERE key IN ({','.join('?' * len(chunk))})"
                for k, v in self._con.execute(q, chunk):
                    out[k] = np.frombuffer(v, dtype=np.float32).copy()
        return out

    def put_many(self, items: list[tuple[str, np.ndarray]]) -> None:
        """Store embeddings (first writer of a key wins). A file locked by another process past the busy timeout, or a
        full disk, loses only the reuse: warned once, counted in ``write_failures``."""
        rows = [(k, int(v.shape[0]), np.asarray(v, np.float32).tobytes()) for k, v in items]
        with self._lock:
            try:
                self._con.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as e:
                self._failures.record(e)
                return
            try:
                self._con.executemany("INSERT OR IGNORE INTO emb (key, dim, vec) VALUES (?, ?, ?)", rows)
                self._con.execute("COMMIT")
            except sqlite3.OperationalError as e:
                self._con.execute("ROLLBACK")
                self._failures.record(e)

    def __len__(self) -> int:
        with self._lock:
            return int(self._con.execute("SELECT COUNT(*) FROM emb").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._con.close()


class CachedEncoder:
    """Wraps an encoder with an LRU (``lru_size`` texts) and an optional :class:`EmbeddingDiskCache`.

    ``name``/``dim`` are the inner encoder's; ``computed`` counts texts actually sent to the inner encoder,
    ``hits`` counts texts served from the LRU or disk. Duplicate texts in one call are computed once.
    """

    def __init__(self, inner: Encoder, *, lru_size: int = 4096, cache_dir: str | os.PathLike | None = None):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.lru_size = int(lru_size)
        self.disk = EmbeddingDiskCache(cache_dir) if cache_dir is not None else None
        self._lru: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.computed = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        texts = check_texts(texts)
        keys = [text_key(self.name, t) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for k in keys:
                if k in self._lru:
                    self._lru.move_to_end(k)
                    found[k] = self._lru[k]
        missing = [k for k in dict.fromkeys(keys) if k not in found]
        if missing and self.disk is not None:
            found.update(self.disk.get_many(missing))
            missing = [k for k in missing if k not in found]
        if missing:
            first_text: dict[str, str] = {}
            for k, t in zip(keys, texts):
                first_text.setdefault(k, t)
            vecs = self.inner.encode([first_text[k] for k in missing])
            new = {k: np.asarray(v, np.float32) for k, v in zip(missing, vecs)}
            found.update(new)
            if self.disk is not None:
                self.disk.put_many(list(new.items()))
        with self._lock:
            self.computed += len(missing)
            self.hits += len(texts) - len(missing)
            for k in dict.fromkeys(keys):
                self._lru[k] = found[k]
                self._lru.move_to_end(k)
            while len(self._lru) > self.lru_size:
                self._lru.popitem(last=False)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=True)

    def __repr__(self) -> str:
        return f"CachedEncoder({self.inner!r}, disk={self.disk.path if self.disk else None})"


# ---------------------------------------------------------------- registry
_MODELS: dict[str, Encoder] = {}
_LOCK = threading.Lock()


def _inner(spec: str) -> Encoder:
    """Build the encoder named by ``spec`` ("kind" or "kind:arg") from the registry (janus_memory.registry.ENCODERS;
    the built-in kinds are registered in encoders/__init__.py, so this module imports no encoder module)."""
    from janus_memory.registry import ENCODERS

    kind, _, arg = spec.partition(":")
    if kind not in ENCODERS:
        ENCODERS.check(spec, " ('minilm', 'hashing[:n]' or 'st:<name-or-path>')")  # ConfigError (a ValueError)
    return ENCODERS[kind](arg)


def get_encoder(spec: str = "minilm", *, cache_dir: str | os.PathLike | None = None, lru_size: int = 4096) -> CachedEncoder:
    """Build (or reuse: models are loaded once per process and spec) an encoder, wrapped with caching.

    Raises ValueError for an unknown spec, ImportError/FileNotFoundError when the weights or library are absent.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError("encoder spec must be a non-empty string")
    spec = spec.strip()
    with _LOCK:
        inner = _MODELS.get(spec)
        if inner is None:
            inner = _MODELS[spec] = _inner(spec)
    return CachedEncoder(inner, lru_size=lru_size, cache_dir=cache_dir)
