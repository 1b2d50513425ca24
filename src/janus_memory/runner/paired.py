"""Paired comparison of a base updater and its +Janus variant on the same held-out test items.

Both methods of one run folder answer the same frozen test split, so the comparison is paired: only the items where
they disagree carry information. ``b`` = base right / Janus wrong, ``c`` = base wrong / Janus right. The exact McNemar
test is a two-sided sign test on the b + c discordant items (binomial, p = 1/2); the 95% interval of the accuracy
difference (c - b) / n uses the paired normal approximation (Agresti & Min's Wald interval with its variance of the
difference of two correlated proportions).
"""
from __future__ import annotations

import math


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: 2 * P(X <= min(b, c)), X ~ Binomial(b + c, 1/2), capped at 1 (1.0 if b+c=0)."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired_ci(b: int, c: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """95% Wald interval of the paired accuracy difference (c - b) / n."""
    if n == 0:
        return (0.0, 0.0)
    d = (c - b) / n
    var = ((b + c) / n - d * d) / n
    half = z * math.sqrt(max(var, 0.0))
    return (d - half, d + half)


def paired_compare(base: dict[str, bool], janus: dict[str, bool]) -> dict:
    """``{task_id: correct}`` of both methods -> n (shared items), accuracies, b, c, difference, CI, exact p."""
    ids = sorted(set(base) & set(janus))
    n = len(ids)
    b = sum(1 for i in ids if base[i] and not janus[i])
    c = sum(1 for i in ids if janus[i] and not base[i])
    return {"n": n, "base_acc": sum(base[i] for i in ids) / n if n else None,
            "janus_acc": sum(janus[i] for i in ids) / n if n else None, "base_only": b, "janus_only": c,
            "diff": (c - b) / n if n else None, "ci95": paired_ci(b, c, n), "p_mcnemar": mcnemar_exact(b, c),
            "unmatched": len(set(base) ^ set(janus))}


def paired_rows(rows) -> list[dict]:
    """One paired comparison per run folder holding both X and X+janus (same label suffix), from test.jsonl."""
    from .reader import RunReader

    by_dir: dict = {}
    for r in rows:
        by_dir.setdefault((r.run_dir, r.label.replace("+janus", "")), {})[r.method] = r
    out = []
    for (run_dir, _), ms in sorted(by_dir.items(), key=lambda kv: str(kv[0])):
        for name, jr in ms.items():
            base = ms.get(name[: -len("+janus")]) if name.endswith("+janus") else None
            if base is None:
                continue
            reader = RunReader(run_dir)
            tb = {x["task_id"]: bool(x["correct"]) for x in reader.jsonl(f"{base.method}/test.jsonl")}
            tj = {x["task_id"]: bool(x["correct"]) for x in reader.jsonl(f"{jr.method}/test.jsonl")}
            if tb and tj:
                out.append({"dataset": jr.dataset, "label": jr.label, "base": base.label, "seed": jr.seed,
                            "run_dir": str(run_dir), **paired_compare(tb, tj)})
    return out


def paired_markdown(prs: list[dict]) -> str:
    from .tables import display_name, markdown_table

    body = []
    for p in prs:
        lo, hi = p["ci95"]
        body.append([display_name(p["dataset"]), f"{p['base']} vs {p['label']}", str(p["seed"]), str(p["n"]),
                     f"{100 * p['base_acc']:.1f}", f"{100 * p['janus_acc']:.1f}", f"{100 * p['diff']:+.1f}",
                     f"[{100 * lo:+.1f}, {100 * hi:+.1f}]", f"{p['janus_only']}/{p['base_only']}",
                     f"{p['p_mcnemar']:.3g}"])
    header = ["Dataset", "Comparison", "Seed", "n", "Base acc", "+Janus acc", "Diff (pp)", "95% CI (pp)",
              "Janus-only/base-only correct", "McNemar exact p"]
    return markdown_table(header, body) if body else ""
