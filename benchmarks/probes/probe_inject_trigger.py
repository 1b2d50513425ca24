"""Probe: would the MMT trigger condition (cos(z_t, m_{t-1}) < 0) fire on injected candidates? Real DC-Cu sheets
(dc-trajectories, AIME, Claude 3.5 Sonnet), MiniLM, steps 6-17, momentum = beta-EMA (0.9) of the genuine z_t from step 1
(an approximation of the controller's MomentumTracker, no warm-up handling). Measured once (loaded 2-core machine,
~7 min): genuine rewrites 7/12, wipe 12/12, dump 12/12, overfit 12/12, poison 10/12, truncate 11/12.
Run: python benchmarks/probes/probe_inject_trigger.py"""

import numpy as np

from janus_memory.encoders import get_encoder
from janus_memory.inject.candidates import KINDS, harmful_candidate
from janus_memory.tasks.data import find_source, read_jsonl
from janus_memory.values import Task

rows = read_jsonl(find_source(None, "dc-trajectories/aime_2025_claude-3-5-sonnet_dc-cu.jsonl", "DC-Cu trajectory"))
enc = get_encoder("minilm")
sheets = [r["previous_cheatsheet"] for r in rows]
E = enc.encode(sheets)
beta = 0.9
m = None
fired = {k: 0 for k in KINDS}
genuine = n = 0


def cos(a, b) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12))


for t in range(1, len(rows)):
    z = E[t] - E[t - 1]
    if t >= 6:
        task = Task(f"aime/{t}", "aime", rows[t]["question"], str(rows[t]["target"]))
        old = sheets[t - 1]
        cands = [harmful_candidate(k, old, task, updater_kind="dc_cu", seed=0, step=t,
                                   answer=rows[t - 1]["model_answer"] or "") for k in KINDS]
        for k, v in zip(KINDS, enc.encode(cands)):
            fired[k] += cos(v - E[t - 1], m) < 0
        genuine += cos(z, m) < 0
        n += 1
    m = z if m is None else beta * m + (1 - beta) * z
    if n >= 12:
        break
print("steps", n, "genuine fired", genuine, "injected fired", fired)
