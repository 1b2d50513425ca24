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

Statuses: "passed" (exit 0), "failed" (non-zero exit, e.g. assertion or MemoryError), "timeout" (wall or CPU limit;
distinct from failed, C16), "error" (the sandbox itself could not start).
"""
from __future__ import annotations

import logging
import os
import resource
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
    file_size: RLIMIT_FSIZE (bytes). nproc: RLIMIT_NPROC (processes of the sandbox user). tmpfs_bytes: /tmp size."""

    wall_s: float = 10.0
    cpu_s: int = 10
    address_space: int = 1 << 30
    file_size: int = 16 << 20
    nproc: int = 64
    tmpfs_bytes: int = 64 << 20


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
            log.warning("bubblewrap not found: sandbox falls back to 'unshare -n' + rlimits (no filesystem namespace); "
                        "install the Debian package 'bubblewrap' for the full sandbox")
    return "unshare"


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


def _preexec(lim: SandboxLimits, use_prlimit: bool):
    def fn():
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


def run_python(code: str, *, limits: SandboxLimits | None = None, backend: str = "auto") -> SandboxResult:
    """Run ``code`` as a Python program inside the sandbox. Returns a SandboxResult (never raises for model faults).

    backend: "auto" (bwrap if installed), "bwrap", or "unshare" (forces the fallback path).
    """
    lim = limits or SandboxLimits()
    be = choose_backend(backend)
    tmp = Path(tempfile.mkdtemp(prefix="janus-sbx-"))
    try:
        os.chmod(tmp, 0o755)
        prog = tmp / "prog.py"
        prog.write_text(code, encoding="utf-8")
        os.chmod(prog, 0o644)
        scratch = tmp / "scratch"
        scratch.mkdir()
        if os.geteuid() == 0:
            os.chown(scratch, NOBODY, NOBODY)
        cmd, cwd, env = build_command(be, tmp, lim)
        use_pl = bool(cmd and cmd[0].endswith("prlimit"))
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True,
                                    preexec_fn=None if use_pl else _preexec(lim, False))
        except OSError as e:
            return SandboxResult("error", None, "", f"sandbox failed to start: {e}", 0.0, be)
        timed_out = False
        try:
            out, err = proc.communicate(timeout=lim.wall_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            out, err = proc.communicate()
        wall = time.monotonic() - t0
        _kill_group(proc)  # stragglers that outlived the main program (the fallback has no pid namespace)
        rc = proc.returncode
        out_s = out.decode("utf-8", "replace")[-4000:]
        err_s = err.decode("utf-8", "replace")[-4000:]
        cpu_kill = rc in (-signal.SIGXCPU, 128 + signal.SIGXCPU) or (rc in (-signal.SIGKILL, 128 + signal.SIGKILL)
                                                                     and wall >= lim.cpu_s * 0.9)
        if timed_out or cpu_kill:
            status: SandboxStatus = "timeout"
        elif rc == 0:
            status = "passed"
        elif be == "bwrap" and rc == 1 and err_s.startswith("bwrap:"):
            status = "error"
        else:
            status = "failed"
        return SandboxResult(status, rc, out_s, err_s, wall, be)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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
