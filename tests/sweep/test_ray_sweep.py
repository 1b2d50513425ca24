"""The Ray executor on a local Ray instance (2 CPUs, no dashboard) with the fake LLM: 2 tiny runs."""
from __future__ import annotations

import json

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'janus-memory[ray]')")

from janus_memory.settings.config import RunConfig  # noqa: E402 (after the skip when ray is absent)
from janus_memory.sweep.sweep import run_sweep  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_sweep_matches_local(tmp_path, local_ray):
    base = RunConfig(backend="fake", encoder="hashing", stream_size=6, test_size=3, controller="janus",
                     janus={"warmup": 2, "coverage_size": 2, "boundary_size": 1, "fresh_size": 2},
                     cache_dir=str(tmp_path / "cache"), out=str(tmp_path / "x"))
    cfgs = [base.model_copy(update={"out": str(tmp_path / "ray" / f"seed{s}"), "seed": s}) for s in (0, 1)]
    logs: list[str] = []
    res = run_sweep(cfgs, executor="ray", log=logs.append)
    assert [r["status"] for r in res] == ["done", "done"], res
    assert len(logs) == 2
    for s in (0, 1):
        assert (tmp_path / "ray" / f"seed{s}" / "COMPLETE").exists()
    # the same config run in this process (no cache) gives a byte-identical decision log and the same accuracy
    local = run_sweep([cfgs[1].model_copy(update={"out": str(tmp_path / "local"), "no_cache": True})], workers=1,
                      log=lambda m: None)
    assert ((tmp_path / "ray" / "seed1" / "dc_rs+janus" / "decisions.jsonl").read_bytes()
            == (tmp_path / "local" / "dc_rs+janus" / "decisions.jsonl").read_bytes())
    assert res[1]["test_accuracy"] == local[0]["test_accuracy"]
    # a second Ray sweep over the finished folders skips them
    again = run_sweep(cfgs, executor="ray", log=lambda m: None)
    assert [r["status"] for r in again] == ["skipped", "skipped"]
    cell = json.loads((tmp_path / "ray" / "seed0" / "cell.json").read_text())
    assert cell == {"cell": "ray", "suffix": ""}
