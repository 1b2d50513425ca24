"""The paper's published numbers beside ours (issue 27): Table 1 of the Janus paper (arXiv 2606.31121), Qwen3-8B,
test accuracy in % per dataset, as transcribed in ../shared/research/paper-spec.md §8.1. The DeepSeek-V4-Flash rows
were published as averages only, so no cell of ours matches them.

A cell of ours matches when its dataset, updater and controller (with or without Janus, paper settings: a row
without a setting suffix) are those of a published cell. Every published number is shown as the paper's, with the
paper's backbone, and next to the backbone our run used; when the two differ, the row says so.
"""
from __future__ import annotations

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
        out.append({"label": label, "dataset": ds, "ours": 100 * sum(accs) / len(accs) if accs else None,
                    "n": len(accs), "paper": published(rs[0].updater, rs[0].janus, ds), "our_backbone": ", ".join(models),
                    "same_backbone": all(same_backbone(m) for m in models),
                    "checker": "paper" if all(r.checker == "paper" for r in rs) else "strict"})
    from .tables import dataset_key, label_key

    out.sort(key=lambda x: (label_key(x["label"]), dataset_key(x["dataset"])))
    return out


def published_table(rows: list) -> dict:
    """{"rows", "header", "body", "markdown", "note"} of the published-numbers table ({} rows: nothing matches)."""
    from .tables import display_name, markdown_table

    prs = published_rows(rows)
    header = ["Method", "Dataset", "Ours (%)", f"Paper (%, {PAPER_BACKBONE})", "Our backbone"]
    body = [[p["label"], display_name(p["dataset"]), "—" if p["ours"] is None else f"{p['ours']:.1f}",
             f"{p['paper']:.1f}", p["our_backbone"] + ("" if p["same_backbone"] else " (not the paper's)")]
            for p in prs]
    differ = any(not p["same_backbone"] for p in prs)
    note = (f"Paper = the published Table 1 of the Janus paper, backbone {PAPER_BACKBONE} (vLLM, thinking on, the "
            "authors' checkers), not a run of ours."
            + (" Our rows marked '(not the paper's)' ran on another backbone: the two numbers are not comparable."
               if differ else ""))
    return {"rows": prs, "header": header, "body": body,
            "markdown": markdown_table(header, body) if body else "", "note": note}
