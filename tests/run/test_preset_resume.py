"""A run whose stored config predates the presets resumes as it ran: interrupted, its stored config
rewritten to the pre-preset format, resumed with `janus run --resume`, it ends byte-identical to the golden run."""
import json
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
import cases  # noqa: E402
from janus_memory.cli import main  # noqa: E402
from janus_memory.cli.parser import build_parser  # noqa: E402
from janus_memory.cli.run_command import _config_from_args  # noqa: E402
from janus_memory.run.experiment import Stopped, run_experiment  # noqa: E402

_NEW_TOP = ("preset", "janus_preset", "replay", "request_timeout", "max_retries", "request_deadline",
            "allow_weak_sandbox")
_NEW_UPDATER = ("prompts", "extraction", "fallback", "parse_reasoning", "execute_code", "exec_timeout_s",
                "curator_input", "presence_penalty")


def test_pre_preset_stored_config_resumes_to_the_golden_bytes(tmp_path, monkeypatch):
    name = "gsm8k_dc_rs_both"
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / name
    args = build_parser().parse_args(["run", *cases.COMMON, *cases.CASES[name], "--out", str(out)])
    with pytest.raises(Stopped):
        run_experiment(_config_from_args(args, demo=False), log=lambda m: None, stop_after=10)
    db = sqlite3.connect(out / "run.sqlite")
    cfg = json.loads(db.execute("SELECT value FROM meta WHERE key='config'").fetchone()[0])
    cfg.update(cfg.pop("llm"))  # an old run folder: the backend settings flat (before the llm section)
    for k in _NEW_TOP:
        del cfg[k]
    for k in _NEW_UPDATER:
        cfg["updater_config"].pop(k, None)
    del cfg["janus"]["replay_limit"]
    cfg["n_ctx"] = 4096  # the old default
    assert cfg["janus"]["same_memory_shortcut"] is True  # what the old runner resolved and stored
    db.execute("UPDATE meta SET value=? WHERE key='config'", (json.dumps(cfg, sort_keys=True),))
    db.execute("DELETE FROM meta WHERE key='seal:setup'")  # an older janus-memory wrote no setup seal
    db.commit()
    db.close()
    (out / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True))  # an old folder: both say the same
    assert main(["run", "--resume", str(out), "--quiet"]) == 0
    got = cases.outputs(out)
    want_dir = cases.HERE / name
    want = {str(p.relative_to(want_dir)): p.read_bytes() for p in sorted(want_dir.rglob("*")) if p.is_file()}
    assert sorted(got) == sorted(want)
    assert [rel for rel in sorted(want) if got[rel] != want[rel]] == []


def test_interrupted_paper_preset_run_resumes_to_the_golden_bytes(tmp_path, monkeypatch):
    """Fresh replay draws are cached per sample index: a resumed paper run repeats the uninterrupted one exactly."""
    name = "paper_gsm8k_expel_always"
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / name
    args = build_parser().parse_args(["run", *cases.COMMON, *cases.CASES[name], "--out", str(out)])
    with pytest.raises(Stopped):
        run_experiment(_config_from_args(args, demo=False), log=lambda m: None, stop_after=13)
    assert main(["run", "--resume", str(out), "--quiet"]) == 0
    got = cases.outputs(out)
    want_dir = cases.HERE / name
    want = {str(p.relative_to(want_dir)): p.read_bytes() for p in sorted(want_dir.rglob("*")) if p.is_file()}
    assert sorted(got) == sorted(want)
    assert [rel for rel in sorted(want) if got[rel] != want[rel]] == []
