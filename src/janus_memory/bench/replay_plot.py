"""Cosine timeline PNG for ``janus replay`` (matplotlib Agg).

One panel per encoder: ``cos(z_t, m_{t-1})`` per step (MMT, z from whole memories, the smallest warm-up of the
grid), the threshold tau = 0, the item-level retention of the old memory (grey, right axis), destructive steps
(red: dump, orange: wipe) and the steps where MMT and the selective trigger fired (markers above the plot).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from .plots import save_figure

KIND_COLORS = {"dump": "tab:red", "wipe": "tab:orange"}


def plot_timeline(path: Path, traj: str, records: dict, encoders: list[str], warmup: int) -> Path | None:
    """Write the timeline of ``traj``; None when the grid holds no MMT records for it."""
    panels = [(e, records.get((traj, e, "memory", "mmt", warmup))) for e in encoders]
    panels = [(e, r) for e, r in panels if r]
    if not panels:
        return None
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 3.2 * len(panels)), sharex=True, squeeze=False)
    for ax, (enc, rec) in zip(axes[:, 0], panels):
        steps = [r["step"] for r in rec]
        cos = [r["cosine"] if r["cosine"] is not None else float("nan") for r in rec]
        ax.plot(steps, cos, "-o", ms=3, color="tab:blue", label="cos(z_t, m_t-1)")
        ax.axhline(0.0, color="k", lw=0.8, ls="--", label="tau = 0")
        for r in rec:
            if r["destructive"]:
                ax.axvspan(r["step"] - 0.4, r["step"] + 0.4, color=KIND_COLORS[r["destructive"]], alpha=0.25)
        fired = [r["step"] for r in rec if r["fired"]]
        if fired:  # legend entries only for marks that are drawn
            ax.scatter(fired, [1.08] * len(fired), marker="v", color="tab:blue", s=14, clip_on=False, label="MMT fired")
        sel = records.get((traj, enc, "memory", "selective", warmup))
        if sel:
            fired = [r["step"] for r in sel if r["fired"]]
            if fired:
                ax.scatter(fired, [1.18] * len(fired), marker="v", color="tab:green", s=14, clip_on=False,
                           label="selective fired")
            ax2 = ax.twinx()
            ax2.plot(steps, [r["retention"] if r["retention"] is not None else float("nan") for r in sel],
                     color="0.5", lw=1, label="retention")
            ax2.set_ylim(0, 1.05)
            ax2.set_ylabel("retention", color="0.4")
        ax.set_ylim(-1.05, 1.0)
        ax.set_ylabel(f"{enc}: cosine")
        ax.legend(loc="lower left", fontsize=7, ncol=4)
    axes[-1, 0].set_xlabel("step (shaded: red dump, orange wipe)")
    fig.suptitle(f"{traj} (warm-up {warmup})", fontsize=10)
    return save_figure(fig, path)
