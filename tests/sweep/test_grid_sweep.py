"""Grid files, the paper method grid with MMT-matched random/periodic triggers, and local sweeps on the fake backend."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from janus_memory.report.report import build_report
from janus_memory.settings.config import RunConfig
from janus_memory.sweep.grid import matched_trigger_settings, paper_grid, run_grid, stream_order_grid
from janus_memory.sweep.sweep import load_grid, load_grid_cells, run_sweep

JANUS = {"warmup": 3, "coverage_size": 2, "boundary_size": 1, "fresh_size": 2}

GRID = """\
base:
  backend: fake
  encoder: hashing
  stream_size: 6
  test_size: 3
  janus: {warmup: 3, coverage_size: 2, boundary_size: 1, fresh_size: 2}
  out: OUT
grid:
  dataset: [gsm8k]
  updater: [dc_rs, expel]
  controller: [none, janus]
  seed: [0, 1]
  janus.tau: [0.0, 0.2]
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "grid.yaml"
    p.write_text(text.replace("OUT", str(tmp_path / "sw")))
    return p


def test_load_grid_expands(tmp_path):
    cells = load_grid_cells(_write(tmp_path, GRID))
    assert len(cells) == 16
    name, cfg = cells[1]
    assert name == "dc_rs[tau=0.2]" and cfg.controller == "none" and cfg.janus["tau"] == 0.2
    assert cfg.out == str(tmp_path / "sw" / "gsm8k" / "dc_rs[tau=0.2]" / "seed0")
    assert cells[-1][0] == "expel+janus[tau=0.2]" and cells[-1][1].seed == 1
    assert cells[-1][1].janus == {**JANUS, "tau": 0.2}
    assert [c.out for c in load_grid(_write(tmp_path, GRID))] == [c.out for _, c in cells]


@pytest.mark.parametrize("text, message", [
    ("base: {}\ngrid: {seed: [0]}\nextra: 1\n", r"unknown top-level key 'extra' \(line 3\)"),
    ("base:\n  backend: fake\n  bogus: 1\ngrid: {seed: [0]}\n", r"unknown key 'base.bogus' \(line 3\)"),
    ("base: {}\ngrid:\n  seed: [0]\n  colour: [red]\n", r"unknown grid key 'colour' \(line 4\)"),
    ("base: {}\ngrid:\n  janus.nope: [1]\n", r"unknown grid key 'janus.nope' \(line 3\)"),
    ("base: {}\ngrid:\n  seed: 3\n", r"grid key 'seed' \(line 3\) must map to a non-empty list"),
    ("base: {}\ngrid:\n  seed: [0]\n  seed: [1]\n", r"duplicate key 'seed' at line 4 \(first at line 3\)"),
    ("base: {}\ngrid:\n  seed: [0\n", r"invalid YAML in .* at line \d+"),
    ("base: {janus: {warmup: -1}}\ngrid: {seed: [0]}\n", r"base: invalid Janus setting: warmup must be >= 0"),
    ("base: {}\ngrid: {controller: [sometimes]}\n", r"grid point \{'controller': 'sometimes'\}: invalid value for 'controller'"),
    ("- a\n- b\n", "must hold a mapping"),
    ("base: {}\n", "'grid' must be a non-empty mapping"),
])
def test_load_grid_bad_input(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        load_grid(_write(tmp_path, text))


def test_grid_varies_backend_keys_flat_or_nested(tmp_path):
    text = ("base:\n  llm: {backend: fake, temperature: 0.0}\n  out: OUT\n"
            "grid:\n  temperature: [0.0, 0.5]\n  llm.max_retries: [1]\n")
    cells = load_grid_cells(_write(tmp_path, text))
    assert [(n, c.llm.backend, c.llm.temperature, c.llm.max_retries) for n, c in cells] == [
        ("dc_rs[temperature=0,max_retries=1]", "fake", 0.0, 1), ("dc_rs[temperature=0.5,max_retries=1]", "fake", 0.5, 1)]
    flat = load_grid_cells(_write(tmp_path, text.replace("llm: {backend: fake, temperature: 0.0}",
                                                         "backend: fake\n  temperature: 0.0")))
    assert [c for _, c in flat] == [c for _, c in cells]


@pytest.mark.parametrize("text, message", [
    ("base: {}\ngrid:\n  llm.temprature: [0.1]\n", r"unknown grid key 'llm.temprature' \(line 3\)"),
    ("base:\n  llm: {max_retries: 1, bogus: 2}\ngrid: {seed: [0]}\n", r"^unknown key 'base.llm.bogus' \(line 2\)$"),
    ("base:\n  backend: fake\n  llm: {backend: openai}\ngrid: {seed: [0]}\n",
     r"^base: 'backend' is given twice with different values: 'fake' \(flat\) and 'openai' \(llm.backend\); give it once$"),
])
def test_grid_bad_backend_keys(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        load_grid(_write(tmp_path, text))


def test_load_grid_missing_file(tmp_path):
    with pytest.raises(ValueError, match="grid file not found"):
        load_grid(tmp_path / "none.yaml")


def test_matched_trigger_settings():
    assert matched_trigger_settings(6, 24, 4) == {"post_warmup_steps": 20, "mmt_triggers": 6, "trigger_rate": 0.3,
                                                  "trigger_period": 3}
    assert matched_trigger_settings(0, 10, 4)["trigger_period"] == 6 and matched_trigger_settings(0, 10, 4)["trigger_rate"] == 0
    assert matched_trigger_settings(3, 3, 4) == {"post_warmup_steps": 0, "mmt_triggers": 3, "trigger_rate": 0.0,
                                                 "trigger_period": 1}


def _base(tmp_path, **kw) -> RunConfig:
    args = dict(backend="fake", encoder="hashing", stream_size=8, test_size=3, janus=JANUS,
                cache_dir=str(tmp_path / "cache"), out=str(tmp_path / "grid"))
    return RunConfig(**{**args, **kw})


def test_paper_grid_cells(tmp_path):
    cells = paper_grid("gsm8k", _base(tmp_path, updater_config={"top_k": 2}), updaters=("dc_rs",))
    assert [n for n, _ in cells] == [
        "memory_free", "exprag", "dc_rs", "dc_rs+janus", "dc_rs+janus[trigger=never]", "dc_rs+janus[trigger=always]",
        "dc_rs+janus[trigger=random]", "dc_rs+janus[trigger=periodic]", "dc_rs+janus[use_coverage=false]",
        "dc_rs+janus[use_boundary=false]", "dc_rs+janus[use_fresh=false]"]
    by = dict(cells)
    assert by["memory_free"].controller == "none" and by["memory_free"].updater_config == {}
    assert by["dc_rs"].updater_config == {"top_k": 2}
    assert by["dc_rs+janus[use_fresh=false]"].janus == {**JANUS, "trigger": "mmt", "use_fresh": False}
    assert by["dc_rs+janus[trigger=random]"].out == str(tmp_path / "grid" / "gsm8k" / "dc_rs+janus[trigger=random]" / "seed0")
    so = stream_order_grid("gsm8k", _base(tmp_path), updaters=("dc_rs",))
    assert len(so) == 10 and {c.stream_order_seed for _, c in so} == {0, 1, 2, 3, 4} and {c.seed for _, c in so} == {0}
    with pytest.raises(ValueError, match="at least one updater"):
        paper_grid("gsm8k", _base(tmp_path), updaters=())


def test_run_grid_matches_mmt_and_reports(tmp_path):
    cells = [(n, c) for n, c in paper_grid("gsm8k", _base(tmp_path), updaters=("dc_rs",), baselines=False,
                                           evalset_ablation=False) if "never" not in n]
    logs: list[str] = []
    res = run_grid(cells=cells, workers=1, log=logs.append)
    assert sorted(r["status"] for r in res["results"]) == ["done"] * 5, res["results"]
    root = tmp_path / "grid" / "gsm8k"
    mmt = json.loads((root / "dc_rs+janus" / "seed0" / "summary.json").read_text())["methods"]["dc_rs+janus"]
    t, p = mmt["triggers"], 8 - 3
    assert t > 0
    rnd = json.loads((root / "dc_rs+janus[trigger=random]" / "seed0" / "config.json").read_text())["janus"]
    per = json.loads((root / "dc_rs+janus[trigger=periodic]" / "seed0" / "config.json").read_text())["janus"]
    assert rnd["trigger_rate"] == t / p and per["trigger_period"] == max(1, round(p / t))
    cell = json.loads((root / "dc_rs+janus[trigger=periodic]" / "seed0" / "cell.json").read_text())
    assert cell["suffix"] == "[trigger=periodic]" and cell["matched"]["mmt_triggers"] == t
    # re-running skips finished runs
    again = run_sweep(cells[:2], workers=1, log=logs.append)
    assert [r["status"] for r in again] == ["skipped", "skipped"]
    # the report labels rows by cell and puts the policies in the trigger table
    rep = build_report([str(tmp_path / "grid")], str(tmp_path / "rep"))
    pols = [r["policy"] for r in rep["tables"]["trigger"]["rows"]]
    assert pols == ["base (no Janus)", "always", "random", "periodic", "mmt"]
    always = next(r for r in rep["tables"]["trigger"]["rows"] if r["policy"] == "always")
    assert always["triggers"] == p and always["trigger_rate"] == 1.0


def test_local_process_pool_and_failures(tmp_path):
    base = _base(tmp_path, stream_size=5)
    cfgs = [base.model_copy(update={"out": str(tmp_path / "a"), "controller": "janus"}),
            base.model_copy(update={"out": str(tmp_path / "b"), "controller": "none"}),
            base.model_copy(update={"out": str(tmp_path / "c"), "dataset": "no_such_dataset"})]
    res = run_sweep(cfgs, executor="local", workers=2, log=lambda m: None)
    assert [r["status"] for r in res] == ["done", "done", "failed"], [r["error"] for r in res]
    assert "unknown dataset 'no_such_dataset'" in res[2]["error"]
    assert (tmp_path / "a" / "COMPLETE").exists() and (tmp_path / "b" / "COMPLETE").exists()
    # the process-pool run is byte-identical to an in-process run of the same config
    solo = run_sweep([cfgs[0].model_copy(update={"out": str(tmp_path / "a2")})], workers=1, log=lambda m: None)
    assert solo[0]["status"] == "done"
    assert ((tmp_path / "a" / "dc_rs+janus" / "decisions.jsonl").read_bytes()
            == (tmp_path / "a2" / "dc_rs+janus" / "decisions.jsonl").read_bytes())
    with pytest.raises(ValueError, match="unknown executor 'slurm'"):
        run_sweep(cfgs, executor="slurm")
    with pytest.raises(ValueError, match="share the output folder"):
        run_sweep([cfgs[0], cfgs[0]])
    with pytest.raises(ValueError, match="workers must be >= 1"):
        run_sweep(cfgs, workers=0)


def test_grid_with_stream_order_study_has_separate_folders_and_tables(tmp_path):
    from janus_memory.report.report import build_report
    from janus_memory.sweep.grid import run_grid

    base = _base(tmp_path)
    cells = paper_grid("gsm8k", base, updaters=("dc_rs",), baselines=False, trigger_ablation=False,
                       evalset_ablation=False)
    cells += stream_order_grid("gsm8k", base, updaters=("dc_rs",), seeds=(0, 1))
    outs = [c.out for _, c in cells]
    assert len(set(outs)) == len(outs)
    assert outs[2].endswith("/gsm8k/dc_rs/order0") and outs[0].endswith("/gsm8k/dc_rs/seed0")
    res = run_grid(cells=cells, workers=1, log=lambda m: None)
    assert [r["status"] for r in res["results"]] == ["done"] * 6
    rep = build_report([str(tmp_path / "grid")], str(tmp_path / "rep"))
    acc = rep["tables"]["accuracy"]["cells"]
    assert acc["dc_rs"]["gsm8k"]["n"] == 1 and acc["dc_rs+janus"]["gsm8k"]["n"] == 1  # seed-0 grid runs only
    order = {r["label"]: r["seeds"] for r in rep["tables"]["stream_order"]["rows"]}
    assert order == {"dc_rs": [0, 1], "dc_rs+janus": [0, 1]}


def test_incomplete_cell_folder_is_named_and_left_alone_then_the_line_names_cell_and_test_acc(tmp_path):
    import sqlite3

    cfg = _base(tmp_path, stream_size=4, controller="none").model_copy(
        update={"out": str(tmp_path / "grid" / "gsm8k" / "dc_rs" / "seed0")})
    out = Path(cfg.out)
    out.mkdir(parents=True)
    with sqlite3.connect(out / "run.sqlite") as db:  # a run stopped before its settings were stored
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    before = (out / "run.sqlite").read_bytes()
    logs: list[str] = []
    res = run_sweep([("dc_rs", cfg)], workers=1, log=logs.append)
    msg = ("incomplete cell folder: run.sqlite holds no settings (the run stopped before it was set up); "
           "delete or rename the folder and run the same command again")
    assert (res[0]["status"], res[0]["error"]) == ("failed", msg)
    assert logs == [f"[1/1] failed   dc_rs seed0  ({out})  error: {msg}"]
    assert (out / "run.sqlite").read_bytes() == before and not (out / "config.json").exists()
    (out / "run.sqlite").rename(out.parent / "run.sqlite.old")  # the fix the message names
    logs.clear()
    res = run_sweep([("dc_rs", cfg)], workers=1, log=logs.append)
    acc = res[0]["test_accuracy"]["dc_rs"]
    assert res[0]["status"] == "done" and logs == [f"[1/1] done     dc_rs seed0  test acc {acc:.3f}  ({out})"]
    both = cfg.model_copy(update={"controller": "both", "out": str(tmp_path / "b" / "seed0")})
    logs.clear()
    res = run_sweep([both], workers=1, log=logs.append)
    a = res[0]["test_accuracy"]
    assert logs == [f"[1/1] done     b seed0  test acc: dc_rs {a['dc_rs']:.3f}, dc_rs+janus {a['dc_rs+janus']:.3f}  "
                    f"({tmp_path / 'b' / 'seed0'})"]
