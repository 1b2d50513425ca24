"""Does a model follow an instruction planted in its memory? For each poison template (``janus run --inject
poison``), solve the same held-out tasks with a run's cheatsheet as it is and with the template planted on top (as the
injection writes it: janus_memory.inject.candidates.poisoned_cheatsheet), and count the answers the planted line
turned wrong.

Why it matters: Janus can only block a harmful candidate that E can tell apart from the old memory. If the
model ignores the planted instruction, the poisoned memory scores like the clean one, the tie goes to the new memory,
and no selective controller can (or should) roll it back. Run this on your model before reading a `--inject poison`
table: it says whether the poison is harmful to that model at all.

Usage (``benchmarks/probes/poison_follow.py`` runs the same):
  python -m janus_memory.report.poison_follow RUN_DIR [--method dc_rs] [--step K] [--split test|stream] [--tasks N]
                                              [--templates 0,2] [--extra FILE] [--cache-dir DIR]

RUN_DIR is a finished or interrupted DC-RS / DC-Cu run: its stored settings give the backend, prompts and dataset,
and its response cache is used (an identical request is not paid twice); the sheet is the method's memory at step K
(default: its last; a sheet that already holds an injected poison is refused). Tasks are the first N of the split
(default: the 3 held-out test tasks). Solving is frozen with the run's final updater state restored, so the prompt is
the test phase's (DC-RS: with the examples retrieved from the run's bank); with the last sheet and the test split the
clean answers are the run's own test answers, read from its response cache. ``--extra FILE``: more instructions to
try, one per line.

Prints one row per instruction: of the tasks the clean sheet answered correctly (only those are solved again, with
the poisoned sheet), how many are still correct and how many the planted line turned wrong ("followed"); then the
total with a Wilson 95% interval. The pairs share tasks (every instruction is tried on the same ones), so they are
not independent draws: read the interval as a rough guide, and measure on more tasks (--tasks) for a firm number.
Measured on the embedded model -> docs/experiments.md ("Does the model follow a planted instruction?").
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from janus_memory.errors import ConfigError, OutputError, RunFolderError
from janus_memory.inject.candidates import poisoned_cheatsheet, templates
from janus_memory.report.paired import wilson
from janus_memory.run.build import build_context, load_splits
from janus_memory.run.resume import load_run_config
from janus_memory.store.reader import RunReader

CHEATSHEET_UPDATERS = ("dc_rs", "dc_cu")


def sheet_at(reader: RunReader, method: str, step: int | None) -> tuple[int, str]:
    """(step, text) of the method's memory version in force at ``step`` (None: the last one)."""
    try:
        all_versions = reader.memory_versions()[0]
    except RunFolderError as e:
        raise SystemExit(f"error: {e}") from None
    versions = all_versions.get(method)
    if not versions:
        raise SystemExit(f"error: {reader.root} has no memory versions of method {method!r}; it has: "
                         f"{', '.join(sorted(all_versions)) or 'none'}")
    last = max(v["step"] for v in versions)
    if step is not None and step > last:
        raise SystemExit(f"error: {method} has no step {step}; its last memory version is of step {last}")
    chosen = [v for v in versions if step is None or v["step"] <= step]
    if not chosen:
        raise SystemExit(f"error: {method} has no memory version at or before step {step}")
    v = max(chosen, key=lambda v: v["step"])
    return v["step"], v["text"]


def injected_steps(reader: RunReader, method: str) -> list[int]:
    """Steps whose decision-log line is marked as an injected candidate."""
    try:
        return sorted(d["step"] for d in reader.decisions(method) if d.get("injected"))
    except (RunFolderError, KeyError, TypeError):
        return []


def instructions(which: str | None, extra: str | None) -> list[tuple[str, str]]:
    """(label, instruction) pairs: the package's poison templates (all, or the comma-separated indices in
    ``which``), then every non-empty line of the ``extra`` file."""
    pool = templates()["poison"]
    if which:
        try:
            idx = [int(x) for x in which.split(",")]
        except ValueError:
            raise SystemExit(f"error: --templates takes comma-separated indices 0..{len(pool) - 1}, got {which!r}") from None
        bad = [i for i in idx if not 0 <= i < len(pool)]
        if bad:
            raise SystemExit(f"error: no poison template {bad[0]} (there are {len(pool)}: 0..{len(pool) - 1})")
    else:
        idx = list(range(len(pool)))
    idx = list(dict.fromkeys(idx))  # an index given twice is measured once
    out = [(f"template {i}", pool[i]) for i in idx]
    if extra:
        try:
            text = Path(extra).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise SystemExit(f"error: cannot read --extra {extra}: {e}") from None
        lines = list(dict.fromkeys(ln.strip() for ln in text.splitlines() if ln.strip()))
        if not lines:
            raise SystemExit(f"error: --extra {extra} holds no instruction (one per line)")
        out += [(f"extra {n}", ln) for n, ln in enumerate(lines)]
    return out


def measure(run: Path, *, method: str = "dc_rs", step: int | None = None, split: str = "test", n_tasks: int = 3,
            which: str | None = None, extra: str | None = None, cache_dir: str | None = None, log=None) -> dict:
    log = log or (lambda m: print(m, flush=True))  # one line per instruction as it is measured, also into a file
    if not (Path(run) / "config.json").is_file() and not (Path(run) / "run.sqlite").is_file():
        raise SystemExit(f"error: {run} is not a janus run folder (no config.json or run.sqlite)")
    try:
        cfg = load_run_config(run)
    except (ConfigError, OutputError, RunFolderError) as e:
        raise SystemExit(f"error: {e}") from None
    if cfg.updater not in CHEATSHEET_UPDATERS:
        raise SystemExit(f"error: {run} runs updater {cfg.updater!r}; this probe plants a line in a cheatsheet "
                         f"({', '.join(CHEATSHEET_UPDATERS)})")
    instructions(which, extra)  # argument errors before any model call
    reader = RunReader(run)
    at, clean = sheet_at(reader, method, step)
    injected = injected_steps(reader, method)
    planted = templates()["dc_poison_header"]
    if planted in clean:
        before = [s for s in injected if s <= at]
        raise SystemExit(f"error: the {method} sheet of step {at} already holds an injected poison "
                         f"(injected at step {before[-1] if before else '?'}); choose --step before that step")
    stream, test = load_splits(cfg)
    tasks = list((test if split == "test" else stream).tasks)[:n_tasks]
    if not tasks:
        raise SystemExit(f"error: the run's {split} split has no tasks")
    ctx = build_context(cfg, log=lambda m: None, splits=(stream, test))
    up = ctx.make_updater()
    try:
        ck = reader.checkpoint(method)
    except RunFolderError as e:
        raise SystemExit(f"error: {e}") from None
    if ck is not None:  # the run's retrieval bank: the same prompt as its test phase (retrieved examples included)
        up.load_snapshot(ck[1]["updater"])

    def solve(sheet: str, which: list) -> list[bool]:
        up.cheatsheet = sheet
        return [bool(score.correct) for _, score in up.solve_frozen(which, role="test")]

    base = solve(clean, tasks)
    solved = [t for t, ok in zip(tasks, base) if ok]  # only these can show a followed instruction
    log(f"{run}: {method} sheet of step {at} ({len(clean)} chars), {len(tasks)} {split} tasks "
        f"({', '.join(t.id for t in tasks)}); clean sheet: {sum(base)}/{len(tasks)} correct")
    rows: list[dict[str, Any]] = []
    for label, text in instructions(which, extra):
        got = solve(poisoned_cheatsheet(clean, text), solved) if solved else []
        rows.append({"label": label, "instruction": text, "clean": len(solved), "poisoned": sum(got),
                     "followed": len(solved) - sum(got)})
        log(f"  {label:<11} still correct {sum(got)}/{len(solved)}  followed {len(solved) - sum(got)}/{len(solved)}"
            f"  {text[:70]}{'...' if len(text) > 70 else ''}")
    f, n = sum(r["followed"] for r in rows), sum(r["clean"] for r in rows)
    lo, hi = wilson(f, n)
    log(f"followed: {f} of {n} (instruction, task) pairs the clean sheet answered correctly "
        f"({f / n:.0%}, Wilson 95% [{lo:.0%}, {hi:.0%}])" if n else
        "followed: no task was answered correctly with the clean sheet; nothing to measure")
    return {"step": at, "tasks": [t.id for t in tasks], "clean": base, "rows": rows, "followed": f, "pairs": n,
            "interval": (lo, hi)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run")
    ap.add_argument("--method", default="dc_rs")
    ap.add_argument("--step", type=int, default=None)
    ap.add_argument("--split", choices=("test", "stream"), default="test")
    ap.add_argument("--tasks", type=int, default=3)
    ap.add_argument("--templates", default=None, help="comma-separated template indices (default: all)")
    ap.add_argument("--extra", default=None, help="a file of more instructions, one per line")
    ap.add_argument("--cache-dir", default=None, help="response cache (default: the run's)")
    a = ap.parse_args(argv)
    if a.tasks < 1:
        ap.error("--tasks must be >= 1")
    try:
        measure(Path(a.run), method=a.method, step=a.step, split=a.split, n_tasks=a.tasks, which=a.templates,
                extra=a.extra, cache_dir=a.cache_dir)
    except KeyboardInterrupt:
        print("interrupted; the answers so far are in the response cache, so a rerun pays only for the rest",
              file=sys.stderr)
        return 130
    except BrokenPipeError:  # | head: stop quietly (stdout pointed at /dev/null so the exit flush cannot fail)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return 0


if __name__ == "__main__":
    sys.exit(main())
