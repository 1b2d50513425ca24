"""Any sentence-transformers model by hub name or local path (optional extra ``janus-memory[st]``).

The paper's encoder was Qwen3-Embedding-0.6B; ``get_encoder("st:Qwen/Qwen3-Embedding-0.6B")`` loads it when
the weights are available locally (offline machines: pass a folder path). Texts longer than the model's
``max_seq_length`` are truncated by sentence-transformers (unlike the MiniLM ONNX encoder, which chunks).
"""
from __future__ import annotations

import numpy as np

from janus_memory.encoders.base import check_texts, l2_normalise


class SentenceTransformerEncoder:
    """``encode(texts) -> (n, dim)`` float32 L2-normalised; empty text -> zero row.

    Raises ImportError with install instructions when sentence-transformers is missing.
    """

    def __init__(self, name_or_path: str, *, device: str = "cpu", batch_size: int = 16):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise ImportError(
                "the 'st:' encoder needs sentence-transformers: pip install 'janus-memory[st]' "
                "(or use the default 'minilm' / the no-weights 'hashing' encoder)") from e
        if not name_or_path:
            raise ValueError("st: encoder needs a model name or path, e.g. 'st:all-MiniLM-L6-v2'")
        self._model = SentenceTransformer(name_or_path, device=device)
        self.batch_size = int(batch_size)
        dim = self._model.get_sentence_embedding_dimension()
        self.dim = int(dim)
        self.name = f"st:{name_or_path}"

    def encode(self, texts: list[str]) -> np.ndarray:
        texts = check_texts(texts)
        out = np.zeros((len(texts), self.dim), np.float32)
        idx = [i for i, t in enumerate(texts) if t.strip()]
        if idx:
            v = self._model.encode([texts[i] for i in idx], batch_size=self.batch_size, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False)
            out[idx] = np.asarray(v, np.float32)
        return l2_normalise(out)
