"""Text encoders for tasks and memory states (see encoders/base.py for the contract).

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

__all__ = ["CachedEncoder", "EmbeddingDiskCache", "Encoder", "get_encoder", "l2_normalise", "text_key"]
