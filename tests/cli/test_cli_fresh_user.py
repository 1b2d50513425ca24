"""What a fresh user's review of the CLI found (fake backend only):

1. errors found after the header left a run folder holding only `.janus.lock`: data files and the output folder are
   now checked before anything is printed or made, and a run that still fails (or is interrupted) before it wrote
   anything removes the folder it created;
2. numeric options accepted nonsense (`--tau 2`): every range is checked, the error names the option (or the config
   key) and the whole allowed range;
3. mistyped names get "did you mean" (datasets, updaters, encoders, backends, presets, trigger policies, choices);
4. `janus run ... | head` stops like an interrupt (exit 141, the resume line on stderr, no "Exception ignored");
5. `janus run --help` shows the default stream size and output folder.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from janus_memory.cli import main
from janus_memory.errors import ConfigError
from janus_memory.settings.config import RunConfig

SMALL = ["--backend", "fake", "--dataset", "gsm8k", "--stream-size", "3", "--test-size", "2", "--encoder", "hashing:64",
         "--warmup", "1", "--coverage-size", "1", "--boundary-size", "1", "--fresh-size", "1", "--no-cache"]
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


def _exit(argv) -> int:
    """main()'s exit code, also when argparse exits."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def _only_error(capsys, rc: int, expect: str, *, header: bool = False) -> str:
    """Exit code 2, exactly one stderr line == ``expect``; stdout empty unless ``header``. Returns stdout."""
    out = capsys.readouterr()
    assert rc == 2, (rc, out.err)
    assert out.err == expect + "\n", out.err
    assert "Traceback" not in out.err
    if not header:
        assert out.out == ""
    return out.out


# ------------------------------------------------------------------ 1. checked before the header; no debris
def test_data_dir_without_the_dataset_files_is_one_line_before_the_header(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "r"
    rc = main(["run", *SMALL, "--data-dir", str(empty), "--out", str(out)])
    _only_error(capsys, rc, f"error: GSM8K test.jsonl not found at {empty.resolve()}/gsm8k/test.jsonl (fix: pass a "
                            "--data-dir holding gsm8k/test.jsonl (plain, .xz or .gz), or leave --data-dir out to use "
                            "the data shipped in the package)")
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["empty"]  # no lock file either


@pytest.mark.parametrize("content, expect", [
    ("not json\n", "error: {f}:1: not valid JSON (Expecting value, column 1)"),
    ("", "error: the stream split of gsm8k has no tasks ({f}); check the data file"),
])
def test_unloadable_dataset_file_is_one_line_before_the_header(tmp_path, capsys, content, expect):
    data = tmp_path / "data"
    (data / "gsm8k").mkdir(parents=True)
    f = data / "gsm8k" / "test.jsonl"
    f.write_text(content)
    out = tmp_path / "r"
    rc = main(["run", *SMALL, "--data-dir", str(data), "--out", str(out)])
    _only_error(capsys, rc, expect.format(f=f.resolve()))
    assert not out.exists() and not (tmp_path / ".janus.lock").exists()


def _unwritable_cases(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    cases = [(a_file / "run", f"error: output folder {a_file}/run is not writable: a folder cannot be created in "
                              f"{a_file} (Not a directory); choose another with --out"),
             (a_file, f"error: output folder {a_file} is a file, not a folder; choose another with --out")]
    if Path("/proc/self").is_dir():
        cases.append((Path("/proc/x"), "error: output folder /proc/x is not writable: a folder cannot be created in "
                                       "/proc (No such file or directory); choose another with --out"))
    return cases


def test_unusable_output_folder_is_one_line_before_the_header(tmp_path, capsys):
    for out, expect in _unwritable_cases(tmp_path):
        rc = main(["run", *SMALL, "--out", str(out)])
        _only_error(capsys, rc, expect)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "file"] or \
        sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_folder_holding_a_finished_run_is_refused_before_the_header(tmp_path, capsys):
    out = tmp_path / "done"
    out.mkdir()
    (out / "COMPLETE").write_text("")
    rc = main(["run", *SMALL, "--out", str(out)])
    _only_error(capsys, rc, f"error: output folder {out} already holds a finished run; choose another --out or pass "
                            "--overwrite")
    assert sorted(p.name for p in out.iterdir()) == ["COMPLETE"]


def test_a_failure_after_the_header_removes_the_folders_it_created(tmp_path, capsys):
    """The response cache is checked when the run is built (after the header): the run folder, its new parents and
    the lock files made for them are gone; exit 2 with one line."""
    not_a_folder = tmp_path / "cachefile"
    not_a_folder.write_text("x")
    out = tmp_path / "new" / "deep" / "r"
    args = [a for a in SMALL if a != "--no-cache"]
    rc = main(["run", *args, "--cache-dir", str(not_a_folder), "--out", str(out)])
    stdout = _only_error(capsys, rc, f"error: cache folder {not_a_folder} is a file, not a folder: pass a folder (or a "
                                     ".sqlite file path) with --cache-dir, or --no-cache", header=True)
    assert stdout.splitlines()[0].startswith("janus dataset=gsm8k stream=3 test=2")
    assert f"run folder: {out.resolve()}" in stdout.splitlines()
    assert not (tmp_path / "new").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "cachefile"] or \
        sorted(p.name for p in tmp_path.iterdir()) == ["cachefile"]


def test_a_failure_after_the_header_keeps_a_folder_the_user_made(tmp_path, capsys):
    not_a_folder = tmp_path / "cachefile"
    not_a_folder.write_text("x")
    out = tmp_path / "mine"
    out.mkdir()
    args = [a for a in SMALL if a != "--no-cache"]
    assert main(["run", *args, "--cache-dir", str(not_a_folder), "--out", str(out)]) == 2
    assert out.is_dir() and not (out / "run.sqlite").exists()


def test_an_interrupt_while_setting_up_removes_the_new_folder(tmp_path, capsys, monkeypatch):
    from janus_memory.run import experiment

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(experiment, "build_context", interrupted)
    out = tmp_path / "r"
    assert main(["run", *SMALL, "--out", str(out)]) == 130
    assert capsys.readouterr().err == "interrupted before the run was set up; nothing to resume: start it again\n"
    assert not out.exists() and not (tmp_path / ".janus.lock").exists()


# ------------------------------------------------------------------ 2. numeric ranges, named by option
@pytest.mark.parametrize("argv, expect", [
    (["--tau", "2"], "--tau must be in [-1, 1], got 2.0 (MMT compares it with a cosine; to compare at every step use "
                     "the trigger policy always: --trigger always)"),
    (["--tau", "-1.5"], "--tau must be in [-1, 1], got -1.5 (MMT compares it with a cosine; to never compare use the "
                        "trigger policy never: --trigger never)"),
    (["--tau", "inf"], "--tau must be a finite number, got inf"),
    (["--beta", "1"], "--beta must be in [0, 1), got 1.0"),
    (["--beta", "-0.1"], "--beta must be in [0, 1), got -0.1"),
    (["--warmup", "-2"], "--warmup must be >= 0, got -2"),
    (["--coverage-size", "-1"], "--coverage-size must be >= 0, got -1"),
    (["--boundary-size", "-1"], "--boundary-size must be >= 0, got -1"),
    (["--fresh-size", "-1"], "--fresh-size must be >= 0, got -1"),
    (["--replay-limit", "0"], "--replay-limit must be None or an int in [1, 1048576], got 0"),
    (["--temperature", "5"], "--temperature must be in [0, 2], got 5.0"),
    (["--temperature", "-0.1"], "--temperature must be in [0, 2], got -0.1"),
    (["--temperature", "nan"], "--temperature must be a finite number, got nan"),
    (["--stream-size", "0"], "--stream-size must be >= 1, got 0"),
    (["--test-size", "-3"], "--test-size must be >= 1, got -3"),
    (["--checkpoints", "0,0.5"], "--checkpoints must be stream fractions in (0, 1], got 0.0"),
    (["--checkpoints", "1.5"], "--checkpoints must be stream fractions in (0, 1], got 1.5"),
    (["--solver-max-tokens", "0"], "--solver-max-tokens must be in [1, 1048576], got 0"),
    (["--curator-max-tokens", "-5"], "--curator-max-tokens must be in [1, 1048576], got -5"),
    (["--concurrency", "0"], "--concurrency must be in [1, 1024], got 0"),
    (["--n-parallel", "0"], "--n-parallel must be in [1, 256], got 0"),
    (["--n-ctx", "-1"], "--n-ctx must be in [0, 1048576], got -1"),
    (["--max-retries", "-1"], "--max-retries must be in [0, 100], got -1"),
    (["--request-timeout", "0"], "--request-timeout must be in (0, 86400], got 0.0"),
    (["--request-timeout", "inf"], "--request-timeout must be a finite number, got inf"),
    (["--request-deadline", "-5"], "--request-deadline must be in (0, 604800], got -5.0"),
    (["--solver-max-tokens", "1000000000"], "--solver-max-tokens must be in [1, 1048576], got 1000000000"),
    (["--n-ctx", "100000000000"], "--n-ctx must be in [0, 1048576], got 100000000000"),
    (["--concurrency", "1000000000"], "--concurrency must be in [1, 1024], got 1000000000"),
    (["--max-retries", "1000"], "--max-retries must be in [0, 100], got 1000"),
    (["--request-timeout", "1e9"], "--request-timeout must be in (0, 86400], got 1000000000.0"),
    (["--checkpoints", ",".join(f"0.{i:03d}" for i in range(1, 102))], "--checkpoints at most 100 fractions, got 101"),
    (["--base-url", "ftp://127.0.0.1/v1"], "--base-url must be an http:// or https:// URL such as "
                                           "http://127.0.0.1:8000/v1, got 'ftp://127.0.0.1/v1'"),
    (["--model", "m" * 5000], "--model must be at most 4,096 characters, got 5,000"),
    (["--encoder", "hashing:1000000000000"], "encoder 'hashing:1000000000000': the hashing encoder's dimension must "
                                             "be in [2, 65536] (a dense row of that many numbers per text, stored for "
                                             "every seen task), got 1000000000000"),
])
def test_out_of_range_option_is_one_line_naming_it_before_the_header(tmp_path, capsys, argv, expect):
    out = tmp_path / "r"
    rc = main(["run", *SMALL, *argv, "--out", str(out)])
    _only_error(capsys, rc, f"error: {expect}")
    assert not out.exists()


def test_demo_and_grid_options_are_checked_the_same_way(tmp_path, capsys):
    rc = main(["demo", "--backend", "fake", "--tau", "2", "--out", str(tmp_path / "d")])
    _only_error(capsys, rc, "error: --tau must be in [-1, 1], got 2.0 (MMT compares it with a cosine; to compare at "
                            "every step use the trigger policy always: --trigger always)")
    rc = main(["grid", "--backend", "fake", "--dataset", "gsm8k", "--beta", "1.5", "--out", str(tmp_path / "g")])
    _only_error(capsys, rc, "error: --beta must be in [0, 1), got 1.5")
    assert sorted(p.name for p in tmp_path.iterdir()) in (["cache"], [])


@pytest.mark.parametrize("yaml_text, expect", [
    ("janus: {tau: 2.0}", "invalid Janus setting: tau must be in [-1, 1], got 2.0 (MMT compares it with a cosine; to "
                          "compare at every step use the trigger policy always: --trigger always)"),
    ("janus: {seed: -1}", "invalid Janus setting: seed must be in [0, 4294967295], got -1"),
    ("janus: {trigger_rate: 1.5}", "invalid Janus setting: trigger_rate must be in [0, 1], got 1.5"),
    ("janus: {trigger_period: 0}", "invalid Janus setting: trigger_period must be >= 1, got 0"),
    ("janus: {alpha: 1.0}", "invalid Janus setting: alpha must be in (0, 1), got 1.0"),
    ("llm: {temperature: 3}", "invalid value for 'llm.temperature': must be in [0, 2], got 3"),
    ("temperature: .inf", "invalid value for 'llm.temperature': must be a finite number, got inf"),
    ("request_timeout: .nan", "invalid value for 'llm.request_timeout': must be a finite number, got nan"),
    ("stream_size: 0", "invalid value for 'stream_size': must be >= 1, got 0"),
    ("checkpoints: [0.5, 2.0]", "invalid value for 'checkpoints': must be stream fractions in (0, 1], got 2.0"),
])
def test_out_of_range_config_key_is_one_line_naming_the_key(tmp_path, capsys, yaml_text, expect):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"backend: fake\n{yaml_text}\n")
    rc = main(["run", "--config", str(cfg), "--out", str(tmp_path / "r")])
    _only_error(capsys, rc, f"error: {expect} (line 2 of {cfg})")
    assert not (tmp_path / "r").exists()


def test_a_range_error_from_the_config_file_names_the_key_even_with_other_options(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("backend: fake\njanus: {tau: 5.0}\n")
    rc = main(["run", "--config", str(cfg), "--beta", "0.5", "--out", str(tmp_path / "r")])
    assert capsys.readouterr().err.startswith("error: invalid Janus setting: tau must be in [-1, 1], got 5.0")
    assert rc == 2


def test_the_range_ends_are_accepted():
    for data in ({"janus": {"tau": 1.0}}, {"janus": {"tau": -1.0}}, {"temperature": 2.0}, {"temperature": 0.0},
                 {"janus": {"beta": 0.0, "seed": 2**32 - 1}}, {"checkpoints": [1.0]}):
        RunConfig.parse(data)


@pytest.mark.parametrize("argv, expect", [
    (["grid", "--dataset", "gsm8k", "--workers", "0"],
     "error: argument --workers: must be an integer >= 1, got 0; see `janus grid --help`"),
    (["grid", "--dataset", "gsm8k", "--seeds", "1,x"],
     "error: argument --seeds: expected one or more comma-separated integers like 0,1,2, got '1,x'; see `janus grid "
     "--help`"),
    (["grid", "--dataset", "gsm8k", "--seeds", ","],
     "error: argument --seeds: expected one or more comma-separated integers like 0,1,2, got ','; see `janus grid "
     "--help`"),
    (["sweep", "g.yaml", "--workers", "-1"],
     "error: argument --workers: must be an integer >= 1, got -1; see `janus sweep --help`"),
    (["report", "somewhere", "--max-timelines", "-1"],
     "error: argument --max-timelines: must be an integer >= 0, got -1; see `janus report --help`"),
    (["memory", "diff", "somewhere", "-1", "2"],
     "error: argument step_a: must be an integer >= 0, got -1; see `janus memory diff --help`"),
    (["memory", "diff", "somewhere", "1", "2", "--context", "-3"],
     "error: argument --context: must be an integer >= 0, got -3; see `janus memory diff --help`"),
])
def test_numeric_options_outside_the_settings_are_checked_by_the_parser(capsys, argv, expect):
    _only_error(capsys, _exit(argv), expect)


# ------------------------------------------------------------------ 3. did you mean
@pytest.mark.parametrize("argv, expect", [
    (["--dataset", "gsm8kk"], "error: unknown dataset 'gsm8kk' (did you mean gsm8k?); choose one of: aime, "
                              "apibench_hf, gpqa, gsm8k, humaneval, math, math500, mmlu_pro_eng, mmlu_pro_phy, rules, "
                              "rules_late, rules_small"),
    (["--updater", "dcrs"], "error: unknown updater 'dcrs' (did you mean dc_rs?); choose one of: ace, dc_cu, dc_rs, "
                            "expel, exprag, memory_free, reasoning_bank"),
    (["--backend", "fak"], "error: unknown backend 'fak' (did you mean fake?); choose one of: fake, local, openai"),
    (["--encoder", "minlm"], "error: unknown encoder 'minlm' (did you mean minilm?); choose one of: hashing, minilm, st "
                             "('minilm', 'hashing[:n]' or 'st:<name-or-path>')"),
    (["--dataset", "zzzz"], "error: unknown dataset 'zzzz'; choose one of: aime, apibench_hf, gpqa, gsm8k, humaneval, "
                            "math, math500, mmlu_pro_eng, mmlu_pro_phy, rules, rules_late, rules_small"),
    (["--trigger", "mtm"], "error: --trigger must be one of ('never', 'always', 'random', 'periodic', 'mmt', "
                           "'selective'), got 'mtm' (did you mean mmt?)"),
    (["--preset", "papr"], "error: argument --preset: invalid choice: 'papr' (did you mean paper?) (choose from "
                           "'paper', 'small'); see `janus run --help`"),
    (["--janus-preset", "fats"], "error: argument --janus-preset: invalid choice: 'fats' (did you mean fast?) (choose "
                                 "from 'paper', 'fast', 'recommended'); see `janus run --help`"),
    (["--controller", "jans"], "error: argument --controller: invalid choice: 'jans' (did you mean janus?) (choose "
                               "from 'janus', 'none', 'both'); see `janus run --help`"),
    (["--replay", "frozn"], "error: argument --replay: invalid choice: 'frozn' (did you mean frozen?) (choose from "
                            "'fresh', 'frozen'); see `janus run --help`"),
])
def test_a_mistyped_name_gets_the_closest_one(tmp_path, capsys, argv, expect):
    base = [a for a in SMALL]
    for flag, _ in zip(argv[::2], argv[1::2]):
        if flag in base:
            i = base.index(flag)
            del base[i:i + 2]
    rc = _exit(["run", *base, *argv, "--out", str(tmp_path / "r")])
    _only_error(capsys, rc, expect)
    assert not (tmp_path / "r").exists()


def test_a_mistyped_command_and_config_names_get_the_closest_one(tmp_path, capsys):
    _only_error(capsys, _exit(["rnu"]), "error: argument cmd: invalid choice: 'rnu' (did you mean run?) (choose from "
                                        "'demo', 'run', 'model', 'memory', 'report', 'view', 'sweep', 'grid', "
                                        "'bench', 'replay'); see `janus --help`")
    for text, expect in (("preset: papr", "invalid value for 'preset': Input should be 'paper' or 'small' (got 'papr') "
                                          "(did you mean paper?)"),
                         ("stream_sise: 3", "unknown config key 'stream_sise' (did you mean stream_size?)"),
                         ("llm: {temprature: 0.1}", "unknown config key 'llm.temprature' (did you mean temperature?)"),
                         ("janus: {warmpu: 3}", "unknown config key 'janus.warmpu' (did you mean warmup?)"),
                         ("dataset: gsm8kk", "unknown dataset 'gsm8kk' (did you mean gsm8k?); choose one of: aime, "
                                             "apibench_hf, gpqa, gsm8k, humaneval, math, math500, mmlu_pro_eng, "
                                             "mmlu_pro_phy, rules, rules_late, rules_small")):
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"backend: fake\n{text}\n")
        _only_error(capsys, main(["run", "--config", str(cfg), "--out", str(tmp_path / "r")]),
                    f"error: {expect} (line 2 of {cfg})")
    # a name set by an option is the option's: no file line, even when the file has the key too
    cfg.write_text("backend: fake\ndataset: gsm8k\n")
    _only_error(capsys, main(["run", "--config", str(cfg), "--dataset", "gsm8kk", "--out", str(tmp_path / "r")]),
                "error: unknown dataset 'gsm8kk' (did you mean gsm8k?); choose one of: aime, apibench_hf, gpqa, gsm8k, "
                "humaneval, math, math500, mmlu_pro_eng, mmlu_pro_phy, rules, rules_late, rules_small")


def test_every_registry_lookup_suggests(tmp_path):
    from janus_memory.encoders import get_encoder
    from janus_memory.registry import BACKENDS, DATASETS, UPDATERS
    from janus_memory.tasks import get_family, load_split
    from janus_memory.updaters import make_updater

    for call, expect in (
            (lambda: load_split("gsm8kk", "stream"), "unknown dataset 'gsm8kk' (did you mean gsm8k?)"),
            (lambda: get_family("gsm8kk"), "unknown dataset 'gsm8kk' (did you mean gsm8k?)"),
            (lambda: make_updater("expl", llm=None, family=None, encoder=None), "unknown updater 'expl' (did you mean "
                                                                                 "expel?)"),
            (lambda: get_encoder("hashng"), "unknown encoder 'hashng' (did you mean hashing?)"),
            (lambda: UPDATERS.lookup("dc_cuu"), "unknown updater 'dc_cuu' (did you mean dc_cu?)"),
            (lambda: DATASETS.lookup("aimee"), "unknown dataset 'aimee' (did you mean aime?)"),
            (lambda: BACKENDS.lookup("opnai"), "unknown backend 'opnai' (did you mean openai?)")):
        with pytest.raises(ConfigError) as e:
            call()
        assert str(e.value).startswith(expect + "; choose one of: "), str(e.value)


# ------------------------------------------------------------------ 4. a closed stdout (| head)
def _env(tmp_path) -> dict:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "JANUS_CACHE_DIR": str(tmp_path / "cache")}


def test_closed_pipe_stops_the_run_like_an_interrupt_and_it_resumes(tmp_path, capsys):
    """A real pipe whose reader goes away after the first step line: exit 141, the resume line on stderr and nothing
    else there; the committed steps are kept and --resume finishes the run."""
    out = tmp_path / "r"
    cmd = [sys.executable, "-m", "janus_memory.cli", "run", *SMALL[:4], "--stream-size", "30", *SMALL[6:],
           "--out", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(tmp_path), cwd=tmp_path)
    seen = []
    for line in iter(p.stdout.readline, b""):
        seen.append(line.decode())
        if line.startswith(b"[dc_rs] step  1/30 "):
            break
    p.stdout.close()  # the reader is gone, as when `head` exits
    err = p.stderr.read().decode()
    assert p.wait(timeout=600) == 141
    assert seen[0].startswith("janus dataset=gsm8k stream=30 test=2")
    assert err == f"stdout was closed (broken pipe): every committed step is kept; continue with `janus run --resume " \
                  f"{out}`\n"
    assert main(["run", "--resume", str(out), "-q"]) == 0
    assert (out / "COMPLETE").exists()


def test_pipe_into_head_exits_141_without_noise(tmp_path):
    """`janus run ... | head -3` in a shell: exit 141 (PIPESTATUS), one stderr line, no 'Exception ignored' or
    traceback; where the run stopped depends on timing, and either way its folder is usable."""
    out = tmp_path / "r"
    argv = " ".join([*SMALL[:4], "--stream-size", "30", *SMALL[6:], "--out", str(out)])
    script = f"{sys.executable} -m janus_memory.cli run {argv} | head -3 > head.txt; echo $\\{{PIPESTATUS[0]}}"
    script = script.replace("$\\{", "${")
    res = subprocess.run(["bash", "-c", script], capture_output=True, env=_env(tmp_path), cwd=tmp_path, timeout=600)
    assert res.stdout.decode().strip() == "141", res
    err = res.stderr.decode()
    assert err in (f"stdout was closed (broken pipe): every committed step is kept; continue with `janus run --resume "
                   f"{out}`\n",
                   "stdout was closed (broken pipe) before the run was set up; nothing to resume: start it again\n"), err
    assert len((tmp_path / "head.txt").read_text().splitlines()) == 3
    if out.exists():
        assert main(["run", "--resume", str(out), "-q"]) == 0
    else:
        assert not (tmp_path / ".janus.lock").exists()


class _ClosesAt:
    """A stdout whose reader goes away when a line containing ``marker`` is written (BrokenPipeError from then on)."""

    def __init__(self, marker: str):
        self.marker, self.closed_pipe, self.text = marker, False, []

    def write(self, s: str) -> int:
        if self.closed_pipe or self.marker in s:
            self.closed_pipe = True
            raise BrokenPipeError(32, "Broken pipe")
        self.text.append(s)
        return len(s)

    def flush(self) -> None:
        if self.closed_pipe:
            raise BrokenPipeError(32, "Broken pipe")

    def isatty(self) -> bool:
        return False


def test_closed_pipe_at_the_summary_says_the_run_finished(tmp_path, capsys, monkeypatch):
    out = tmp_path / "r"
    fake = _ClosesAt("accuracy")  # the first summary table: every step and the test are done
    monkeypatch.setattr(sys, "stdout", fake)
    rc = main(["run", *SMALL, "--out", str(out)])
    monkeypatch.undo()
    assert rc == 141 and (out / "COMPLETE").exists()
    assert capsys.readouterr().err == (f"stdout was closed (broken pipe): the run finished; its results are in {out} "
                                       f"(`janus report {out}`)\n")
    fake = _ClosesAt("@@")  # a plain print() into the closed pipe (memory diff): exit 141, nothing on stderr
    monkeypatch.setattr(sys, "stdout", fake)
    rc = main(["memory", "diff", str(out), "0", "3"])
    monkeypatch.undo()
    assert rc == 141 and capsys.readouterr().err == ""


def test_the_resume_line_names_the_default_folder(tmp_path, capsys, monkeypatch):
    """Without --out the run goes to runs/latest: an interrupt's resume line names it (it said 'nothing to resume')."""
    from janus_memory.run import loop

    def interrupted(*a, **kw):  # the stream of the first method is committed, its test is not
        raise KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(loop, "frozen_test", interrupted)
    assert main(["run", *SMALL]) == 130
    assert capsys.readouterr().err == ("interrupted: every committed step is kept; continue with `janus run --resume "
                                       "runs/latest`\n")
    monkeypatch.undo()
    assert main(["run", "--resume", str(tmp_path / "runs" / "latest"), "-q"]) == 0


# ------------------------------------------------------------------ 5. defaults in the help
def test_run_help_shows_the_default_stream_size_and_output_folder(capsys):
    from janus_memory.tasks import load_split

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("--stream-size N number of stream (memory-building) tasks, >= 1 (default: the dataset's whole stream split: "
            "500 tasks for gsm8k, the default dataset; every dataset's split sizes: docs/tasks.md)") in text
    assert ("--test-size N number of held-out test tasks, >= 1 (default: the dataset's whole test split: 500 tasks for "
            "gsm8k)") in text
    assert ("--out DIR run folder to create, made with its parents, relative to the current folder; a finished run "
            "there needs --overwrite or another --out (default: runs/latest)") in text
    assert "--dataset NAME dataset name (ready with the shipped data: gsm8k, " in text and "(default: gsm8k)" in text
    assert "--tau X MMT threshold in [-1, 1]" in text
    assert len(load_split("gsm8k", "stream").tasks) == 500 and len(load_split("gsm8k", "test").tasks) == 500
    assert RunConfig().out == "runs/latest" and RunConfig().dataset == "gsm8k"
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert ("--out DIR folder to create, made with its parents, holding one run folder per act (scripted/, real/) "
            "(default: runs/demo-<date>-<time>, a new folder per demo)") in " ".join(capsys.readouterr().out.split())
