"""The sandbox runs wherever the interpreter lives, proves itself before the first answer, never scores a solution
wrong because it failed, and runs generated code only in the strong sandbox unless the user opts in."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from janus_memory.errors import JanusError
from janus_memory.tasks import harness, load_split
from janus_memory.tasks import sandbox as sb
from janus_memory.tasks.checker_paper import with_checker
from janus_memory.tasks.humaneval import HumanEvalFamily
from janus_memory.tasks.sandbox import SandboxLimits, SandboxResult
from janus_memory.updaters import make_updater

ROOT = Path(__file__).resolve().parents[2]
BWRAP = pytest.mark.skipif(not shutil.which("bwrap"), reason="bwrap missing")
LIM = SandboxLimits(wall_s=10.0, cpu_s=10)
RIGHT = "```python\ndef truncate_number(number: float) -> float:\n    return number % 1.0\n```"


@pytest.fixture
def fresh(monkeypatch):
    """Empty per-process caches (self-tests, notices said), restored after the test."""
    monkeypatch.setattr(sb, "_SELF_TESTS", {})
    monkeypatch.setattr(sb, "_SAID", set())
    monkeypatch.setattr(harness, "_HARNESS_OK", {})
    monkeypatch.delenv(sb.ENV_ALLOW_WEAK, raising=False)


def _task(tid="HumanEval/2"):
    return next(t for t in load_split("humaneval", "all").tasks if t.id == tid)


# ------------------------------------------------------------------ wherever the interpreter lives
def test_bwrap_binds_the_interpreter_after_its_own_tmp(monkeypatch, tmp_path):
    """A venv under /tmp is bound on top of the sandbox's fresh /tmp (before, the tmpfs hid it: every program failed
    with 'setpriv: failed to execute'), parents are made traversable, /tmp itself keeps its mode."""
    monkeypatch.setattr(sb, "bwrap_path", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(sb, "_python", lambda: ("/tmp/a venv/bin/python", ["/tmp/a venv", "/root/.py/3.11"]))
    cmd, _, _ = sb.build_command("bwrap", tmp_path, LIM)
    tmpfs = cmd.index("--tmpfs")
    binds = [i for i, a in enumerate(cmd) if a == "--ro-bind" and cmd[i + 1] in ("/tmp/a venv", "/root/.py/3.11")]
    assert len(binds) == 2 and all(i > tmpfs for i in binds)
    assert cmd[binds[0]:binds[0] + 3] == ["--ro-bind", "/tmp/a venv", "/tmp/a venv"]
    dirs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--dir"]
    assert dirs == ["/root", "/root/.py"]  # never /tmp (the tmpfs, mode 1777)


def test_interpreter_paths_cover_prefixes_executable_and_site_packages():
    import site
    exe, roots = sb.interpreter_paths()
    want = [sys.prefix, sys.base_prefix, os.path.realpath(exe), *site.getsitepackages()]
    for p in want:
        p = os.path.realpath(p)
        assert p.startswith("/usr") or any(p == r or p.startswith(r + "/") or os.path.realpath(r) == p
                                           or p.startswith(os.path.realpath(r) + "/") for r in roots), (p, roots)
    assert not any(r in ("/", "/tmp", "/proc", "/dev") for r in roots)


@BWRAP
def test_canonical_solutions_pass_from_a_venv_under_tmp_with_spaces(tmp_path):
    """A virtual environment in a folder with spaces under /tmp: the self-test and 4 canonical solutions pass.
    (The full 164 x 3 venvs is benchmarks/probes/sandbox_venvs.py; docs/tasks.md lists its counts.)"""
    venv = tmp_path / "a venv with spaces"
    assert str(venv).startswith(("/tmp/", os.environ.get("TMPDIR", "/tmp")))
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    out = subprocess.run([str(venv / "bin" / "python"), str(ROOT / "benchmarks" / "probes" / "sandbox_venvs.py"),
                          "check", "--n", "4"], env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"prefix={str(venv)!r}" in out.stdout and "passed=4/4" in out.stdout and "numpy=None" not in out.stdout


# ------------------------------------------------------------------ the self-test, and a sandbox that fails
def _broken(message: str, rc: int = 127):
    def build(backend, workdir, lim, uid=sb.NOBODY):
        return ["sh", "-c", f"echo {message!r} >&2; exit {rc}"], None, {"PATH": "/usr/bin:/bin"}
    return build


@pytest.mark.parametrize("message, cause", [
    ("setpriv: failed to execute /tmp/v/bin/python: No such file or directory", "not visible inside the sandbox"),
    ("bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged "
     "user namespaces", "cannot create its namespaces"),
    ("bwrap: Can't find source path /x: Permission denied", "cannot read the interpreter"),
])
def test_a_broken_sandbox_stops_before_scoring_with_one_line(fresh, monkeypatch, message, cause):
    monkeypatch.setattr(sb, "bwrap_path", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(sb, "build_command", _broken(message))
    with pytest.raises(sb.SandboxUnavailable) as e:
        sb.self_test("auto")
    text = str(e.value)
    assert cause in text and "\n" not in text and isinstance(e.value, JanusError)
    assert sb.sandbox_python("auto")["cause"] and sb.sandbox_python("auto")["same_as_host"] is False
    # HumanEval raises instead of scoring: no answer is "wrong" because the sandbox failed
    fam = HumanEvalFamily(limits=LIM)
    with pytest.raises(sb.SandboxUnavailable):
        fam.score(_task(), RIGHT)
    with pytest.raises(sb.SandboxUnavailable):
        fam.score_many([_task()], [RIGHT])


@BWRAP
def test_self_test_passes_and_is_cached_per_process(fresh, monkeypatch):
    info = sb.self_test("bwrap")
    assert info["same_as_host"] is True and info["cause"] is None and info["version"] == sys.version.split()[0]
    monkeypatch.setattr(sb, "run_python", lambda *a, **k: pytest.fail("the self-test ran twice"))
    assert sb.self_test("bwrap") == info and sb.code_sandbox("bwrap") == "bwrap"


@BWRAP
def test_a_sandbox_failure_mid_run_is_never_a_wrong_answer(fresh, monkeypatch):
    """The harness never started (no UP on the proof pipe): the self-test runs again and the program once more; a
    second failure stops with one line instead of a score."""
    fam = HumanEvalFamily(limits=LIM)
    fam.ensure_sandbox()
    calls = []

    def no_harness(code, **kw):
        calls.append(1)
        return SandboxResult("failed", 127, "", "setpriv: failed to execute /x/python: No such file or directory",
                             0.01, "bwrap", detail={"proof": b""}, reason="exit-code")

    monkeypatch.setattr(harness, "run_python", no_harness)
    with pytest.raises(sb.SandboxUnavailable, match="failed twice"):
        fam.score(_task(), RIGHT)
    assert len(calls) == 2
    # once: the re-run passes, and the score is the re-run's
    real = sb.run_python
    calls.clear()
    monkeypatch.setattr(harness, "run_python", lambda code, **kw: no_harness(code) if not calls else real(code, **kw))
    s = fam.score(_task(), RIGHT)
    assert (s.correct, s.detail["reason"]) == (True, "passed")


@BWRAP
def test_a_program_that_imitates_a_sandbox_error_is_a_failure():
    head = "import sys\nsys.stderr.write('bwrap: Permission denied\\n')\nsys.exit(1)\ndef f():\n    return 1\n"
    r = harness.run_humaneval(head, "def f():\n    'doc'\n", "def check(c):\n    assert c() == 1\n", "f", limits=LIM)
    assert (r.status, r.reason, r.detail["harness_started"]) == ("failed", "early-exit", True)


# ------------------------------------------------------------------ numpy return values, both ways
NP_PROMPT = "def f(x):\n    \"\"\"doc\"\"\"\n"
NP_CASES = [  # (body, test, ours, reference harness)
    ("    import numpy as np\n    return np.array([x, 2 * x])\n", "    assert candidate(2) == [2, 4]\n", True, False),
    ("    import numpy as np\n    return np.bool_(x == 2)\n", "    assert candidate(2) is True\n", True, False),
    ("    import numpy as np\n    return np.int64(2 * x)\n", "    assert candidate(2) == 4\n", True, True),
    ("    import numpy as np\n    return np.array([2 * x])\n", "    assert candidate(2) == 4\n", False, True),
    ("    import numpy as np\n    return np.float64(x) / 4\n", "    assert abs(candidate(2) - 0.5) < 1e-9\n", True, True),
    ("    return [x, 2 * x]\n", "    assert candidate(2) == [2, 4]\n", True, True),
]


@BWRAP
@pytest.mark.parametrize("body, test, ours, reference", NP_CASES)
def test_numpy_returns_ours_convert_the_paper_checker_follows_the_reference(body, test, ours, reference):
    from janus_memory.values import Task
    task = Task(id="np", dataset="humaneval", question=NP_PROMPT, gold="",
                meta={"entry_point": "f", "prompt": NP_PROMPT, "test": "def check(candidate):\n" + test})
    fam = HumanEvalFamily(limits=LIM)
    answer = "```python\n" + NP_PROMPT + body + "```"
    s = fam.score(task, answer)
    assert s.correct is ours
    paper = with_checker(fam, "paper").score(task, answer)
    assert (paper.correct, paper.detail["strict_correct"]) == (reference, ours)
    assert ("reference" in s.detail) is ("numpy" in body)


@BWRAP
def test_a_slow_second_check_never_costs_the_verdict():
    """The verdict is written before the reference check: a timeout during that second check keeps it."""
    body = ("    import numpy as np, time\n    CALLS.append(1)\n    if len(CALLS) > 1:\n        time.sleep(60)\n"
            "    return np.int64(2 * x)\n")
    test = "def check(candidate):\n    assert candidate(2) == 4\n"
    r = harness.run_humaneval("CALLS = []\n" + NP_PROMPT + body, NP_PROMPT, test, "f",
                              limits=SandboxLimits(wall_s=5.0, cpu_s=5))
    assert (r.status, r.reason, r.detail["reference"]["status"]) == ("passed", "passed", "timeout")


# ------------------------------------------------------------------ generated code runs only in the strong sandbox
class _Exact:
    name = "exact"

    def prompt(self, task):
        return task.question

    def score(self, task, output):
        from janus_memory.values import Score
        text = output if isinstance(output, str) else output.text
        return Score(str(task.gold) in (text or ""), None, "ok", {})


def _no_bwrap(monkeypatch):
    """A machine without bubblewrap; every sandbox process start is recorded."""
    monkeypatch.setattr(sb, "bwrap_path", lambda: None)
    monkeypatch.setattr(sb, "_WARNED", True)
    started: list = []
    real = sb.execute

    def spy(cmd, *a, **k):
        started.append(cmd)
        return real(cmd, *a, **k)

    monkeypatch.setattr(sb, "execute", spy)
    return started


def _dc_step(allow_weak: bool):
    from updater_fakes import HashEncoder, ScriptedLLM, task
    block = "```python\nimport pathlib\npathlib.Path('/tmp/janus-pwned').write_text('x')\nprint(6)\n```\nEXECUTE CODE!"
    llm = ScriptedLLM({"curator": ["<cheatsheet>S</cheatsheet>"], "solver": ["Let me run it.\n" + block, "ANSWER: 6"]})
    upd = make_updater("dc_rs", llm=llm, family=_Exact(), encoder=HashEncoder(), config={})
    upd.allow_weak_sandbox = allow_weak
    return upd.step(task(3, "add two and four", "6"))


def test_without_bubblewrap_dc_runs_no_generated_code_unless_allowed(fresh, monkeypatch, caplog):
    started = _no_bwrap(monkeypatch)
    with caplog.at_level("WARNING", logger="janus_memory.tasks.sandbox"):
        out = _dc_step(False)
        again = _dc_step(False)
    assert started == []  # nothing ran: not the block, not even the self-test
    assert out.info["exec"]["status"] == "not run" and "--allow-weak-sandbox" in out.info["exec"]["why"]
    assert again.info["exec"]["status"] == "not run" and len(out.calls) == 2  # no follow-up generation
    said = [r.getMessage() for r in caplog.records if "EXECUTE CODE!" in r.getMessage()]
    assert len(said) == 1 and "step is skipped" in said[0]  # said once
    out = _dc_step(True)  # the opt-in: the weak sandbox runs it (after its self-test)
    assert out.info["exec"]["sandbox"] == "unshare" and len(started) == 2 and len(out.calls) == 3


def test_without_bubblewrap_humaneval_stops_before_any_code_runs(fresh, monkeypatch):
    started = _no_bwrap(monkeypatch)
    fam = HumanEvalFamily(limits=LIM)
    for run in (lambda: fam.score(_task(), RIGHT), lambda: fam.score_many([_task()] * 2, [RIGHT] * 2)):
        with pytest.raises(sb.WeakSandboxRefused) as e:
            run()
        assert "\n" not in str(e.value) and "--allow-weak-sandbox" in str(e.value) and isinstance(e.value, JanusError)
    assert started == []
    assert "~/.ssh" in sb.FALLBACK_NOTICE and "site-packages" in sb.FALLBACK_NOTICE and "Unix sockets" in \
        sb.FALLBACK_NOTICE


def test_without_bubblewrap_the_cli_says_one_line(fresh, monkeypatch, capsys, tmp_path):
    from janus_memory.cli.app import main
    started = _no_bwrap(monkeypatch)
    rc = main(["run", "--backend", "fake", "--dataset", "humaneval", "--stream-size", "2", "--test-size", "1",
               "--encoder", "hashing", "--updater", "dc_rs", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and started == [] and len(err) == 1 and err[0].startswith("error: model-written code is not run")
    assert "Traceback" not in err[0] and "--allow-weak-sandbox" in err[0]


def test_a_sandbox_failure_during_replays_stops_instead_of_scoring_zero():
    """Under replay_failures="zero" (the paper preset) a failed request scores 0; a failed sandbox must not."""
    from janus_memory.run.evaluator import UpdaterEvaluator

    class Upd:
        def solve_with_memory(self, memory_text, tasks, role="replay", sample=0):
            raise sb.SandboxUnavailable("the sandbox (bwrap) cannot run Python on this machine: x; y")

    ev = UpdaterEvaluator.__new__(UpdaterEvaluator)
    ev.updater, ev.role, ev.failures = Upd(), "replay", "zero"
    with pytest.raises(sb.SandboxUnavailable):
        ev._solve("m", ["t1", "t2"], [0, 0])


def test_bubblewrap_installed_but_refused_falls_back_only_with_the_opt_in(fresh, monkeypatch):
    """A container without user namespaces: bwrap is installed but cannot run. Without the opt-in the one line names
    the cause and both fixes; with it the weak sandbox is used (said once) and its self-test runs first."""
    monkeypatch.setattr(sb, "bwrap_path", lambda: "/usr/bin/bwrap")
    real = sb.build_command
    broken = _broken("bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
                     "non-privileged user namespaces", rc=1)
    monkeypatch.setattr(sb, "build_command", lambda backend, *a, **k: (broken if backend == "bwrap" else real)(
        backend, *a, **k))
    with pytest.raises(sb.SandboxUnavailable, match="cannot create its namespaces.*--allow-weak-sandbox"):
        sb.code_sandbox("auto")
    said: list[str] = []
    assert sb.code_sandbox("auto", allow_weak=True, say=said.append) == "unshare"
    assert sb.code_sandbox("auto", allow_weak=True, say=said.append) == "unshare"
    assert len(said) == 1 and "the weak sandbox is used instead" in said[0] and "~/.ssh" in said[0]
    with pytest.raises(sb.SandboxUnavailable):  # asked for bwrap by name: no fallback
        sb.code_sandbox("bwrap", allow_weak=True)
