"""Write a memory-world grid to a folder: results.json (config, per-seed metrics, aggregates), trajectories.npz
(policy -> (seeds, steps) true accuracy of the deployed memory), report.md (tables) and the PNG plots."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .metrics import CHECKPOINTS, claims_table, fmt, markdown_table, share_table, trigger_table


def render_markdown(result) -> str:
    agg = result.agg
    c = result.config
    lines = [
        "# Memory world benchmark",
        "",
        f"{len(result.seeds)} seeds x {c.n_steps} steps x {len(result.policies)} policies; encoder `{c.encoder}`; "
        f"mix {c.mix}; drift {c.drift}; eval noise {c.eval_noise} (coupling {c.coupling}); wall {result.wall_s:.0f} s.",
        "Mean ± 95% t-interval over seeds. Accuracies are true accuracies (points) on the held-out test set. "
        + ("Evaluations (paid) = distinct (memory text, task) evaluations, what a run behind a response cache pays "
           "(a repeated request is a cache hit); requests (raw) = every (memory, task) request."
           if c.eval_noise == "keyed" else
           "Evaluations (paid) = every (memory, task) request (fresh noise: each is a new draw, nothing is cached)."),
        "",
        markdown_table(agg, result.policies),
        "",
        "## Trigger selectivity (post-warm-up candidates)",
        "",
        trigger_table(agg, result.policies),
        "",
        *share_section(result),
        "## Paired comparisons (same seeds)",
        "",
        claims_table(result.per_seed),
        "",
        "## Trajectory checkpoints (Fig. 4): true accuracy after 20/40/60/80/100% of the stream",
        "",
        "| policy | " + " | ".join(f"{int(f * 100)}%" for f in CHECKPOINTS) + " | trigger rate |",
        "|---|" + "---|" * (len(CHECKPOINTS) + 1),
    ]
    for p in result.policies:
        cps = " | ".join(fmt(m, h) for m, h, _ in agg[p]["checkpoints"])
        tr = agg[p]["trigger_rate"][0]
        lines.append(f"| {p} | {cps} | {tr:.2f} |")
    return "\n".join(lines) + "\n"


def share_section(result) -> list[str]:
    """The controller's yardstick, when the grid has blind and always: its share of always-compare's gain,
    (policy − blind) / (always − blind) in final accuracy, and of always's paid evaluations."""
    t = share_table(result.per_seed, result.policies)
    if t is None:
        return []
    return ["## Share of always's gain and calls (gain share = (policy − blind) / (always − blind), final accuracy; "
            "call share = paid evaluations / always's paid evaluations; "
            f"95% paired bootstrap over {len(result.seeds)} seeds)", "", t, ""]


def _clean(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    return x


def write_report(result, out_dir, plots: bool = True) -> dict:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = render_markdown(result)
    (out / "report.md").write_text(md)
    payload = {"format": "janus-bench-world/1", "config": result.config.to_dict(), "seeds": result.seeds,
               "policies": result.policies, "wall_s": result.wall_s, "per_seed": result.per_seed,
               "aggregate": result.agg}
    (out / "results.json").write_text(json.dumps(_clean(payload), indent=1, sort_keys=True))
    np.savez_compressed(out / "trajectories.npz", **{p: result.traj[p] for p in result.policies})
    paths = []
    if plots:
        from .plots import write_plots

        paths = [str(p) for p in write_plots(result, out)]
    return {"markdown": md, "report": str(out / "report.md"), "plots": paths}
