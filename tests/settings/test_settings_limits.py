"""Size limits of the settings (settings/limits.py, settings/yaml_load.py): a settings file that is not a regular file,
is too large or expands too far (an alias bomb), a JSON setting built from shared references, a hashing encoder of
10^12 dimensions, a grid of 2^30 cells: one line, exit 2, no traceback, no hang, and nothing created."""
from __future__ import annotations

import os

import pytest

from janus_memory import cli
from janus_memory.errors import ConfigError
from janus_memory.settings.config import RunConfig

SMALL = ["--backend", "fake", "--stream-size", "2", "--test-size", "1", "--encoder", "hashing", "-q"]
BOMB = ("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
        "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n")
TOO_MANY = ("error: invalid YAML in {p}: the document expands to more than 100,000 values (YAML aliases count at every "
            "use: an alias bomb?); write the values out")


def _only_error(capsys, rc, expect: str) -> None:
    cap = capsys.readouterr()
    assert (rc, cap.err) == (2, expect + "\n")
    assert cap.out == ""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name,text,expect", [
    ("llm_extra.yaml", BOMB + "llm: {backend: fake, extra_body: {x: *f}}\n", TOO_MANY),
    ("updater_extra.yaml", BOMB + "updater_config: {extra_body: {x: *f}}\n", TOO_MANY),
    ("recursive.yaml", "llm: &r {backend: fake, extra_body: {x: *r}}\n",
     "error: invalid YAML in {p}: the document refers to itself (a recursive alias); write the values out"),
    ("deep.yaml", "llm: {extra_body: " + "[" * 100 + "]" * 100 + "}\n",
     "error: invalid YAML in {p}: the document is nested too deeply (more than 64 levels)"),
    ("big.yaml", "# " + "x" * (1 << 20) + "\nbackend: fake\n",
     "error: config file {p} is larger than 1,024 KiB; a settings file holds a few keys (is it the right file?)"),
    ("body.yaml", "llm: {extra_body: {x: [" + ", ".join(["1"] * 20_000) + "]}}\n",
     "error: invalid value for 'llm.extra_body': holds more than 10,000 values (shared references counted at every "
     "use); at most 10,000 values, 32 levels and 64 KiB (line 1 of {p})"),
])
def test_a_settings_file_past_the_limits_is_one_line_and_creates_nothing(tmp_path, capsys, monkeypatch, name, text,
                                                                          expect):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text)
    rc = cli.main(["run", "--config", name, *SMALL, "--out", "r"])
    _only_error(capsys, rc, expect.format(p=name))
    assert sorted(os.listdir(tmp_path)) == [name]  # no run folder, no lock file


@pytest.mark.timeout(60)
def test_a_directory_a_fifo_or_a_device_as_config_is_named_as_what_it_is(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "fifo")  # opening it to read would wait for a writer forever
    for path, kind in (("d", "a directory"), ("fifo", "a FIFO (named pipe)"), ("/dev/zero", "a device"),
                       ("missing.yaml", None)):
        rc = cli.main(["run", "--config", path, *SMALL, "--out", "r"])
        expect = (f"error: config file not found: {path}" if kind is None else
                  f"error: config file {path} is {kind}, not a file; give the path of a YAML or JSON file")
        _only_error(capsys, rc, expect)
    assert not (tmp_path / "r").exists()


def test_json_settings_built_from_shared_references_are_refused_in_bounded_time():
    """From Python there is no YAML: the same expansion through shared lists is refused by the validator."""
    bomb = ["x"] * 10
    for _ in range(30):
        bomb = [bomb] * 10  # 10^31 values when written out
    cyclic: dict = {}
    cyclic["self"] = cyclic
    for data in ({"llm": {"extra_body": {"x": bomb}}}, {"updater_config": {"extra_body": {"x": bomb}}},
                 {"llm": {"extra_body": cyclic}}):
        with pytest.raises(ConfigError) as e:
            RunConfig.parse(data)
        assert str(e.value).endswith("; at most 10,000 values, 32 levels and 64 KiB")  # (the first limit reached)
    with pytest.raises(ConfigError) as e:
        RunConfig.parse({"janus": {"tau": bomb}})  # a wrong type: its value is shown shortened, not expanded
    assert len(str(e.value)) < 200
    with pytest.raises(ConfigError) as e:
        RunConfig.parse({"llm": {"extra_body": {"x": "y" * 70_000}}})
    assert str(e.value) == ("invalid value for 'llm.extra_body': holds a text of 70,000 characters; at most 10,000 "
                            "values, 32 levels and 64 KiB")


def test_a_grid_of_too_many_cells_is_refused_before_it_is_expanded(tmp_path):
    from janus_memory.sweep.sweep import load_grid_cells

    keys = "".join(f"  {k}: [0, 1]\n" for k in ("seed", "stream_order_seed", "janus.seed", "janus.tau", "janus.beta",
                                                   "janus.warmup", "janus.coverage_size", "janus.boundary_size",
                                                   "janus.fresh_size", "llm.temperature", "llm.max_retries",
                                                   "updater_config.top_k", "test_size", "stream_size"))
    (tmp_path / "g.yaml").write_text("base: {backend: fake, out: " + str(tmp_path / "o") + "}\ngrid:\n" + keys)
    with pytest.raises(ValueError) as e:
        load_grid_cells(tmp_path / "g.yaml")
    assert str(e.value) == ("the grid has 16,384 cells (the product of its lists' lengths); at most 10,000 per grid "
                            "file: split it into several")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(ValueError) as e:
        load_grid_cells(tmp_path / "fifo")
    assert str(e.value) == (f"grid file {tmp_path / 'fifo'} is a FIFO (named pipe), not a file; give the path of a "
                            "YAML or JSON file")


def test_a_native_panic_while_setting_up_leaves_no_folder(tmp_path, monkeypatch):
    """A native library's panic is a BaseException (pyo3's PanicException), not an Exception: a new run that meets
    one while it is set up still leaves no folder holding only its lock file."""
    from janus_memory.run import experiment

    class Panic(BaseException):
        pass

    def panic(*a, **k):
        raise Panic("rust panicked")

    monkeypatch.setattr(experiment, "build_context", panic)
    out = tmp_path / "new" / "run"
    with pytest.raises(Panic):
        experiment.run_experiment(RunConfig(backend="fake", stream_size=2, test_size=1, encoder="hashing",
                                            out=str(out)), log=lambda m: None)
    assert not (tmp_path / "new").exists()


def test_the_fixes_the_lines_name_work(tmp_path, capsys, monkeypatch):
    """'write the values out', 'give the path of a YAML or JSON file', a dimension in range: each applied, the run
    starts and finishes."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "c.yaml").write_text(BOMB + "llm: {backend: fake, extra_body: {x: *f}}\n")
    assert cli.main(["run", "--config", "c.yaml", *SMALL, "--out", "r"]) == 2
    (tmp_path / "c.yaml").write_text("llm: {backend: fake, extra_body: {x: [x, x, x]}}\n")  # written out, small
    assert cli.main(["run", "--config", "c.yaml", *SMALL, "--out", "r"]) == 0
    (tmp_path / "d").mkdir()
    assert cli.main(["run", "--config", "d", *SMALL, "--out", "r2"]) == 2
    assert cli.main(["run", "--config", "c.yaml", *SMALL, "--out", "r2"]) == 0
    args = [a for a in SMALL if a != "hashing"]
    args[args.index("--encoder") + 1:args.index("--encoder") + 1] = ["hashing:1000000000000"]
    assert cli.main(["run", *args, "--out", "r3"]) == 2
    args[args.index("--encoder") + 1] = "hashing:4096"
    assert cli.main(["run", *args, "--out", "r3"]) == 0
    capsys.readouterr()
