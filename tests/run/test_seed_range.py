"""The dataset seed and the stream-order seed are range-checked like janus.seed: random.Random drops the sign, so a
negative seed ran its absolute value's split and `janus report` counted the two as different seeds."""
from __future__ import annotations

import json
import sqlite3

import pytest

from janus_memory.cli import main
from janus_memory.errors import ConfigError
from janus_memory.run.experiment import _Stopped, run_experiment
from janus_memory.settings.config import RunConfig, allowed_range


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


def _one_error_line(capsys, rc, expect):
    out = capsys.readouterr()
    assert rc == 2, out.err
    assert out.err == expect + "\n"
    assert out.out == ""


@pytest.mark.parametrize("key, value", [("seed", -1), ("seed", 2**32), ("stream_order_seed", -3)])
def test_run_config_refuses_seeds_out_of_range(key, value):
    with pytest.raises(ConfigError) as e:
        RunConfig.parse({key: value})
    assert str(e.value) == f"invalid value for '{key}': must be in [0, 4294967295], got {value}"
    assert (e.value.key, e.value.rule) == (key, f"must be in [0, 4294967295], got {value}")


def test_run_config_takes_the_ends_of_the_seed_range():
    cfg = RunConfig.parse({"seed": 0, "stream_order_seed": 2**32 - 1})
    assert (cfg.seed, cfg.stream_order_seed) == (0, 4294967295)
    assert RunConfig.parse({"seed": 4294967295}).seed == 4294967295
    assert RunConfig.parse({}).stream_order_seed is None


def test_allowed_range_writes_big_integer_bounds_in_full():
    assert allowed_range(RunConfig, "seed") == "in [0, 4294967295]"
    assert allowed_range(RunConfig, "stream_size") == ">= 1"


@pytest.mark.parametrize("flag, value", [("--seed", "-1"), ("--stream-order-seed", "-1"), ("--seed", "4294967296")])
def test_cli_names_the_seed_option(tmp_path, capsys, flag, value):
    rc = main(["run", "--backend", "fake", "--encoder", "hashing", flag, value, "--out", str(tmp_path / "r")])
    _one_error_line(capsys, rc, f"error: {flag} must be in [0, 4294967295], got {value}")
    assert not (tmp_path / "r").exists()


def test_config_file_seed_names_the_key(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("backend: fake\nseed: -2\n")
    rc = main(["run", "--config", str(cfg), "--out", str(tmp_path / "r")])
    _one_error_line(capsys, rc, "error: invalid value for 'seed': must be in [0, 4294967295], got -2 (line 2 of "
                                f"{cfg})")


def _run(tmp_path, name, seed, stop_after=None):
    cfg = RunConfig(backend="fake", dataset="gsm8k", stream_size=3, test_size=2, encoder="hashing", updater="dc_cu",
                    controller="both", no_cache=True, seed=seed, out=str(tmp_path / name))
    if stop_after is None:
        run_experiment(cfg, log=lambda m: None)
    else:
        with pytest.raises(_Stopped):
            run_experiment(cfg, log=lambda m: None, stop_after=stop_after)
    return tmp_path / name


def _store_seed(run_dir, key, value):
    """Write ``key: value`` into a run's stored config (what a run made before the range check holds)."""
    db = sqlite3.connect(run_dir / "run.sqlite")
    data = json.loads(db.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
    data[key] = value
    db.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(data),))
    db.execute("DELETE FROM meta WHERE key='seal:setup'")  # an older janus-memory wrote no setup seal
    db.commit()
    db.close()
    cfg_json = json.loads((run_dir / "config.json").read_text())
    cfg_json[key] = value
    (run_dir / "config.json").write_text(json.dumps(cfg_json))
    from janus_memory.run.provenance import to_yaml

    (run_dir / "config.yaml").write_text(to_yaml(cfg_json))  # the files such a run wrote hold it too


@pytest.mark.parametrize("key, flag", [("seed", "--seed"), ("stream_order_seed", "--stream-order-seed")])
def test_resume_of_a_stored_negative_seed_is_one_line(tmp_path, capsys, key, flag):
    run = _run(tmp_path, "old", 1, stop_after=1)
    assert not (run / "COMPLETE").exists()
    _store_seed(run, key, -1)
    capsys.readouterr()
    rc = main(["run", "--resume", str(run)])
    _one_error_line(capsys, rc, f"error: cannot resume {run}: its stored {key} -1 is no longer accepted (seeds are "
                                f"in [0, 4294967295]; it ran what {flag} 1 runs); start a new run with {flag} 1")


def test_report_reads_a_stored_negative_seed_and_says_which_seed_it_ran(tmp_path, capsys):
    old, new = _run(tmp_path, "old", 1), _run(tmp_path, "new", 1)
    _store_seed(old, "seed", -1)
    capsys.readouterr()
    rc = main(["report", str(old), str(new), "--out", str(tmp_path / "rep")])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    out = captured.out
    setup = [line for line in out.splitlines() if line.startswith("setup:")]
    assert setup == ["setup: backend fake, model scripted, encoder hashing, run preset paper; Janus paper; GSM8K: "
                     "stream n=3, test n=2; seeds -1 (ran as seed 1), 1"]
