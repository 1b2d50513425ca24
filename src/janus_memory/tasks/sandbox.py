"""Sandbox for model-written Python (HumanEval): never exec/eval model text in our own process.

Primary wall (offline-stack.md section D): a subprocess ``python -I -B prog.py`` under bubblewrap (``/usr/bin/bwrap``,
Debian package ``bubblewrap``) with
- a new network namespace (no interfaces but a down loopback: every connect fails), plus new pid/ipc/uts namespaces;
- read-only binds of /usr (and /lib, /bin symlinks), the interpreter's installation and the project's virtual
  environment (so model code runs on the project's own Python and packages, numpy included; parent folders such as a
  0700 /root are created traversable inside the sandbox); nothing else of the host is visible;
- a private tmpfs /tmp (mode 1777) and a read-only /sandbox holding only the program;
- a cleared environment; ``--die-with-parent`` and ``--new-session``;
- rlimits (via ``prlimit`` or a pre-exec hook): address space 1 GiB, CPU seconds, file size, process count;
- when we run as root, the program runs under a uid/gid of its own (``setpriv``; see "One process limit per
  sandbox" below), so the process-count limit applies to it alone and host files are not writable even through a bind;
- a wall-clock timeout; the whole process group is killed on expiry.

Fallback when bwrap is missing (a warning is logged once): ``unshare -n -p -f --kill-child`` (no network; a pid
namespace so the whole process tree dies with it) + the same rlimits, cleared environment, a private temporary working
directory, and a uid of its own when root. It has no mount namespace, so file isolation rests on file permissions.
``backend="unshare"`` forces it (tests cover both paths).

Output (issue 12 item 3): stdout and stderr are read by the host as they arrive; only the last ``tail_bytes`` of each
are kept and the rest is counted, so the host's memory stays bounded whatever the program prints. A program whose total
output passes ``output_bytes`` is killed at once and fails with reason ``output-limit``. The wall clock runs while the
output is read (a program cannot buy time by printing).

Every sandbox process gets PR_SET_PDEATHSIG=SIGKILL, so it dies with the host process however the host dies.

One process limit per sandbox (issue 26): RLIMIT_NPROC counts the processes of a *uid*, so sandboxes sharing one uid
share one limit, and a fork bomb in one made ``fork`` fail in the others (correct HumanEval solutions then failed as
early-exit). As root (here and in CI) every sandbox runs under a uid leased from a pool of ``UID_SLOTS`` uids starting
at ``UID_BASE``. A lease is an exclusive ``flock`` on ``/run/janus-sandbox-uids/<slot>.lock`` (else under /tmp; a
fixed path, so every process agrees whatever its $TMPDIR; a root-owned 0700 folder), so concurrent sandboxes - threads
of one run or different runs on the machine - never share a uid; a slot whose uid still owns a process (a fork bomb
being torn down) is skipped. When the job ends, every process still running under the leased uid is killed by pid and
waited for (at most ``RELEASE_WAIT_S``), so ``run_python`` returns with nothing of the program left. Other mechanisms
were weighed: a cgroup ``pids.max`` needs a writable, delegated cgroup tree (on this machine only the cgroup v1
``pids`` hierarchy is writable, and CI machines differ), and a pid namespace (bwrap ``--unshare-pid``, already used)
does not limit process counts. Without root (no setuid) or without ``setpriv`` the sandboxes share the caller's uid and
so one process limit; ``uid_isolation()`` says which case applies and a warning is logged once.

Statuses: "passed" (exit 0; HumanEval uses the proof harness in harness.py instead), "failed" (non-zero exit, output
past the cap), "timeout" (wall or CPU limit; distinct from failed, C16), "error" (the sandbox could not start).
``reason`` names why: passed, exit-code, output-limit, timeout, crash (killed by a signal), sandbox-error.

The sandbox backends (bwrap, the unshare fallback, the choice between them and the weak-sandbox opt-in) and the
command each builds live here; running one built command (limits, output tails, kill, status) is ``sandbox_job.py``.
"""
from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

from .sandbox_job import SandboxLimits, SandboxResult, SandboxStatus, execute, set_parent_death_signal

__all__ = [
    "ENV_ALLOW_WEAK", "FALLBACK_NOTICE", "NOBODY", "SandboxLimits", "SandboxResult", "SandboxStatus",
    "WeakSandboxRefused", "build_command", "bwrap_path", "choose_backend", "require_strong_sandbox", "run_python",
    "sandbox_notice", "sandbox_python", "set_parent_death_signal", "uid_isolation", "uid_processes",
    "weak_sandbox_allowed", "UID_BASE",
    "UID_SLOTS",
]

log = logging.getLogger(__name__)

NOBODY = 65534


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
                   "(unshare -n + rlimits + an unprivileged uid): no network, but it can READ the project tree and "
                   "other world-readable host files and WRITE the host's /tmp and /dev/shm. Install the Debian package "
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


def _python() -> tuple[str, list[str]]:
    """The interpreter the project runs in and the folders it needs, bound read-only in the bwrap sandbox: the
    installation (``sys.base_prefix``) and, in a virtual environment, the environment itself, whose python (a link
    to the installation's) finds its ``pyvenv.cfg`` and so the same site-packages as the host. Folders under /usr
    are bound anyway."""
    exe = sys.executable if sys.executable and os.path.exists(sys.executable) else os.path.realpath(sys.executable)
    roots: list[str] = []
    for p in (sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix):
        p = os.path.realpath(p)
        if p.startswith("/usr/") or p == "/usr" or any(p == r or p.startswith(r + "/") for r in roots):
            continue
        roots = [r for r in roots if not r.startswith(p + "/")] + [p]
    return exe, roots


def _bind_readable(path: str) -> list[str]:
    """bwrap arguments binding ``path`` read-only, its parent folders created traversable (0755): a folder such as
    /root is 0700 on the host, and the sandbox's uid could not reach an interpreter under it (it then ran the system
    Python, without the project's packages)."""
    args, parts = [], path.strip("/").split("/")
    for i in range(1, len(parts)):
        args += ["--perms", "0755", "--dir", "/" + "/".join(parts[:i])]
    return args + ["--ro-bind", path, path]


def _rlimit_args(lim: SandboxLimits) -> list[str]:
    pl = shutil.which("prlimit")
    if not pl:
        return []
    return [pl, f"--as={lim.address_space}", f"--cpu={lim.cpu_s}", f"--fsize={lim.file_size}",
            f"--nproc={lim.nproc}", "--core=0", "--"]


def _drop_privs(uid: int = NOBODY) -> list[str]:
    if os.geteuid() != 0:
        return []
    sp = shutil.which("setpriv")
    if not sp:
        return []
    return [sp, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]


# ------------------------------------------------------------------------------ one uid (and process limit) per sandbox

UID_BASE = 1_610_000_000  # far above login uids and the usual subordinate-uid ranges
UID_SLOTS = 512
RELEASE_WAIT_S = 3.0
_UID_LOCK = threading.Lock()
_next_slot = int.from_bytes(os.urandom(2), "big") % UID_SLOTS  # processes start at different slots: fewer collisions
_SHARED_WARNED = False


def uid_isolation() -> str:
    """"per-sandbox-uid" when each sandbox gets a uid (and so a process limit) of its own, else "shared-uid"."""
    return "per-sandbox-uid" if os.geteuid() == 0 and shutil.which("setpriv") else "shared-uid"


LEASE_DIRS = ("/run/janus-sandbox-uids", "/tmp/janus-sandbox-uids")  # fixed paths (not $TMPDIR): every process agrees


def _lease_dir() -> Path | None:
    base = next((d for d in LEASE_DIRS if os.path.isdir(os.path.dirname(d)) and os.access(os.path.dirname(d), os.W_OK)),
                None)
    if base is None:
        return None
    d = Path(base)
    try:
        d.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(d)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return None  # not ours, or writable by others: a lease there proves nothing
    return d


def uid_processes(uid: int) -> list[int]:
    """Pids of the processes whose real uid is ``uid`` (read from /proc/<pid>/status)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as f:
                st = f.read(4096)
        except OSError:
            continue
        m = re.search(rb"^Uid:\s+(\d+)", st, re.M)
        if m and int(m.group(1)) == uid:
            out.append(int(name))
    return out


def _lease_uid() -> tuple[int, int] | None:
    """(uid, lock fd) of a free slot, or None when isolation is not available (warning logged once)."""
    global _next_slot, _SHARED_WARNED
    d = _lease_dir() if uid_isolation() == "per-sandbox-uid" else None
    if d is None:
        with _WARN_LOCK:
            if not _SHARED_WARNED:
                _SHARED_WARNED = True
                log.warning("sandboxes share one uid and so one process limit (not root, no setpriv, or no private "
                            "lease folder): a fork bomb in one sandbox can make fork fail in a concurrent one")
        return None
    with _UID_LOCK:
        start = _next_slot
        _next_slot = (_next_slot + 1) % UID_SLOTS
    for k in range(UID_SLOTS):
        slot = (start + k) % UID_SLOTS
        try:
            fd = os.open(d / f"{slot}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        uid = UID_BASE + slot
        if uid_processes(uid):  # a previous job's processes are still being torn down: take another slot
            os.close(fd)
            continue
        return uid, fd
    log.warning("all %d sandbox uids are busy; this sandbox shares uid %d", UID_SLOTS, NOBODY)
    return None


def _release_uid(uid: int, fd: int) -> None:
    """Kill (by pid) whatever still runs under the leased uid, wait until none is left, then free the slot."""
    end = time.monotonic() + RELEASE_WAIT_S
    try:
        while True:
            pids = uid_processes(uid)
            if not pids or time.monotonic() > end:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.01)
    finally:
        os.close(fd)  # closing the descriptor drops the flock


def build_command(backend: str, workdir: Path, lim: SandboxLimits,
                  uid: int = NOBODY) -> tuple[list[str], str | None, dict]:
    """The argv, cwd and env for running ``workdir/prog.py`` (exposed for inspection in tests)."""
    exe, roots = _python()
    py = [exe, "-I", "-B", "-X", "utf8"]
    if backend == "bwrap":
        cmd = [bwrap_path(), "--ro-bind", "/usr", "/usr"]
        for d in ("/lib", "/lib64", "/bin", "/sbin"):
            if os.path.islink(d):
                cmd += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                cmd += ["--ro-bind", d, d]
        for root in roots:
            cmd += _bind_readable(root)
        real = os.path.realpath(exe)
        for path in {exe, real}:
            if not path.startswith("/usr/") and not any(path.startswith(r + "/") for r in roots):
                cmd += _bind_readable(path)
        cmd += ["--size", str(lim.tmpfs_bytes), "--perms", "1777", "--tmpfs", "/tmp",
                "--proc", "/proc", "--dev", "/dev", "--ro-bind", str(workdir), "/sandbox", "--chdir", "/tmp",
                "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--die-with-parent", "--new-session", "--clearenv", "--setenv", "HOME", "/tmp",
                "--setenv", "PATH", "/usr/bin:/bin"]
        if os.geteuid() != 0:
            cmd += ["--unshare-user"]
        cmd += _drop_privs(uid) + py + ["/sandbox/prog.py"]
        return _rlimit_args(lim) + cmd, None, {}
    # fallback: unshare -n (network) + rlimits + nobody + private cwd
    un = shutil.which("unshare")
    ns = ["-n", "-p", "-f", "--kill-child"]  # new net + pid namespace: the whole tree dies with its init
    pre = [un, *ns, "--"] if un and os.geteuid() == 0 else ([un, "-r", *ns, "--"] if un else [])
    # no mount namespace here: the interpreter is the installation's own binary (a venv's link could not be followed
    # into a folder the sandbox uid cannot read); sandbox_python() says which Python actually ran
    py = [os.path.realpath(sys.executable)] + py[1:]
    cmd = _rlimit_args(lim) + pre + _drop_privs(uid) + py + [str(workdir / "prog.py")]
    return cmd, str(workdir / "scratch"), {"HOME": str(workdir / "scratch"), "PATH": "/usr/bin:/bin"}


_PROBE = ("import json, sys\ntry:\n    import numpy\n    np = numpy.__version__\nexcept Exception:\n    np = None\n"
          "print(json.dumps({'version': sys.version.split()[0], 'prefix': sys.prefix, 'base_prefix': sys.base_prefix,"
          " 'numpy': np}))\n")
_PROBED: dict[str, dict] = {}


def sandbox_python(backend: str = "auto") -> dict:
    """Which Python runs model code in ``backend`` (cached per process): ``version``, ``prefix``, ``base_prefix``,
    ``numpy`` (its version, or None when it cannot be imported there) and ``same_as_host`` (same version and
    installation as the Python the project runs in, numpy importable when the host has it)."""
    be = choose_backend(backend)
    if be not in _PROBED:
        import json

        res = run_python(_PROBE, backend=be, limits=SandboxLimits(wall_s=20.0, cpu_s=10))
        try:
            info = json.loads(res.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            info = {"version": None, "prefix": None, "base_prefix": None, "numpy": None, "error": res.stderr[-300:]}
        try:
            import numpy as host_np
            host_numpy = host_np.__version__
        except ImportError:
            host_numpy = None
        info["same_as_host"] = (info.get("version") == sys.version.split()[0]
                                and info.get("base_prefix") == sys.base_prefix and info.get("numpy") == host_numpy)
        _PROBED[be] = info
    return dict(_PROBED[be])


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
    lease = _lease_uid()
    uid = lease[0] if lease else NOBODY
    try:
        os.chmod(tmp, 0o755)
        for name, text in {"prog.py": code, **(files or {})}.items():
            (tmp / name).write_text(text, encoding="utf-8")
            os.chmod(tmp / name, 0o644)
        scratch = tmp / "scratch"
        scratch.mkdir()
        if os.geteuid() == 0:
            os.chown(scratch, uid, uid)
        cmd, cwd, env = build_command(be, tmp, lim, uid)
        res = execute(cmd, cwd, env, lim, be, stdin_data, proof)
        res.detail["uid"] = uid
        return res
    finally:
        if lease:
            _release_uid(*lease)
        shutil.rmtree(tmp, ignore_errors=True)
