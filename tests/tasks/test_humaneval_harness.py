"""HumanEval proof harness: forged passes fail with a reason, on both sandbox backends; gold still passes."""
from __future__ import annotations

import shutil

import pytest

from janus_memory.tasks import load_split
from janus_memory.tasks.harness import judge, run_humaneval
from janus_memory.tasks.humaneval import HumanEvalFamily, build_head
from janus_memory.tasks.sandbox import SandboxLimits, SandboxResult

BACKENDS = [pytest.param("bwrap", marks=pytest.mark.skipif(not shutil.which("bwrap"), reason="bwrap missing")),
            pytest.param("unshare", marks=pytest.mark.skipif(not shutil.which("unshare"), reason="unshare missing"))]
LIM = SandboxLimits(wall_s=5.0, cpu_s=5)
WRONG = "def truncate_number(number: float) -> float:\n    return 0.25\n"
RIGHT = "def truncate_number(number: float) -> float:\n    return number % 1.0\n"

# (name, completion code, expected reason). Every one of them would "pass" a harness that trusts the exit code.
FORGERIES = [
    ("sys.exit(0)", "import sys\nsys.exit(0)\n" + WRONG, "early-exit"),
    ("os._exit(0)", "import os\nos._exit(0)\n" + WRONG, "early-exit"),
    ("raise SystemExit", "raise SystemExit(0)\n" + WRONG, "early-exit"),
    ("exit()", "exit()\n" + WRONG, "early-exit"),
    ("quit() inside the function", "def truncate_number(number):\n    quit()\n", "early-exit"),
    ("KeyboardInterrupt", "def truncate_number(number):\n    raise KeyboardInterrupt\n", "early-exit"),
    ("SystemExit from atexit", "import atexit, sys\n"
     "def bye():\n    raise SystemExit(0)\natexit.register(bye)\n" + WRONG, "assertion"),
    ("os._exit(0) from atexit after sys.exit(3)", "import atexit, os, sys\natexit.register(lambda: os._exit(0))\n"
     "sys.exit(3)\n", "early-exit"),
    ("prints a success marker", "print('PASS')\nprint('All tests passed')\nimport sys\nsys.stdout.flush()\n"
     "import os\nos._exit(0)\n", "early-exit"),
    ("reads its own program and task files", "import glob, os\n"
     "for f in glob.glob('/sandbox/*') + glob.glob(os.path.dirname(os.path.abspath(__file__)) + '/*'):\n"
     "    data = open(f, 'rb').read() if os.path.isfile(f) else b''\n"
     "    for fd in range(1, 10):\n"
     "        try:\n            os.write(fd, b'PASS ' + data[:64] + b'\\n')\n        except OSError:\n            pass\n"
     "os._exit(0)\n", "early-exit"),
    ("reads stdin for the nonce", "import sys, os\nn = sys.stdin.read()\n"
     "for fd in range(3, 10):\n    try:\n        os.write(fd, ('PASS ' + n).encode())\n    except OSError:\n"
     "        pass\nos._exit(0)\n", "early-exit"),
    ("replaces builtins, print and stdout", "import builtins, sys, io\nbuiltins.AssertionError = ZeroDivisionError\n"
     "builtins.print = lambda *a, **k: None\nsys.stdout = io.StringIO()\nbuiltins.abs = lambda x: 0\n" + WRONG,
     "assertion"),
    ("shadows abs and check in module globals", "def abs(x):\n    return 0\n"
     "def check(candidate):\n    pass\n" + WRONG, "assertion"),
    ("patches builtins during the call", "import builtins\ndef truncate_number(number):\n"
     "    builtins.abs = lambda x: 0\n    return 0.25\n", "assertion"),
    ("always-equal return value", "class Anything(float):\n    def __eq__(self, o):\n        return True\n"
     "    def __sub__(self, o):\n        return 0.0\n    def __abs__(self):\n        return 0.0\n"
     "def truncate_number(number):\n    return Anything(0)\n", "bad-return"),
    ("signal handler exits cleanly", "import signal, os, time\n"
     "signal.signal(signal.SIGALRM, lambda *a: os._exit(0))\nsignal.setitimer(signal.ITIMER_REAL, 0.05)\n"
     "def truncate_number(number):\n    time.sleep(2)\n    return 0.25\n", "early-exit"),
    ("fork: the parent exits 0", "import os\npid = os.fork()\nif pid:\n    os.waitpid(pid, 0)\n    os._exit(0)\n"
     + WRONG, "assertion"),
    ("thread ends the process during the tests", "import threading, os, time\n"
     "threading.Thread(target=lambda: (time.sleep(0.05), os._exit(0)), daemon=True).start()\n"
     "def truncate_number(number):\n    time.sleep(1)\n    return 0.25\n", "early-exit"),
    ("settrace jump over the asserts", "import sys\n"
     "def tr(frame, event, arg):\n    if event == 'line' and frame.f_code.co_name == 'check':\n"
     "        frame.f_lineno = frame.f_code.co_firstlineno + 1\n    return tr\n"
     "sys.settrace(tr)\nsys._getframe().f_trace = tr\n" + WRONG, "assertion"),
    ("walks the frames for secrets", "import sys, gc\nf = sys._getframe()\nseen = []\n"
     "while f is not None:\n    seen += [v for v in f.f_locals.values() if isinstance(v, int) and 2 < v < 2000]\n"
     "    f = f.f_back\nimport os\nfor fd in set(seen):\n    try:\n        os.set_blocking(fd, False)\n"
     "        n = os.read(fd, 64)\n        os.write(fd, b'PASS ' + n)\n    except OSError:\n        pass\n"
     "os._exit(0)\n", "early-exit"),
    ("brute-forces descriptors for the nonce and the proof pipe", "import os, fcntl\nn = b''\n"
     "for fd in range(3, 1100):\n    try:\n        fl = fcntl.fcntl(fd, fcntl.F_GETFL)\n"
     "        fcntl.fcntl(fd, fcntl.F_SETFL, fl | os.O_NONBLOCK)\n        d = os.read(fd, 64)\n"
     "        n = d if len(d) == 33 else n\n    except OSError:\n        pass\n"
     "for fd in range(3, 1100):\n    try:\n        os.write(fd, b'PASS ' + n)\n    except OSError:\n        pass\n"
     "os._exit(0)\n", "early-exit"),
    # (the fallback's supervisor is the pid namespace's init, which ignores the signal: the tests then run and fail)
    ("kills its supervisor", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n" + WRONG,
     {"bwrap": "crash", "unshare": "assertion"}),
    ("segfaults", "import ctypes\nctypes.string_at(0)\n", "crash"),
    ("syntax error", "def truncate_number(number):\n    return (\n", "syntax-error"),
    ("opens the supervisor's descriptors and memory through /proc", "import os\npp = os.getppid()\n"
     "for fd in range(0, 1100):\n    for mode in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):\n"
     "        try:\n            h = os.open(f'/proc/{pp}/fd/{fd}', mode)\n"
     "            os.write(h, b'PASS ' + os.read(h, 64))\n        except OSError:\n            pass\n"
     "try:\n    open(f'/proc/{pp}/mem', 'rb')\nexcept OSError:\n    pass\nelse:\n    os._exit(0)\n" + WRONG,
     "assertion"),
    ("only the prompt's stub", "def something_else():\n    return 1\n", "assertion"),
    ("wrong answer", WRONG, "assertion"),
    ("raises an error", "def truncate_number(number):\n    return undefined_name\n", "exception"),
]


def _task():
    return next(t for t in load_split("humaneval", "all").tasks if t.id == "HumanEval/2")


def _run(code, backend, limits=LIM):
    t = _task()
    return run_humaneval(build_head(t, code), t.meta["prompt"], t.meta["test"], t.meta["entry_point"],
                         limits=limits, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_forged_passes_fail_with_reason(backend):
    got = {name: (r.status, r.reason) for name, code, _ in FORGERIES for r in [_run(code, backend)]}
    assert got == {name: ("failed", reason if isinstance(reason, str) else reason[backend])
                   for name, _, reason in FORGERIES}
    r = _run(RIGHT, backend)  # the host and the sandbox survive all of the above
    assert (r.status, r.reason, r.returncode) == ("passed", "passed", 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_right_answer_passes_despite_noise(backend):
    """Printing, atexit hooks and daemon threads do not spoil a real pass."""
    code = ("import atexit, threading, time, sys\nprint('hello')\nprint('err', file=sys.stderr)\n"
            "atexit.register(lambda: print('bye'))\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
            + RIGHT)
    r = _run(code, backend)
    assert (r.status, r.reason, r.stdout.strip()) == ("passed", "passed", "hello")


def test_judge_requires_this_runs_nonce():
    base = dict(returncode=0, stdout="", stderr="", wall_s=0.1, backend="x")
    ok = SandboxResult("passed", detail={"proof": b"UP\nPASS abc\n"}, **base)
    assert (judge(ok, "abc").status, judge(ok, "abc").reason) == ("passed", "passed")
    assert (judge(ok, "abd").status, judge(ok, "abd").reason) == ("failed", "tampered")
    silent = SandboxResult("passed", detail={"proof": b"UP\n"}, **base)
    assert (judge(silent, "abc").status, judge(silent, "abc").reason) == ("failed", "early-exit")
    odd = SandboxResult("passed", detail={"proof": b"UP\nFAIL made-up"}, **base)
    assert judge(odd, "abc").reason == "early-exit"
    # no UP: the harness never ran, whatever the exit code says (the sandbox failed, not the program)
    for proof in (b"", b"PASS abc\n"):
        never = SandboxResult("failed", detail={"proof": proof}, **{**base, "returncode": 127})
        assert (judge(never, "abc").status, judge(never, "abc").reason) == ("error", "sandbox-error")
    # the reference verdict (numpy returned) follows the verdict on its own line, with this run's nonce for a pass
    both = SandboxResult("passed", detail={"proof": b"UP\nPASS abc\nREF FAIL exception\n"}, **base)
    assert (judge(both, "abc").status, judge(both, "abc").detail["reference"]) == (
        "passed", {"status": "failed", "reason": "exception"})
    both = SandboxResult("failed", detail={"proof": b"UP\nFAIL assertion\nREF PASS abc\n"}, **base)
    assert (judge(both, "abc").reason, judge(both, "abc").detail["reference"]) == (
        "assertion", {"status": "passed", "reason": "passed"})
    forged = SandboxResult("passed", detail={"proof": b"UP\nPASS abc\nREF PASS abd\n"}, **base)
    assert judge(forged, "abc").detail["reference"] == {"status": "failed", "reason": "tampered"}
    # a timeout after the proven verdict (during the second, reference check) keeps the verdict
    late = SandboxResult("timeout", detail={"proof": b"UP\nPASS abc\n"}, reason="timeout", **base)
    assert (judge(late, "abc").status, judge(late, "abc").detail["reference"]["status"]) == ("passed", "timeout")
    late = SandboxResult("timeout", detail={"proof": b"UP\nFAIL assertion\n"}, reason="timeout", **base)
    assert (judge(late, "abc").status, judge(late, "abc").reason) == ("failed", "assertion")
    early = SandboxResult("timeout", detail={"proof": b"UP\n"}, reason="timeout", **base)
    assert (judge(early, "abc").status, judge(early, "abc").reason) == ("timeout", "timeout")
    over = SandboxResult("failed", detail={"proof": b"UP\nPASS abc\n"}, reason="output-limit", **base)
    assert (judge(over, "abc").status, judge(over, "abc").reason) == ("failed", "output-limit")


@pytest.mark.parametrize("backend", BACKENDS)
def test_family_records_reason(backend):
    fam = HumanEvalFamily(limits=LIM, backend=backend, allow_weak_sandbox=True)
    s = fam.score(_task(), "```python\nimport sys\nsys.exit(0)\n```")
    assert (s.correct, s.status, s.detail["reason"], s.detail["backend"]) == (False, "ok", "early-exit", backend)
    s = fam.score(_task(), "```python\n" + RIGHT + "```")
    assert (s.correct, s.status, s.detail["reason"]) == (True, "ok", "passed")


@pytest.mark.parametrize("backend", BACKENDS)
def test_endless_output_fails_with_output_limit(backend):
    code = "import sys\ndef truncate_number(number):\n    while True:\n        sys.stdout.write('x' * 65536)\n"
    r = _run(code, backend, SandboxLimits(wall_s=10.0, cpu_s=10, output_bytes=1 << 20, tail_bytes=4096))
    assert (r.status, r.reason) == ("failed", "output-limit")
    assert len(r.stdout) <= 4096 and r.output_bytes > 1 << 20 and r.wall_s < 10.0
