"""The runner of one sandbox job: what the sandbox enforces and returns, and how one built command is run.

``execute(cmd, cwd, env, limits, backend, stdin_data, proof)`` spawns the command (rlimits in a pre-exec hook unless
``prlimit`` is the first word, PR_SET_PDEATHSIG=SIGKILL, the proof pipe as fd 3), reads stdout/stderr as they arrive
into capped tails under the wall clock, kills the whole process group, and classifies the outcome into a
SandboxResult. Which command runs (bwrap or the unshare fallback) is decided in ``sandbox.py``.
"""
from __future__ import annotations

import ctypes
import os
import resource
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Literal

SandboxStatus = Literal["passed", "failed", "timeout", "error"]


@dataclass(frozen=True)
class SandboxLimits:
    """wall_s: wall-clock timeout (s). cpu_s: RLIMIT_CPU (s). address_space: RLIMIT_AS (bytes).
    file_size: RLIMIT_FSIZE (bytes). nproc: RLIMIT_NPROC (processes of the sandbox user). tmpfs_bytes: /tmp size.
    output_bytes: total stdout+stderr allowed (more fails, reason output-limit). tail_bytes: kept per stream."""

    wall_s: float = 10.0
    cpu_s: int = 10
    address_space: int = 1 << 30
    file_size: int = 16 << 20
    nproc: int = 64
    tmpfs_bytes: int = 64 << 20
    output_bytes: int = 1 << 20
    tail_bytes: int = 16 << 10


@dataclass(frozen=True)
class SandboxResult:
    status: SandboxStatus
    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    backend: str = ""
    reruns: int = 0
    detail: dict = field(default_factory=dict)
    reason: str = ""
    output_bytes: int = 0


_PR_SET_PDEATHSIG = 1
_LIBC: ctypes.CDLL | None
try:
    _LIBC = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - non-glibc platform
    _LIBC = None


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """prctl(PR_SET_PDEATHSIG, sig) for the calling process (Linux). True on success."""
    if _LIBC is None:
        return False
    return _LIBC.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0


def _preexec(lim: SandboxLimits, use_prlimit: bool, host_pid: int, proof_fd: int | None = None):
    def fn():
        if proof_fd is not None:  # the proof pipe becomes fd 3 of the program (kept through close_fds)
            os.dup2(proof_fd, 3)
        set_parent_death_signal(signal.SIGKILL)
        if os.getppid() != host_pid:  # the host died between fork and prctl
            os._exit(1)
        if not use_prlimit:
            resource.setrlimit(resource.RLIMIT_AS, (lim.address_space, lim.address_space))
            resource.setrlimit(resource.RLIMIT_CPU, (lim.cpu_s, lim.cpu_s))
            resource.setrlimit(resource.RLIMIT_FSIZE, (lim.file_size, lim.file_size))
            resource.setrlimit(resource.RLIMIT_NPROC, (lim.nproc, lim.nproc))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return fn


class _Tail:
    """The last ``keep`` bytes of a stream plus the total count."""

    def __init__(self, keep: int):
        self.keep, self.buf, self.total = keep, bytearray(), 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.buf += chunk[-self.keep:]
        if len(self.buf) > self.keep:
            del self.buf[:len(self.buf) - self.keep]

    def text(self) -> str:
        return self.buf.decode("utf-8", "replace")


def _spawn(cmd, cwd, env, lim, stdin_data: bytes, proof: bool):
    use_pl = bool(cmd and cmd[0].endswith("prlimit"))
    pr = pw = None
    if proof:
        pr, pw = os.pipe()
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, pass_fds=(3,) if proof else (),
                                preexec_fn=_preexec(lim, use_pl, os.getpid(), pw))
    finally:
        if pw is not None:
            os.close(pw)
    assert proc.stdin is not None  # stdin=PIPE
    if len(stdin_data) > 60000:  # more than a default pipe holds: enlarge it, so the write cannot block the host
        try:
            import fcntl
            fcntl.fcntl(proc.stdin.fileno(), fcntl.F_SETPIPE_SZ, min(1 << 20, len(stdin_data) + 4096))
        except (OSError, AttributeError):
            pass
    try:
        proc.stdin.write(stdin_data)
    except OSError:
        pass
    try:
        proc.stdin.close()
    except OSError:
        pass
    return proc, pr


def _read_output(proc: subprocess.Popen, pr: int | None, lim: SandboxLimits, deadline: float,
                 out: _Tail, err: _Tail, proof_buf: bytearray) -> tuple[bool, bool]:
    """Read stdout, stderr (and the proof pipe, at most 4 KiB) until all close, the wall clock ends or the output
    cap is passed; then wait for the exit. Returns (timed_out, over_the_output_cap)."""
    assert proc.stdout is not None and proc.stderr is not None  # stdout=PIPE, stderr=PIPE
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    if pr is not None:
        sel.register(pr, selectors.EVENT_READ, None)
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return True, False
            for key, _ in sel.select(timeout=min(left, 0.5)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                elif key.data is None:
                    proof_buf += chunk[:4096 - len(proof_buf)]
                else:
                    key.data.add(chunk)
            if out.total + err.total > lim.output_bytes:
                return False, True
        try:
            proc.wait(timeout=max(0.05, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return True, False
        return False, False
    finally:
        sel.close()


_LAUNCHERS = ("bwrap:", "setpriv:", "prlimit:", "unshare:")  # how the sandbox's own tools report that they failed


def _classify(rc: int | None, wall: float, timed_out: bool, over: bool, be: str, err_s: str,
              lim: SandboxLimits) -> tuple[SandboxStatus, str]:
    """(status, reason) of a finished job; a SIGXCPU exit, or a SIGKILL near the CPU limit, is a timeout."""
    cpu_kill = rc in (-signal.SIGXCPU, 128 + signal.SIGXCPU) or (rc in (-signal.SIGKILL, 128 + signal.SIGKILL)
                                                                 and wall >= lim.cpu_s * 0.9)
    if over:
        return "failed", "output-limit"
    if timed_out or cpu_kill:
        return "timeout", "timeout"
    if rc == 0:
        return "passed", "passed"
    if rc in (1, 126, 127) and err_s.startswith(_LAUNCHERS):  # the launcher, not the program, failed
        return "error", "sandbox-error"
    return "failed", "crash" if rc is not None and rc < 0 else "exit-code"


def execute(cmd, cwd, env, lim: SandboxLimits, be: str, stdin_data: bytes, proof: bool) -> SandboxResult:
    """Run one built command to completion and classify it (never raises for model faults)."""
    t0 = time.monotonic()
    try:
        proc, pr = _spawn(cmd, cwd, env, lim, stdin_data, proof)
    except OSError as e:
        return SandboxResult("error", None, "", f"sandbox failed to start: {e}", 0.0, be, reason="sandbox-error")
    out, err, proof_buf = _Tail(lim.tail_bytes), _Tail(lim.tail_bytes), bytearray()
    try:
        timed_out, over = _read_output(proc, pr, lim, t0 + lim.wall_s, out, err, proof_buf)
    finally:
        _kill_group(proc)  # on expiry, on the cap, and stragglers that outlived the main program
        for f in (proc.stdout, proc.stderr):
            f.close()
        if pr is not None:
            os.close(pr)
    wall = time.monotonic() - t0
    rc = proc.returncode
    err_s = err.text()
    status, reason = _classify(rc, wall, timed_out, over, be, err_s, lim)
    detail: dict = {"stdout_bytes": out.total, "stderr_bytes": err.total}
    if pr is not None:
        detail["proof"] = bytes(proof_buf)
    return SandboxResult(status, rc, out.text(), err_s, wall, be, detail=detail, reason=reason,
                         output_bytes=out.total + err.total)


def _kill_group(proc: subprocess.Popen, rounds: int = 100) -> None:
    """SIGKILL the sandbox's whole process group, repeatedly until it is empty (a fork bomb keeps forking)."""
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    for _ in range(rounds):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        proc.poll()  # reap our own child: a zombie leader would keep the group "non-empty"
        time.sleep(0.005)
