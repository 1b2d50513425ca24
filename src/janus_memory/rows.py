"""Embedding matrices handed to the run store by reference (a flat run store).

The controller (every seen task's embedding) and the retrieval banks (one embedding per record) keep append-only
float32 matrices. Their JSON state encodes the whole matrix as base64, so writing it every step costs time
proportional to the run. In the run store's form of a state (``Janus.state_dict(by_reference=True)``,
``Updater.snapshot(by_reference=True)``) such a matrix is a :class:`RowsRef` instead: a read-only view of its rows
plus the producer's "only grew" token. The store (store/ckpt_rows.py) writes only the rows added since its previous
commit to a side table and rebuilds the JSON form on load, so a stored checkpoint reads back exactly as the plain
state (``RowsRef.encode()``).

Contract of a producer: while ``token`` is the same object, the rows ``[0, n)`` it handed out never change (rows are
only appended; a restore replaces the token).
"""
from __future__ import annotations

import base64
import contextlib
import contextvars
from collections.abc import Iterator

import numpy as np

FORMS = ("array", "b64")  # what a RowsRef stands for: an encode_array dict, or a bare base64 string
_BY_REFERENCE = contextvars.ContextVar("janus_rows_by_reference", default=False)


class RowsRef:
    """Rows ``[0, n)`` of an append-only float32 matrix (``array``: an (n, d) view, never written to), the producer's
    ``token`` and the JSON ``form`` it replaces. Deep copies share it (it is immutable)."""

    __slots__ = ("array", "token", "form")

    def __init__(self, array: np.ndarray, token: object, form: str):
        if form not in FORMS:
            raise ValueError(f"unknown rows form {form!r}")
        if array.ndim != 2 or array.dtype != np.float32:
            raise ValueError("RowsRef needs an (n, d) float32 array")
        self.array, self.token, self.form = array, token, form

    @property
    def n(self) -> int:
        return int(self.array.shape[0])

    @property
    def dim(self) -> int:
        return int(self.array.shape[1])

    def row_bytes(self, i: int) -> bytes:
        """Row ``i`` as little-endian float32 bytes (what the store keeps)."""
        return self.array[i].astype("<f4", copy=False).tobytes()

    def copy_array(self) -> np.ndarray:
        return np.array(self.array, dtype=np.float32, copy=True)

    def encode(self):
        """The plain JSON form this stands for (what ``by_reference=False`` gives)."""
        return encode_form(np.ascontiguousarray(self.array, dtype="<f4").tobytes(), self.n, self.dim, self.form)

    def __deepcopy__(self, memo) -> "RowsRef":
        return self

    def __repr__(self) -> str:
        return f"RowsRef(n={self.n}, dim={self.dim}, form={self.form!r})"


def encode_form(raw: bytes, n: int, dim: int, form: str):
    """The JSON form of ``n`` x ``dim`` little-endian float32 rows ``raw``: controller/evalset.encode_array's dict
    (``form="array"``) or RetrievalBank's bare base64 string (``form="b64"``)."""
    b64 = base64.b64encode(raw).decode("ascii")
    if form == "b64":
        return b64
    return {"dtype": "<f4", "shape": [n, dim], "b64": b64}


@contextlib.contextmanager
def by_reference(on: bool = True) -> Iterator[None]:
    """While active (in this thread/task), :func:`wanted` is ``on``: retrieval banks return their matrix as a RowsRef
    (Updater.snapshot(by_reference=True) sets it around get_state, which takes no argument)."""
    tok = _BY_REFERENCE.set(bool(on))
    try:
        yield
    finally:
        _BY_REFERENCE.reset(tok)


def wanted() -> bool:
    return _BY_REFERENCE.get()
