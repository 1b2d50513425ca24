"""The measured speed of the embedded model on this machine: ``$JANUS_CACHE_DIR/timings.json`` (default
``~/.cache/janus-memory/timings.json``), written at the end of every finished local-backend run and read by the
time estimate a run prints at its start (run/estimate.py).

One entry per (GGUF identity, llama.cpp slots, host name) keeps the last :data:`KEEP` runs, each as the backend
calls it made (cache hits excluded), the model's busy time over those calls and the tokens they generated. The busy
time is the union of the intervals of the calls that returned a reply (llm/usage.py ``busy_seconds``) minus the model
load: not the run's wall time, which also holds start-up, the encoder, cache hits, scoring and waiting. A run with
fewer than :data:`MIN_CALLS` calls (a resume that only finished a test, a re-run served by the cache) is not a
measurement and is neither written nor read. The measurement is the mean over the kept runs: seconds per call =
total busy seconds / total calls, tokens/s = total tokens / total busy seconds.

The file is a convenience: an unreadable, corrupt or foreign file (including format 1, which recorded wall time) is
ignored (no measurement; the next run writes a fresh one), and a file that cannot be written is skipped without an
error. Writers take an exclusive lock on ``timings.json.lock`` for the read-modify-write and replace the file
atomically, so concurrent runs (a sweep's workers) lose no record and a reader never sees half a file.
"""
from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

from ..store.jsonio import atomic_write_text

FORMAT = 2  # 1 recorded the wall time inside LLM calls (cache hits and queueing included): not read any more
KEEP = 5  # runs kept per model and machine (older ones are dropped: the machine's load changes)
MIN_CALLS = 10  # fewer calls in one run are not a measurement (the first call's prompt processing dominates)


@dataclass(frozen=True)
class Measurement:
    """Mean speed over ``runs`` earlier runs: ``s_per_call`` seconds per backend call, ``tokens_per_s`` generated
    tokens per second, ``calls`` backend calls measured."""

    s_per_call: float
    tokens_per_s: float
    runs: int
    calls: int


def record_path() -> Path:
    base = os.environ.get("JANUS_CACHE_DIR")
    return (Path(base) if base else Path.home() / ".cache" / "janus-memory") / "timings.json"


def machine_key(identity: str, n_parallel: int) -> str:
    """The entry of one model file (backend identity: name, size, fingerprint), slot count and host."""
    return f"{identity}|n_parallel={int(n_parallel)}|host={platform.node()}"


MAX_CALLS = 10_000_000  # per recorded run
MIN_S_PER_CALL, MAX_S_PER_CALL = 1e-6, 86_400.0  # a recorded mean outside this is not a measurement


def _valid_run(r) -> bool:
    if not isinstance(r, dict):
        return False
    calls, busy, tokens = r.get("calls"), r.get("busy_s"), r.get("completion_tokens")
    ints = all(isinstance(x, int) and not isinstance(x, bool) for x in (calls, tokens))
    if not (ints and isinstance(busy, (int, float)) and not isinstance(busy, bool) and math.isfinite(busy)):
        return False
    # plausible bounds: a hand-edited or hostile record must not print "~inf h" or a 300-digit rate
    return (MIN_CALLS <= calls <= MAX_CALLS and 0 <= tokens <= MAX_CALLS * 1_000_000  # type: ignore[operator]  # ints, checked above
            and MIN_S_PER_CALL <= busy / calls <= MAX_S_PER_CALL)  # type: ignore[operator]


def _load(path: Path) -> dict:
    """The record file's entries ``{key: [run, ...]}``; {} when missing, unreadable or not in this format."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: hostile nesting
        return {}
    if (not isinstance(data, dict) or type(data.get("format")) is not int or data["format"] != FORMAT
            or not isinstance(data.get("models"), dict)):
        return {}
    return {k: [r for r in v if _valid_run(r)] for k, v in data["models"].items() if isinstance(v, list)}


def read_measurement(identity: str, n_parallel: int = 1, path: Path | None = None) -> Measurement | None:
    """The measured speed of this model on this machine, or None (no usable record)."""
    runs = _load(path or record_path()).get(machine_key(identity, n_parallel), [])
    runs = runs[-KEEP:]
    if not runs:
        return None
    calls = sum(r["calls"] for r in runs)
    busy = sum(float(r["busy_s"]) for r in runs)
    tokens = sum(r["completion_tokens"] for r in runs)
    return Measurement(s_per_call=busy / calls, tokens_per_s=tokens / busy, runs=len(runs), calls=calls)


def record_run(identity: str, n_parallel: int, *, calls: int, busy_s: float, completion_tokens: int,
               path: Path | None = None) -> bool:
    """Add one finished run's measurement (True when written): ``calls`` backend calls (cache hits excluded) that
    kept the model busy ``busy_s`` seconds and generated ``completion_tokens``. Nothing is written for a run with
    fewer than MIN_CALLS calls or with invalid numbers; an unwritable folder returns False."""
    run = {"calls": int(calls), "busy_s": round(float(busy_s), 3), "completion_tokens": int(completion_tokens),
           "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if not _valid_run(run):
        return False
    path = path or record_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_name(path.name + ".lock"), "a+b") as lock:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
            models = _load(path)
            key = machine_key(identity, n_parallel)
            models[key] = (models.get(key, []) + [run])[-KEEP:]
            atomic_write_text(path, json.dumps({"format": FORMAT, "models": models}, indent=1, sort_keys=True) + "\n")
    except OSError:
        return False
    return True
