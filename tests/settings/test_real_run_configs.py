"""The settings of the real-model runs quoted in the docs (benchmarks/real_runs/*.yaml) stay valid configs."""
from __future__ import annotations

from pathlib import Path

import pytest

from janus_memory.cli.run_command import _load_config_file
from janus_memory.settings.config import RunConfig

FILES = sorted((Path(__file__).resolve().parents[2] / "benchmarks" / "real_runs").glob("*.yaml"))


def test_the_quoted_runs_are_all_there():
    assert [f.name for f in FILES] == ["ace.yaml", "ace_counters.yaml", "dc_inject.yaml", "rb.yaml"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_parses_to_the_run_it_documents(path):
    cfg = RunConfig.parse(_load_config_file(str(path)))
    assert (cfg.dataset, cfg.stream_size, cfg.controller, cfg.llm.backend, cfg.llm.temperature) == (
        "gsm8k", 20, "both", "local", 0.0)
    jc = cfg.janus_config()
    assert (jc.warmup, jc.coverage_size, jc.boundary_size, jc.fresh_size, jc.trigger) == (4, 2, 1, 1, "mmt")
    assert jc.ignore_usage_counters is (path.stem == "ace_counters")
    if path.stem == "ace_counters":
        ace = RunConfig.parse(_load_config_file(str(path.with_name("ace.yaml"))))
        assert ace.model_dump(exclude={"janus"}) == cfg.model_dump(exclude={"janus"})
