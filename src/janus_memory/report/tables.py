"""Paper-style tables from MethodRun rows (report/runs.py): Table 1 accuracy, Table 2 trigger ablation, Table 3 Janus
cost, Fig. 3 evaluation-set ablation, Fig. 5 stream order. Dataset display names and column order, and the baseline
rows' order, are facts of the datasets and updaters themselves (janus_memory.registry)."""
from __future__ import annotations

import statistics
from collections import Counter

from .labels import _cell, dataset_key, display_name, label_key, markdown_table  # noqa: F401
from .runs import MethodRun, eval_set_used, evaluations, tasks_read

TRIGGER_KEYS = {"trigger", "trigger_rate", "trigger_period"}
EVALSET_KEYS = {"use_coverage", "use_boundary", "use_fresh"}
TRIGGER_ORDER = ["never", "always", "random", "periodic", "mmt"]


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


def _rate(x) -> str:
    """A rate in percent, with the % sign: 0.625 -> "62.5%"."""
    return "—" if x is None else f"{100 * x:.1f}%"


def _used(x) -> str:
    return "—" if x is None else f"{x:.1f}"


def _num(x, nd=1) -> str:
    if x is None:
        return "—"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:.{nd}f}"
    return f"{int(x):,}"


def group(rows: list[MethodRun], *keys: str) -> dict[tuple, list[MethodRun]]:
    out: dict[tuple, list[MethodRun]] = {}
    for r in rows:
        out.setdefault(tuple(getattr(r, k) for k in keys), []).append(r)
    return out


def common_seeds(variants: dict[str, list[MethodRun]]) -> dict[str, list[MethodRun]]:
    """Keep only the seeds every variant has (so an ablation row is never compared across different stream orders);
    unchanged when the variants share no seed."""
    common = set.intersection(*({r.seed for r in rs} for rs in variants.values())) if variants else set()
    if not common:
        return variants
    return {k: [r for r in rs if r.seed in common] for k, rs in variants.items()}


def accuracy_table(rows: list[MethodRun], strict: bool = False) -> dict:
    """Table 1: mean test accuracy (%) per label x dataset over seeds, plus the average over datasets.

    ``strict``: our strict checker's accuracy (``MethodRun.test_accuracy_strict``) instead of the run's checker's.

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
            accs = [r.test_accuracy_strict if strict else r.test_accuracy for r in rs]
            m, s = _mean(accs), _std(accs)
            cells[lab][ds] = {"mean": m, "std": s, "n": len(rs)}
            line.append(_pct(m, s))
            means.append(m)
        avg = sum(means) / len(means) if means and all(m is not None for m in means) else None
        cells[lab]["avg"] = {"mean": avg}
        line.append(_pct(avg))
        body.append(line)
    header = ["Method"] + [display_name(d) for d in datasets] + ["Avg"]
    return {"datasets": datasets, "labels": labels, "cells": cells, "header": header, "body": body,
            "markdown": markdown_table(header, body)}


def _used_mean(rs: list[MethodRun]) -> float | None:
    """Mean size of the evaluation set actually built at a trigger, pooled over the runs' triggers."""
    used = [u for u in (eval_set_used(r) for r in rs) if u is not None]
    n = sum(k for _, k in used)
    return sum(t for t, _ in used) / n if n else None


def _reads_mean(rs: list[MethodRun]) -> float | None:
    """Mean number of tasks a comparison read under both memories, pooled over the runs' comparisons."""
    got = [u for u in (tasks_read(r) for r in rs) if u is not None]
    n = sum(k for _, k in got)
    return sum(t for t, _ in got) / n if n else None


def _mean_all(xs):
    """The mean, or None when any value is missing (a mean over the seeds that happen to have a number would pass
    for all of them)."""
    xs = list(xs)
    return None if not xs or any(x is None for x in xs) else sum(xs) / len(xs)


def _na(x, nd=1) -> str:
    """A stored measurement: "n/a" when the run folder does not hold it."""
    return "n/a" if x is None else _num(x, nd)


def policy_name(r: MethodRun) -> str:
    """A Janus row's name in Table 2: the trigger policy when the controller compares as the paper's does (its hybrid
    set, its rule: the paper preset, the fast one, a run stored before the presets; Table 2 is the paper's trigger
    ablation), the preset label for the recommended controller (``recommended``, ``recommended + trigger mmt``), and
    the trigger with the label for any other (``always (custom: recommended with eval_set=hybrid)``)."""
    d = r.controller
    trig = r.janus_cfg["trigger"]
    if d.preset == "recommended":
        return d.label
    if d.paper_set and r.janus_cfg.get("decision_rule", "paper") == "paper":
        return trig
    return f"{trig} ({d.label})"


def _janus_row(rs: list[MethodRun]) -> dict:
    trig = _mean([r.summary.get("triggers") for r in rs])
    d = rs[0].controller
    e = d.configured
    paid = [r.paid for r in rs]
    return {
        "test_accuracy": _mean([r.test_accuracy for r in rs]), "std": _std([r.test_accuracy for r in rs]), "n": len(rs),
        "triggers": trig, "trigger_rate": _mean([r.summary.get("trigger_rate") for r in rs]),
        "accepts": _mean([r.summary.get("accepts") for r in rs]), "rollbacks": _mean([r.summary.get("rollbacks") for r in rs]),
        "controller": d.label, "eval_set": d.reads_cell, "eval_set_size": e, "eval_set_used": _used_mean(rs),
        "tasks_read": _reads_mean(rs), "evaluations": _mean_all(evaluations(r) for r in rs),
        "janus_calls_paid": _mean_all(p["janus_calls"] if p else None for p in paid),
        "janus_tokens_paid": _mean_all(p["janus_tokens"] if p else None for p in paid),
        # the paper's measure (#triggers x configured |E|), only for the paper's own controller
        "paper_cost": trig * e if d.paper_cost and trig is not None else None,
    }


COST_LEGEND = ("Evaluations needed = the (memory, task) evaluations the controller's decisions used, summed from the "
               "decision log (outcomes it reused, or that identical texts shared, are not counted): the same for the "
               "same run whatever the response cache held; Janus calls paid = "
               "the backend calls of the Janus evaluation role (a reply served by the response cache is not paid and "
               "not counted; requests a batching evaluator sent ahead that the decision did not need are paid and "
               "counted)")
PAPER_COST_LEGEND = ("Paper's cost (#Trig×|E|) = triggers × the configured |E|, the paper's measure, in tasks (each "
                     "replayed under both memories, so a full comparison is 2 evaluations a task), given for the "
                     "paper's controller only")


def trigger_table(rows: list[MethodRun]) -> dict:
    """Table 2: per (dataset, updater), the base updater and each Janus policy (the paper's trigger policies
    never/always/random/periodic/mmt, or the controller's preset label, ``policy_name``) with test accuracy,
    #triggers, trigger rate (post-warm-up, in %), the evaluation set (built size, mean / configured; tasks read per
    comparison), the evaluations the controller used, the Janus calls the run paid and, for the paper's controller,
    the paper's cost #triggers x configured |E|. The base row has no trigger: its trigger cells, MMT's count included,
    are "—". Only the seeds shared by every row of a group are used."""
    from .paired import base_for

    by_label: dict[tuple, dict[str, list[MethodRun]]] = {}
    for r in rows:
        if r.janus and set(r.suffix_keys) <= TRIGGER_KEYS:
            by_label.setdefault((r.dataset, r.updater, r.tag), {}).setdefault(r.cell_label, []).append(r)
    bases = [r for r in rows if not r.janus and not r.suffix_keys]
    groups: dict[tuple, dict[str, list[MethodRun]]] = {}
    for key, labels in by_label.items():
        pol = groups.setdefault(key, {})
        count = Counter(policy_name(rs[0]) for rs in labels.values())
        for lab, rs in labels.items():
            name = policy_name(rs[0])  # two cells with one policy (a rate sweep): a row each, by suffix
            pol[name if count[name] == 1 else f"{name} {lab[lab.index('['):] if '[' in lab else '(default)'}"] = rs
            for r in rs:
                b = base_for(r, bases)  # the base run of this seed with these settings, not any base of the updater
                if b is not None and not any(b is x for x in pol.get("base", [])):
                    pol.setdefault("base", []).append(b)
    out, md, notes = [], [], []
    for (ds, upd, tag), pol in sorted(groups.items(), key=lambda kv: (dataset_key(kv[0][0]), kv[0][1], kv[0][2])):
        if not any(k != "base" for k in pol):
            continue
        pol = common_seeds(pol)
        paper = any(rs[0].controller.paper_cost for k, rs in pol.items() if k != "base")
        header = ["Policy", "Test acc", "#Trig", "MMT #Trig", "Trig. rate", "Evaluation set",
                  "|E| used (mean) / configured", "Tasks read (mean)", "Evaluations needed", "Janus calls paid",
                  *(["Paper's cost (#Trig×|E|)"] if paper else []), "Accepts/Rollbacks"]
        mmt_trig = _num(_mean([r.summary.get("triggers") for r in pol.get("mmt", [])])) if pol.get("mmt") else "—"
        for r in (r for k, rs in pol.items() if k.split(" ")[0] == "periodic" for r in rs):
            if int(r.janus_cfg.get("trigger_period") or 0) == 1:
                why = ("the stream has no step after the Janus warm-up (no trigger could fire)" if mmt_trig in ("0", 0)
                       else f"MMT fired on most post-warm-up steps ({mmt_trig} triggers)")
                notes.append(f"{display_name(ds)} / {upd} seed {r.seed}: the matched periodic trigger degenerated to "
                             f"period 1 (= always) because {why}; its row is not a distinct policy")
        body = []
        order = {t: i for i, t in enumerate(["base"] + TRIGGER_ORDER)}
        trig_of = {k: (rs[0].janus_cfg["trigger"] if k != "base" else "base") for k, rs in pol.items()}
        for name in sorted(pol, key=lambda k: (order.get(trig_of[k], len(order)), k)):
            rs = pol[name]
            if name == "base":
                row = {"policy": "base (no Janus)", "test_accuracy": _mean([r.test_accuracy for r in rs]),
                       "std": _std([r.test_accuracy for r in rs]), "n": len(rs)}
                body.append([row["policy"], _pct(row["test_accuracy"], row["std"])] + ["—"] * (len(header) - 2))
            else:
                row = {"policy": name, **_janus_row(rs)}
                body.append([name, _pct(row["test_accuracy"], row["std"]), _num(row["triggers"]), mmt_trig,
                             _rate(row["trigger_rate"]), row["eval_set"],
                             f"{_used(row['eval_set_used'])} / {row['eval_set_size']}", _na(row["tasks_read"]),
                             _na(row["evaluations"]), _na(row["janus_calls_paid"]),
                             *([_num(row["paper_cost"])] if paper else []),
                             f"{_num(row['accepts'])}/{_num(row['rollbacks'])}"])
            out.append({"dataset": ds, "updater": upd, "tag": tag, **row})
        title = f"{display_name(ds)} / {upd}" + (f" ({tag})" if tag else "")
        md.append(f"**{title}**\n\n" + markdown_table(header, body))
    paper = any(r.get("paper_cost") is not None for r in out)
    return {"rows": out, "markdown": "\n\n".join(md), "notes": notes, "paper_cost": paper}


def janus_cost_table(rows: list[MethodRun]) -> dict:
    """Table 3: every Janus label (any sweep) with its controller (preset label), tau (for the triggers that read
    it), evaluation set, accuracy, #triggers, trigger rate, the evaluations the controller used, the Janus calls the
    run paid and, for the paper's controller, the paper's cost #triggers x |E| (docs/research-notes.md §8.6; the paper's default
    GPQA row is 173 x 25 = 4,325)."""
    g = group([r for r in rows if r.janus], "dataset", "label")
    out, body = [], []
    items = sorted(g.items(), key=lambda kv: (dataset_key(kv[0][0]), label_key(kv[0][1])))
    paper = any(rs[0].controller.paper_cost for _, rs in items)
    for (ds, lab), rs in items:
        c = rs[0].janus_cfg
        hybrid = rs[0].controller.paper_set  # K and K_F are the paper's set's sizes
        row = {"dataset": ds, "label": lab, "tau": c["tau"], "trigger": c["trigger"],
               "K": int(c["coverage_size"]) + int(c["boundary_size"]) if hybrid else None,
               "K_F": int(c["fresh_size"]) if hybrid else None, **_janus_row(rs)}
        out.append(row)
        tau = f"{row['tau']:g}" if row["trigger"] in ("mmt", "selective") else "—"
        body.append([display_name(ds), lab, row["controller"], tau, row["eval_set"],
                     _pct(row["test_accuracy"], row["std"]), _num(row["triggers"]), _rate(row["trigger_rate"]),
                     _na(row["evaluations"]), _na(row["janus_calls_paid"]),
                     *([_num(row["paper_cost"])] if paper else [])])
    header = ["Dataset", "Method", "Janus", "τ", "Evaluation set", "Test acc", "#Trig", "Trig. rate", "Evaluations needed",
              "Janus calls paid", *(["Paper's cost (#Trig×|E|)"] if paper else [])]
    return {"rows": out, "markdown": markdown_table(header, body) if body else "", "paper_cost": paper}


def cost_table(rows: list[MethodRun]) -> dict:
    """What the runs paid, per method and dataset (mean over seeds): backend calls and tokens (every role), replies
    the response cache served (not paid), the Janus evaluation role's calls and tokens, and the evaluations the
    controller's decisions used. "n/a" where a run folder does not hold the number."""
    out, body = [], []
    for (ds, lab), rs in sorted(group(rows, "dataset", "label").items(),
                                key=lambda kv: (dataset_key(kv[0][0]), label_key(kv[0][1]))):
        paid = [r.paid for r in rs]
        row = {"dataset": ds, "label": lab, "n": len(rs), "janus": rs[0].janus,
               **{k: _mean_all(p[k] if p else None for p in paid)
                  for k in ("calls", "tokens", "cache_hits", "retries", "janus_calls", "janus_tokens")},
               "evaluations": _mean_all(evaluations(r) for r in rs) if rs[0].janus else None}
        out.append(row)
        j = (lambda k: _na(row[k])) if row["janus"] else (lambda k: "—")  # noqa: E731, B023 (used in this iteration)
        body.append([display_name(ds), lab, _na(row["calls"]), _na(row["tokens"]), _na(row["cache_hits"]),
                     j("janus_calls"), j("janus_tokens"), j("evaluations")])
    header = ["Dataset", "Method", "LLM calls paid", "Tokens paid", "Cache hits (not paid)", "Janus calls paid",
              "Janus tokens paid", "Evaluations needed"]
    return {"rows": out, "header": header, "body": body, "markdown": markdown_table(header, body) if body else ""}


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
        g.setdefault((r.dataset, r.updater, r.tag), {}).setdefault(variant, []).append(r)
    body = []
    for (ds, upd, tag), var in sorted(g.items(), key=lambda kv: (dataset_key(kv[0][0]), kv[0][1], kv[0][2])):
        if len(var) < 2:
            continue
        var = common_seeds(var)
        for name in sorted(var, key=lambda v: (v != "full", v)):
            rs = var[name]
            row = {"dataset": ds, "updater": upd, "tag": tag, "variant": name,
                   "test_accuracy": _mean([r.test_accuracy for r in rs]),
                   "std": _std([r.test_accuracy for r in rs]), "n": len(rs), "eval_set_size": rs[0].eval_set_size}
            out.append(row)
            body.append([display_name(ds), upd + "+janus" + (f" ({tag})" if tag else ""), name, str(row["eval_set_size"]),
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
        body.append([display_name(ds), lab, str(len(seeds)), _pct(row["mean"]), _pct(row["std"]),
                     " ".join(_pct(a) for a in accs)])
    header = ["Dataset", "Method", "Orders", "Mean acc", "Std (n-1)", "Per order"]
    return {"rows": out, "markdown": markdown_table(header, body) if body else ""}
