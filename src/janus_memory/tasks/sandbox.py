"""Sandbox for model-written Python (HumanEval): never exec/eval model text in our own process.

Primary wall (offline-stack.md section D): a subprocess ``python -I -B prog.py`` under bubblewrap (``/usr/bin/bwrap``,
Debian package ``bubblewrap``) with
- a new network namespace (no interfaces but a down loopback: every connect fails), plus new pid/ipc/uts namespaces;
- read-only binds of /usr (and /lib, /bin symlinks) and the interpreter prefix; nothing else of the host is visible;
- a private tmpfs /tmp (mode 1777) and a read-only /sandbox holding only the program;
- a cleared environment; ``--die-with-parent`` and ``--new-session``;
- rlimits (via ``prlimit`` or a pre-exec hook): address space 1 GiB, CPU seconds, file size, process count;
- when we run as root, the program runs as uid/gid 65534 (``setpriv``) so the process-count limit applies and
  host files are not writable even through a bind;
- a wall-clock timeout; the whole process group is killed on expiry.

Fallback when bwrap is missing (a warning is logged once): ``unshare -n -p -f --kill-child`` (no network; a pid
namespace so the whole process tree dies with it) + the same rlimits, cleared environment, a private temporary working
directory, and uid 65534 when root. It has no mount namespace, so file isolation rests on file permissions. ``backend="unshare"`` forces it (tests cover both paths).

Output (issue 12 item 3): stdout and stderr are read by the host as they arrive; only the last ``tail_bytes`` of each
are kept and the rest is counted, so the host's memory stays bounded whatever the program prints. A program whose total
output passes ``output_bytes`` is killed at once and fails with reason ``output-limit``. The wall clock runs while the
output is read (a program cannot buy time by printing).

Every sandbox process gets PR_SET_PDEATHSIG=SIGKILL, so it dies with the host process however the host dies.

Statuses: "passed" (exit 0; HumanEval uses the proof harness in harness.py instead), "failed" (non-zero exit, output
past the cap), "timeout" (wall or CPU limit; distinct from failed, C16), "error" (the sandbox could not start).
``reason`` names why: passed, exit-code, output-limit, timeout, crash (killed by a signal), sandbox-error.
"""
from __future__ import annotations

import ctypes
import logging
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

SandboxStatus = Literal["passed", "failed", "timeout", "error"]
NOBODY = 65534


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


_WARNED = False
_WARN_LOCK = threading.Lock()


def bwrap_path() -> str | None:
    return shutil.which("bwrap") or (("/usr/bin/bwrap") if os.path.exists("/usr/bin/bwrap") else None)


def choose_backend(backend: str = "auto") -> str:
    """Resolve "auto" to "bwrap" when bubblewrap is installed, else "unshare" (warning logged once)."""
    global _WARNED
    if backend not in ("auto", "bwrap", "unshare"):
        raise ValueError(f"unknown sandbox backend {backend!r}; choose auto, bwrap or unshare")
    if backend == "bwrap" and not bwrap_path():
        raise RuntimeError("bubblewrap (bwrap) is not installed; apt-get install bubblewrap, or use backend='unshare'")
    if backend != "auto":
        return backend
    if bwrap_path():
        return "bwrap"
    with _WARN_LOCK:
        if not _WARNED:
            _WARNED = True
            log.warning("bubblewrap not found: " + FALLBACK_NOTICE)
    return "unshare"


ENV_ALLOW_WEAK = "JANUS_ALLOW_WEAK_SANDBOX"
FALLBACK_NOTICE = ("WARNING: bubblewrap (bwrap) is not installed, so model-written code runs in the fallback sandbox "
                   "(unshare -n + rlimits + uid nobody): no network, but it can READ the project tree and other "
                   "world-readable host files and WRITE the host's /tmp and /dev/shm. Install the Debian package "
                   "'bubblewrap' for the full sandbox.")


class WeakSandboxRefused(RuntimeError):
    """HumanEval was asked to run model code without bubblewrap and the user did not opt in."""


def sandbox_notice(backend: str = "auto") -> str | None:
    """The console warning to print when ``backend`` resolves to the fallback sandbox, else None (for the CLI)."""
    if backend == "unshare" or (backend == "auto" and not bwrap_path()):
        return FALLBACK_NOTICE
    return None


def weak_sandbox_allowed() -> bool:
    """True when the user opted in to the fallback sandbox through ``JANUS_ALLOW_WEAK_SANDBOX=1``."""
    return os.environ.get(ENV_ALLOW_WEAK, "").strip().lower() in ("1", "true", "yes", "on")


def require_strong_sandbox(backend: str = "auto", *, allow_weak: bool = False) -> str:
    """Resolve ``backend`` for running untrusted model code (HumanEval); refuse the fallback without an opt-in.

    Returns the backend name. Raises WeakSandboxRefused (one line, naming both ways to opt in) when the result would be
    the fallback and neither ``allow_weak`` nor ``JANUS_ALLOW_WEAK_SANDBOX=1`` is given.
    """
    be = choose_backend(backend)
    if be == "unshare" and not (allow_weak or weak_sandbox_allowed()):
        raise WeakSandboxRefused(
            "HumanEval refused: bubblewrap (bwrap) is not installed and the fallback sandbox lets model code read the "
            f"project tree and write the host's /tmp; install 'bubblewrap', or opt in with {ENV_ALLOW_WEAK}=1 "
            "(or the CLI's --allow-weak-sandbox)")
    return be


def _python() -> tuple[str, str]:
    exe = os.path.realpath(sys.executable)
    prefix = os.path.realpath(sys.base_prefix)
    return exe, prefix


def _rlimit_args(lim: SandboxLimits) -> list[str]:
    pl = shutil.which("prlimit")
    if not pl:
        return []
    return [pl, f"--as={lim.address_space}", f"--cpu={lim.cpu_s}", f"--fsize={lim.file_size}",
            f"--nproc={lim.nproc}", "--core=0", "--"]


_PR_SET_PDEATHSIG = 1
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


def _drop_privs() -> list[str]:
    if os.geteuid() != 0:
        return []
    sp = shutil.which("setpriv")
    if not sp:
        return []
    return [sp, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]


def build_command(backend: str, workdir: Path, lim: SandboxLimits) -> tuple[list[str], str | None, dict]:
    """The argv, cwd and env for running ``workdir/prog.py`` (exposed for inspection in tests)."""
    exe, prefix = _python()
    py = [exe, "-I", "-B", "-X", "utf8"]
    if backend == "bwrap":
        cmd = [bwrap_path(), "--ro-bind", "/usr", "/usr"]
        for d in ("/lib", "/lib64", "/bin", "/sbin"):
            if os.path.islink(d):
                cmd += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                cmd += ["--ro-bind", d, d]
        if not prefix.startswith("/usr/"):
            cmd += ["--ro-bind", prefix, prefix]
        if not exe.startswith(prefix) and not exe.startswith("/usr/"):
            cmd += ["--ro-bind", exe, exe]
        cmd += ["--size", str(lim.tmpfs_bytes), "--perms", "1777", "--tmpfs", "/tmp",
                "--proc", "/proc", "--dev", "/dev", "--ro-bind", str(workdir), "/sandbox", "--chdir", "/tmp",
                "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--die-with-parent", "--new-session", "--clearenv", "--setenv", "HOME", "/tmp",
                "--setenv", "PATH", "/usr/bin:/bin"]
        if os.geteuid() != 0:
            cmd += ["--unshare-user"]
        cmd += _drop_privs() + py + ["/sandbox/prog.py"]
        return _rlimit_args(lim) + cmd, None, {}
    # fallback: unshare -n (network) + rlimits + nobody + private cwd
    un = shutil.which("unshare")
    ns = ["-n", "-p", "-f", "--kill-child"]  # new net + pid namespace: the whole tree dies with its init
    pre = [un, *ns, "--"] if un and os.geteuid() == 0 else ([un, "-r", *ns, "--"] if un else [])
    cmd = _rlimit_args(lim) + pre + _drop_privs() + py + [str(workdir / "prog.py")]
    return cmd, str(workdir / "scratch"), {"HOME": str(workdir / "scratch"), "PATH": "/usr/bin:/bin"}


def run_python(code: str, *, limits: SandboxLimits | None = None, backend: str = "auto",
               files: dict[str, str] | None = None, stdin_data: bytes = b"", proof: bool = False) -> SandboxResult:
    """Run ``code`` as a Python program inside the sandbox. Returns a SandboxResult (never raises for model faults).

    backend: "auto" (bwrap if installed), "bwrap", or "unshare" (forces the fallback path).
    files: extra read-only files placed next to the program (name -> text). stdin_data: bytes on the program's stdin
    (then EOF). proof: pass a pipe as fd 3 and return what the program wrote to it in ``detail["proof"]`` (bytes,
    at most 4 KiB); used by the HumanEval proof harness.
    """
    lim = limits or SandboxLimits()
    be = choose_backend(backend)
    tmp = Path(tempfile.mkdtemp(prefix="janus-sbx-"))
    try:
        os.chmod(tmp, 0o755)
        for name, text in {"prog.py": code, **(files or {})}.items():
            (tmp / name).write_text(text, encoding="utf-8")
            os.chmod(tmp / name, 0o644)
        scratch = tmp / "scratch"
        scratch.mkdir()
        if os.geteuid() == 0:
            os.chown(scratch, NOBODY, NOBODY)
        cmd, cwd, env = build_command(be, tmp, lim)
        return _execute(cmd, cwd, env, lim, be, stdin_data, proof)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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
    try:
        proc.stdin.write(stdin_data)
    except OSError:
        pass
    try:
        proc.stdin.close()
    except OSError:
        pass
    return proc, pr


def _execute(cmd, cwd, env, lim: SandboxLimits, be: str, stdin_data: bytes, proof: bool) -> SandboxResult:
    t0 = time.monotonic()
    try:
        proc, pr = _spawn(cmd, cwd, env, lim, stdin_data, proof)
    except OSError as e:
        return SandboxResult("error", None, "", f"sandbox failed to start: {e}", 0.0, be, reason="sandbox-error")
    out, err, proof_buf = _Tail(lim.tail_bytes), _Tail(lim.tail_bytes), bytearray()
    timed_out = over = False
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    if pr is not None:
        sel.register(pr, selectors.EVENT_READ, None)
    try:
        deadline = t0 + lim.wall_s
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, _ in sel.select(timeout=min(left, 0.5)):
                fd = key.fd
                chunk = os.read(fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                elif key.data is None:
                    proof_buf += chunk[:4096 - len(proof_buf)]
                else:
                    key.data.add(chunk)
            if out.total + err.total > lim.output_bytes:
                over = True
                break
        if not (timed_out or over):
            try:
                proc.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        sel.close()
        _kill_group(proc)  # on expiry, on the cap, and stragglers that outlived the main program
        for f in (proc.stdout, proc.stderr):
            f.close()
        if pr is not None:
            os.close(pr)
    wall = time.monotonic() - t0
    rc = proc.returncode
    cpu_kill = rc in (-signal.SIGXCPU, 128 + signal.SIGXCPU) or (rc in (-signal.SIGKILL, 128 + signal.SIGKILL)
                                                                 and wall >= lim.cpu_s * 0.9)
    err_s = err.text()
    if over:
        status, reason = "failed", "output-limit"
    elif timed_out or cpu_kill:
        status, reason = "timeout", "timeout"
    elif rc == 0:
        status, reason = "passed", "passed"
    elif be == "bwrap" and rc == 1 and err_s.startswith("bwrap:"):
        status, reason = "error", "sandbox-error"
    else:
        status, reason = "failed", "crash" if rc is not None and rc < 0 else "exit-code"
    detail = {"stdout_bytes": out.total, "stderr_bytes": err.total}
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
