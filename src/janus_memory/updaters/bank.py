"""The retrieval bank: a second memory of past records for DC-RS / ExpeL / ExpRAG (cosine top-k).
Re-exported by ``updaters/base.py``."""

from __future__ import annotations

import base64
import copy
import json

import numpy as np

from .. import rows


class RetrievalBank:
    """Append-only list of JSON records with one L2-normalised float32 embedding each. Records are not changed
    after ``add`` (snapshots taken by reference share them).

    Retrieval is cosine similarity (= dot product of normalised rows), top-k, ties broken by insertion order.
    State is JSON-serialisable: embeddings are stored as base64 of little-endian float32 bytes (exact round trip).
    """

    def __init__(self) -> None:
        self.records: list[dict] = []
        self._buf: np.ndarray | None = None  # (capacity, d) float32, rows [0, len) are used; grows by doubling
        self._grow_token = object()  # replaced whenever the bank changes other than by ``add`` (state_hints)

    def __len__(self) -> int:
        return len(self.records)

    def add(self, record: dict, embedding: np.ndarray) -> None:
        e = np.asarray(embedding, dtype=np.float32).reshape(-1)
        n = len(self.records)
        if self._buf is None:
            self._buf = np.zeros((16, e.shape[0]), dtype=np.float32)
        elif e.shape[0] != self._buf.shape[1]:
            raise ValueError(f"embedding dim {e.shape[0]} differs from the bank's {self._buf.shape[1]}")
        if n == self._buf.shape[0]:
            self._buf = np.vstack([self._buf, np.zeros_like(self._buf)])
        rec = copy.deepcopy(record)
        json.dumps(rec)  # fail early on a non-JSON record (Updater.snapshot checks the bank's records only here)
        self._buf[n] = e
        self.records.append(rec)

    def matrix(self) -> np.ndarray | None:
        """(n, d) float32 view of all embeddings (None when empty)."""
        if self._buf is None or not self.records:
            return None
        return self._buf[: len(self.records)]

    def top_k(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Indices and similarities of the ``k`` most similar records, best first."""
        emb = self.matrix()
        if k <= 0 or emb is None:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        sims = emb @ q
        order = np.argsort(-sims, kind="stable")[:k]
        return [(int(i), float(sims[i])) for i in order]

    def hits_of(self, retrieved: list[dict]) -> list[tuple[int, float]]:
        """The ``(index, similarity)`` hits a step logged as ``info["retrieved"]`` (``[{"id", "similarity"}]``),
        each id at its first record in this bank; ids no longer in the bank are skipped."""
        index: dict[str, int] = {}
        for i, rec in enumerate(self.records):
            index.setdefault(rec["id"], i)
        return [(index[h["id"]], float(h["similarity"])) for h in retrieved if h["id"] in index]

    def state(self) -> dict:
        """``{"records", "dim", "emb_b64"}`` (JSON). Inside ``rows.by_reference()`` (the run store's form, see
        Updater.snapshot) the matrix is a RowsRef and the records are the bank's own (read-only), so the cost does
        not grow with the bank."""
        emb = self.matrix()
        if emb is None:
            return {"records": [], "dim": 0, "emb_b64": ""}
        if rows.wanted():
            return {"records": list(self.records), "dim": int(emb.shape[1]),
                    "emb_b64": rows.RowsRef(emb, self._grow_token, "b64")}
        emb = np.ascontiguousarray(emb, dtype="<f4")
        return {
            "records": copy.deepcopy(self.records),
            "dim": int(emb.shape[1]),
            "emb_b64": base64.b64encode(emb.tobytes()).decode("ascii"),
        }

    def state_hints(self) -> dict:
        """``{key path in state(): (token, stable)}``: while the token is the same object, the first ``stable``
        records / base64 characters of ``emb_b64`` stay as they are (store/ckpt_log.py)."""
        n, d = len(self.records), (0 if self._buf is None else int(self._buf.shape[1]))
        return {("records",): (self._grow_token, n), ("emb_b64",): (self._grow_token, 4 * (n * d * 4 // 3))}

    def set_state(self, state: dict) -> None:
        self._grow_token = object()
        self.records = copy.deepcopy(list(state.get("records", [])))
        self._buf = None
        if not self.records:
            return
        dim, emb = int(state["dim"]), state["emb_b64"]
        if isinstance(emb, rows.RowsRef):  # a snapshot taken by reference (the stream loop's rollback)
            self._buf = emb.copy_array().reshape(len(self.records), dim)
            return
        raw = base64.b64decode(emb)
        self._buf = np.frombuffer(raw, dtype="<f4").astype(np.float32).reshape(len(self.records), dim).copy()
