"""`janus report` for runs with injected harmful candidates (issue 15): the per-method table and the accuracy
trajectory plot with the injected steps marked. Input: MethodRun rows (report/runs.py) whose summary holds
``injections`` (written by the stream loop, run/injection.py); runs without injections add nothing."""
from __future__ import annotations

from pathlib import Path

from .runs import MethodRun
from .tables import _pct, label_key, markdown_table

HEADER = ["Method", "Plan", "Injected", "Deployed", "Blocked", "Blocked: trigger, E score old vs injected",
          "Test acc. (%)", "Dataset", "Seed", "Run"]


def _blocked_text(s: dict) -> str:
    parts = []
    for b in s["blocked_steps"]:
        txt = f"{b['kind']}@{b['step']}: trigger {'fired' if b['triggered'] else 'did not fire'}"
        if b["old_score"] is not None and b["new_score"] is not None:
            txt += f", E {b['old_score']:.2f} vs {b['new_score']:.2f}"
        parts.append(txt)
    return "; ".join(parts) or "—"


def injection_table(rows: list[MethodRun]) -> dict:
    """One row per method run with injections: plan, injected / deployed / blocked, for each blocked one whether the
    trigger fired and E's scores of the old and the injected memory, and the final test accuracy.
    Returns ``{"rows": [...], "markdown": str}`` (empty markdown when no run had injections)."""
    runs = sorted((r for r in rows if r.summary.get("injections")),
                  key=lambda r: (r.dataset, str(r.run_dir), label_key(r.label), r.seed))
    out, body = [], []
    for r in runs:
        s = r.summary["injections"]
        out.append({"label": r.label, "dataset": r.dataset, "seed": r.seed, "run_dir": str(r.run_dir),
                    "plan": s.get("plan"), "injected": s["injected"], "deployed": s["deployed"],
                    "blocked": s["blocked"], "blocked_steps": s["blocked_steps"], "test_accuracy": r.test_accuracy})
        body.append([r.label, s.get("plan") or "—", str(s["injected"]), str(s["deployed"]), str(s["blocked"]),
                     _blocked_text(s), _pct(r.test_accuracy), r.dataset, str(r.seed), Path(r.run_dir).name])
    return {"rows": out, "markdown": markdown_table(HEADER, body) if body else ""}


def markdown_section(table: dict) -> list[str]:
    if not table["markdown"]:
        return []
    return ["## Injected harmful candidates", "",
            "Candidates replaced by `--inject KIND@STEP` (janus_memory/inject/candidates.py). Deployed = the harmful candidate "
            "became the memory; blocked = Janus kept the previous memory. Blind deployment (no controller) deploys "
            "every one.", "", table["markdown"], ""]


def plot_trajectories(rows: list[MethodRun], out: Path) -> dict[str, str]:
    """One PNG per run folder with injections: ``trajectory_<dataset>_<run>_seed<k>.png``."""
    from .plots import safe_name

    by_run: dict[Path, list[MethodRun]] = {}
    for r in rows:
        if r.summary.get("injections"):
            by_run.setdefault(Path(r.run_dir), []).append(r)
    paths = {}
    for run_dir, rs in by_run.items():
        name = safe_name(f"trajectory_{rs[0].dataset}_{run_dir.name}_seed{rs[0].seed}")
        paths[name] = str(plot_trajectory(sorted(rs, key=lambda r: label_key(r.label)), out / f"{name}.png"))
    return paths


def plot_trajectory(rs: list[MethodRun], path: Path) -> Path:
    """Cumulative online accuracy per stream step for each method of one run folder; every injected step is a dotted
    vertical line labelled with its kind; on each method's curve a red down-triangle marks a deployed injection and a
    green square a blocked one (the legend lists only the kinds of mark drawn: no "blocked" entry when none was).
    Curves that coincide stay visible: the first method is a wide pale line, the next ones dashed on top (named "same
    curve as ..."), and their markers shrink so they sit inside each other; each method's legend entry draws its line
    with the markers it put on it, at their size."""
    import matplotlib.pyplot as plt
    from matplotlib.legend_handler import HandlerTuple
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    from .plots import _label_color, mark_injected, save_figure
    from ..store.reader import RunReader

    reader = RunReader(rs[0].run_dir)
    fig, ax = plt.subplots(figsize=(9, 4.6))
    kinds: dict[int, str] = {}
    drawn: list[tuple[str, list[float]]] = []
    shown = {"deployed": False, "blocked": False}  # legend entries only for the marks drawn
    areas = [170, 45] if len(rs) <= 2 else [170, 80, 30]
    logs = [sorted(reader.decisions(r.method), key=lambda x: x["step"]) for r in rs]
    entries: list[tuple] = []  # (legend handle, label) per method: its line, and its markers as drawn
    for i, (r, lines) in enumerate(zip(rs, logs)):
        steps, acc = [ln["step"] for ln in lines], _running_accuracy(lines)
        color, area = _label_color(r.label, i), areas[min(i, len(areas) - 1)]
        test = "—" if r.test_accuracy is None else f"{100 * r.test_accuracy:.1f}%"
        same = next((lab for lab, ys in drawn if ys == acc), None)
        label = f"{r.label} (final test accuracy {test})" + (f"; same curve as {same}" if same else "")
        line, = ax.plot(steps, acc, color=color, lw=3.2 if i == 0 else 1.5, alpha=0.5 if i == 0 else 1.0,
                        ls="-" if i == 0 else (0, (5, 3)), zorder=2 + i, label=label)
        drawn.append((r.label, acc))
        at = dict(zip(steps, acc))
        own = {}
        for ln in lines:
            if ln.get("injected"):
                kinds[ln["step"]] = ln["injected"]
                blocked = ln.get("deployed") != "candidate"
                shown["blocked" if blocked else "deployed"] = True
                marker, fill = ("s", "tab:green") if blocked else ("v", "tab:red")
                ax.scatter([ln["step"]], [at[ln["step"]]], marker=marker, s=area, zorder=5 + i, color=fill,
                           edgecolors=color, linewidths=1.2)
                own[marker] = Line2D([], [], ls="none", marker=marker, markersize=area ** 0.5, mfc=fill, mec=color,
                                     mew=1.2)
        entries.append(((line, *own.values()) if own else line, label))
    mark_injected(ax, kinds)
    if shown["deployed"]:
        ax.scatter([], [], marker="v", color="tab:red", label="injected candidate deployed")
    if shown["blocked"]:
        ax.scatter([], [], marker="s", color="tab:green", label="injected candidate blocked")
    ax.set_ylim(-2, 112)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("stream step")
    ax.set_ylabel("online accuracy so far (%)")
    ax.set_title(f"Accuracy trajectory with injected harmful candidates: {rs[0].dataset}, {Path(rs[0].run_dir).name}",
                 fontsize=10, pad=14 if kinds else None)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    methods = {lab for _, lab in entries}
    rest = [(h, lab) for h, lab in zip(handles, labels) if lab not in methods]
    # below the axes, never over the curves (their first steps sit where a corner legend would go)
    ax.legend([h for h, _ in entries + rest], [lab for _, lab in entries + rest], fontsize=7, loc="upper center",
              bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False, handlelength=4.5,
              handler_map={tuple: HandlerTuple(ndivide=None, pad=0.4)})
    return save_figure(fig, path)


def _running_accuracy(lines: list[dict]) -> list[float]:
    ok, out = 0, []
    for k, ln in enumerate(lines, 1):
        ok += int(bool(ln.get("correct")))
        out.append(100 * ok / k)
    return out
