"""`janus report DIR [DIR...]`: paper-style tables and PNG plots from finished run folders.

Tables (paper-spec §8): Table 1 accuracy (methods x datasets, average column), Table 2 trigger ablation with trigger rate
and cost, Table 3 Janus cost (#triggers x |E|, any tau/K sweep), Fig. 3 evaluation-set ablation, Fig. 5 stream order
(mean ± sample std over seeds). Plots (runner/plots.py): test accuracy at memory checkpoints (Fig. 4), trigger timeline,
cumulative LLM tokens by role, eval-set ablation bars, stream-order spread.

Input folders are run folders (holding summary.json) or any folder above them (searched recursively), e.g. the root of a
grid ``<root>/<dataset>/<cell>/seed<k>``. A row label is the method name plus the cell's setting suffix, e.g.
``dc_rs+janus[trigger=random]``: the suffix comes from ``cell.json`` (written by grid/sweep) or, failing that, from the
folder name ``<cell>/seed<k>``. Runs with the same label and dataset but different seeds are averaged.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import RunFolderError
from . import inject_report
from .runs import MethodRun, evaluated_tasks, find_run_dirs, load_method_runs, parse_suffix, resolved_janus  # noqa: F401
from .tables import (  # noqa: F401  (re-exported)
    accuracy_table,
    evalset_table,
    janus_cost_table,
    label_key,
    markdown_table,
    stream_order_table,
    trigger_table,
)


# ------------------------------------------------------------------------------------------------ entry point
def build_report(run_dirs: list[str], out_dir: str | None = None, *, max_timelines: int = 24) -> dict:
    """Build ``report.md`` and PNG plots for the given run folders (or folders above them).

    ``out_dir`` defaults to ``<first DIR>/report``. Returns ``{"out_dir", "report", "plots": {name: path},
    "tables": {"accuracy", "trigger", "janus_cost", "evalset", "stream_order"}}``; every table holds its rows and
    markdown. At most ``max_timelines`` trigger-timeline and token plots are drawn (one per Janus method run).

    Raises:
        ValueError: no run folder found, or a folder's summary.json is not a janus summary.
    """
    if not run_dirs:
        raise RunFolderError("give at least one run folder")
    rows = load_method_runs(run_dirs)
    out = Path(out_dir).expanduser() if out_dir else Path(run_dirs[0]).expanduser() / "report"
    out.mkdir(parents=True, exist_ok=True)
    # stream-order runs (Fig. 5) vary only the order of the same stream: they feed the stream-order table alone, so
    # Tables 1-3 and the ablations average over seeds of one kind only
    main_rows = [r for r in rows if not r.stream_order]
    order_rows = [r for r in rows if r.stream_order]
    tables = {"accuracy": accuracy_table(main_rows), "trigger": trigger_table(main_rows),
              "janus_cost": janus_cost_table(main_rows), "evalset": evalset_table(main_rows),
              "stream_order": stream_order_table(order_rows or main_rows)}
    tables["injections"] = inject_report.injection_table(rows)  # runs with --inject (issue 15)
    plot_paths = _draw_plots(rows, tables, out, max_timelines)
    plot_paths.update(inject_report.plot_trajectories(rows, out))
    md = _markdown(rows, tables, plot_paths)
    report = out / "report.md"
    report.write_text("\n".join(md), encoding="utf-8")
    return {"out_dir": str(out), "report": str(report), "plots": plot_paths, "tables": tables}


def _draw_plots(rows: list[MethodRun], tables: dict, out: Path, max_timelines: int) -> dict[str, str]:
    from . import plots

    plot_paths: dict[str, str] = {}
    p = plots.plot_checkpoints(rows, out / "checkpoints.png")
    if p:
        plot_paths["checkpoints"] = str(p)
    for kind, fn in (("timeline", plots.plot_trigger_timeline), ("tokens", plots.plot_tokens_by_role)):
        candidates = [r for r in rows if r.janus] if kind == "timeline" else rows
        for r in candidates[:max_timelines]:
            name = plots.safe_name(f"{kind}_{r.dataset}_{r.label}_seed{r.seed}")
            p = fn(r, out / f"{name}.png")
            if p:
                plot_paths[name] = str(p)
    if tables["evalset"]["rows"]:
        plot_paths["evalset"] = str(plots.plot_evalset(tables["evalset"]["rows"], out / "evalset_ablation.png"))
    if tables["stream_order"]["rows"]:
        plot_paths["stream_order"] = str(plots.plot_stream_order(tables["stream_order"]["rows"], out / "stream_order.png"))

    return plot_paths


def _markdown(rows: list[MethodRun], tables: dict, plot_paths: dict[str, str]) -> list[str]:
    md = ["# Janus experiment report", "",
          f"{len({r.run_dir for r in rows})} run folder(s), {len(rows)} method run(s). Accuracies in %; "
          "± is the sample std over seeds when a label has several.", ""]
    if tables["accuracy"]["labels"]:  # a sweep of variants only (every label has a [..] suffix) has no Table 1 rows
        md += ["## Table 1: test accuracy (frozen memory, held-out split)", "", tables["accuracy"]["markdown"], ""]
    if tables["trigger"]["markdown"]:
        md += ["## Table 2: trigger-policy ablation", "",
               "Trig. rate = triggers / post-warm-up steps; |E| = coverage + boundary + fresh sizes; "
               "evaluated tasks = sum of evaluator calls / 2.", "", tables["trigger"]["markdown"], ""]
    if tables["janus_cost"]["markdown"]:
        md += ["## Table 3: Janus cost (#triggers × |E|)", "", tables["janus_cost"]["markdown"], ""]
    if tables["evalset"]["markdown"]:
        md += ["## Evaluation-set ablation (Fig. 3)", "", tables["evalset"]["markdown"], "",
               "![evaluation-set ablation](evalset_ablation.png)", ""]
    if tables["stream_order"]["markdown"]:
        md += ["## Stream order (Fig. 5)", "", tables["stream_order"]["markdown"], "", "![stream order](stream_order.png)", ""]
    md += inject_report.markdown_section(tables["injections"])
    md += ["## Plots", ""]
    for name, path in plot_paths.items():
        if name not in ("evalset", "stream_order"):
            md += [f"![{name}]({Path(path).name})", ""]
    return md
