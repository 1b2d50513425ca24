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

import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

# paper order of datasets (Table 1), then anything else alphabetically
DATASET_ORDER = ["math500", "gpqa", "mmlu_pro_eng", "mmlu_pro_phy", "apibench_hf", "humaneval"]
DATASET_NAMES = {"math500": "MATH500", "gpqa": "GPQA", "mmlu_pro_eng": "MMLU-Pro Eng", "mmlu_pro_phy": "MMLU-Pro Phy",
                 "apibench_hf": "APIBench-HF", "humaneval": "HumanEval", "gsm8k": "GSM8K", "aime": "AIME", "math": "MATH"}
BASELINE_ORDER = ["memory_free", "exprag"]
TRIGGER_KEYS = {"trigger", "trigger_rate", "trigger_period"}
EVALSET_KEYS = {"use_coverage", "use_boundary", "use_fresh"}
TRIGGER_ORDER = ["never", "always", "random", "periodic", "mmt"]
# JanusConfig defaults (paper-spec §4), used only when the controller package cannot be imported
_PAPER_JANUS = {"warmup": 20, "coverage_size": 12, "boundary_size": 8, "fresh_size": 5, "beta": 0.9, "tau": 0.0,
                "trigger": "mmt", "trigger_rate": 0.3, "trigger_period": 3, "use_coverage": True, "use_boundary": True,
                "use_fresh": True}


@dataclass
class MethodRun:
    """One method of one run folder, with everything the tables need."""

    run_dir: Path
    dataset: str
    updater: str
    method: str
    label: str
    suffix_keys: dict
    seed: int
    janus: bool
    janus_cfg: dict
    summary: dict
    extra: dict = field(default_factory=dict)
    stream_order: bool = False  # a stream-order study run (config stream_order_seed set): only in the Fig. 5 table

    @property
    def test_accuracy(self) -> float | None:
        return self.summary.get("test_accuracy")

    @property
    def eval_set_size(self) -> int:
        """|E| = coverage + boundary + fresh sizes of the roles in use (paper-spec §8.6: K + K_F)."""
        c = self.janus_cfg
        return (int(c["coverage_size"]) * bool(c["use_coverage"]) + int(c["boundary_size"]) * bool(c["use_boundary"])
                + int(c["fresh_size"]) * bool(c["use_fresh"]))


# ------------------------------------------------------------------------------------------------ loading
def find_run_dirs(paths: list[str | Path]) -> list[Path]:
    """Run folders (holding summary.json) at or below each path, sorted, de-duplicated.

    Raises:
        ValueError: a path does not exist, or no finished run was found under it.
    """
    out: list[Path] = []
    for p in paths:
        p = Path(p).expanduser()
        if not p.exists():
            raise ValueError(f"{p} does not exist")
        found = [p] if (p / "summary.json").is_file() else sorted(s.parent for s in p.rglob("summary.json"))
        if not found:
            raise ValueError(f"no finished run (summary.json) under {p}")
        out += found
    seen, uniq = set(), []
    for d in out:
        key = d.resolve()
        if key not in seen:
            seen.add(key)
            uniq.append(d)
    return uniq


def _read_json(path: Path, default=None):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON ({e})") from e


def resolved_janus(cfg_janus: dict | None) -> dict:
    """The run's Janus overrides merged onto the JanusConfig defaults."""
    try:
        from ..controller import JanusConfig

        base = JanusConfig().to_dict()
    except Exception:  # noqa: BLE001 - reports must work without the controller package
        base = dict(_PAPER_JANUS)
    return {**base, **(cfg_janus or {})}


def parse_suffix(suffix: str) -> dict:
    """"[trigger=random,tau=0.2]" -> {"trigger": "random", "tau": "0.2"} (values stay strings)."""
    s = suffix.strip()
    if not s:
        return {}
    if not (s.startswith("[") and s.endswith("]")):
        return {"cell": s}
    out = {}
    for part in s[1:-1].split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
        elif part.strip():
            out[part.strip()] = ""
    return out


def _cell_suffix(run_dir: Path, methods: list[str]) -> str:
    cell = _read_json(run_dir / "cell.json")
    if isinstance(cell, dict) and isinstance(cell.get("suffix"), str):
        return cell["suffix"]
    if re.fullmatch(r"seed\d+", run_dir.name):
        name = run_dir.parent.name
        if "[" in name and name.endswith("]"):
            return name[name.index("["):]
    return ""


def load_method_runs(run_dirs: list[str | Path]) -> list[MethodRun]:
    """One MethodRun per (run folder, method). Raises ValueError on unreadable folders."""
    rows = []
    for d in find_run_dirs(run_dirs):
        summary = _read_json(d / "summary.json")
        cfg = _read_json(d / "config.json", {}) or {}
        if not isinstance(summary, dict) or not isinstance(summary.get("methods"), dict):
            raise ValueError(f"{d}/summary.json has no 'methods' mapping; is it a janus run folder?")
        suffix = _cell_suffix(d, list(summary["methods"]))
        stream_order = cfg.get("stream_order_seed") is not None
        seed = cfg["stream_order_seed"] if stream_order else cfg.get("seed", 0)
        for method, ms in summary["methods"].items():
            is_janus = bool(ms.get("janus", method.endswith("+janus")))
            rows.append(MethodRun(
                run_dir=d, dataset=summary.get("dataset") or cfg.get("dataset", "?"),
                updater=summary.get("updater") or cfg.get("updater", method.split("+")[0]),
                method=method, label=method + suffix, suffix_keys=parse_suffix(suffix), seed=int(seed or 0),
                janus=is_janus, janus_cfg=resolved_janus(cfg.get("janus")), summary=ms, stream_order=stream_order))
    return rows


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def evaluated_tasks(r: MethodRun) -> float | None:
    """Evaluation-set tasks actually solved: sum of decision["evaluator_calls"] / 2 (two memories per task).
    None when the decision log has no evaluator_calls."""
    if "evaluated" not in r.extra:
        total, seen = 0, False
        for line in read_jsonl(r.run_dir / r.method / "decisions.jsonl"):
            calls = (line.get("decision") or {}).get("evaluator_calls")
            if calls is not None:
                seen = True
                total += calls
        r.extra["evaluated"] = total / 2 if seen else None
    return r.extra["evaluated"]


# ------------------------------------------------------------------------------------------------ aggregation
def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def _std(xs):
    xs = [x for x in xs if x is not None]
    return statistics.stdev(xs) if len(xs) >= 2 else None


def _pct(x, std=None) -> str:
    if x is None:
        return "—"
    s = f"{100 * x:.1f}"
    return s + (f" ± {100 * std:.1f}" if std is not None else "")


def _num(x, nd=1) -> str:
    if x is None:
        return "—"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:.{nd}f}"
    return f"{int(x):,}"


def dataset_key(d: str):
    return (DATASET_ORDER.index(d), d) if d in DATASET_ORDER else (len(DATASET_ORDER), d)


def label_key(label: str):
    """Paper row order: memory-free, ExpRAG, then each updater followed by its Janus variant, ablations last."""
    base = label.split("[", 1)[0]
    upd = base.split("+", 1)[0]
    rank = BASELINE_ORDER.index(upd) if upd in BASELINE_ORDER else len(BASELINE_ORDER)
    return (rank, upd, "[" in label, "+janus" in base, label)


def group(rows: list[MethodRun], *keys: str) -> dict[tuple, list[MethodRun]]:
    out: dict[tuple, list[MethodRun]] = {}
    for r in rows:
        out.setdefault(tuple(getattr(r, k) for k in keys), []).append(r)
    return out


def _cell(text) -> str:
    """A Markdown table cell: a literal '|' (as in |E|) must be escaped or it splits the cell."""
    return str(text).replace("|", "\\|")


def markdown_table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in body]
    return "\n".join(lines)


def common_seeds(variants: dict[str, list[MethodRun]]) -> dict[str, list[MethodRun]]:
    """Keep only the seeds every variant has (so an ablation row is never compared across different stream orders);
    unchanged when the variants share no seed."""
    common = set.intersection(*({r.seed for r in rs} for rs in variants.values())) if variants else set()
    if not common:
        return variants
    return {k: [r for r in rs if r.seed in common] for k, rs in variants.items()}


def accuracy_table(rows: list[MethodRun]) -> dict:
    """Table 1: mean test accuracy (%) per label x dataset over seeds, plus the average over datasets.

    Rows: labels without an ablation suffix. Avg is the mean of the row's per-dataset means; it is given only when the row
    has every dataset of the table (otherwise "—")."""
    main = [r for r in rows if not r.suffix_keys]
    datasets = sorted({r.dataset for r in main}, key=dataset_key)
    labels = sorted({r.label for r in main}, key=label_key)
    g = group(main, "label", "dataset")
    cells: dict[str, dict[str, dict]] = {}
    body = []
    for lab in labels:
        line, means = [lab], []
        cells[lab] = {}
        for ds in datasets:
            rs = g.get((lab, ds), [])
            m, s = _mean([r.test_accuracy for r in rs]), _std([r.test_accuracy for r in rs])
            cells[lab][ds] = {"mean": m, "std": s, "n": len(rs)}
            line.append(_pct(m, s))
            means.append(m)
        avg = sum(means) / len(means) if means and all(m is not None for m in means) else None
        cells[lab]["avg"] = {"mean": avg}
        line.append(_pct(avg))
        body.append(line)
    header = ["Method"] + [DATASET_NAMES.get(d, d) for d in datasets] + ["Avg"]
    return {"datasets": datasets, "labels": labels, "cells": cells, "markdown": markdown_table(header, body)}


def _janus_row(rs: list[MethodRun]) -> dict:
    trig = _mean([r.summary.get("triggers") for r in rs])
    e = rs[0].eval_set_size
    return {
        "test_accuracy": _mean([r.test_accuracy for r in rs]), "std": _std([r.test_accuracy for r in rs]), "n": len(rs),
        "triggers": trig, "trigger_rate": _mean([r.summary.get("trigger_rate") for r in rs]),
        "accepts": _mean([r.summary.get("accepts") for r in rs]), "rollbacks": _mean([r.summary.get("rollbacks") for r in rs]),
        "eval_set_size": e, "cost": trig * e if trig is not None else None,
        "evaluated": _mean([evaluated_tasks(r) for r in rs]),
    }


def trigger_table(rows: list[MethodRun]) -> dict:
    """Table 2: per (dataset, updater), the base updater and each trigger policy (never/always/random/periodic/mmt) with
    test accuracy, #triggers, trigger rate (post-warm-up), |E|, cost = #triggers x |E| and tasks actually evaluated.
    Only the seeds shared by every row of a group are used."""
    groups: dict[tuple, dict[str, list[MethodRun]]] = {}
    for r in rows:
        if not r.janus and not r.suffix_keys:
            groups.setdefault((r.dataset, r.updater), {}).setdefault("base", []).append(r)
        elif r.janus and set(r.suffix_keys) <= TRIGGER_KEYS:
            groups.setdefault((r.dataset, r.updater), {}).setdefault(r.janus_cfg["trigger"], []).append(r)
    out, md = [], []
    header = ["Policy", "Test acc", "#Trig", "Trig. rate", "|E|", "Cost (#Trig×|E|)", "Evaluated tasks", "Accepts/Rollbacks"]
    for (ds, upd), pol in sorted(groups.items(), key=lambda kv: (dataset_key(kv[0][0]), kv[0][1])):
        if not any(k != "base" for k in pol):
            continue
        pol = common_seeds(pol)
        body = []
        for name in ["base"] + TRIGGER_ORDER:
            rs = pol.get(name)
            if not rs:
                continue
            if name == "base":
                row = {"policy": "base (no Janus)", "test_accuracy": _mean([r.test_accuracy for r in rs]),
                       "std": _std([r.test_accuracy for r in rs]), "n": len(rs)}
                body.append([row["policy"], _pct(row["test_accuracy"], row["std"]), "—", "—", "—", "—", "—", "—"])
            else:
                row = {"policy": name, **_janus_row(rs)}
                body.append([name, _pct(row["test_accuracy"], row["std"]), _num(row["triggers"]),
                             _pct(row["trigger_rate"]), str(row["eval_set_size"]), _num(row["cost"]),
                             _num(row["evaluated"]), f"{_num(row['accepts'])}/{_num(row['rollbacks'])}"])
            out.append({"dataset": ds, "updater": upd, **row})
        md.append(f"**{DATASET_NAMES.get(ds, ds)} / {upd}**\n\n" + markdown_table(header, body))
    return {"rows": out, "markdown": "\n\n".join(md)}


def janus_cost_table(rows: list[MethodRun]) -> dict:
    """Table 3: every Janus label (any sweep) with its tau, support size K, fresh size, accuracy, #triggers, trigger rate
    and cost = #triggers x |E| (paper-spec §8.6; the paper's default GPQA row is 173 x 25 = 4,325)."""
    g = group([r for r in rows if r.janus], "dataset", "label")
    out, body = [], []
    for (ds, lab), rs in sorted(g.items(), key=lambda kv: (dataset_key(kv[0][0]), label_key(kv[0][1]))):
        c = rs[0].janus_cfg
        row = {"dataset": ds, "label": lab, "tau": c["tau"], "K": int(c["coverage_size"]) + int(c["boundary_size"]),
               "K_F": int(c["fresh_size"]), "trigger": c["trigger"], **_janus_row(rs)}
        out.append(row)
        body.append([DATASET_NAMES.get(ds, ds), lab, f"{row['tau']:g}", str(row["K"]), str(row["K_F"]),
                     _pct(row["test_accuracy"], row["std"]), _num(row["triggers"]), _pct(row["trigger_rate"]),
                     _num(row["cost"]), _num(row["evaluated"])])
    header = ["Dataset", "Method", "τ", "K", "K_F", "Test acc", "#Trig", "Trig. rate", "Cost (#Trig×|E|)", "Evaluated tasks"]
    return {"rows": out, "markdown": markdown_table(header, body) if body else ""}


def evalset_table(rows: list[MethodRun]) -> dict:
    """Fig. 3 data: full Janus vs w/o coverage / boundary / fresh, per (dataset, updater), default trigger policy
    (only the seeds shared by every variant)."""
    out = []
    g: dict[tuple, dict[str, list[MethodRun]]] = {}
    for r in rows:
        if not r.janus or not set(r.suffix_keys) <= EVALSET_KEYS:
            continue
        off = [k[4:] for k in ("use_coverage", "use_boundary", "use_fresh") if not r.janus_cfg[k]]
        variant = "full" if not off else "w/o " + "+".join(off)
        g.setdefault((r.dataset, r.updater), {}).setdefault(variant, []).append(r)
    body = []
    for (ds, upd), var in sorted(g.items(), key=lambda kv: (dataset_key(kv[0][0]), kv[0][1])):
        if len(var) < 2:
            continue
        var = common_seeds(var)
        for name in sorted(var, key=lambda v: (v != "full", v)):
            rs = var[name]
            row = {"dataset": ds, "updater": upd, "variant": name, "test_accuracy": _mean([r.test_accuracy for r in rs]),
                   "std": _std([r.test_accuracy for r in rs]), "n": len(rs), "eval_set_size": rs[0].eval_set_size}
            out.append(row)
            body.append([DATASET_NAMES.get(ds, ds), upd + "+janus", name, str(row["eval_set_size"]),
                         _pct(row["test_accuracy"], row["std"])])
    header = ["Dataset", "Method", "Evaluation set", "|E|", "Test acc"]
    return {"rows": out, "markdown": markdown_table(header, body) if body else ""}


def stream_order_table(rows: list[MethodRun]) -> dict:
    """Fig. 5 data: per (dataset, label) with >= 2 seeds, final test accuracy mean ± sample std (n-1) over seeds."""
    out, body = [], []
    for (ds, lab), rs in sorted(group(rows, "dataset", "label").items(),
                                key=lambda kv: (dataset_key(kv[0][0]), label_key(kv[0][1]))):
        seeds = sorted({r.seed for r in rs})
        if len(seeds) < 2:
            continue
        accs = [r.test_accuracy for r in sorted(rs, key=lambda r: r.seed)]
        row = {"dataset": ds, "label": lab, "seeds": seeds, "accuracies": accs, "mean": _mean(accs), "std": _std(accs)}
        out.append(row)
        body.append([DATASET_NAMES.get(ds, ds), lab, str(len(seeds)), _pct(row["mean"]), _pct(row["std"]),
                     " ".join(_pct(a) for a in accs)])
    header = ["Dataset", "Method", "Orders", "Mean acc", "Std (n-1)", "Per order"]
    return {"rows": out, "markdown": markdown_table(header, body) if body else ""}


# ------------------------------------------------------------------------------------------------ entry point
def build_report(run_dirs: list[str], out_dir: str | None = None, *, max_timelines: int = 24) -> dict:
    """Build ``report.md`` and PNG plots for the given run folders (or folders above them).

    ``out_dir`` defaults to ``<first DIR>/report``. Returns ``{"out_dir", "report", "plots": {name: path},
    "tables": {"accuracy", "trigger", "janus_cost", "evalset", "stream_order"}}``; every table holds its rows and
    markdown. At most ``max_timelines`` trigger-timeline and token plots are drawn (one per Janus method run).

    Raises:
        ValueError: no run folder found, or a folder's summary.json is not a janus summary.
    """
    from . import plots

    if not run_dirs:
        raise ValueError("give at least one run folder")
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
    md += ["## Plots", ""]
    for name, path in plot_paths.items():
        if name not in ("evalset", "stream_order"):
            md += [f"![{name}]({Path(path).name})", ""]
    report = out / "report.md"
    report.write_text("\n".join(md), encoding="utf-8")
    return {"out_dir": str(out), "report": str(report), "plots": plot_paths, "tables": tables}
