"""End to end: `janus run` on real GSM8K tasks with the scripted fake backend; bad input; resume after interruption."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from janus_memory.cli import main
from janus_memory.run.experiment import _Stopped, run_experiment
from janus_memory.settings.config import RunConfig

SMALL = ["--backend", "fake", "--dataset", "gsm8k", "--stream-size", "14", "--test-size", "5", "--encoder", "hashing",
         "--warmup", "4", "--coverage-size", "2", "--boundary-size", "2", "--fresh-size", "2", "--quiet"]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """One finished `janus run SMALL` (in this process, its own response cache), the uninterrupted reference of the
    tests below; they only read it."""
    root = tmp_path_factory.mktemp("small")
    mp = pytest.MonkeyPatch()
    mp.setenv("JANUS_CACHE_DIR", str(root / "cache"))
    try:
        assert main(["run", *SMALL, "--out", str(root / "ref")]) == 0
    finally:
        mp.undo()
    return root / "ref"


def _cfg(out, **kw):
    base = dict(backend="fake", dataset="gsm8k", stream_size=14, test_size=5, encoder="hashing", out=str(out),
                janus={"warmup": 4, "coverage_size": 2, "boundary_size": 2, "fresh_size": 2}, temperature=0.0,
                solver_max_tokens=256, curator_max_tokens=256)
    base.update(kw)
    return RunConfig(**base)


def _read(p: Path) -> bytes:
    return p.read_bytes()


def test_run_writes_complete_folder(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["run", *SMALL, "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "run folder:" in text and "wall time:" in text
    assert (out / "COMPLETE").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["methods"]) == {"dc_rs", "dc_rs+janus"}
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["janus"]["warmup"] == 4 and cfg["llm"]["solver_max_tokens"] == 8192  # every default written out
    splits = json.loads((out / "splits.json").read_text())
    assert len(splits["stream"]["ids"]) == 14 and len(splits["test"]["ids"]) == 5
    assert not set(splits["stream"]["ids"]) & set(splits["test"]["ids"])
    for method in ("dc_rs", "dc_rs+janus"):
        lines = (out / method / "decisions.jsonl").read_text().splitlines()
        assert len(lines) == 14
        assert len((out / method / "test.jsonl").read_text().splitlines()) == 5
        assert list((out / method / "memories").glob("00000_*.txt"))
    dec = [json.loads(x) for x in (out / "dc_rs+janus" / "decisions.jsonl").read_text().splitlines()]
    assert [d["decision"]["reason"] for d in dec[:4]] == ["warmup"] * 4
    assert dec[4]["decision"]["triggered"] is False  # momentum initialised at the first post-warm-up step
    j = summary["methods"]["dc_rs+janus"]
    assert j["triggers"] == sum(d["decision"]["triggered"] for d in dec)
    assert j["accepts"] + j["rollbacks"] == j["triggers"]
    # every deployed memory version is on disk and the deployed hash of each step matches one of them
    names = {p.name.split("_")[1][:12] for p in (out / "dc_rs+janus" / "memories").glob("*.txt")}
    assert {d["deployed_memory_sha256"][:12] for d in dec} <= names


@pytest.mark.parametrize("args,needle", [
    (["--dataset", "nope"], "unknown dataset 'nope'"),
    (["--updater", "nope"], "unknown updater 'nope'"),
])
def test_unknown_names_exit_2_one_line(tmp_path, capsys, args, needle):
    out = tmp_path / "r"
    rc = main(["run", *SMALL, "--out", str(out), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and needle in err[0] and err[0].startswith("error:")
    assert not (out / "COMPLETE").exists()


def test_missing_model_file(tmp_path, capsys):
    rc = main(["run", "--backend", "local", "--model-path", str(tmp_path / "none.gguf"), "--dataset", "gsm8k",
               "--stream-size", "2", "--test-size", "1", "--out", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "model file not found" in err and "--model-path" in err
    assert not (tmp_path / "r" / "COMPLETE").exists()


def test_unreachable_endpoint(tmp_path, capsys):
    rc = main(["run", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--dataset", "gsm8k",
               "--stream-size", "2", "--test-size", "1", "--out", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "cannot reach the model endpoint http://127.0.0.1:9/v1" in err


def test_unwritable_output(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):  # root ignores permission bits: use a path under a regular file instead
            target = tmp_path / "file"
            target.write_text("x")
            out = target / "run"
        else:
            out = ro / "run"
        rc = main(["run", *SMALL, "--out", str(out)])
    finally:
        ro.chmod(0o700)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "is not writable" in err and "--out" in err


def test_unknown_config_key_and_bad_yaml(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text("dataset: gsm8k\nstrem_size: 3\n")
    assert main(["run", "--config", str(bad), "--out", str(tmp_path / "r")]) == 2
    assert "unknown config key 'strem_size'" in capsys.readouterr().err
    bad.write_text("dataset: [gsm8k\n")
    assert main(["run", "--config", str(bad), "--out", str(tmp_path / "r")]) == 2
    assert "invalid YAML" in capsys.readouterr().err


def _artifacts(out: Path) -> dict:
    res = {}
    for method in ("dc_rs", "dc_rs+janus"):
        for f in ("decisions.jsonl", "steps.jsonl", "final_memory.txt", "test.jsonl"):
            res[f"{method}/{f}"] = _read(out / method / f)
    return res


def test_resume_after_interruption_is_byte_identical(tmp_path):
    ref = tmp_path / "ref"
    run_experiment(_cfg(ref), log=lambda m: None)
    expected = _artifacts(ref)
    for stop in (1, 5, 9, 13):
        out = tmp_path / f"stop{stop}"
        with pytest.raises(_Stopped):
            run_experiment(_cfg(out), log=lambda m: None, stop_after=stop)
        assert not (out / "COMPLETE").exists()
        run_experiment(_cfg(out), log=lambda m: None, resume=True)
        assert _artifacts(out) == expected, f"differs after stop at {stop}"


def test_resume_refuses_changed_config(tmp_path):
    out = tmp_path / "r"
    with pytest.raises(_Stopped):
        run_experiment(_cfg(out), log=lambda m: None, stop_after=3)
    from janus_memory.run.experiment import ConfigError

    with pytest.raises(ConfigError, match=r"seed: 0 -> 1"):
        run_experiment(_cfg(out, seed=1), log=lambda m: None, resume=True)


@pytest.mark.timeout(900)  # three CLI processes (the killed runs), each ~10 s of start-up under load
def test_sigkill_then_resume_is_byte_identical(tmp_path, small_run, capsys):
    args = [sys.executable, "-m", "janus_memory.cli", "run", *SMALL]
    env = {**os.environ}
    expected = _artifacts(small_run)  # the uninterrupted run (in-process: its process is not what is tested here)
    for kill_at in (3, 10, 17):  # committed steps across both methods (14 + 14)
        out = tmp_path / f"k{kill_at}"
        proc = subprocess.Popen([*args, "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        db = out / "run.sqlite"
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            try:
                n = sqlite3.connect(db, timeout=1).execute("SELECT COUNT(*) FROM steps").fetchone()[0] if db.exists() else 0
            except sqlite3.Error:
                n = 0
            if n >= kill_at:
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert not (out / "COMPLETE").exists()
        capsys.readouterr()
        rc = main(["run", "--resume", str(out), "--quiet"])  # the resume in this process: the kill is what is tested
        assert rc == 0, capsys.readouterr().err
        assert _artifacts(out) == expected, f"differs after SIGKILL at {kill_at} steps"


def test_disk_full_mid_run_is_clear_and_resumable(tmp_path, capsys, monkeypatch):
    import errno

    from janus_memory.store import store as store_mod

    ref = tmp_path / "ref"
    run_experiment(_cfg(ref), log=lambda m: None)
    out = tmp_path / "full"
    real = store_mod.RunStore.commit_step
    calls = {"n": 0}

    def failing(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 6:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *a, **kw)

    monkeypatch.setattr(store_mod.RunStore, "commit_step", failing)
    rc = main(["run", *SMALL, "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "No space left on device" in err[0] and f"--resume {out}" in err[0]
    assert not (out / "COMPLETE").exists()
    monkeypatch.setattr(store_mod.RunStore, "commit_step", real)
    assert main(["run", "--resume", str(out), "--quiet"]) == 0
    assert _artifacts(out) == _artifacts(ref)
    # candidate memories are stored with their parent hash; prompts and YAML config are in the folder
    import sqlite3 as _sq

    n = _sq.connect(out / "run.sqlite").execute("SELECT COUNT(*) FROM candidates WHERE parent IS NOT NULL").fetchone()[0]
    assert n == 28
    assert "\nllm:\n  backend: fake\n" in (out / "config.yaml").read_text()  # the backend section, nested
    assert (out / "prompts" / "task_math.txt").exists() and (out / "prompts" / "updater_dc_rs_curator_user.txt").exists()


def test_resume_refuses_changed_answer_key_c13(tmp_path, capsys):
    """C13: a run started on the shipped MMLU-Pro file, resumed after question 2634's key was changed back to E."""
    from shipped_data import plain_copy

    data = tmp_path / "data"
    plain_copy("mmlu_pro/test.jsonl", data)
    out = tmp_path / "r"
    with pytest.raises(_Stopped):
        run_experiment(_cfg(out, dataset="mmlu_pro_eng", data_dir=str(data), stream_size=4, test_size=2),
                       log=lambda m: None, stop_after=2)
    lines = (data / "mmlu_pro" / "test.jsonl").read_text(encoding="utf-8").rstrip("\n").split("\n")
    changed = 0
    for i, line in enumerate(lines):
        rec = json.loads(line)
        if rec["question_id"] == 2634:
            assert rec["answer"] == "B"
            rec["answer"] = "E"
            lines[i] = json.dumps(rec)
            changed += 1
    assert changed == 1
    (data / "mmlu_pro" / "test.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rc = main(["run", "--resume", str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "dataset hash mismatch" in err[0] and "mmlu_pro_eng" in err[0]


@pytest.mark.parametrize("args,needle", [
    (["--beta", "2"], "error: --beta must be in [0, 1), got 2.0"),
    (["--tau", "nan"], "error: --tau must be a finite number, got nan"),
    (["--warmup", "-1"], "error: --warmup must be >= 0, got -1"),
    (["--trigger", "foo"], "error: --trigger must be one of"),
    (["--dataset", "math500"], "math500 is test-only"),
    (["--updater", "exprag"], "'exprag' is a baseline without a rewritable text memory"),
])
def test_bad_settings_one_line_exit_2(tmp_path, capsys, args, needle):
    out = tmp_path / "r"
    rc = main(["run", *SMALL, "--out", str(out), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("error:") and needle in err[0], err
    assert not (out / "run.sqlite").exists()


def test_corrupt_gguf_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.gguf"
    bad.write_text("garbage\n")
    rc = main(["run", "--backend", "local", "--model-path", str(bad), "--dataset", "gsm8k", "--stream-size", "2",
               "--test-size", "1", "--out", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "is not a GGUF model file" in err[0]


def test_failed_start_leaves_a_folder_that_can_be_reused(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", *SMALL, "--out", str(out), "--data-dir", str(tmp_path / "nodata")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (out / "run.sqlite").exists()
    assert main(["run", *SMALL, "--out", str(out)]) == 0
    assert (out / "COMPLETE").exists()


def test_config_json_writes_every_default(tmp_path):
    out = tmp_path / "r"
    run_experiment(_cfg(out), log=lambda m: None)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["janus"]["tau"] == 0.0 and cfg["janus"]["beta"] == 0.9 and cfg["janus"]["trigger"] == "mmt"
    assert cfg["janus"]["warmup"] == 4  # the override
    assert cfg["updater_config"]["top_k"] == 3 and cfg["updater_config"]["curator_presence_penalty"] == 1.0


def test_sweep_dry_run_validates_names(tmp_path, capsys):
    g = tmp_path / "g.yaml"
    g.write_text(f"base:\n  backend: fake\n  out: {tmp_path / 'sw'}\ngrid:\n  dataset: [gsm8k, nope]\n")
    assert main(["sweep", str(g), "--dry-run"]) == 2
    assert "unknown dataset 'nope'" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == "janus-memory 0.1.0"


def test_run_against_openai_compatible_server_with_faults(tmp_path, capsys, small_run):
    """`janus run --backend openai` end to end over real HTTP (127.0.0.1) with injected 429/500/timeouts/truncated
    JSON: the run completes and makes exactly the decisions of the same scripted replies served in-process."""
    from janus_memory.run.fake_llm import scripted_backend
    from janus_memory.tasks import load_split
    from janus_memory.testing.openai_stub import OpenAITestServer

    tasks = load_split("gsm8k", "stream", limit=14).tasks + load_split("gsm8k", "test", limit=5).tasks
    fake = scripted_backend(tasks)
    ref = small_run
    with OpenAITestServer(faults=True, timeout_sleep_s=0.5, responder=fake.reply) as srv:
        out = tmp_path / "http"
        args = [a for a in SMALL if a not in ("fake",)]
        args[args.index("--backend") + 1:args.index("--backend") + 1] = ["openai"]
        rc = main(["run", *args, "--base-url", srv.base_url, "--model", "test-model", "--out", str(out)])
        assert rc == 0, capsys.readouterr().err
        assert srv.outcomes["429"] + srv.outcomes["500"] + srv.outcomes["truncated"] > 0  # faults really happened
    keys = ("step", "task_id", "correct", "deployed", "deployed_memory_sha256")
    for method in ("dc_rs", "dc_rs+janus"):
        a = [json.loads(x) for x in (ref / method / "decisions.jsonl").read_text().splitlines()]
        b = [json.loads(x) for x in (out / method / "decisions.jsonl").read_text().splitlines()]
        assert [{k: d[k] for k in keys} for d in a] == [{k: d[k] for k in keys} for d in b]
        assert [d["decision"]["reason"] for d in a] == [d["decision"]["reason"] for d in b]
    sa = json.loads((ref / "summary.json").read_text())["methods"]
    sb = json.loads((out / "summary.json").read_text())["methods"]
    assert {m: sa[m]["test_accuracy"] for m in sa} == {m: sb[m]["test_accuracy"] for m in sb}


def test_overwrite_removes_the_previous_runs_files(tmp_path):
    out = tmp_path / "r"
    run_experiment(_cfg(out), log=lambda m: None)
    keep = out / "notes.txt"
    keep.write_text("mine")
    run_experiment(_cfg(out, controller="janus", stream_size=6), log=lambda m: None, overwrite=True)
    assert not (out / "dc_rs").exists()  # the old base-method folder is gone
    assert len((out / "dc_rs+janus" / "decisions.jsonl").read_text().splitlines()) == 6
    assert keep.read_text() == "mine"


def test_server_dying_mid_run_is_one_line_and_resumable(tmp_path, capsys, small_run):
    """A server that starts failing with 500s after some requests: one error line naming --resume, then resume
    against a healthy server finishes with the same decisions as an uninterrupted run."""
    from janus_memory.run.fake_llm import scripted_backend
    from janus_memory.tasks import load_split
    from janus_memory.testing.openai_stub import OpenAITestServer

    tasks = load_split("gsm8k", "stream", limit=14).tasks + load_split("gsm8k", "test", limit=5).tasks
    fake = scripted_backend(tasks)
    served = {"n": 0}

    def flaky(messages):
        served["n"] += 1
        if served["n"] > 20:
            raise RuntimeError("server overloaded")
        return fake.reply(messages)

    args = [a for a in SMALL if a != "fake"]
    args[args.index("--backend") + 1:args.index("--backend") + 1] = ["openai"]
    out = tmp_path / "r"
    with OpenAITestServer(responder=flaky) as srv:
        srv_args = ["--base-url", srv.base_url, "--model", "test-model"]
        rc = main(["run", *args, *srv_args, "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "the model call failed" in err[0] and f"--resume {out}" in err[0], err
    assert not (out / "COMPLETE").exists()
    ref = small_run
    with OpenAITestServer(responder=fake.reply) as srv:  # the endpoint may move (new port) between resumes
        rc = main(["run", "--resume", str(out), "--base-url", srv.base_url, "--quiet"])
    assert rc == 0, capsys.readouterr().err
    keys = ("step", "task_id", "correct", "deployed", "deployed_memory_sha256")
    for method in ("dc_rs", "dc_rs+janus"):
        a = [json.loads(x) for x in (ref / method / "decisions.jsonl").read_text().splitlines()]
        b = [json.loads(x) for x in (out / method / "decisions.jsonl").read_text().splitlines()]
        assert [{k: d[k] for k in keys} for d in a] == [{k: d[k] for k in keys} for d in b]
