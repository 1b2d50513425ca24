"""The sandbox runs wherever the interpreter lives: HumanEval's canonical solutions from virtual environments.

Two modes:

* ``check`` (run with the interpreter under test): the sandbox's self-test, then the canonical solutions of the 164
  HumanEval problems (or the first ``--n``) scored through ``HumanEvalFamily.score_many``; prints one line of counts
  and exits 1 unless every solution passed (a sandbox failure stops the check with its one-line message, exit 2).
* ``venvs`` (the driver): makes a virtual environment (``python -m venv --system-site-packages --without-pip``, so
  janus and numpy come from this Python's site-packages) under each given folder and runs ``check`` with it,
  ``PYTHONPATH`` set to this checkout's ``src``.

    python benchmarks/probes/sandbox_venvs.py venvs /tmp/janus-venv-tmp ~/janus-venv-home "/tmp/janus venv spaces"

Prints one line per venv and exits 1 when any failed. The suite runs a small version of this
(tests/tasks/test_sandbox_venvs.py); the full 164 x 3 is this command (docs/tasks.md, the sandbox section).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def check(n: int | None, workers: int) -> int:
    from janus_memory.errors import JanusError
    from janus_memory.tasks import get_family, load_split
    from janus_memory.tasks.sandbox import interpreter_paths, self_test

    t0 = time.monotonic()
    tasks = load_split("humaneval", "all").tasks[:n]
    fam = get_family("humaneval")
    try:
        info = self_test()
        scores = fam.score_many(tasks, ["```python\n" + t.meta["prompt"] + t.gold + "```" for t in tasks],
                                workers=workers)
    except JanusError as e:
        print(f"prefix={sys.prefix!r} sandbox unavailable: {e}")
        return 2
    passed = sum(s.correct for s in scores)
    reasons: dict[str, int] = {}
    for s in scores:
        if not s.correct:
            reasons[s.detail.get("reason", "?")] = reasons.get(s.detail.get("reason", "?"), 0) + 1
    print(f"prefix={sys.prefix!r} python={info['version']} numpy={info['numpy']} binds={interpreter_paths()[1]} "
          f"passed={passed}/{len(tasks)} failed_by_reason={reasons} wall={time.monotonic() - t0:.1f}s")
    return 0 if passed == len(tasks) else 1


def venvs(folders: list[str], n: int | None, workers: int) -> int:
    bad = 0
    for folder in folders:
        venv = Path(folder).expanduser()
        if not (venv / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                           check=True)
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        cmd = [str(venv / "bin" / "python"), __file__, "check", "--workers", str(workers)]
        if n:
            cmd += ["--n", str(n)]
        rc = subprocess.run(cmd, env=env).returncode
        bad += rc != 0
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("check", help="score the canonical solutions with this interpreter")
    v = sub.add_parser("venvs", help="make a venv under each folder and run check with it")
    v.add_argument("folders", nargs="+")
    for p in (c, v):
        p.add_argument("--n", type=int, default=None, help="only the first N problems (default: all 164)")
        p.add_argument("--workers", type=int, default=2)
    a = ap.parse_args(argv)
    return check(a.n, a.workers) if a.mode == "check" else venvs(a.folders, a.n, a.workers)


if __name__ == "__main__":
    sys.exit(main())
