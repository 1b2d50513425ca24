"""Opt-in smoke test with the real embedded model on 2 real GSM8K tasks.

Runs only with ``JANUS_SMOKE_MODEL=1`` and when a GGUF is available (``janus model fetch``, ``JANUS_LOCAL_GGUF``);
skipped otherwise, so the suite never needs weights. About 1-2 minutes on 2 CPU cores:

    JANUS_SMOKE_MODEL=1 python -m pytest -m model tests/e2e/test_smoke_model.py
"""
import json
import os

import pytest

from janus_memory.llm.model_fetch import ModelNotFound, resolve_model_path

pytestmark = pytest.mark.model


def _model_or_skip():
    if os.environ.get("JANUS_SMOKE_MODEL") != "1":
        pytest.skip("opt-in: set JANUS_SMOKE_MODEL=1 to run the real-model smoke test")
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        pytest.skip("xllamacpp not installed (pip install -e '.[local]')")
    try:
        return resolve_model_path(None)
    except ModelNotFound as e:
        pytest.skip(str(e))


def test_real_model_two_tasks_end_to_end(tmp_path, monkeypatch):
    path = _model_or_skip()
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    from janus_memory.run.experiment import run_experiment
    from janus_memory.settings.config import demo_config

    cfg = demo_config(stream_size=2, test_size=1, controller="janus", model_path=str(path), out=str(tmp_path / "run"),
                      janus={"warmup": 1, "coverage_size": 1, "boundary_size": 1, "fresh_size": 1})
    summary = run_experiment(cfg, log=lambda m: None)
    m = summary["methods"]["dc_rs+janus"]
    assert m["stream_tasks"] == 2 and m["test_tasks"] == 1
    usage = m["usage"]
    assert usage["solver"]["calls"] == 2 and usage["curator"]["calls"] == 2
    assert usage["solver"]["completion_tokens"] > 0
    steps = [json.loads(x) for x in (tmp_path / "run" / "dc_rs+janus" / "steps.jsonl").read_text().splitlines()]
    assert len(steps) == 2 and all(s["output"] or s["reasoning"] for s in steps)
    assert (tmp_path / "run" / "COMPLETE").exists()
