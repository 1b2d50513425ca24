"""Model code can never see a HumanEval task's tests before it is judged.

Each task here has a fresh random secret that only its test code holds (``assert candidate(1) == '<secret>'``). The
cheating completions hunt for it everywhere a program in the sandbox can look: its own folder and /sandbox, /tmp,
stdin and every descriptor, /proc of every process (fd, cmdline, environ, mem), its frames and every object in memory;
at load time, at call time, from a thread left running, from a forked child, and through patched builtins, import
hooks and audit hooks. Each returns the secret if it finds it and "nothing" otherwise, so a pass would prove a leak.
The control puts the secret into the prompt (which the completion may see): the same hunter then finds it and passes.
"""
from __future__ import annotations

import secrets
import shutil

import pytest

from janus_memory.tasks.harness import run_humaneval
from janus_memory.tasks.sandbox import SandboxLimits

BACKENDS = [pytest.param("bwrap", marks=pytest.mark.skipif(not shutil.which("bwrap"), reason="bwrap missing")),
            pytest.param("unshare", marks=pytest.mark.skipif(not shutil.which("unshare"), reason="unshare missing"))]
LIM = SandboxLimits(wall_s=8.0, cpu_s=8)

# (hunters running beside the worker's main thread read only stdin among the descriptors: switching the worker's own
# request pipe to non-blocking would end the worker early, a failure for another reason)
# hunt() returns the secret (any "zq-" + 32 hex digits string) from wherever it can be read, else None.
HUNT = r'''
import gc, glob, os, re, sys
PAT = re.compile(rb"zq-[0-9a-f]{32}")
def _look(data):
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    m = PAT.search(data or b"")
    return m.group(0).decode() if m else None
def _read(path, n=1 << 20):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        return os.read(fd, n)
    except OSError:
        return b""
    finally:
        os.close(fd)
def hunt(fds=range(0, 1100), skip=()):
    here = os.path.dirname(os.path.abspath(globals().get("__file__", "/sandbox/x")))
    paths = glob.glob("/sandbox/*") + glob.glob(here + "/*") + glob.glob("/tmp/*") + glob.glob("/tmp/*/*")
    for p in paths[:3000]:
        if os.path.isfile(p):
            hit = _look(_read(p))
            if hit:
                return hit
    for fd in fds:  # every descriptor, stdin included
        try:
            was = os.get_blocking(fd)
            os.set_blocking(fd, False)
        except (OSError, ValueError):
            continue
        try:
            hit = _look(os.read(fd, 1 << 16))
            if hit:
                return hit
        except (OSError, ValueError):
            pass
        finally:
            os.set_blocking(fd, was)
    for d in glob.glob("/proc/[0-9]*"):
        if int(d[6:]) in (os.getpid(), *skip):  # its own pipes, reopened through /proc, would steal its requests
            continue
        for name in ("cmdline", "environ"):
            hit = _look(_read(d + "/" + name))
            if hit:
                return hit
        for f in glob.glob(d + "/fd/*"):
            hit = _look(_read(f, 1 << 16))
            if hit:
                return hit
        hit = _look(_read(d + "/mem", 1 << 16))
        if hit:
            return hit
    f = sys._getframe()
    while f is not None:
        for v in list(f.f_locals.values()) + list(f.f_globals.values()):
            hit = _look(repr(v)[:1 << 20])
            if hit:
                return hit
        f = f.f_back
    for o in gc.get_objects():
        try:
            hit = _look(o if isinstance(o, (str, bytes)) else repr(o)[:4096])
        except Exception:
            continue
        if hit:
            return hit
    return None
'''

CHEATS = {
    "hunts at call time": HUNT + "def secret(x):\n    return hunt() or 'nothing'\n",
    "hunts at load time": HUNT + "FOUND = hunt()\ndef secret(x):\n    return FOUND or 'nothing'\n",
    "a thread left running hunts during the tests": HUNT + (
        "import threading, time\nFOUND = []\n"
        "def loop():\n    end = time.time() + 2\n    while time.time() < end and not FOUND:\n"
        "        h = hunt(range(0, 1))\n        if h:\n            FOUND.append(h)\n        time.sleep(0.05)\n"
        "threading.Thread(target=loop, daemon=True).start()\n"
        "def secret(x):\n    time.sleep(1.0)\n    return FOUND[0] if FOUND else 'nothing'\n"),
    "a forked child hunts during the tests": HUNT + (
        "import time\nr, w = os.pipe()\nWORKER = os.getpid()\nif os.fork() == 0:\n    end = time.time() + 2\n"
        "    while time.time() < end:\n        h = hunt(range(0, 1), (WORKER,))\n        if h:\n"
        "            os.write(w, h.encode())\n"
        "            break\n        time.sleep(0.05)\n    os._exit(0)\nos.close(w)\n"
        "def secret(x):\n    time.sleep(1.0)\n    os.set_blocking(r, False)\n    try:\n"
        "        return os.read(r, 64).decode() or 'nothing'\n    except OSError:\n        return 'nothing'\n"),
    "patched builtins, import and audit hooks record the tests": HUNT + (
        "import builtins, sys\nSEEN = []\n"
        "for name in ('exec', 'compile', 'eval', 'open', '__import__'):\n"
        "    orig = getattr(builtins, name)\n"
        "    def spy(*a, _o=orig, **k):\n        SEEN.append(repr(a)[:100000])\n        return _o(*a, **k)\n"
        "    setattr(builtins, name, spy)\n"
        "class Finder:\n    def find_spec(self, name, path=None, target=None):\n"
        "        SEEN.append(name)\n        return None\n"
        "sys.meta_path.insert(0, Finder())\n"
        "sys.addaudithook(lambda ev, args: SEEN.append(repr(args)[:100000]))\n"
        "sys.setprofile(lambda f, ev, arg: SEEN.append(repr(f.f_locals)[:100000]))\n"
        "def secret(x):\n    sys.setprofile(None)\n    for s in SEEN:\n        h = _look(s)\n        if h:\n"
        "            return h\n    return hunt() or 'nothing'\n"),
}


def _judge(code: str, backend: str, secret_in_prompt: bool = False):
    secret = "zq-" + secrets.token_hex(16)
    prompt = "def secret(x):\n    \"\"\"Return the secret word.\"\"\"\n"
    if secret_in_prompt:
        prompt = f"# the word is {secret}\n" + prompt
    test = f"def check(candidate):\n    got = candidate(1)\n    assert got == {secret!r}, 'got ' + repr(got)\n"
    return run_humaneval(code, prompt, test, "secret", limits=LIM, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(CHEATS))
def test_cheating_program_cannot_read_the_tests(name, backend):
    res = _judge(CHEATS[name], backend)
    assert (res.status, res.reason) == ("failed", "assertion"), (name, res.reason, res.stderr[-800:])
    assert "AssertionError: got 'nothing'" in res.stderr  # the hunter found nothing


@pytest.mark.parametrize("backend", BACKENDS)
def test_control_the_hunter_finds_a_secret_it_may_see(backend):
    res = _judge(CHEATS["hunts at call time"], backend, secret_in_prompt=True)
    assert (res.status, res.reason) == ("passed", "passed"), res.stderr[-800:]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fds,reason", [("range(0, 1)", "assertion"), ("range(0, 1100)", "tampered")])
def test_program_cannot_feed_the_supervisor_other_tests(backend, fds, reason):
    # fake tests written to stdin (/dev/null in the worker) and to the supervisor's descriptors through /proc: the
    # real tests still run (assertion); written to every own descriptor, they also reach the worker's reply pipe,
    # which the supervisor refuses (tampered)
    fake = "def check(candidate):\n    pass\n"
    code = ("import os, struct\nmsg = struct.pack('>I', %d) + %r\n" % (len(fake), fake.encode()) +
            f"for fd in {fds}:\n    try:\n        os.write(fd, msg)\n    except OSError:\n        pass\n"
            "pp = os.getppid()\nfor fd in range(0, 1100):\n    try:\n"
            "        h = os.open(f'/proc/{pp}/fd/{fd}', os.O_WRONLY | os.O_NONBLOCK)\n        os.write(h, msg)\n"
            "    except OSError:\n        pass\n"
            "def secret(x):\n    return 'nothing'\n")
    res = _judge(code, backend)
    assert (res.status, res.reason) == ("failed", reason), res.stderr[-800:]


def test_the_task_file_holds_no_tests(monkeypatch):
    import janus_memory.tasks.harness as h
    seen = {}

    def fake_run(code, *, limits, backend, files, stdin_data, proof):
        seen.update(files=files, stdin=stdin_data)
        from janus_memory.tasks.sandbox import SandboxResult
        return SandboxResult("failed", 1)

    monkeypatch.setattr(h, "run_python", fake_run)
    h.run_humaneval("def f():\n    return 1\n", "def f():\n", "def check(c):\n    assert c() == 'zq-tests'\n", "f")
    assert "zq-tests" not in seen["files"]["task.json"]
    assert b"zq-tests" in seen["stdin"]
