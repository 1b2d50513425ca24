"""Run folders for the `janus view` tests (tests/view/test_view.py, tests/view/test_view_browser.py)."""
from __future__ import annotations

import os
from pathlib import Path


def make_fake_run(out: Path, cache: Path) -> Path:
    """A fake-backend run (deterministic): DC-RS without and with Janus, 12 stream steps, 4 test tasks, the trigger
    fires at every post-warm-up step, a poisoned candidate injected at step 8 (Janus rolls it back)."""
    from janus_memory.run.experiment import run_experiment
    from janus_memory.settings.config import RunConfig

    old = os.environ.get("JANUS_CACHE_DIR")
    os.environ["JANUS_CACHE_DIR"] = str(cache)
    try:
        cfg = RunConfig(backend="fake", dataset="gsm8k", stream_size=12, test_size=4, encoder="hashing:256",
                        out=str(out), temperature=0.0, no_cache=True, inject="poison@8", checkpoints=[0.5],
                        janus={"warmup": 3, "coverage_size": 2, "boundary_size": 1, "fresh_size": 1,
                               "trigger": "always", "clustering": "sklearn"})  # the k-means its exact values used
        run_experiment(cfg, log=lambda m: None)
    finally:
        if old is None:
            os.environ.pop("JANUS_CACHE_DIR", None)
        else:
            os.environ["JANUS_CACHE_DIR"] = old
    return out
