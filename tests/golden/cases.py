"""Golden fake-backend runs: the stream loop's exact outputs, recorded before the runner redesign.

The five cases without the ``paper_`` prefix were recorded before the redesign and before the paper preset; they run
with LEGACY options (the old behaviour, spelled out) and must stay byte-identical. The ``paper_`` cases were recorded
with the paper preset. ``python tests/golden/cases.py [NAME ...]`` (with PYTHONPATH=src) re-records;
tests/e2e/test_golden.py re-runs every case and compares the exported decisions.jsonl / steps.jsonl / test.jsonl bytes
and the summary numbers (wall-clock dropped).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMON = ["--backend", "fake", "--encoder", "hashing", "--quiet", "--stream-size", "25", "--test-size", "8",
          "--warmup", "4", "--coverage-size", "2", "--boundary-size", "2", "--fresh-size", "2"]
# the runner's behaviour before the paper preset, spelled out as explicit options: our small-model updater
# settings, the paper JanusConfig switches with the identical-memory shortcut on, and frozen (cached) replays
# (--clustering sklearn: the paper preset's k-means is the authors' kmeans_pytorch behaviour)
LEGACY = ["--preset", "small", "--janus-preset", "paper", "--same-memory-shortcut", "on", "--replay", "frozen",
          "--clustering", "sklearn"]
CASES: dict[str, list[str]] = {
    # MMT trigger on GSM8K, DC-RS with and without Janus, two memory checkpoints
    "gsm8k_dc_rs_both": [*LEGACY, "--dataset", "gsm8k", "--updater", "dc_rs", "--controller", "both", "--checkpoints", "0.4,0.8"],
    # every post-warm-up step triggers: many rollbacks for ExpeL
    "gsm8k_expel_always": [*LEGACY, "--dataset", "gsm8k", "--updater", "expel", "--controller", "janus", "--trigger", "always"],
    # DC-Cu on APIBench (AST-matched answers), random trigger
    "apibench_dc_cu_both": [*LEGACY, "--dataset", "apibench_hf", "--updater", "dc_cu", "--controller", "both",
                            "--trigger", "random", "--seed", "1"],
    # the two baselines, no controller
    "gsm8k_exprag": [*LEGACY, "--dataset", "gsm8k", "--updater", "exprag", "--controller", "none"],
    "mmlu_memory_free": [*LEGACY, "--dataset", "mmlu_pro_eng", "--updater", "memory_free", "--controller", "none"],
    # the paper preset (default of `janus run`): paper prompts, first-block extraction, the
    # task prompt to the curator, presence penalty, fresh replay draws, shortcut off
    "paper_gsm8k_dc_rs_both": ["--dataset", "gsm8k", "--updater", "dc_rs", "--controller", "both"],
    "paper_gsm8k_expel_always": ["--dataset", "gsm8k", "--updater", "expel", "--controller", "janus",
                                 "--trigger", "always"],
}
FILES = ("decisions.jsonl", "steps.jsonl", "test.jsonl", "final_memory.txt")
# wall clock, and the cached responses' token counts (added after recording; checked in tests/test_cli_cost.py)
_WALL = ("wall_s", "hit_prompt_tokens", "hit_completion_tokens")


def _strip_wall(obj):
    if isinstance(obj, dict):
        return {k: _strip_wall(v) for k, v in obj.items() if k not in _WALL}
    if isinstance(obj, list):
        return [_strip_wall(v) for v in obj]
    return obj


def summary_numbers(run: Path) -> dict:
    """summary.json without wall-clock fields, the absolute run folder and the resumed marker."""
    s = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    s.pop("run_dir", None)
    s.pop("resumed", None)  # a resumed run says so (its "calls paid" note); the numbers are what is compared
    s.pop("answered_by", None)  # responses per answering model, live or cached: depends on the cache, not the run
    return _strip_wall(s)


def run_case(name: str, tmp: Path) -> Path:
    """Run one case into ``tmp/<name>`` with an isolated LLM cache; returns the run folder."""
    from janus_memory.cli import main

    old = os.environ.get("JANUS_CACHE_DIR")
    os.environ["JANUS_CACHE_DIR"] = str(tmp / f"cache-{name}")
    try:
        out = tmp / name
        rc = main(["run", *COMMON, *CASES[name], "--out", str(out)])
    finally:
        if old is None:
            os.environ.pop("JANUS_CACHE_DIR", None)
        else:
            os.environ["JANUS_CACHE_DIR"] = old
    if rc != 0:
        raise RuntimeError(f"golden case {name} exited {rc}")
    return out


def outputs(run: Path) -> dict[str, bytes]:
    """{relative path: bytes} of every compared file of a finished run."""
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    out = {}
    for method in summary["methods"]:
        for f in FILES:
            out[f"{method}/{f}"] = (run / method / f).read_bytes()
    out["summary.json"] = (json.dumps(summary_numbers(run), indent=1, sort_keys=True) + "\n").encode()
    return out


def record(tmp: Path, names: list[str] | None = None) -> None:
    for name in names or CASES:
        files = outputs(run_case(name, tmp))
        for rel, data in files.items():
            p = HERE / name / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        print(name, len(files), "files")


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        record(Path(d), sys.argv[1:] or None)
    sys.exit(0)
