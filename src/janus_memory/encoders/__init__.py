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


# An encoder factory may carry ``check(arg)``: it raises ValueError for an argument it would refuse, without loading
# anything (run/build.check_encoder calls it before any folder is made).


def _minilm_arg(arg: str) -> None:
    if arg:
        raise ValueError(f"unknown encoder spec 'minilm:{arg}': expected 'minilm', 'hashing[:n]' or 'st:<name-or-path>'")


@ENCODERS.register("minilm")
def _minilm(arg: str) -> Encoder:
    _minilm_arg(arg)
    from janus_memory.encoders.onnx_minilm import MiniLMOnnxEncoder

    return MiniLMOnnxEncoder()


_minilm.check = _minilm_arg


def _hashing_dims(arg: str) -> int | None:
    """The dimension of ``hashing:<n>`` (None: the default), in [2, MAX_FEATURES] (hashing.py)."""
    from janus_memory.encoders.hashing import MAX_FEATURES

    if not arg:
        return None
    try:
        n = int(arg)
    except ValueError:
        raise ValueError(f"hashing encoder spec must be 'hashing' or 'hashing:<int>', got 'hashing:{arg}'") from None
    if not 2 <= n <= MAX_FEATURES:
        raise ValueError(f"the hashing encoder's dimension must be in [2, {MAX_FEATURES}] (a dense row of that many "
                         f"numbers per text, stored for every seen task), got {n}")
    return n


@ENCODERS.register("hashing")
def _hashing(arg: str) -> Encoder:
    from janus_memory.encoders.hashing import HashingEncoder

    n = _hashing_dims(arg)
    return HashingEncoder() if n is None else HashingEncoder(n_features=n)


_hashing.check = _hashing_dims


@ENCODERS.register("st")
def _sentence_transformers(arg: str) -> Encoder:
    from janus_memory.encoders.st import SentenceTransformerEncoder

    return SentenceTransformerEncoder(arg)


__all__ = ["CachedEncoder", "EmbeddingDiskCache", "Encoder", "get_encoder", "l2_normalise", "text_key"]
