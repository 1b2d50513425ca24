"""Sandbox for model-written Python (HumanEval): never exec/eval model text in our own process.

Primary wall (docs/research-notes.md, the offline stack): a subprocess ``python -I -B prog.py`` under bubblewrap
(``/usr/bin/bwrap``, Debian package ``bubblewrap``) with
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

Output: stdout and stderr are read by the host as they arrive; only the last ``tail_bytes`` of each
are kept and the rest is counted, so the host's memory stays bounded whatever the program prints. A program whose total
output passes ``output_bytes`` is killed at once and fails with reason ``output-limit``. The wall clock runs while the
output is read (a program cannot buy time by printing).

Every sandbox process gets PR_SET_PDEATHSIG=SIGKILL, so it dies with the host process however the host dies.

One process limit per sandbox: RLIMIT_NPROC counts the processes of a *uid*, so sandboxes sharing one uid
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
import functools
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

from ..errors import JanusError, printable
from .sandbox_job import SandboxLimits, SandboxResult, SandboxStatus, execute, set_parent_death_signal

__all__ = [
    "ENV_ALLOW_WEAK", "FALLBACK_NOTICE", "NOBODY", "REFUSAL", "SELF_TEST_TOKEN", "SandboxLimits", "SandboxResult",
    "SandboxStatus", "SandboxUnavailable", "WEAK_LIMITS", "WeakSandboxRefused", "build_command", "bwrap_path",
    "choose_backend", "code_sandbox", "interpreter_paths", "notice_once", "require_strong_sandbox", "run_python",
    "self_test",
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
    """Resolve "auto" to "bwrap" when bubblewrap is installed, else "unshare". Says nothing: whether the weak sandbox
    may be used, and the warning when it is, is :func:`code_sandbox`'s."""
    if backend not in ("auto", "bwrap", "unshare"):
        raise ValueError(f"unknown sandbox backend {backend!r}; choose auto, bwrap or unshare")
    if backend == "bwrap" and not bwrap_path():
        raise RuntimeError("bubblewrap (bwrap) is not installed; apt-get install bubblewrap, or use backend='unshare'")
    if backend != "auto":
        return backend
    return "bwrap" if bwrap_path() else "unshare"


ENV_ALLOW_WEAK = "JANUS_ALLOW_WEAK_SANDBOX"
WEAK_LIMITS = ("it has no mount namespace, so it cannot stop model code from writing wherever the uid it runs under "
               "may write (your own uid when janus does not run as root): your home (~/.ssh/authorized_keys, shell "
               "start-up files), the virtualenv and its site-packages (a .pth file there runs at every later Python "
               "start), the installed package, the project, its caches and the host's /tmp and /dev/shm; from reading "
               "every file that uid can read; or from connecting to the host's Unix sockets (only the network is cut)")
FALLBACK_NOTICE = ("WARNING: bubblewrap (bwrap) is not installed, so model-written code runs in the weak sandbox "
                   f"(unshare -n + rlimits + an unprivileged uid when root): {WEAK_LIMITS}. Install the Debian package "
                   "'bubblewrap' for the strong sandbox.")
REFUSAL = ("model-written code is not run: bubblewrap (bwrap) is not installed, and the weak sandbox (unshare) cannot "
           "stop it from writing your home (~/.ssh), the virtualenv and its site-packages, or from reaching host Unix "
           "sockets; install bubblewrap (apt-get install bubblewrap), or accept the weak sandbox with "
           f"--allow-weak-sandbox (settings key allow_weak_sandbox: true, or {ENV_ALLOW_WEAK}=1)")


class WeakSandboxRefused(JanusError, RuntimeError):
    """Model-written code would run in the weak sandbox (no bubblewrap) and the user did not opt in."""


class SandboxUnavailable(JanusError, RuntimeError):
    """The sandbox cannot run a known-good program on this machine (its self-test failed), or failed while running
    one; the message is one line naming the cause and the fix. A run stops on it: no answer is scored wrong
    because the sandbox, not the program, failed."""


def sandbox_notice(backend: str = "auto") -> str | None:
    """The console warning to print when ``backend`` resolves to the fallback sandbox, else None (for the CLI)."""
    if backend == "unshare" or (backend == "auto" and not bwrap_path()):
        return FALLBACK_NOTICE
    return None


def weak_sandbox_allowed() -> bool:
    """True when the user opted in to the fallback sandbox through ``JANUS_ALLOW_WEAK_SANDBOX=1``."""
    return os.environ.get(ENV_ALLOW_WEAK, "").strip().lower() in ("1", "true", "yes", "on")


def require_strong_sandbox(backend: str = "auto", *, allow_weak: bool = False) -> str:
    """Resolve ``backend`` for running untrusted model code; refuse the fallback without an opt-in.

    Returns the backend name. Raises WeakSandboxRefused (one line, naming the fix and both ways to opt in) when the
    result would be the fallback and neither ``allow_weak`` nor ``JANUS_ALLOW_WEAK_SANDBOX=1`` is given.
    """
    be = choose_backend(backend)
    if be == "unshare" and not (allow_weak or weak_sandbox_allowed()):
        raise WeakSandboxRefused(REFUSAL)
    return be


def code_sandbox(backend: str = "auto", *, allow_weak: bool = False, say=None) -> str:
    """The sandbox backend generated code may run in, proven to work on this machine: the strong sandbox
    (bubblewrap), or the weak one only with the user's opt-in (:func:`require_strong_sandbox`; its warning,
    FALLBACK_NOTICE, is said once per process through ``say``, else logged), after its self-test (:func:`self_test`,
    once per process). Raises WeakSandboxRefused or SandboxUnavailable (one line each)."""
    be = require_strong_sandbox(backend, allow_weak=allow_weak)
    if be == "unshare":
        notice_once(FALLBACK_NOTICE, say)
        self_test(be)
        return be
    try:
        self_test(be)
    except SandboxUnavailable as e:
        if not (backend == "auto" and (allow_weak or weak_sandbox_allowed())):
            raise
        # bubblewrap is installed but cannot run here (a container without user namespaces): the opt-in covers it
        notice_once(f"WARNING: {e}; the weak sandbox is used instead, as allowed: {WEAK_LIMITS}.", say)
        self_test("unshare")
        return "unshare"
    return be


_SAID: set[str] = set()


def notice_once(text: str, say=None) -> bool:
    """Say ``text`` once per process (through ``say``, else a logged warning); True when it was said now."""
    with _WARN_LOCK:
        if text in _SAID:
            return False
        _SAID.add(text)
    (say or log.warning)(text)
    return True


# ------------------------------------------------------------------------------------------- the self-test at start

SELF_TEST_TOKEN = "janus-sandbox-self-test"
_SYSTEM_DIRS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")  # bound (or linked) anyway
_NEVER_BIND = ("/", "/tmp", "/proc", "/dev", "/sys", "/sandbox", "/run")  # mounts of the sandbox's own, or too much


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _libpython() -> list[str]:
    """The shared libpython the interpreter loads (a pyenv or source build with --enable-shared keeps it under its
    prefix, found through the binary's RPATH): read from this process's own memory map."""
    found = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split(None, 5)
                path = parts[5].strip() if len(parts) == 6 else ""
                if os.path.basename(path).startswith("libpython") and os.path.isfile(path):
                    found.append(path)
    except OSError:
        pass
    return found


@functools.lru_cache(maxsize=1)
def interpreter_paths() -> tuple[str, tuple[str, ...]]:
    """The interpreter the project runs in and the paths bound read-only in the bwrap sandbox so that it runs there
    as on the host, wherever it lives (a virtual environment under /tmp, the home folder, a path with spaces):
    ``sys.prefix``, ``sys.exec_prefix``, ``sys.base_prefix``, ``sys.base_exec_prefix``, the executable, its shared
    libpython and the site-packages folders, each as given and as its real path (a venv's python is a link into the
    installation; a venv's lib64 is a link to lib). Paths under the system folders (bound anyway) and paths inside
    another bound one are left out; /, /tmp, /proc, /dev, /sys, /run and /sandbox themselves are never bound (the
    sandbox has its own)."""
    exe = sys.executable if sys.executable and os.path.exists(sys.executable) else os.path.realpath(sys.executable)
    cands = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, exe, *_libpython()]
    try:
        import site
        cands += list(site.getsitepackages())
    except (AttributeError, OSError):  # pragma: no cover - an embedded interpreter without site
        pass
    paths: set[str] = set()
    for c in cands:
        if not c:
            continue
        for p in (os.path.abspath(c), os.path.realpath(c)):
            if os.path.exists(p) and p not in _NEVER_BIND and not any(_under(p, d) for d in _SYSTEM_DIRS):
                paths.add(p)
    roots: list[str] = []
    for p in sorted(paths, key=lambda x: (x.count("/"), x)):
        if not any(_under(p, r) for r in roots):
            roots.append(p)
    return exe, tuple(roots)  # cached once per process: immutable


def _python() -> tuple[str, tuple[str, ...]]:
    return interpreter_paths()


def _bind_readable(path: str, made: set[str] | None = None) -> list[str]:
    """bwrap arguments binding ``path`` read-only, its parent folders created traversable (0755): a folder such as
    /root is 0700 on the host, and the sandbox's uid could not reach an interpreter under it (it then ran the system
    Python, without the project's packages). ``made``: parent folders already created by earlier binds (and /tmp,
    the sandbox's own tmpfs, whose mode 1777 must stay, is never recreated)."""
    made = made if made is not None else set()
    args, parts = [], path.strip("/").split("/")
    for i in range(1, len(parts)):
        parent = "/" + "/".join(parts[:i])
        if parent in made or parent == "/tmp":
            continue
        made.add(parent)
        args += ["--perms", "0755", "--dir", parent]
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
        cmd: list[str] = [bwrap_path(), "--ro-bind", "/usr", "/usr"]  # type: ignore[list-item]  # (bwrap is there)
        for d in ("/lib", "/lib64", "/bin", "/sbin"):
            if os.path.islink(d):
                cmd += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                cmd += ["--ro-bind", d, d]
        # the sandbox's own /tmp, /proc, /dev and /sandbox first: the interpreter's binds come after them, so a
        # virtual environment under /tmp is bound on top of the fresh tmpfs instead of being hidden by it
        cmd += ["--size", str(lim.tmpfs_bytes), "--perms", "1777", "--tmpfs", "/tmp",
                "--proc", "/proc", "--dev", "/dev", "--ro-bind", str(workdir), "/sandbox"]
        made: set[str] = set()
        for root in roots:
            cmd += _bind_readable(root, made)
        cmd += ["--chdir", "/tmp",
                "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--die-with-parent", "--new-session", "--clearenv", "--setenv", "HOME", "/tmp",
                "--setenv", "PATH", "/usr/bin:/bin"]
        if os.geteuid() != 0:
            cmd += ["--unshare-user"]
        cmd += _drop_privs(uid) + py + ["/sandbox/prog.py"]
        return _rlimit_args(lim) + cmd, None, {}
    # fallback: unshare -n (network) + rlimits + nobody + private cwd
    un = shutil.which("unshare") or ""
    ns = ["-n", "-p", "-f", "--kill-child"]  # new net + pid namespace: the whole tree dies with its init
    pre = [un, *ns, "--"] if un and os.geteuid() == 0 else ([un, "-r", *ns, "--"] if un else [])
    # no mount namespace here: the interpreter is the installation's own binary (a venv's link could not be followed
    # into a folder the sandbox uid cannot read); sandbox_python() says which Python actually ran
    py = [os.path.realpath(sys.executable)] + py[1:]
    cmd = _rlimit_args(lim) + pre + _drop_privs(uid) + py + [str(workdir / "prog.py")]
    return cmd, str(workdir / "scratch"), {"HOME": str(workdir / "scratch"), "PATH": "/usr/bin:/bin"}


# ------------------------------------------------------------------------------------------- the self-test at start

SELF_TEST_TOKEN = "janus-sandbox-self-test"
_PROBE = ("import json, sys\ntry:\n    import numpy\n    np = numpy.__version__\nexcept Exception:\n    np = None\n"
          f"print({SELF_TEST_TOKEN!r}, json.dumps({{'version': sys.version.split()[0], 'prefix': sys.prefix, "
          "'base_prefix': sys.base_prefix, 'executable': sys.executable, 'numpy': np}))\n")
_SELF_TESTS: dict[str, dict] = {}
_SELF_LOCK = threading.Lock()


def _host_numpy() -> str | None:
    try:
        import numpy
        return numpy.__version__
    except ImportError:
        return None


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


def _diagnose(res: SandboxResult) -> str:
    """Why the known-good program did not run, and the fix (one line)."""
    err = res.stderr or ""
    exe = os.path.realpath(sys.executable)
    if res.status == "timeout":
        return ("the known-good program did not finish within its time limit (an overloaded machine, or a sandbox "
                "that hangs); start the run again when the machine is less busy")
    if re.search(r"(No permissions to creat|Creating new namespace failed|setting up uid map|Operation not permitted"
                 r"|unshare failed|cannot open /proc/self/uid_map)", err):
        return (f"bubblewrap cannot create its namespaces here ({_last_line(err)}): unprivileged user namespaces are "
                "off, or a container forbids them; allow them (sysctl kernel.unprivileged_userns_clone=1, or run the "
                "container with --security-opt seccomp=unconfined), or accept the weak sandbox with "
                "--allow-weak-sandbox")
    if "No such file or directory" in err and re.search(r"(failed to execute|execvp|Can't find|can't open)", err):
        return (f"the interpreter is not visible inside the sandbox ({_last_line(err)}); run janus from a Python "
                f"installed outside the sandbox's own folders (/tmp itself, /proc, /dev, /run), not {exe}, or accept "
                "the weak sandbox with --allow-weak-sandbox")
    if "Permission denied" in err:
        return (f"the sandbox's user cannot read the interpreter ({_last_line(err)}): a folder of {sys.prefix} or "
                f"{sys.base_prefix} is private; make it readable by others (chmod o+rX), or run janus from another "
                "Python, or accept the weak sandbox with --allow-weak-sandbox")
    return (f"the known-good program failed (status {res.status}, exit code {res.returncode}: "
            f"{_last_line(err) or 'no output'}); check that `{exe} -I -c pass` runs, and that bubblewrap works "
            "(`bwrap --ro-bind / / true`)")


def _run_self_test(be: str) -> dict:
    import json

    res = run_python(_PROBE, backend=be, limits=SandboxLimits(wall_s=30.0, cpu_s=20))
    info: dict = {"backend": be, "status": res.status, "wall_s": round(res.wall_s, 3)}
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith(SELF_TEST_TOKEN + " ")), None)
    if res.status != "passed" or line is None:
        info.update({"version": None, "prefix": None, "base_prefix": None, "numpy": None, "same_as_host": False,
                     "cause": _diagnose(res), "error": res.stderr[-300:]})
        return info
    try:
        info.update(json.loads(line[len(SELF_TEST_TOKEN) + 1:]))
    except ValueError:
        info.update({"same_as_host": False,
                     "cause": "the known-good program printed an unreadable report (" + line[:100] + ")"})
        return info
    host_np = _host_numpy()
    info["same_as_host"] = (info.get("version") == sys.version.split()[0]
                            and info.get("base_prefix") == sys.base_prefix and info.get("numpy") == host_np)
    info["cause"] = None
    if not info["same_as_host"]:
        seen = (f"Python {info.get('version')} from {info.get('prefix')} (numpy {info.get('numpy') or 'missing'}), "
                f"not this Python {sys.version.split()[0]} from {sys.prefix} (numpy {host_np or 'missing'})")
        if be == "bwrap":  # the strong sandbox binds the installation: a difference means it is not reachable there
            info["cause"] = (f"the sandbox runs {seen}: the installation is not fully readable inside it; make "
                             f"{sys.prefix} and {sys.base_prefix} readable by others (chmod o+rX), or run janus from "
                             "another Python")
        else:  # the weak sandbox has no mount namespace: an interpreter under a private folder is not reachable
            info["warning"] = (f"the weak sandbox runs {seen} (its uid cannot reach this interpreter): solutions that "
                               "import numpy or rely on this Python's version fail there; install bubblewrap")
    return info


def self_test(backend: str = "auto", *, refresh: bool = False) -> dict:
    """Prove that ``backend`` runs a known-good program on this machine with the project's interpreter (numpy
    importable when the host has it); the result is cached per process (``refresh`` runs it again). Returns the
    probe: ``version``, ``prefix``, ``base_prefix``, ``executable``, ``numpy``, ``same_as_host``, ``wall_s``.
    Raises SandboxUnavailable, one line naming the cause and the fix, when it fails. The weak sandbox passes when the
    program runs; a different Python there is a warning said once (``warning``)."""
    be = choose_backend(backend)
    with _SELF_LOCK:
        if refresh or be not in _SELF_TESTS:
            _SELF_TESTS[be] = _run_self_test(be)
        info = dict(_SELF_TESTS[be])
    if info.get("cause"):
        raise SandboxUnavailable(printable(f"the sandbox ({be}) cannot run Python on this machine: {info['cause']}",
                                           one_line=True))
    if info.get("warning"):
        notice_once(info["warning"])
    return info


def sandbox_python(backend: str = "auto") -> dict:
    """Which Python runs model code in ``backend`` (the self-test's probe, cached per process; never raises):
    ``version``, ``prefix``, ``base_prefix``, ``numpy`` (its version, or None when it cannot be imported there),
    ``same_as_host`` (same version and installation as the Python the project runs in, numpy importable when the host
    has it) and ``cause`` (why the self-test failed, else None)."""
    be = choose_backend(backend)
    try:
        return self_test(be)
    except SandboxUnavailable:
        return dict(_SELF_TESTS[be])


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
