"""Adversarial end-to-end checks of re-offers for bank updaters on the scripted late-rules stream: a run stopped at
any step and resumed decides as the uninterrupted run (whole-bank and top-k replays)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "late_rules.yaml"


def _config(tmp_path, replay: str) -> Path:
    text = EXAMPLE.read_text()
    if replay.startswith("top_k:"):
        k = replay.split(":")[1]
        text = text.replace("updater_config: {janus_replay: whole_bank, top_k: 16}",
                            f"updater_config: {{janus_replay: top_k, top_k: {k}}}")
        assert f"top_k: {k}}}" in text
    path = tmp_path / f"late_{replay.replace(':', '')}.yaml"
    path.write_text(text)
    return path


def _decisions(out: Path) -> list[dict]:
    drop = ("evaluations", "wall_s", "eval_wall_s")
    lines = [json.loads(x) for x in (out / "exprag+janus" / "decisions.jsonl").read_text().splitlines()]
    return [{k: v for k, v in x.items() if k != "decision"} | {"d": {k: v for k, v in x["decision"].items()
                                                                    if k not in drop}} for x in lines]


@pytest.mark.parametrize("replay,model,stops", [("whole_bank", "rules:0.2", (6, 7, 11)),
                                               ("top_k:3", "rules:0.2", (5, 8)), ("top_k:4", "rules:0.1", (8,))])
def test_a_run_stopped_at_any_step_resumes_to_the_same_decisions(tmp_path, monkeypatch, replay, model, stops):
    """Stopped after step ``stop`` (between a roll-back and its offer, or at the offer) and resumed: the decisions
    and the held-out score are the uninterrupted run's. With top-k replays they are not (measured at every stop
    1-11: top_k 3 at 20% noise differs from stop 5 on, held out 4 of 8 instead of 6 after stops 5-8; top_k 4 at
    10% from stop 8, 4 instead of 2): a resumed replay ranks the re-offered record by its prompt's embedding."""
    from janus_memory.cli import main
    from janus_memory.cli.parser import build_parser
    from janus_memory.cli.run_command import _config_from_args
    from janus_memory.run.experiment import run_experiment
    from janus_memory.run.loop import Stopped

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    args = ["--config", str(_config(tmp_path, replay)), "--model", model, "--controller", "janus"]
    whole = tmp_path / "whole"
    assert main(["run", *args, "--quiet", "--out", str(whole)]) == 0
    want = _decisions(whole)
    assert any(x["d"].get("reoffer") for x in want)  # the stream has offers to interrupt
    held_out = json.loads((whole / "summary.json").read_text())["methods"]["exprag+janus"]["test_correct"]
    differ = {}
    for stop in stops:
        part = tmp_path / f"part{stop}"
        cfg = _config_from_args(build_parser().parse_args(["run", *args, "--out", str(part)]), demo=False)
        with pytest.raises(Stopped):
            run_experiment(cfg, log=lambda m: None, stop_after=stop)
        assert main(["run", "--resume", str(part), "--quiet"]) == 0
        got = _decisions(part)
        bad = [x["step"] for x, y in zip(got, want, strict=True) if x != y]
        score = json.loads((part / "summary.json").read_text())["methods"]["exprag+janus"]["test_correct"]
        if bad or score != held_out:
            differ[stop] = (bad, score, held_out)
    assert differ == {}  # {stop: (steps whose decisions differ, held out resumed, held out uninterrupted)}


def test_the_baseline_without_a_controller_stores_no_records_for_re_offers(tmp_path, monkeypatch):
    """``controller: both`` under the recommended preset: only exprag+janus can offer a record again, yet the run
    loop asks every method's updater for its units, so the baseline's checkpoint also carries the records it lost to
    the deployed falsify and wipe (11 of them on this stream), which nothing will ever load."""
    from janus_memory.cli import main
    from janus_memory.store.reader import RunReader

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "both"
    assert main(["run", "--config", str(EXAMPLE), "--model", "rules:0.2", "--quiet", "--out", str(out)]) == 0
    _, baseline = RunReader(out).checkpoint("exprag")
    _, guarded = RunReader(out).checkpoint("exprag+janus")
    assert "held" in guarded["updater"]["state"]  # the guarded method keeps its rolled-back records
    assert "held" not in baseline["updater"]["state"]
