"""The redesigned runner's seams: typed events to a user callback, RunReader, the faithful option reaching the family,
resuming a run whose stored config predates a new setting, one-line user errors."""
import json
import sqlite3

import pytest

from janus_memory.errors import ConfigError, JanusError, OutputError, RunFolderError
from janus_memory.run.build import build_context
from janus_memory.run.experiment import Stopped, run_experiment
from janus_memory.settings.config import RunConfig
from janus_memory.store import events as E
from janus_memory.store.reader import RunReader


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


def _cfg(out, **kw):
    base = dict(backend="fake", dataset="gsm8k", stream_size=6, test_size=2, encoder="hashing", out=str(out),
                janus={"warmup": 2, "coverage_size": 1, "boundary_size": 1, "fresh_size": 1, "trigger": "always"},
                updater="dc_cu", controller="janus")
    base.update(kw)
    return RunConfig(**base)


def test_events_reach_a_user_callback_in_order(tmp_path):
    seen = []
    summary = run_experiment(_cfg(tmp_path / "r"), log=lambda m: None, on_event=seen.append)
    kinds = [type(e).__name__ for e in seen]
    assert kinds[0] == "MethodStarted" and kinds[-2:] == ["TestDone", "MethodFinished"]
    steps = [e for e in seen if isinstance(e, E.StepFinished)]
    assert [e.step for e in steps] == [1, 2, 3, 4, 5, 6] and all(e.total == 6 for e in steps)
    trig = [e for e in seen if isinstance(e, E.Triggered)]
    m = summary["methods"]["dc_cu+janus"]
    assert len(trig) == m["triggers"] == 4  # trigger=always after 2 warm-up steps
    assert sum(not e.accept for e in trig) == m["rollbacks"]
    assert steps[-1].triggers == 4 and steps[-1].rollbacks == m["rollbacks"]
    done = seen[-1]
    assert done.summary == m and done.final_memory == (tmp_path / "r" / "dc_cu+janus" / "final_memory.txt").read_text()


def test_run_reader_reads_what_the_store_wrote(tmp_path):
    out = tmp_path / "r"
    run_experiment(_cfg(out), log=lambda m: None)
    reader = RunReader(out)
    assert reader.finished and reader.has_db
    lines = [json.loads(x) for x in (out / "dc_cu+janus" / "decisions.jsonl").read_text().splitlines()]
    assert reader.decisions("dc_cu+janus") == lines
    assert reader.summary()["methods"]["dc_cu+janus"] == reader.method_result("dc_cu+janus")
    stored = {k: v for k, v in reader.config().items() if k != "preset_summary"}  # config.json adds the preset
    assert reader.config()["janus"]["warmup"] == 2 and reader.meta("config") == stored
    versions, last, first = reader.memory_versions()
    assert last == {"dc_cu+janus": 6} and versions["dc_cu+janus"][0]["step"] == 0
    assert first["dc_cu+janus"] == lines[0]["old_memory_sha256"]
    assert reader.checkpoint("dc_cu+janus")[0] == 6
    assert RunReader(tmp_path / "nothing").meta("config") is None  # no database: nothing, not an error


def test_faithful_option_reaches_the_task_family(tmp_path):
    cfg = _cfg(tmp_path / "r", faithful=True)
    ctx = build_context(cfg, log=lambda m: None)
    assert ctx.family.faithful is True and ctx.make_updater().family is ctx.family
    assert build_context(_cfg(tmp_path / "r2"), log=lambda m: None).family.faithful is False


def test_resume_of_a_run_stored_before_a_setting_existed(tmp_path):
    out = tmp_path / "r"
    with pytest.raises(Stopped):
        run_experiment(_cfg(out), log=lambda m: None, stop_after=3)
    db = sqlite3.connect(out / "run.sqlite")
    cfg = json.loads(db.execute("SELECT value FROM meta WHERE key='config'").fetchone()[0])
    del cfg["faithful"]  # as written by the runner before `faithful` was a setting
    db.execute("UPDATE meta SET value=? WHERE key='config'", (json.dumps(cfg, sort_keys=True),))
    db.execute("DELETE FROM meta WHERE key='seal:setup'")  # an older janus-memory wrote no setup seal
    db.commit()
    db.close()
    from janus_memory.run.provenance import to_yaml

    files = json.loads((out / "config.json").read_text())
    del files["faithful"]  # its config.json and config.yaml did not hold it either
    (out / "config.json").write_text(json.dumps(files))
    (out / "config.yaml").write_text(to_yaml(files))
    summary = run_experiment(_cfg(out), log=lambda m: None, resume=True)
    assert summary["methods"]["dc_cu+janus"]["stream_tasks"] == 6
    with pytest.raises(Stopped):
        run_experiment(_cfg(tmp_path / "r3"), log=lambda m: None, stop_after=2)
    with pytest.raises(ConfigError, match=r"cannot resume: the config differs from the stored run: faithful: False -> True"):
        run_experiment(_cfg(tmp_path / "r3", faithful=True), log=lambda m: None, resume=True)


def test_user_errors_share_one_base():
    for cls in (ConfigError, OutputError, RunFolderError):
        assert issubclass(cls, JanusError)
    from janus_memory.llm.base import LLMError
    from janus_memory.llm.model_fetch import ModelFetchError, ModelNotFound

    assert all(issubclass(c, JanusError) for c in (LLMError, ModelFetchError, ModelNotFound))
    assert LLMError("boom\nmore").user_message("runs/x") == (
        "the model call failed: boom; every committed step is kept: fix the server, then `janus run --resume runs/x`")


def test_report_and_diff_on_a_non_run_folder_are_user_errors(tmp_path):
    from janus_memory.cli import main

    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert main(["memory", "diff", str(tmp_path / "empty"), "0", "1"]) == 2
