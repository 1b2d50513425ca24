"""Probe: on a finished DC run's own memories, would the MMT condition cos(z_t, m_{t-1}) < tau hold for each
injected kind at each post-warm-up step? Offline (the run's stored memory versions + the MiniLM encoder; no LLM).

The momentum follows the controller's rule (controller/trigger.py): untouched during warm-up, ``m := z`` at the
first post-warm-up step, then ``m_t = beta * m_{t-1} + (1 - beta) * z_t`` with the genuine (deployed) update of the
method given. At each later step it prints the cosine of the genuine update and of every kind of injected candidate
built from the previous memory (``inject.candidates.harmful_candidate``; for ``dump`` the retrieved-pairs block is
rebuilt approximately from the step's retrieved task ids and the run's own outputs, cut to 300 characters as the
demo's DC-RS does). At a step where the run itself injected a candidate, "genuine" is that injected candidate.

Usage: python benchmarks/probes/probe_run_trigger.py RUN_DIR [--method dc_rs] [--warmup 3] [--beta 0.9] [--tau 0.0]
Measured on the demo (`janus demo`, 2026-12-01, DC-RS blind memories, warm-up 3) -> docs/measurements.md, "MMT on
the demo's short stream".
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from janus_memory.controller.trigger import cosine, momentum_update
from janus_memory.encoders import get_encoder
from janus_memory.inject.candidates import KINDS, harmful_candidate
from janus_memory.store.reader import RunReader
from janus_memory.tasks.data import find_source, read_jsonl
from janus_memory.values import Task


def _tasks(run: Path, data_dir: str | None) -> dict[str, str]:
    """Stream task id -> question (GSM8K-style jsonl files named in splits.json)."""
    split = json.loads((run / "splits.json").read_text())["stream"]
    rows = []
    for f in split["files"]:
        p = Path(f["path"])
        p = p if p.exists() else find_source(data_dir, f"{p.parent.name}/{p.name.removesuffix('.xz')}", "stream file")
        rows += read_jsonl(p)
    return {tid: rows[int(tid.split(":")[1])]["question"] for tid in split["ids"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run")
    ap.add_argument("--method", default="dc_rs")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--beta", type=float, default=0.9)
    ap.add_argument("--tau", type=float, default=0.0)
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--data-dir", default=None, help="default: JANUS_DATA_DIR, else the data shipped in the package")
    a = ap.parse_args()
    run = Path(a.run)
    reader = RunReader(run)
    texts = {v["step"]: v["text"] for v in reader.memory_versions()[0][a.method]}
    steps = {r["step"]: r for r in (json.loads(x) for x in (run / a.method / "steps.jsonl").open())}
    questions = _tasks(run, a.data_dir)
    enc = get_encoder(a.encoder)
    last = max(steps)
    for s in range(1, last + 1):  # a step whose memory did not change stores no version: carry the previous one
        texts.setdefault(s, texts[s - 1])
    vec = {s: enc.encode([texts[s]])[0] for s in range(last + 1)}
    m, fired = None, {k: 0 for k in ("genuine",) + KINDS}
    n = 0
    print(f"run {run} method {a.method} warm-up {a.warmup} beta {a.beta} tau {a.tau} encoder {a.encoder}")
    for s in range(1, last + 1):
        z = vec[s] - vec[s - 1]
        if s > a.warmup and m is not None:
            rec = steps[s]
            task = Task(rec["task_id"], "probe", questions[rec["task_id"]], "")
            block = "\n\n".join(f"#### Question\n{questions[h['id']]}\n#### Solution\n{steps_out(steps, h['id'])}"
                                for h in rec["info"].get("retrieved", []))
            mark = f"(injected {rec['info']['injected']['kind']})" if "injected" in rec["info"] else ""
            row = [f"step {s:>3}: genuine{mark} {cosine(z, m):+.3f}"]
            fired["genuine"] += cosine(z, m) < a.tau
            for k in KINDS:
                cand = harmful_candidate(k, texts[s - 1], task, updater_kind="dc_rs", seed=0, step=s, examples=block)
                c = cosine(enc.encode([cand])[0] - vec[s - 1], m)
                fired[k] += c < a.tau
                row.append(f"{k} {c:+.3f}")
            print("  ".join(row))
            n += 1
        if s > a.warmup:
            m = momentum_update(m, z, a.beta)
    print(f"steps probed: {n}; condition held (cos < tau): " + ", ".join(f"{k} {v}/{n}" for k, v in fired.items()))


def steps_out(steps: dict, task_id: str) -> str:
    for r in steps.values():
        if r["task_id"] == task_id:
            return str(r.get("output", ""))[:300]
    return ""


if __name__ == "__main__":
    main()
