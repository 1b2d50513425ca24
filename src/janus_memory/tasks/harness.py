"""HumanEval proof harness: a pass is proven by the harness, never by the exit code or by anything printed.

Design: the completion and the tests run in two different processes inside the sandbox.
- The *supervisor* starts first. It moves stdin (the host channel: the test code, length-prefixed, then a fresh per-run
  nonce; both unread) and the host's
  proof pipe (fd 3) to random close-on-exec descriptors, makes itself non-dumpable (so ``/proc/<pid>/fd`` and
  ``/proc/<pid>/mem`` are closed to the sandbox user, and ptrace is refused), then forks the *worker*.
- The worker closes its copies of the nonce and proof descriptors before any task code runs, then executes prompt +
  completion and serves calls of the entry point over a private pipe: arguments in, the return value out, both as
  ``marshal`` data of plain types (numpy values are converted with ``tolist``). A value that is not plain data (an
  "always equal" object) cannot cross: ``bad-return``.
- The test code is in no file of the sandbox (``task.json`` holds only the prompt, the completion and the entry
  point) and not in the supervisor's memory when it forks: the supervisor reads it from the host channel only after
  the worker has loaded the completion and reported "ready". Whatever the completion left running in the worker
  (threads, child processes, import hooks, patched builtins) lives in processes that never held that channel, so it can
  neither read the tests nor feed the supervisor other ones.
- The supervisor never runs completion code: it executes the dataset prompt (its helpers) and test code in its own
  namespace and calls ``check(candidate)``, where ``candidate`` forwards each call to the worker. Only when ``check``
  has *returned* does it read the nonce and write ``PASS <nonce>`` to the proof pipe, kill the worker and exit.
The host counts a pass iff the proof pipe carries exactly ``PASS <its nonce>`` and the output stayed under the cap.
Before anything else the supervisor writes ``UP`` to the proof pipe: a run without it never reached the harness (the
interpreter did not start inside the sandbox, a launcher failed), so it is a ``sandbox-error`` (status "error"), never
a failed answer; a run with it is judged by the proof alone, whatever the program printed (a program that writes
``bwrap: ...`` to stderr and exits 1 is a failure, not a sandbox error). When the completion returned a numpy value,
the verdict line is followed by a second one, ``REF PASS <nonce>`` or ``REF FAIL <reason>``: ``check`` run again with
the values as returned (numpy rebuilt in the supervisor from the worker's tagged plain data), the reference harness's
comparison (humaneval.py says which checker takes it). The verdict is written before that second check, so a timeout
during it keeps the verdict.
Whatever the completion does - exit in any way, print markers, replace builtins/print/stdout/``check``/``abs``,
register atexit hooks or signal handlers, fork, start threads, set trace functions, read its own files, walk frames or
brute-force descriptor numbers - it runs in a process that holds neither the nonce nor the proof pipe and cannot
reach the supervisor's. Everything else is failed, with a reason: ``early-exit`` (the worker or the program ended
before ``check`` returned: sys.exit, os._exit, SystemExit/KeyboardInterrupt, ...), ``assertion``, ``exception``,
``syntax-error``, ``missing-entry-point``, ``bad-return``, ``memory``, ``crash`` (killed by a signal), ``tampered``
(a malformed reply or a proof with the wrong nonce), plus the sandbox's ``timeout``, ``output-limit``,
``sandbox-error``.

Limits, stated plainly: arguments are copies, so a test that relied on the candidate mutating its argument would see no
change (none of the 164 does); a return value of a non-plain type such as ``fractions.Fraction`` fails as
``bad-return``. The worker can still signal the supervisor (same uid): that ends as a failure or a timeout, never a
pass. The isolation between the two rests on the sandbox user having no capabilities (true as root, where the program
runs under an unprivileged uid of its own, and under bubblewrap, which drops them; not under ``unshare -r`` as a non-root user).
"""
from __future__ import annotations

import json
import secrets
import struct
import threading

from ..errors import printable
from .sandbox import SandboxLimits, SandboxResult, SandboxUnavailable, run_python

HARNESS = r'''
import builtins, fcntl, json, marshal, os, signal, struct, sys, ctypes
def _send(fd, obj):
    data = marshal.dumps(obj)
    data = struct.pack(">I", len(data)) + data
    while data:
        data = data[os.write(fd, data):]
def _exact(fd, n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf
def _recv(fd):
    (n,) = struct.unpack(">I", _exact(fd, 4))
    if n > (64 << 20):
        raise EOFError
    return marshal.loads(_exact(fd, n))
def _plain(v, depth=0):
    # worker side: the candidate's return value as plain data only (an "always equal" object cannot cross)
    t = type(v)
    if t in (int, float, complex, str, bytes, bool, type(None)):
        return v
    if depth > 60:
        raise TypeError("nested too deep")
    if t in (list, tuple, set, frozenset):
        return t(_plain(x, depth + 1) for x in v)
    if t is dict:
        return {_plain(k, depth + 1): _plain(x, depth + 1) for k, x in v.items()}
    # a container subclass (Counter, defaultdict, OrderedDict, a namedtuple): its contents, read through the base
    # type's own methods, as the plain container the reference's == compares them as; the subclass's __eq__ and
    # __iter__ never run, so an "always equal" container is compared by what it holds
    for base in (dict, list, tuple, set, frozenset):
        if issubclass(t, base):
            if base is dict:
                return {_plain(k, depth + 1): _plain(x, depth + 1) for k, x in dict.items(v)}
            return base(_plain(x, depth + 1) for x in base.__iter__(v))
    tolist = getattr(v, "tolist", None)  # numpy scalars and arrays
    if t.__module__ == "numpy" and callable(tolist):
        _NP[0] = True
        return _plain(tolist(), depth + 1)
    raise TypeError(t.__name__)
_NP = [False]
def _tag(v, depth=0):
    # worker side, only for a value that held numpy: the value as the reference harness would compare it, as tagged
    # plain data (the supervisor rebuilds the numpy scalars and arrays; nothing else of the completion crosses)
    t = type(v)
    if t in (int, float, complex, str, bytes, bool, type(None)):
        return ("s", v)
    if depth > 60:
        raise TypeError("nested too deep")
    if t.__module__ == "numpy" and callable(getattr(v, "tolist", None)) and hasattr(v, "dtype"):
        return ("n", str(v.dtype.str), [int(x) for x in getattr(v, "shape", ())], v.tolist(), t.__name__ == "ndarray")
    if issubclass(t, dict):
        return ("d", [(_tag(k, depth + 1), _tag(x, depth + 1)) for k, x in dict.items(v)])
    for base in (list, tuple, set, frozenset):
        if issubclass(t, base):
            return ("c", base.__name__, [_tag(x, depth + 1) for x in base.__iter__(v)])
    raise TypeError(t.__name__)
def _flush():
    for st in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            st.flush()
        except BaseException:
            pass
def _reply(fd, obj):
    _flush()
    _send(fd, obj)
def _worker(spec, req, resp):
    # runs the completion; it holds no secret and no descriptor of the supervisor's proof channel
    # not "__main__": code under `if __name__ == "__main__":` never runs, as in the reference harness
    g = {"__name__": "solution", "__builtins__": builtins, "__file__": os.path.abspath(__file__)}
    try:
        code = compile(spec["head"], "solution.py", "exec")
    except SyntaxError:
        import traceback; traceback.print_exc()
        _reply(resp, ("fail", "syntax-error")); os._exit(1)
    try:
        exec(code, g)
        fn = g.get(spec["entry_point"])
        if not callable(fn):
            _reply(resp, ("fail", "missing-entry-point")); os._exit(1)
    except (SystemExit, KeyboardInterrupt):
        _reply(resp, ("fail", "early-exit")); os._exit(1)
    except MemoryError:
        _reply(resp, ("fail", "memory")); os._exit(1)
    except BaseException:
        import traceback; traceback.print_exc()
        _reply(resp, ("fail", "exception")); os._exit(1)
    _reply(resp, ("ready", None))
    while True:
        try:
            args, kwargs = _recv(req)
        except EOFError:
            os._exit(0)
        try:
            r = fn(*args, **kwargs)
        except AssertionError as e:
            _reply(resp, ("raise", "AssertionError", str(e)[:300])); continue
        except (SystemExit, KeyboardInterrupt):
            _reply(resp, ("fail", "early-exit")); os._exit(1)
        except MemoryError:
            _reply(resp, ("fail", "memory")); os._exit(1)
        except BaseException as e:
            _reply(resp, ("raise", type(e).__name__, str(e)[:300])); continue
        try:
            _NP[0] = False
            plain = _plain(r)
            _reply(resp, ("ok", plain, _tag(r) if _NP[0] else None))
        except (TypeError, ValueError, RecursionError) as e:
            _reply(resp, ("fail", "bad-return"))
def _supervisor():
    def hide(fd):
        n = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64 + int.from_bytes(os.urandom(2), "big") % 900)
        os.close(fd)
        return n
    host_fd, proof_fd = hide(0), hide(3)  # host_fd: the test code (length-prefixed), then the nonce; unread yet
    os.write(proof_fd, b"UP\n")  # the harness runs: whatever follows is the program's doing, not the sandbox's
    null = os.open("/dev/null", os.O_RDONLY)
    if null != 0:
        os.dup2(null, 0)
        os.close(null)
    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE=0: /proc/<pid>/fd and mem closed to the worker
    except Exception:
        pass
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "task.json"), encoding="utf-8") as f:
        spec = json.load(f)
    req_r, req_w = os.pipe()
    resp_r, resp_w = os.pipe()
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        for fd in (host_fd, proof_fd, req_w, resp_r):
            os.close(fd)
        _worker(spec, req_r, resp_w)
        os._exit(0)
    for fd in (req_r, resp_w):
        os.close(fd)
    def verdict(msg, passed=None):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        sys.stdout.flush(); sys.stderr.flush()
        os.write(proof_fd, msg)
        os._exit(0 if (msg.startswith(b"PASS") if passed is None else passed) else 1)
    class Stop(BaseException):
        def __init__(self, reason):
            self.reason = reason
    class CandidateError(Exception):
        pass
    def worker_gone():
        import time
        for _ in range(100):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return Stop("crash" if os.WIFSIGNALED(status) else "early-exit")
            time.sleep(0.01)
        return Stop("early-exit")
    def answer():
        try:
            msg = _recv(resp_r)
        except EOFError:
            raise worker_gone()
        except Exception:
            raise Stop("tampered")
        if not isinstance(msg, tuple) or not msg:
            raise Stop("tampered")
        if msg[0] == "fail":
            raise Stop(str(msg[1]))
        return msg
    mode, seen_np = ["convert"], [False]
    def untag(t, depth=0):
        # supervisor side: a tagged value back as the reference harness would see it (numpy rebuilt here)
        if not isinstance(t, tuple) or not t or depth > 60:
            raise Stop("tampered")
        if t[0] == "s" and len(t) == 2:
            return t[1]
        if t[0] == "d" and len(t) == 2:
            return {untag(k, depth + 1): untag(x, depth + 1) for k, x in t[1]}
        if t[0] == "c" and len(t) == 3 and t[1] in ("list", "tuple", "set", "frozenset"):
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[t[1]](
                untag(x, depth + 1) for x in t[2])
        if t[0] == "n" and len(t) == 5:
            import numpy
            dt = numpy.dtype(t[1])
            if dt.kind not in "biufcUS":
                raise Stop("bad-return")
            a = numpy.array(t[3], dtype=dt)
            return a.reshape(t[2]) if t[4] else a[()]
        raise Stop("tampered")
    def candidate(*args, **kwargs):
        try:
            _send(req_w, (args, kwargs))
        except (ValueError, TypeError):
            raise Stop("exception")  # an argument the protocol cannot carry (never in HumanEval's tests)
        except OSError:
            raise worker_gone()
        msg = answer()
        if msg[0] == "ok" and len(msg) == 3:
            if msg[2] is not None:
                seen_np[0] = True
                if mode[0] == "reference":
                    return untag(msg[2])
            return msg[1]
        if msg[0] == "raise" and len(msg) == 3:
            raise (AssertionError if msg[1] == "AssertionError" else CandidateError)(f"{msg[1]}: {msg[2]}")
        raise Stop("tampered")
    try:
        if answer()[0] != "ready":
            raise Stop("tampered")
        # only now, with the completion loaded in the worker (a separate process that never held the host channel),
        # is the test code read from the host
        try:
            (n,) = struct.unpack(">I", _exact(host_fd, 4))
            test = _exact(host_fd, n).decode("utf-8")
        except Exception:
            raise Stop("tampered")
        gt = {"__name__": "__janus_test__", "__builtins__": builtins}
        exec(compile(spec["prompt"], "prompt.py", "exec"), gt)  # the dataset's own helpers (trusted text)
        exec(compile(test, "test.py", "exec"), gt)
        candidate.__name__ = spec["entry_point"]
        gt[spec["entry_point"]] = candidate
        main = None
        try:
            gt["check"](candidate)
        except AssertionError:
            import traceback; traceback.print_exc()
            main = b"FAIL assertion"
        except Stop:
            raise
        except BaseException:
            import traceback; traceback.print_exc()
            main = b"FAIL exception"
    except Stop as e:
        verdict(b"FAIL " + e.reason.encode("ascii", "replace"))
    except AssertionError:
        import traceback; traceback.print_exc()
        verdict(b"FAIL assertion")
    except BaseException:
        import traceback; traceback.print_exc()
        verdict(b"FAIL exception")
    nonce = os.read(host_fd, 64)
    if not seen_np[0]:
        verdict(main or b"PASS " + nonce)
    # a numpy value was returned: the verdict stands (written first, so a slow second check cannot cost it), then
    # check again with the values as returned (the reference harness's)
    os.write(proof_fd, main + b"\n" if main else b"PASS " + nonce)
    mode[0] = "reference"
    try:
        gt["check"](candidate)
        ref = b"REF PASS " + nonce
    except Stop as e:
        ref = b"REF FAIL " + e.reason.encode("ascii", "replace") + b"\n"
    except AssertionError:
        ref = b"REF FAIL assertion\n"
    except BaseException:
        ref = b"REF FAIL exception\n"
    verdict(ref, passed=main is None)
_supervisor()
'''

_REASONS = {"syntax-error", "assertion", "early-exit", "memory", "exception", "missing-entry-point", "bad-return",
            "tampered", "crash"}


def run_humaneval(head: str, prompt: str, test: str, entry_point: str, *, limits: SandboxLimits | None = None,
                  backend: str = "auto") -> SandboxResult:
    """Run prompt+completion (``head``) and ``check(entry_point)`` under the proof harness. The test code runs in its
    own namespace built from the dataset ``prompt`` (its helpers), so names the completion defines cannot shadow them.

    Returns a SandboxResult whose status is "passed" only with a valid proof; ``reason`` says why otherwise.
    """
    nonce = secrets.token_hex(16)
    task = json.dumps({"head": head, "prompt": prompt, "entry_point": entry_point})  # never the tests (see above)
    tb = test.encode("utf-8")
    res = run_python(HARNESS, limits=limits, backend=backend, files={"task.json": task},
                     stdin_data=struct.pack(">I", len(tb)) + tb + nonce.encode() + b"\n", proof=True)
    return judge(res, nonce)


def judge(res: SandboxResult, nonce: str) -> SandboxResult:
    """Turn a raw sandbox result into a proven verdict (see module docstring)."""
    proof = res.detail.get("proof", b"")
    detail = {k: v for k, v in res.detail.items() if k != "proof"}
    started = proof.startswith(b"UP\n")
    proof = proof[3:] if started else proof
    detail["harness_started"] = started
    main, sep, ref = proof.partition(b"\nREF ")  # a numpy value was returned: the reference verdict's line follows
    if sep:
        proof = main + b"\n" if main.startswith(b"PASS") else main
        why = ref[5:].rstrip(b"\n").decode("ascii", "replace")
        if ref == b"PASS " + nonce.encode() + b"\n":
            detail["reference"] = {"status": "passed", "reason": "passed"}
        else:
            detail["reference"] = {"status": "failed", "reason": why if ref.startswith(b"FAIL ") and why in _REASONS
                                   else "tampered"}
    elif started and res.status == "timeout" and proof.endswith(b"\n"):  # the verdict, then no end: the second check
        detail["reference"] = {"status": "timeout", "reason": "timeout"}
    proven = started and (proof == b"PASS " + nonce.encode() + b"\n" or proof.startswith(b"FAIL ") and proof.endswith(
        b"\n") and proof[5:-1].decode("ascii", "replace") in _REASONS)
    if proven and proof.endswith(b"\n") and proof.startswith(b"FAIL "):
        proof = proof[:-1]
    if res.reason == "output-limit" or (res.status == "timeout" and not proven):
        status, reason = res.status, res.reason
    elif not started:  # the harness never ran: the sandbox failed, not the program (never scored as a wrong answer)
        status, reason = "error", "sandbox-error"
    elif proof == b"PASS " + nonce.encode() + b"\n":
        status, reason = "passed", "passed"
    elif proof.startswith(b"PASS"):
        status, reason = "failed", "tampered"
    elif proof.startswith(b"FAIL ") and proof[5:].decode("ascii", "replace") in _REASONS:
        status, reason = "failed", proof[5:].decode("ascii")
    elif res.returncode is not None and (res.returncode < 0 or res.returncode > 128):  # killed by a signal
        status, reason = "failed", "crash"
    else:
        status, reason = "failed", "early-exit"
    return SandboxResult(status, res.returncode, res.stdout, res.stderr, res.wall_s, res.backend, res.reruns,
                         detail, reason, res.output_bytes)


_KNOWN = ('def add(a, b):\n    """The sum of a and b."""\n',
          "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n")
_HARNESS_OK: dict[str, bool] = {}
_HARNESS_LOCK = threading.Lock()


def harness_self_test(backend: str, *, refresh: bool = False) -> None:
    """Prove, once per process and backend (a resolved one: "bwrap" or "unshare", see ``sandbox.code_sandbox``),
    that the proof harness passes a known-good solution and fails a known-wrong one in this sandbox. Raises
    SandboxUnavailable (one line) when it does not; a run then stops before its first answer is scored."""
    be = backend
    with _HARNESS_LOCK:
        if be in _HARNESS_OK and not refresh:
            return
        prompt, test = _KNOWN
        lim = SandboxLimits(wall_s=30.0, cpu_s=20)
        good = run_humaneval(prompt + "    return a + b\n", prompt, test, "add", limits=lim, backend=be)
        bad = run_humaneval(prompt + "    return a - b\n", prompt, test, "add", limits=lim, backend=be)
        if (good.status, bad.status, bad.reason) != ("passed", "failed", "assertion"):
            worst = good if good.status != "passed" else bad
            said = worst.stderr.strip().splitlines()[-1][:200] if worst.stderr.strip() else "no output"
            raise SandboxUnavailable(printable(
                f"the HumanEval harness does not work in the sandbox ({be}) on this machine: a known-good solution "
                f"gave {good.status}/{good.reason} and a known-wrong one {bad.status}/{bad.reason} ({said}); check "
                "that bubblewrap works (`bwrap --ro-bind / / true`) and report this", one_line=True))
        _HARNESS_OK[be] = True
