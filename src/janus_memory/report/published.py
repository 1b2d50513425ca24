"""The paper's published numbers beside ours: Table 1 of the Janus paper (arXiv 2606.31121), Qwen3-8B,
test accuracy in % per dataset, as transcribed in docs/research-notes.md §8.1. The DeepSeek-V4-Flash rows
were published as averages only, so no cell of ours matches them.

A cell of ours matches when its dataset, updater and controller (with or without Janus, paper settings: a row
without a setting suffix) are those of a published cell. Every published number is shown as the paper's, with the
paper's backbone, and next to the backbone our run used; when the two differ, the row says so. The row also shows
how many test tasks our number is over beside the paper's test split size, and flags a run whose answer checker
(ours, strict), Janus settings (any JanusConfig field but the seed), dataset loader settings (GPQA option order,
APIBench split and question), replay settings or updater options are not the paper preset's.
"""
from __future__ import annotations

import json
from functools import lru_cache

PAPER_BACKBONE = "Qwen3-8B"
_DATASETS = ("math500", "gpqa", "mmlu_pro_eng", "mmlu_pro_phy", "apibench_hf", "humaneval")
_TABLE1 = {  # (updater, with Janus) -> accuracy per dataset, in _DATASETS order
    ("memory_free", False): (78.2, 57.4, 61.2, 84.0, 65.2, 90.3),
    ("exprag", False): (82.0, 69.2, 66.2, 87.2, 72.0, 91.2),
    ("dc_rs", False): (81.4, 73.4, 64.4, 84.0, 80.8, 93.2),
    ("dc_rs", True): (83.6, 81.5, 68.0, 89.2, 82.8, 93.9),
    ("expel", False): (80.0, 72.9, 68.8, 90.4, 66.4, 91.2),
    ("expel", True): (81.6, 78.5, 71.6, 92.8, 70.4, 93.9),
}
PAPER_TABLE1 = {(upd, janus, ds): v for (upd, janus), vals in _TABLE1.items() for ds, v in zip(_DATASETS, vals)}
# the paper's held-out test split sizes (docs/research-notes.md §6.2)
PAPER_TEST_N = {"math500": 500, "gpqa": 198, "mmlu_pro_eng": 250, "mmlu_pro_phy": 250, "apibench_hf": 250,
                "humaneval": 114}


def controller_differences(janus_cfg: dict) -> list[str]:
    """``key=value`` for every JanusConfig setting of a run that is not the paper preset's (the seed excepted: any
    seed runs the paper's controller)."""
    from ..controller import JanusConfig

    paper = JanusConfig.paper().to_dict()
    return [f"{k}={janus_cfg[k]}" for k in paper if k != "seed" and k in janus_cfg and janus_cfg[k] != paper[k]]


# run settings a preset decides when unset (settings/presets.py), flagged when a row's is not the paper preset's:
# the dataset loader's (only for a dataset whose loader takes it) and, for a +Janus row, the replays'
_LOADER_SETTINGS = ("option_order", "apibench_split", "apibench_question")
_REPLAY_SETTINGS = ("replay", "replay_failures", "twin_cache")


def _preset_value(key: str, preset: str):
    from ..settings import presets

    return (presets.replay_mode if key == "replay" else getattr(presets, key))(preset)


@lru_cache(maxsize=32)
def _paper_updater_config(dataset: str, updater: str) -> dict:
    """The paper preset's resolved updater options (settings/stored.resolve_config), values as the report's identity
    holds them."""
    from ..settings.config import RunConfig
    from ..settings.stored import resolve_config

    try:
        cfg = resolve_config(RunConfig.parse({"dataset": dataset, "updater": updater})).updater_config
    except Exception:  # noqa: BLE001 - an updater this version cannot build (a plugin not loaded): nothing to compare
        return {}
    return {k: json.dumps(v, sort_keys=True, separators=(",", ":")) if isinstance(v, (list, dict)) else v
            for k, v in cfg.items()}


def setting_differences(ident: dict, dataset: str, updater: str, janus: bool) -> list[str]:
    """``key=value`` for every run setting of a row (its identity, report/variants.py) that is not the paper
    preset's, the checker and JanusConfig excepted (flagged apart): the dataset loader's settings (GPQA's option
    order, APIBench's split and question), the replay settings of a +Janus row, and the updater's options."""
    from ..tasks import DATASETS

    spec = DATASETS.get(dataset)
    preset = ident.get("preset") or "small"
    keys = [k for k in _LOADER_SETTINGS if spec and k in spec.options] + (list(_REPLAY_SETTINGS) if janus else [])
    out = []
    for k in keys:
        value = ident.get(k) if ident.get(k) is not None else _preset_value(k, preset)
        if value != _preset_value(k, "paper"):
            out.append(f"{k}={value}")
    paper = _paper_updater_config(dataset, updater)
    for k, v in sorted(paper.items()):
        ours = ident.get(f"updater_config.{k}", v)
        if ours != v:
            out.append(f"updater {k}={ours}")
    return out


def published(updater: str, janus: bool, dataset: str) -> float | None:
    """The paper's Table 1 accuracy (%) of this cell, or None when the paper has none."""
    return PAPER_TABLE1.get((updater, bool(janus), dataset))


def same_backbone(model: str) -> bool:
    """Whether our run's model name is the paper's backbone (Qwen3-8B, any case, any quantisation suffix)."""
    m = (model or "").lower().replace("_", "-")
    return "qwen3-8b" in m


def published_rows(rows: list) -> list[dict]:
    """One dict per (label, dataset) of ours with a published cell: label, dataset, ours (mean %, over the rows'
    seeds), paper (%), our backbone(s) and whether it is the paper's."""
    groups: dict[tuple, list] = {}
    for r in rows:
        if r.suffix_keys or r.stream_order:
            continue
        if published(r.updater, r.janus, r.dataset) is None:
            continue
        groups.setdefault((r.label, r.dataset), []).append(r)
    out = []
    for (label, ds), rs in groups.items():
        accs = [r.test_accuracy for r in rs if r.test_accuracy is not None]
        models = sorted({str(r.setup.get("model") or "?") for r in rs})
        diffs = sorted({d for r in rs if r.janus for d in controller_differences(r.janus_cfg)})
        settings = sorted({d for r in rs for d in setting_differences(r.ident, ds, r.updater, r.janus)})
        test_n = sorted({int(r.summary.get("test_tasks") or 0) for r in rs})
        out.append({"label": label, "dataset": ds, "ours": 100 * sum(accs) / len(accs) if accs else None,
                    "n": len(accs), "paper": published(rs[0].updater, rs[0].janus, ds), "our_backbone": ", ".join(models),
                    "same_backbone": all(same_backbone(m) for m in models),
                    "checker": "paper" if all(r.checker == "paper" for r in rs) else "strict",
                    "test_n": test_n, "paper_test_n": PAPER_TEST_N.get(ds), "controller_diff": diffs,
                    "setting_diff": settings})
    from .tables import dataset_key, label_key

    out.sort(key=lambda x: (label_key(x["label"]), dataset_key(x["dataset"])))
    return out


def published_table(rows: list) -> dict:
    """{"rows", "header", "body", "markdown", "note"} of the published-numbers table ({} rows: nothing matches)."""
    from .tables import display_name, markdown_table

    prs = published_rows(rows)
    header = ["Method", "Dataset", "Ours (%)", "Test n (ours / paper)", f"Paper (%, {PAPER_BACKBONE})",
              "Our backbone", "Setting not the paper's"]
    body = [[p["label"], display_name(p["dataset"]), "—" if p["ours"] is None else f"{p['ours']:.1f}",
             f"{', '.join(map(str, p['test_n']))} / {p['paper_test_n'] or '?'}", f"{p['paper']:.1f}",
             p["our_backbone"] + ("" if p["same_backbone"] else " (not the paper's)"), _setting_flags(p)]
            for p in prs]
    differ = any(not p["same_backbone"] for p in prs)
    flagged = any(p["checker"] != "paper" or p["controller_diff"] or p["setting_diff"] for p in prs)
    note = (f"Paper = the published Table 1 of the Janus paper, backbone {PAPER_BACKBONE} (vLLM, thinking on, the "
            "authors' checkers), not a run of ours. Test n: the held-out tasks each of our runs scored / the paper's "
            "test split."
            + (" Our rows marked '(not the paper's)' ran on another backbone: the two numbers are not comparable."
               if differ else "")
            + (" A row with a setting in the last column ran with our strict checker, or with Janus, data, replay "
               "or updater settings other than the paper preset's: it is not the paper's setting." if flagged else ""))
    return {"rows": prs, "header": header, "body": body,
            "markdown": markdown_table(header, body) if body else "", "note": note}


def _setting_flags(p: dict) -> str:
    """The last column: what of the run is not the paper's setting ("—" when nothing)."""
    flags = [] if p["checker"] == "paper" else ["checker: strict"]
    if p["controller_diff"]:
        flags.append("Janus: " + ", ".join(p["controller_diff"]))
    if p.get("setting_diff"):
        flags.append(", ".join(p["setting_diff"]))
    return "; ".join(flags) or "—"
