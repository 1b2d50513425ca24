"""PNG plots for `janus report` (matplotlib, Agg backend; no display needed).

- checkpoints: test accuracy of the memory after 20/40/60/80/100% of the stream, base (red) vs Janus (blue) (paper Fig. 4);
- trigger timeline: cos(z_t, m_{t-1}) per stream step with the threshold tau, warm-up shaded, accepted candidates and
  rollbacks marked (paper §2, Algorithm 1), triggers without a cosine in an "n/a" band, injected candidates as
  labelled vertical lines; below it the evaluation-set scores (old memory vs candidate) of every comparison;
- tokens by role (solver / curator / janus, cumulative per step); eval-set ablation (Fig. 3); stream order (Fig. 5);
- token overhead: base vs +Janus cumulative stream tokens on one scale, the overhead as `janus run` prints it.
Legends list only what is drawn (no "rolled back (0)" entry, no evaluation band when Janus evaluated nothing). Every
function returns the written path (None: nothing to plot); every PNG of the package is written by :func:`save_figure`.
"""
from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

ROLE_COLORS = {"solver": "tab:blue", "curator": "tab:orange", "janus": "tab:green", "test": "tab:gray"}


def safe_name(s: str) -> str:
    """A file-name-safe version of a label: "dc_rs+janus[trigger=random]" -> "dc_rs+janus_trigger-random",
    "dc_rs+janus (tau=0.2, a)" -> "dc_rs+janus_tau-0.2_a"."""
    s = s.replace(" (", "_").replace(")", "").replace(", ", "_")
    s = s.replace("=", "-").replace("[", "_").replace("]", "").replace(",", "_")
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", s)


def _label_color(label: str, i: int) -> str:
    if "[" not in label:
        return "tab:blue" if "+janus" in label else "tab:red"
    return f"C{(i + 2) % 10}"


def save_figure(fig, path: Path) -> Path:
    """Write ``fig`` to ``path`` (folders made, tight layout, 110 dpi) and close it; every PNG of the package."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_checkpoints(rows, path: Path) -> Path | None:
    """Fig. 4: one panel per (dataset, updater) that has a Janus run; x = % of the stream, y = test accuracy (%), one line
    per main label (base red, Janus blue; ablation cells are left out), mean over seeds."""
    data: dict[tuple, dict[str, dict[float, list[float]]]] = {}
    with_janus = {(r.dataset, r.updater) for r in rows if r.janus and not r.suffix_keys}
    for r in rows:
        if r.suffix_keys or (r.dataset, r.updater) not in with_janus:
            continue
        cps = r.summary.get("checkpoints") or []
        for c in cps:
            if c.get("test_accuracy") is None:
                continue
            data.setdefault((r.dataset, r.updater), {}).setdefault(r.label, {}).setdefault(float(c["fraction"]), []).append(
                100 * c["test_accuracy"])
    if not data:
        return None
    n = len(data)
    cols = min(n, 3)
    nrows = math.ceil(n / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.6 * nrows), squeeze=False)
    for ax, ((ds, upd), labels) in zip(axes.flat, sorted(data.items())):
        k = len(labels)
        for i, (lab, pts) in enumerate(sorted(labels.items())):
            xs = sorted(pts)
            ys = [sum(pts[x]) / len(pts[x]) for x in xs]
            off = (i - (k - 1) / 2) * 1.2  # identical lines stay visible side by side
            janus = "+janus" in lab
            ax.plot([100 * x + off for x in xs], ys, marker="s" if janus else "o", ls="--" if janus else "-",
                    mfc="none" if janus else None, ms=7 if janus else 5, label=lab, color=_label_color(lab, i))
        ax.set_title(f"{ds} / {upd}")
        ax.set_xlabel("% of stream seen")
        ax.set_ylabel("test accuracy (%)")
        ax.set_xticks([20, 40, 60, 80, 100])
        ax.set_ylim(-3, 106)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle("Test accuracy of memory checkpoints (base vs Janus)")
    return save_figure(fig, path)


def plot_trigger_timeline(r, path: Path) -> Path | None:
    """Two panels over the stream steps. Top: cosine per step (line), tau (dashed), warm-up (shaded), accepted triggers
    (green ^), rollbacks (red v), injected candidates (dotted vertical line labelled with the kind); a triggered step
    without a cosine (no momentum yet, e.g. policy "always" right after the warm-up) is drawn in a separate "n/a" band
    below the cosine axis. Bottom: Janus's evaluation-set scores at each comparison, old memory vs candidate, so the
    plot shows what every trigger policy decided. A run where no step has a cosine (a short "always" run) gets the
    bottom panel alone."""
    from ..store.reader import RunReader

    reader = RunReader(r.run_dir)
    lines = reader.jsonl(f"{r.method}/decisions.jsonl")
    if not lines:
        return None
    tau = float(r.janus_cfg.get("tau", 0.0))
    warmup = int(r.janus_cfg.get("warmup", 0))
    steps = [ln["step"] for ln in lines]
    cos = [(ln.get("decision") or {}).get("cosine") for ln in lines]
    with_cos = any(c is not None for c in cos)
    trig = r.janus_cfg.get("trigger", "mmt")
    label = r.controller.label if len(r.controller.label) <= 28 else r.controller.preset  # a title line, not a list
    who = "" if label == "paper" else f"Janus {label}, "  # a controller other than the paper's is named
    if with_cos:
        fig, (ax, ax_e) = plt.subplots(2, 1, figsize=(9, 5.6), sharex=True, height_ratios=[3, 2])
    else:
        fig, ax_e = plt.subplots(figsize=(9, 3.0))
        ax = None
    many = len(steps) > 80
    size = 18 if many else 60
    if ax is not None:
        ax.plot(steps, [c if c is not None else float("nan") for c in cos], color="tab:blue", lw=0.9 if many else 1.2,
                marker=None if many else ".", ms=4, label="cos(z_t, m_{t-1})")
        ax.axhline(tau, color="k", ls="--", lw=1, label=f"τ = {tau:g}")
        lo, hi = cosine_ylim([c for c in cos if c is not None], tau)
        ax.set_ylim(lo, hi)
        y_na = _na_band(ax, lo, hi) if any(c is None and (ln.get("decision") or {}).get("triggered")
                                           for c, ln in zip(cos, lines)) else None
        marks: dict[bool, tuple[list, list]] = {True: ([], []), False: ([], [])}
        for st, c, ln in zip(steps, cos, lines):
            d = ln.get("decision") or {}
            if d.get("triggered"):
                marks[bool(d.get("accept"))][0].append(st)
                marks[bool(d.get("accept"))][1].append(c if c is not None else y_na)
        for ok, marker, color, what in ((True, "^", "tab:green", "accepted"), (False, "v", "tab:red", "rolled back")):
            if marks[ok][0]:  # a legend entry only for marks that are drawn
                ax.scatter(*marks[ok], marker=marker, s=size, color=color, zorder=3,
                           label=f"triggered: {what} ({len(marks[ok][0])})")
        ax.set_ylabel("cosine")
        ax.set_title(f"Trigger timeline: {r.label} on {r.dataset} (seed {r.seed}, {who}trigger={trig})")
    else:
        ax_e.set_title(f"Janus's comparisons: {r.label} on {r.dataset} (seed {r.seed}, {who}trigger={trig}; no step "
                       "has a cosine yet)", fontsize=10)
    _evalset_scores(ax_e, lines, size)
    ax_e.set_xlim(0.5, max(steps) + 0.5)  # before the injected labels, which are spaced on this range
    for a in (x for x in (ax, ax_e) if x is not None):
        if warmup:
            a.axvspan(0.5, min(warmup, max(steps)) + 0.5, color="0.85", alpha=0.6,
                      label=f"warm-up ({warmup})" if a is (ax or ax_e) else None)
        mark_injected(a, injected_steps(r), label=a is (ax or ax_e), text=a is (ax or ax_e))
        a.grid(alpha=0.3)
        if a.get_legend_handles_labels()[1]:  # no empty legend box (a panel with nothing labelled)
            a.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax_e.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_e.set_xlabel("stream step")
    return save_figure(fig, path)


def _evalset_scores(ax, lines: list[dict], size: int) -> None:
    """Per comparison: the old memory's and the candidate's evaluation-set score (a grey circle and a green/red
    triangle, joined by a line), or a note when Janus compared nothing."""
    old_x, old_y = [], []
    new = {True: ([], []), False: ([], [])}
    for ln in lines:
        d = ln.get("decision") or {}
        if not d.get("triggered") or d.get("old_score") is None or d.get("new_score") is None:
            continue
        st, o, n = ln["step"], float(d["old_score"]), float(d["new_score"])
        ax.plot([st, st], [o, n], color="0.6", lw=1, zorder=2)
        old_x.append(st)
        old_y.append(o)
        new[bool(d.get("accept"))][0].append(st)
        new[bool(d.get("accept"))][1].append(n)
    if old_x:  # a ring painted over the candidate's triangle: a tie shows the triangle inside the ring
        ax.scatter(old_x, old_y, marker="o", s=size * 2.2, facecolors="none", edgecolors="0.3", linewidths=1.3,
                   zorder=5, label="E score: old memory (ring)")
    for ok, marker, color, what in ((True, "^", "tab:green", "deployed"), (False, "v", "tab:red", "rolled back")):
        if new[ok][0]:
            ax.scatter(*new[ok], marker=marker, s=size, color=color, zorder=4, label=f"E score: candidate, {what}")
    if not old_x:
        ax.text(0.5, 0.5, "no comparison in this run", transform=ax.transAxes, ha="center", va="center",
                fontsize=9, color="0.35")
    ax.set_ylim(-0.08, 1.08)
    ax.set_ylabel("evaluation-set\nscore")


def _na_band(ax, lo: float, hi: float) -> float:
    """A band below the cosine range for triggered steps that have no cosine; returns its y and fixes the y-axis
    (cosine ticks inside [lo, hi] plus an "n/a" tick)."""
    gap = 0.14 * (hi - lo)
    y_na, bottom = lo - gap, lo - 1.8 * gap
    ax.axhspan(bottom, lo - 0.5 * gap, color="0.93", zorder=0)
    ax.set_ylim(bottom, hi)
    ticks = [t for t in MaxNLocator(nbins=6).tick_values(lo, hi) if lo <= t <= hi]
    ax.set_yticks([y_na, *ticks], ["n/a", *(f"{t:g}" for t in ticks)])
    ax.text(0.01, y_na, " no cosine yet (no momentum)", transform=ax.get_yaxis_transform(), fontsize=7,
            va="center", ha="left", color="0.35")
    return y_na


def injected_steps(r) -> dict[int, str]:
    """{step: kind} of the injected harmful candidates of a method run (``--inject``): the decision log's
    ``"injected"``, else the step records' ``info.injected.kind``; {} for a run without injections."""
    from ..store.reader import RunReader

    if not r.summary.get("injections"):
        return {}
    reader = RunReader(r.run_dir)
    out = {ln["step"]: str(ln["injected"]) for ln in reader.jsonl(f"{r.method}/decisions.jsonl") if ln.get("injected")}
    if not out:
        for rec in reader.jsonl(f"{r.method}/steps.jsonl"):
            inj = (rec.get("info") or {}).get("injected")
            if isinstance(inj, dict) and inj.get("kind"):
                out[rec["step"]] = str(inj["kind"])
    return out


def mark_injected(ax, kinds: dict[int, str], *, label: bool = True, text: bool = True) -> None:
    """A dotted line at each injected step, one legend entry naming the kinds (``label``) and the kind written above
    the axes, never over a point (``text``: none closer than 4% of the x-range to the last; the title moves up)."""
    (lo, hi), last, names = ax.get_xlim(), None, ", ".join(sorted(set(kinds.values())))
    for i, (step, kind) in enumerate(sorted(kinds.items())):
        ax.axvline(step, color="0.4", ls=":", lw=1.2, zorder=1,
                   label=f"injected candidate ({names})" if i == 0 and label else None)
        if text and (last is None or step - last >= 0.04 * (hi - lo)):
            ax.text(step, 1.01, kind, transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=7,
                    color="0.25", clip_on=False)
            last = step
    if text and kinds:
        ax.set_title(ax.get_title(), fontsize=ax.title.get_fontsize(), pad=14)


def cosine_ylim(values: list[float], tau: float) -> tuple[float, float]:
    """The timeline's y-range: the observed cosines and tau with a margin, inside [-1.05, 1.05]."""
    lo, hi = min([*values, tau]), max([*values, tau])
    pad = max(0.05, 0.1 * (hi - lo))
    return max(-1.05, lo - pad), min(1.05, hi + pad)


def cumulative_tokens(r) -> tuple[list[int], dict[str, list[int]], dict[str, bool]]:
    """(steps, {role: cumulative tokens after each step}, {role: estimated?}).

    Per-step counts come from the step record ("usage" per role when present, else "llm_calls") and include calls
    served by the response cache (the tokens the method consumed, not the tokens paid for). The controller's evaluation
    calls (role "janus") are not in "llm_calls"; when missing they are estimated as each step's evaluator_calls x the
    mean tokens per janus call of the run (flagged as estimated)."""
    from ..store.reader import RunReader

    reader = RunReader(r.run_dir)
    recs = reader.jsonl(f"{r.method}/steps.jsonl")
    decs = {d["step"]: d for d in reader.jsonl(f"{r.method}/decisions.jsonl")}
    if not recs:
        return [], {}, {}
    steps, per_step = [], []
    for rec in recs:
        steps.append(rec["step"])
        tok: dict[str, int] = {}
        if isinstance(rec.get("usage"), dict):
            for role, u in rec["usage"].items():
                tok[role] = tok.get(role, 0) + (u.get("prompt_tokens") or 0) + (u.get("completion_tokens") or 0)
        else:
            for c in rec.get("llm_calls") or []:
                tok[c["role"]] = tok.get(c["role"], 0) + (c.get("prompt_tokens") or 0) + (c.get("completion_tokens") or 0)
        per_step.append(tok)
    estimated: dict[str, bool] = {}
    usage = r.summary.get("usage") or {}
    ju = usage.get("janus") or {}
    evals = [((decs.get(s) or {}).get("decision") or {}).get("evaluator_calls") or 0 for s in steps]
    if sum(evals) and not any("janus" in t for t in per_step):
        # tokens per evaluation call: the run's uncached janus calls, else the mean solver call of this method
        if ju.get("calls"):
            per_call = ((ju.get("prompt_tokens") or 0) + (ju.get("completion_tokens") or 0)) / ju["calls"]
        else:
            solver = [t.get("solver", 0) for t in per_step if t.get("solver")]
            per_call = sum(solver) / len(solver) if solver else 0
        if per_call:
            for t, c in zip(per_step, evals):
                t["janus"] = round(per_call * c)
            estimated["janus"] = True
    roles = sorted({k for t in per_step for k in t}, key=lambda k: (list(ROLE_COLORS).index(k) if k in ROLE_COLORS else 99, k))
    cum: dict[str, list[int]] = {}
    for role in roles:
        acc, series = 0, []
        for t in per_step:
            acc += t.get(role, 0)
            series.append(acc)
        cum[role] = series
    return steps, cum, estimated


def plot_tokens_by_role(r, path: Path) -> Path | None:
    """Cumulative tokens per role over the stream; the held-out test's tokens are given in the title."""
    steps, cum, est = cumulative_tokens(r)
    if not steps or not cum:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for role, series in cum.items():
        ax.plot(steps, series, label=role + (" (estimated per step)" if est.get(role) else ""),
                color=ROLE_COLORS.get(role), lw=1.6)
    test = (r.summary.get("usage") or {}).get("test") or {}
    n_test = (test.get("calls") or 0) + (test.get("cache_hits") or 0)
    ax.set_xlabel(f"stream step  (cache hits included; held-out test afterwards: {n_test} calls)", fontsize=8)
    ax.set_ylabel("cumulative tokens")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"Cumulative LLM tokens by role: {r.label} on {r.dataset} (seed {r.seed})", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def plot_evalset(rows: list[dict], path: Path) -> Path:
    """Bars: test accuracy of full Janus vs each evaluation-set ablation, one group per (dataset, updater)."""
    groups = sorted({(r["dataset"], r["updater"]) for r in rows})
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.6), squeeze=False)
    for ax, (ds, upd) in zip(axes.flat, groups):
        rs = [r for r in rows if (r["dataset"], r["updater"]) == (ds, upd)]
        names = [r["variant"] for r in rs]
        vals = [100 * (r["test_accuracy"] or 0) for r in rs]
        errs = [100 * (r["std"] or 0) for r in rs]
        bars = ax.bar(names, vals, yerr=errs if any(errs) else None, color=["tab:blue" if n == "full" else "tab:gray" for n in names], capsize=3)
        for b, v in zip(bars, vals):
            ax.text(b.get_x() + b.get_width() / 2, v + 1.5, f"{v:.1f}", ha="center", va="bottom", fontsize=8)
        ax.set_ylim(0, 105)
        ax.set_title(f"{ds} / {upd}+janus")
        ax.set_ylabel("test accuracy (%)")
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle("Evaluation-set ablation")
    return save_figure(fig, path)


def plot_stream_order(rows: list[dict], path: Path) -> Path:
    """Per label: one dot per stream order, mean ± sample std as an error bar (one panel per dataset)."""
    datasets = sorted({r["dataset"] for r in rows})
    per_panel = max(len([r for r in rows if r["dataset"] == d]) for d in datasets)
    fig, axes = plt.subplots(1, len(datasets), figsize=(max(6.5, 1.8 * per_panel) * len(datasets), 4.0), squeeze=False)
    for ax, ds in zip(axes.flat, datasets):
        rs = [r for r in rows if r["dataset"] == ds]
        for i, r in enumerate(rs):
            ys = [100 * a for a in r["accuracies"] if a is not None]
            xs = [i - 0.12 + 0.06 * (k % 5) for k in range(len(ys))]  # fixed jitter: equal values stay visible
            ax.scatter(xs, ys, color=_label_color(r["label"], i), alpha=0.6, s=20)
            ax.errorbar([i + 0.25], [100 * (r["mean"] or 0)], yerr=[100 * (r["std"] or 0)], fmt="s", color="k", capsize=4)
        ax.set_xticks(range(len(rs)))
        ax.set_xticklabels([r["label"] for r in rs], rotation=20, fontsize=8)
        ax.set_ylim(-2, 102)
        ax.set_ylabel("final test accuracy (%)")
        ax.set_title(f"{ds}: {len(rs[0]['seeds'])} stream orders")
        ax.grid(alpha=0.3, axis="y")
        ax.set_xlim(-0.6, len(rs) - 0.4)
    fig.suptitle("Stream-order sensitivity (dots: one per order; square: mean ± sample std)", fontsize=10)
    return save_figure(fig, path)


def token_pairs(rows) -> list[tuple]:
    """(base row, +janus row) pairs of main labels (report/paired.py: same dataset, updater, seed and setup)."""
    from .paired import base_janus_pairs

    return [(b, j) for b, j in base_janus_pairs(rows) if not j.suffix_keys and not b.suffix_keys]


def plot_token_overhead(rows, path: Path, max_panels: int = 6) -> Path | None:
    """One view of Janus's token overhead: per base/+Janus pair, both methods' cumulative stream tokens on one scale
    (the +Janus line split into the updater's own tokens and the controller's evaluation tokens). The overhead in each
    title is :func:`summary_table.janus_overhead` of the two summaries, the number `janus run` prints."""
    from .summary_table import OVERHEAD_BASIS, janus_overhead

    pairs = token_pairs(rows)[:max_panels]
    if not pairs:
        return None
    cols = min(len(pairs), 3)
    fig, axes = plt.subplots(math.ceil(len(pairs) / cols), cols, figsize=(4.8 * cols, 3.6 * math.ceil(len(pairs) / cols)),
                             squeeze=False)
    for ax, (b, j) in zip(axes.flat, pairs):
        sb, cb, _ = cumulative_tokens(b)
        sj, cj, est = cumulative_tokens(j)
        if not sb or not sj:
            ax.axis("off")
            continue
        tb = [sum(v[i] for v in cb.values()) for i in range(len(sb))]
        tj = [sum(v[i] for v in cj.values()) for i in range(len(sj))]
        own = [t - cj.get("janus", [0] * len(sj))[i] for i, t in enumerate(tj)]
        ax.plot(sb, tb, color="tab:red", lw=2.8, alpha=0.55, label=f"{b.label}")  # wide: stays visible under +Janus
        ax.plot(sj, tj, color="tab:blue", lw=1.6, ls="--", label=f"{j.label} (total)")
        if any(o != t for o, t in zip(own, tj)):  # no evaluation tokens (no trigger fired): no empty legend entry
            ax.fill_between(sj, own, tj, color="tab:green", alpha=0.25,
                            label="Janus evaluation" + (" (estimated)" if est.get("janus") else ""))
        pct = janus_overhead(b.summary.get("usage"), j.summary.get("usage"))["pct"]  # the console's definition
        ax.set_title(f"{j.dataset} / {j.updater} seed {j.seed}: Janus overhead "
                     + ("n/a" if pct is None else f"{pct:+.1f}%"), fontsize=9)
        ax.set_xlabel("stream step")
        ax.set_ylabel("cumulative tokens (cache hits included)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    for ax in list(axes.flat)[len(pairs):]:
        ax.axis("off")
    fig.suptitle(textwrap.fill(f"Token cost: base vs +Janus (same scale); Janus overhead = extra tokens in % of the base's ({OVERHEAD_BASIS})",
                               width=int(14 * 4.8 * cols)), fontsize=9)
    return save_figure(fig, path)
