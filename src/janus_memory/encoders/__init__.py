"""Text encoders for tasks and memory states (see encoders/base.py for the contract). May import the registry and the
foundation modules only.

``get_encoder(spec)``:
* ``"minilm"`` (default): all-MiniLM-L6-v2 int8 ONNX, 256-token windows mean-pooled (onnx_minilm.py).
* ``"hashing"`` or ``"hashing:<n_features>"``: scikit-learn HashingVectorizer, no weights.
* ``"st:<name-or-path>"``: any sentence-transformers model (optional extra).
The returned encoder is wrapped in :class:`CachedEncoder` (LRU + optional SQLite disk cache in ``cache_dir``).
"""
from __future__ import annotations

from janus_memory.encoders.base import (
    CachedEncoder,
    EmbeddingDiskCache,
    Encoder,
    get_encoder,
    l2_normalise,
    text_key,
)

from janus_memory.registry import ENCODERS


@ENCODERS.register("minilm")
def _minilm(arg: str) -> Encoder:
    if arg:
        raise ValueError(f"unknown encoder spec 'minilm:{arg}': expected 'minilm', 'hashing[:n]' or 'st:<name-or-path>'")
    from janus_memory.encoders.onnx_minilm import MiniLMOnnxEncoder

    return MiniLMOnnxEncoder()


@ENCODERS.register("hashing")
def _hashing(arg: str) -> Encoder:
    from janus_memory.encoders.hashing import HashingEncoder

    if not arg:
        return HashingEncoder()
    try:
        n = int(arg)
    except ValueError:
        raise ValueError(f"hashing encoder spec must be 'hashing' or 'hashing:<int>', got 'hashing:{arg}'") from None
    return HashingEncoder(n_features=n)


@ENCODERS.register("st")
def _sentence_transformers(arg: str) -> Encoder:
    from janus_memory.encoders.st import SentenceTransformerEncoder

    return SentenceTransformerEncoder(arg)


__all__ = ["CachedEncoder", "EmbeddingDiskCache", "Encoder", "get_encoder", "l2_normalise", "text_key"]
