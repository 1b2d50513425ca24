"""The benchmark data shipped inside the package (src/janus_memory/tasks/shipped): every advertised dataset loads both
splits with no setting from any working folder, every file matches the sha256 its SOURCE.md lists and carries its
licence, a damaged file is refused in one line, and --data-dir / JANUS_DATA_DIR still choose another copy."""
from __future__ import annotations

import fnmatch
import gzip
import hashlib
import lzma
import re
import tomllib
from pathlib import Path

import pytest

from janus_memory.bench.replay import ReplayInputError, load_trajectories
from janus_memory.cli import main
from janus_memory.tasks import load_split
from janus_memory.tasks.base import dataset_groups
from janus_memory.tasks.data import SHIPPED_DIR, DataFileError, listed_checksums, read_data_bytes, read_jsonl
from shipped_data import plain_copy, shipped_file

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ["aime", "apibench", "dc-trajectories", "gsm8k", "humaneval", "math500", "mmlu_pro"]
# dataset -> (stream size, test size) of the paper's splits
SIZES = {"gsm8k": (500, 500), "aime": (30, 30), "mmlu_pro_eng": (250, 250), "mmlu_pro_phy": (250, 250),
         "humaneval": (50, 114), "apibench_hf": (250, 250)}


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    """No data setting at all, and the working folder an empty one with nothing beside it."""
    for var in ("JANUS_DATA_DIR", "JANUS_MATH_TRAIN_PATH", "JANUS_GPQA_PATH"):
        monkeypatch.delenv(var, raising=False)
    cwd = tmp_path / "empty"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def test_the_shipped_folders_are_the_advertised_ones():
    assert sorted(p.name for p in SHIPPED_DIR.iterdir() if p.is_dir()) == FOLDERS
    assert dataset_groups()["shipped"] == list(SIZES)


@pytest.mark.parametrize("name", list(SIZES))
def test_each_shipped_dataset_loads_both_splits_with_no_setting_from_an_empty_folder(name, nowhere):
    stream, test = load_split(name, "stream"), load_split(name, "test")
    assert (len(stream), len(test)) == SIZES[name]
    assert not set(stream.ids) & set(test.ids)
    for split in (stream, test):
        (f,) = split.info["files"]
        path = Path(f["path"])
        assert path.parent.parent == SHIPPED_DIR and path.suffix == ".xz"
        assert listed_checksums(path.parent)[path.name] == (f["sha256"], f["bytes"])  # the content's, uncompressed


def test_math500_and_the_dc_trajectories_load_with_no_setting(nowhere):
    s = load_split("math500", "test")
    assert len(s) == 500 and s.sha256 == "35dc41080a3680858b27fa7e0533d2d547825316fc5dafe5d316f4ccc5a06132"
    trajs = load_trajectories("dc-trajectories")  # the name alone: not a folder here, found in the package
    assert [(t.name, len(t.steps)) for t in trajs] == [("aime_2025_claude-3-5-sonnet_dc-cu", 30),
                                                        ("aime_2025_claude-3-5-sonnet_dc-rs", 30),
                                                        ("aime_2025_gpt-4o_dc-rs", 30)]
    (one,) = load_trajectories("dc-trajectories/aime_2025_gpt-4o_dc-rs.jsonl")
    assert one.steps == trajs[2].steps
    with pytest.raises(ReplayInputError, match="no-such-trajectories: no such file or folder"):
        load_trajectories("no-such-trajectories")


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_file_matches_the_sha256_its_source_md_lists_and_carries_its_licence(folder):
    d = SHIPPED_DIR / folder
    listed = listed_checksums(d)
    files = sorted(p.name for p in d.iterdir())
    assert files == sorted([*listed, "LICENSE", "SOURCE.md"])
    for name, (sha, size) in listed.items():
        data = lzma.decompress((d / name).read_bytes())  # on its own, not through the loader's check
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (sha, size), name
    source = (d / "SOURCE.md").read_text(encoding="utf-8")
    lic = re.search(r"^- Licence: (.+)$", source, re.M)
    assert lic and re.match(r"(MIT|Apache-2\.0) ", lic.group(1)), folder
    licence = (d / "LICENSE").read_text(encoding="utf-8")
    if lic.group(1).startswith("Apache"):
        assert "Apache License" in licence and "Version 2.0" in licence
    else:
        assert licence.startswith("MIT License\n\n") and "Copyright (c) " in licence
        assert "The above copyright notice and this permission notice shall be included" in licence
    # a sha256 the collected copy named (in full or its first 16 digits) is the one of the shipped file
    top = source.partition("## As shipped in janus-memory")[0]
    for h in re.findall(r"\b[0-9a-f]{64}\b|\b[0-9a-f]{16}(?=…)", top):
        assert any(sha.startswith(h) for sha, _ in listed.values()), (folder, h)


def test_gpqa_is_not_shipped_and_the_wheel_globs_take_every_shipped_file():
    assert not list(SHIPPED_DIR.rglob("*gpqa*"))
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["janus_memory"]
    pkg = SHIPPED_DIR.parent.parent
    for f in SHIPPED_DIR.rglob("*"):
        if f.is_file():
            rel = f.relative_to(pkg).as_posix()
            assert any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(f.name, g.removeprefix("**/")) for g in globs), rel


def _copy_of_shipped(tmp_path, folder="gsm8k") -> Path:
    root = tmp_path / "data"
    (root / folder).mkdir(parents=True)
    for f in (SHIPPED_DIR / folder).iterdir():
        (root / folder / f.name).write_bytes(f.read_bytes())
    return root


def test_a_cut_short_shipped_file_is_one_line_naming_it_and_the_fix(tmp_path, capsys):
    root = _copy_of_shipped(tmp_path)
    f = root / "gsm8k" / "test.jsonl.xz"
    f.write_bytes(f.read_bytes()[:5000])
    with pytest.raises(DataFileError) as e:
        read_data_bytes(f)
    assert str(e.value) == (f"{f}: the xz data is cut short (the file ends before its end-of-stream mark); fix: "
                            "reinstall janus-memory, or pass --data-dir to a folder holding the file")
    rc = main(["run", "--backend", "fake", "--dataset", "gsm8k", "--stream-size", "2", "--test-size", "1",
               "--data-dir", str(root), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == [f"error: {e.value}"]
    assert not (tmp_path / "r").exists()


def test_a_cut_short_gzip_file_and_garbage_are_one_line(tmp_path):
    data = read_data_bytes(shipped_file("aime/aime25.jsonl"))
    gz = tmp_path / "aime25.jsonl.gz"
    gz.write_bytes(gzip.compress(data)[:-12])
    with pytest.raises(DataFileError, match=r"aime25\.jsonl\.gz: the gzip data is cut short \(the file ends before"):
        read_jsonl(gz)
    bad = tmp_path / "x.jsonl.xz"
    bad.write_bytes(b"not xz at all")
    with pytest.raises(DataFileError) as e:
        read_jsonl(bad)
    assert str(e.value).startswith(f"{bad}: not readable xz data (") and "\n" not in str(e.value)
    gz.write_bytes(gzip.compress(data))
    assert len(read_jsonl(gz)) == 30  # whole: read as the plain file would be


def test_an_altered_file_is_refused_by_its_source_md_sha256(tmp_path):
    root = _copy_of_shipped(tmp_path)
    f = root / "gsm8k" / "test.jsonl.xz"
    data = lzma.decompress(f.read_bytes()).replace(b"Janet", b"Jane!", 1)
    f.write_bytes(lzma.compress(data))
    with pytest.raises(DataFileError) as e:
        load_split("gsm8k", "test", data_dir=root)
    msg = str(e.value)
    assert msg.startswith(f"{f}: uncompressed it has sha256 {hashlib.sha256(data).hexdigest()[:16]}… and 749738 "
                          "bytes, its SOURCE.md lists 3730d312f6e34405… and 749738 bytes: the file is damaged or was "
                          "changed; fix: reinstall janus-memory")
    (root / "gsm8k" / "SOURCE.md").unlink()  # a user's own copy, no SOURCE.md: read as it is
    assert load_split("gsm8k", "test", data_dir=root).sha256 == hashlib.sha256(data).hexdigest()


def test_data_dir_and_the_environment_variable_choose_another_copy(tmp_path, monkeypatch, nowhere):
    mine = tmp_path / "mine"
    f = plain_copy("aime/aime25.jsonl", mine)
    f.write_text(f.read_text(encoding="utf-8").replace('"answer":"70"', '"answer":"71"', 1), encoding="utf-8")
    plain_copy("aime/aime24.jsonl", mine)
    assert load_split("aime", "test").tasks[0].gold == "70"  # shipped
    monkeypatch.setenv("JANUS_DATA_DIR", str(mine))
    s = load_split("aime", "test")
    assert s.tasks[0].gold == "71" and s.info["files"][0]["path"] == str(f.resolve())
    other = tmp_path / "other"
    plain_copy("aime/aime25.jsonl", other)
    plain_copy("aime/aime24.jsonl", other)
    assert load_split("aime", "test", data_dir=other).tasks[0].gold == "70"  # --data-dir beats the variable
    with pytest.raises(FileNotFoundError) as e:
        load_split("gsm8k", "test")  # the variable's folder lacks it: no silent fall back to the shipped copy
    assert str(e.value) == (f"GSM8K test.jsonl not found at {mine.resolve()}/gsm8k/test.jsonl (fix: put "
                            "gsm8k/test.jsonl (plain, .xz or .gz) in the folder JANUS_DATA_DIR names, or unset "
                            "JANUS_DATA_DIR to use the data shipped in the package)")
    with pytest.raises(FileNotFoundError) as e:
        load_split("aime", "test", data_dir=tmp_path / "nope")
    assert str(e.value) == (f"data dir {tmp_path / 'nope'} does not exist (fix: pass an existing --data-dir, or leave "
                            "it out to use the data shipped in the package)")
    with pytest.raises(FileNotFoundError, match=r"^data dir .*LICENSE is not a folder \(fix: pass an existing"):
        load_split("aime", "test", data_dir=SHIPPED_DIR / "aime" / "LICENSE")
    monkeypatch.setenv("JANUS_DATA_DIR", str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match=r"^JANUS_DATA_DIR=.*absent does not exist \(fix: point it at a "
                                                r"folder holding gsm8k/, math500/, \.\.\., or unset JANUS_DATA_DIR"):
        load_split("gsm8k", "test")


def test_the_cli_runs_on_the_shipped_data_and_says_where_data_comes_from(nowhere, capsys, tmp_path):
    rc = main(["run", "--backend", "fake", "--dataset", "humaneval", "--controller", "none", "--stream-size", "2",
               "--test-size", "1", "--out", str(tmp_path / "r")])
    assert rc == 0, capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--data-dir DIR folder with the benchmark files, laid out as the package's own copy" in text
    assert "(default: $JANUS_DATA_DIR, else the data shipped in the package)" in text
    assert "../shared" not in text


def test_every_form_of_a_listed_file_is_checked_against_its_row(tmp_path):
    """A plain file or a .gz beside the SOURCE.md that lists ``test.jsonl.xz`` holds the same data by name: each is
    checked against that row (before, a plain or .gz copy was read unchecked)."""
    root = _copy_of_shipped(tmp_path)
    folder = root / "gsm8k"
    good = lzma.decompress((folder / "test.jsonl.xz").read_bytes())
    bad = good.replace(b"#### 18", b"#### 99", 1)
    (folder / "test.jsonl").write_bytes(bad)  # chosen first by name (plain before .xz)
    with pytest.raises(DataFileError, match=r"gsm8k/test\.jsonl: uncompressed it has sha256 .* its SOURCE\.md lists "
                                            r"3730d312f6e34405… and 749738 bytes"):
        load_split("gsm8k", "test", data_dir=root)
    (folder / "test.jsonl").write_bytes(good)
    assert load_split("gsm8k", "test", data_dir=root).sha256 == hashlib.sha256(good).hexdigest()
    (folder / "test.jsonl").unlink()
    (folder / "test.jsonl.xz").unlink()
    (folder / "test.jsonl.gz").write_bytes(gzip.compress(bad))
    with pytest.raises(DataFileError, match=r"gsm8k/test\.jsonl\.gz: uncompressed it has sha256"):
        load_split("gsm8k", "test", data_dir=root)
    (folder / "test.jsonl.gz").write_bytes(gzip.compress(good))
    assert len(load_split("gsm8k", "test", data_dir=root).tasks) == 500
    other = folder / "extra.jsonl"
    other.write_bytes(good)
    with pytest.raises(DataFileError) as e:
        read_data_bytes(other)
    assert str(e.value) == (f"{other}: not listed in {folder / 'SOURCE.md'}, so its sha256 cannot be checked; fix: "
                            "correct it (a table headed | file | sha256 of the uncompressed file | bytes |, one row "
                            "per data file), or delete it to read the folder's files unchecked")


SHA = "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14"


@pytest.mark.parametrize("edit, problem", [
    # an upper-case sha256 is the same sha256: read, and checked (before, the row was skipped: no check at all)
    (lambda t: t.replace(SHA, "DEADBEEF" * 8), "uncompressed it has sha256 3730d312f6e34405… and 749738 bytes, its "
                                               "SOURCE.md lists deadbeefdeadbeef…"),
    (lambda t: t.replace(SHA, SHA[:60]), ":18: a row of its table of files must read | `name` | `<sha256: 64 hex "
                                         "digits>` | <bytes> |, got "),
    (lambda t: t + "\n| `test.jsonl.xz` | `" + "ab" * 32 + "` | 749738 | 1 | 1 |\n",
     ":20: a second row for test.jsonl (the first is line 18): which one holds cannot be told"),
    (lambda t: t + "| `test.jsonl` | `" + "ab" * 32 + "` | 749738 |\n",
     ":19: a second row for test.jsonl (the first is line 18)"),
    (lambda t: t.replace("| file | sha256 of the uncompressed file | bytes |", "| f | s | b |"),
     "has no table of files (a row | file | sha256 of the uncompressed file | bytes | and one row per file)"),
    (lambda t: t.encode("utf-8") + b"\xff\xfe", "not UTF-8 text (byte offset "),
])
def test_a_source_md_that_cannot_be_read_strictly_is_one_line_not_a_skipped_check(tmp_path, capsys, edit, problem):
    root = _copy_of_shipped(tmp_path)
    sm = root / "gsm8k" / "SOURCE.md"
    text = edit(sm.read_text(encoding="utf-8"))
    sm.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(DataFileError) as e:
        load_split("gsm8k", "test", data_dir=root)
    assert problem in str(e.value) and "\n" not in str(e.value)
    rc = main(["run", "--backend", "fake", "--dataset", "gsm8k", "--stream-size", "2", "--test-size", "1",
               "--data-dir", str(root), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == [f"error: {e.value}"]
    assert not (tmp_path / "r").exists()


def test_a_source_md_that_is_a_folder_is_one_line_and_crlf_is_read(tmp_path):
    root = _copy_of_shipped(tmp_path)
    sm = root / "gsm8k" / "SOURCE.md"
    crlf = sm.read_text(encoding="utf-8").replace("\n", "\r\n")
    sm.write_bytes(crlf.encode("utf-8"))
    assert len(load_split("gsm8k", "test", data_dir=root).tasks) == 500  # CRLF: the same table
    sm.unlink()
    sm.mkdir()
    with pytest.raises(DataFileError, match=r"SOURCE\.md: cannot be read \(Is a directory\), so the files beside it "
                                            r"cannot be checked; fix: correct it"):
        load_split("gsm8k", "test", data_dir=root)
