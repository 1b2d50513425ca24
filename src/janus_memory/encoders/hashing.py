"""No-weights fallback encoder: scikit-learn ``HashingVectorizer`` (word 1-2 grams, stateless, deterministic).

Quality (shared/research/offline-stack.md sec. C): category-kNN 0.48 vs MiniLM 0.73 -- fine for tests and
smoke runs, weak on paraphrases. No text-length limit (a bag of n-grams).
"""
from __future__ import annotations

import numpy as np

from janus_memory.encoders.base import check_texts, l2_normalise

# the largest dimension: each text becomes a dense float32 row (256 KiB at 2^16), and the controller stores one per
# seen task; 2^40 asked numpy for 3.6 TiB in the middle of a run
MAX_FEATURES = 1 << 16


class HashingEncoder:
    """``encode(texts) -> (n, n_features)`` float32, L2-normalised (zero row for texts without any word).

    Args:
        n_features: output dimension (default 2**14 = 16,384; dense output, so keep it moderate).
        ngram_range: word n-grams (default unigrams and bigrams).
    """

    def __init__(self, n_features: int = 2 ** 14, ngram_range: tuple[int, int] = (1, 2)):
        from sklearn.feature_extraction.text import HashingVectorizer

        if not 2 <= int(n_features) <= MAX_FEATURES:
            raise ValueError(f"n_features must be in [2, {MAX_FEATURES}], got {n_features}")
        self.dim = int(n_features)
        self.name = f"hashing-{self.dim}-ng{ngram_range[0]}{ngram_range[1]}"
        self._vec = HashingVectorizer(n_features=self.dim, ngram_range=tuple(ngram_range), alternate_sign=False,
                                      norm=None, lowercase=True, dtype=np.float32)

    def encode(self, texts: list[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        m = self._vec.transform(texts)
        m.data = np.log1p(m.data)  # sublinear term frequency
        return l2_normalise(m.toarray())

    def __repr__(self) -> str:
        return f"HashingEncoder(dim={self.dim})"
