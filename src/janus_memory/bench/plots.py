"""PNG plots of a memory-world grid (matplotlib, Agg backend).

* trajectory.png: true accuracy of the deployed memory over the stream, mean over seeds with a 95% band for blind and
  Janus (the paper's Fig. 4 shape: base red, Janus blue), other policies as thin lines; a policy whose mean curve
  equals one drawn before it is dashed on top and labelled "(= that policy)".
* final.png: final true accuracy per policy with 95% CIs (the eval-set ablations are the paper's Fig. 3 bars).
* cost.png: evaluator calls vs final true accuracy (trigger-option trade-off; the oracle and blind as references).
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from ..report.plots import save_figure  # the package's one PNG writer (replay_plot imports it from here too)

STYLE = {"blind": ("tab:red", 2.2), "janus": ("tab:blue", 2.2), "oracle": ("black", 1.4), "never": ("tab:gray", 1.2)}
PALETTE = ["tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "gold", "teal",
           "navy", "lime", "maroon"]


def _color(pol: str, i: int) -> str:
    return STYLE[pol][0] if pol in STYLE else PALETTE[i % len(PALETTE)]


def _band(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from scipy.stats import t as student_t

    m = arr.mean(axis=0)
    if arr.shape[0] < 2:
        return m, np.zeros_like(m)
    return m, student_t.ppf(0.975, arr.shape[0] - 1) * arr.std(axis=0, ddof=1) / math.sqrt(arr.shape[0])


def plot_trajectory(traj: dict[str, np.ndarray], path: Path, warmup: int | None = 20) -> Path:
    fig, ax = plt.subplots(figsize=(8.5, 5.4))
    drawn: list[tuple[str, np.ndarray]] = []
    for i, (pol, arr) in enumerate(traj.items()):
        if pol.startswith("no-"):  # eval-set ablations: see final.png
            continue
        x = np.arange(1, arr.shape[1] + 1)
        m, h = _band(100 * arr)
        color, lw = _color(pol, i), STYLE.get(pol, (None, 1.0))[1]
        # a mean curve equal to one already drawn would hide under it: dashed, on top, named after its twin
        twin = next((p for p, y in drawn if y.shape == m.shape and np.allclose(y, m)), None)
        ls = (0, (4, 3)) if twin else ("--" if pol == "oracle" else "-")
        ax.plot(x, m, color=color, lw=max(lw, 1.4) if twin else lw, ls=ls, zorder=3 if twin else 2,
                label=pol + (f" (= {twin})" if twin else ""), alpha=1.0 if pol in STYLE or twin else 0.75)
        drawn.append((pol, m))
        if pol in ("blind", "janus"):
            ax.fill_between(x, m - h, m + h, color=color, alpha=0.15, lw=0)
    if warmup:
        ax.axvspan(0, warmup, color="0.9", zorder=0, label="warm-up")
    ax.set_xlabel("stream step")
    ax.set_ylabel("true accuracy of the deployed memory (%)")
    n_seeds = next(iter(traj.values())).shape[0]
    ax.set_title(f"Memory world: deployed-memory accuracy (mean over {n_seeds} seeds; 95% band for blind and janus)",
                 fontsize=9)
    ax.legend(fontsize=7, ncol=6, loc="upper center", bbox_to_anchor=(0.5, -0.13))
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


def plot_final(agg: dict, order: list[str], path: Path) -> Path:
    pols = [p for p in order if p in agg]
    m = [agg[p]["final"][0] for p in pols]
    h = [0.0 if not math.isfinite(agg[p]["final"][1]) else agg[p]["final"][1] for p in pols]
    fig, ax = plt.subplots(figsize=(7.5, 0.35 * len(pols) + 1.4))
    colors = [STYLE.get(p, ("tab:green" if p.startswith("no-") else "tab:purple", 0))[0] for p in pols]
    y = np.arange(len(pols))[::-1]
    ax.barh(y, m, xerr=h, color=colors, alpha=0.8, capsize=3)
    ax.set_yticks(y, pols, fontsize=8)
    lo = min(v - e for v, e in zip(m, h))
    ax.set_xlim(max(0.0, lo - 5), min(100.0, max(v + e for v, e in zip(m, h)) + 3))
    ax.set_xlabel("final true accuracy (%), mean and 95% CI over seeds")
    ax.grid(axis="x", alpha=0.3)
    return save_figure(fig, path)


def plot_cost(agg: dict, order: list[str], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, p in enumerate(q for q in order if q in agg):
        x, xe = agg[p]["evaluator_calls"][:2]
        y, ye = agg[p]["final"][:2]
        color = _color(p, i)
        ax.errorbar([x], [y], xerr=[0 if not math.isfinite(xe) else xe], yerr=[0 if not math.isfinite(ye) else ye],
                    fmt="o", color=color, capsize=3)
        ax.annotate(p, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=7)
    ax.set_xlabel("paid evaluations per stream (distinct (memory, task) evaluations; every one under fresh noise)")
    ax.set_ylabel("final true accuracy (%)")
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


def write_plots(result, out_dir: Path) -> list[Path]:
    out_dir = Path(out_dir)
    warm = 20
    return [plot_trajectory(result.traj, out_dir / "trajectory.png", warm),
            plot_final(result.agg, result.policies, out_dir / "final.png"),
            plot_cost(result.agg, result.policies, out_dir / "cost.png")]
