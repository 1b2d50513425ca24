"""Paired comparison of a base updater and its +Janus variant on the same held-out test items.

Both methods of one run folder, or a grid's base cell and its +Janus cell (same dataset, seed and settings apart from
the Janus ones, so the same split), answer the same frozen test items, so the comparison is paired: only the items
where they disagree carry information. ``b`` = base right / Janus wrong, ``c`` = base wrong / Janus right. The exact McNemar
test is a two-sided sign test on the b + c discordant items (binomial, p = 1/2). The 95% interval of the accuracy
difference (c - b) / n is Newcombe's square-and-add interval for paired proportions (Newcombe 1998, method 10): a
Wilson score interval for each accuracy, combined with the estimated correlation of the two (phi, with Newcombe's
adjustment: a positive ad - bc is reduced by n/2 and floored at 0). It replaced the paired Wald interval, which at
the small n of real-model runs is too narrow and can exclude 0 while the exact test is far from significant (n = 10,
3 vs 0 discordant: Wald [+1.6, +58.4] pp, McNemar p = 0.25; Newcombe [-4.7, +55.1] pp).
"""
from __future__ import annotations

import math

Z95 = 1.959963984540054


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: 2 * P(X <= min(b, c)), X ~ Binomial(b + c, 1/2), capped at 1 (1.0 if b+c=0)."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def wilson(x: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of the proportion x / n ((0, 1) when n = 0)."""
    if n == 0:
        return (0.0, 1.0)
    p = x / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def paired_ci(both: int, janus_only: int, base_only: int, neither: int, z: float = Z95) -> tuple[float, float]:
    """95% interval of the paired accuracy difference (janus_only - base_only) / n, Newcombe's square-and-add
    (method 10) from the 2x2 table of the shared items: both right, only +Janus right, only base right, neither."""
    n = both + janus_only + base_only + neither
    if n == 0:
        return (0.0, 0.0)
    pj, pb = (both + janus_only) / n, (both + base_only) / n
    lj, uj = wilson(both + janus_only, n, z)
    lb, ub = wilson(both + base_only, n, z)
    margins = (both + janus_only) * (base_only + neither) * (both + base_only) * (janus_only + neither)
    cross = both * neither - janus_only * base_only
    if margins == 0 or 0 <= cross <= n / 2:
        phi = 0.0
    else:
        phi = (cross - n / 2 if cross > 0 else cross) / math.sqrt(margins)
    d = pj - pb
    lo = d - math.sqrt(max(0.0, (pj - lj) ** 2 - 2 * phi * (pj - lj) * (ub - pb) + (ub - pb) ** 2))
    hi = d + math.sqrt(max(0.0, (pb - lb) ** 2 - 2 * phi * (pb - lb) * (uj - pj) + (uj - pj) ** 2))
    return (max(-1.0, lo), min(1.0, hi))


def paired_compare(base: dict[str, bool], janus: dict[str, bool]) -> dict:
    """``{task_id: correct}`` of both methods -> n (shared items), accuracies, b, c, difference, CI, exact p."""
    ids = sorted(set(base) & set(janus))
    n = len(ids)
    b = sum(1 for i in ids if base[i] and not janus[i])
    c = sum(1 for i in ids if janus[i] and not base[i])
    return {"n": n, "base_acc": sum(base[i] for i in ids) / n if n else None,
            "janus_acc": sum(janus[i] for i in ids) / n if n else None, "base_only": b, "janus_only": c,
            "diff": (c - b) / n if n else None,
            "ci95": paired_ci(sum(1 for i in ids if base[i] and janus[i]), c, b,
                              sum(1 for i in ids if not base[i] and not janus[i])), "p_mcnemar": mcnemar_exact(b, c),
            "unmatched": len(set(base) ^ set(janus))}


def _pair_key(r) -> tuple:
    return (r.dataset, r.updater, r.seed, r.stream_order, r.cell_label.replace("+janus", ""),
            tuple(sorted(r.setup.items(), key=str)), r.base_ident)


def base_janus_pairs(rows) -> list[tuple]:
    """(base row, +Janus row) with the same dataset, updater, seed, label suffix and settings apart from the Janus
    ones (variants.base_identity: backend, model, sampling, data, sizes ...), hence the same test split: the two
    methods of one run folder (``--controller both``) or two grid cells (``<u>/seed<k>`` and ``<u>+janus/seed<k>``).
    A base in the +Janus row's own folder is preferred, then one from the same grid (variants.origin)."""
    from .variants import origin

    bases: dict[tuple, list] = {}
    for r in rows:
        if not r.janus:
            bases.setdefault(_pair_key(r), []).append(r)
    out = []
    for j in rows:
        cands = bases.get(_pair_key(j), []) if j.janus else []
        if cands:
            out.append((min(cands, key=lambda b: (b.run_dir != j.run_dir, origin(b.run_dir) != origin(j.run_dir),
                                                  str(b.run_dir))), j))
    return out


def base_for(j, bases):
    """The base run (from ``bases``) that a +Janus run of any cell (an ablation too) is compared with: same dataset,
    updater, seed and settings apart from the Janus ones; from its own folder, else its grid, else the first by path.
    None when there is none."""
    from .variants import origin

    key = lambda r: (r.dataset, r.updater, r.seed, r.stream_order, tuple(sorted(r.setup.items(), key=str)),  # noqa: E731
                     r.base_ident)
    cands = [b for b in bases if not b.janus and key(b) == key(j)]
    if not cands:
        return None
    return min(cands, key=lambda b: (b.run_dir != j.run_dir, origin(b.run_dir) != origin(j.run_dir), str(b.run_dir)))


def paired_rows(rows, names: dict | None = None) -> list[dict]:
    """One paired comparison per (base, +Janus) pair (:func:`base_janus_pairs`), from both test.jsonl files; pairs
    with no shared test item are left out. ``folders`` names the run folder(s) by ``names`` ({run folder: short
    name}; default variants.short_names of the rows' folders)."""
    from ..store.reader import RunReader
    from .variants import short_names

    names = names or short_names([r.run_dir for r in rows])
    out = []
    for b, j in sorted(base_janus_pairs(rows), key=lambda p: (p[1].dataset, p[1].seed, str(p[1].run_dir), p[1].label)):
        tb = _verdicts(RunReader(b.run_dir).jsonl(f"{b.method}/test.jsonl"))
        tj = _verdicts(RunReader(j.run_dir).jsonl(f"{j.method}/test.jsonl"))
        if set(tb) & set(tj):  # nothing shared: no paired comparison (the run's own integrity check reports it)
            same = b.run_dir == j.run_dir
            out.append({"dataset": j.dataset, "label": j.label, "base": b.label, "seed": j.seed,
                        "run_dir": str(j.run_dir), "base_run_dir": str(b.run_dir), "same_folder": same,
                        "folders": names[j.run_dir] if same else f"{names[b.run_dir]} vs {names[j.run_dir]}",
                        **paired_compare(tb, tj)})
    return out


def _verdicts(records: list[dict]) -> dict[str, bool]:
    """{task_id: correct} of a test.jsonl; only real booleans count (a string "false" is not True, a missing or null
    verdict is left out rather than counted as wrong)."""
    return {str(x["task_id"]): x["correct"] for x in records
            if isinstance(x, dict) and "task_id" in x and isinstance(x.get("correct"), bool)}


def paired_markdown(prs: list[dict]) -> str:
    from .labels import display_name, markdown_table

    body = []
    for p in prs:
        lo, hi = p["ci95"]
        body.append([display_name(p["dataset"]), f"{p['base']} vs {p['label']}", p["folders"], str(p["seed"]), str(p["n"]),
                     f"{100 * p['base_acc']:.1f}", f"{100 * p['janus_acc']:.1f}", f"{100 * p['diff']:+.1f}",
                     f"[{100 * lo:+.1f}, {100 * hi:+.1f}]", f"{p['janus_only']}/{p['base_only']}",
                     f"{p['p_mcnemar']:.3g}"])
    header = ["Dataset", "Comparison", "Run folder(s)", "Seed", "n", "Base acc", "+Janus acc", "Diff (pp)", "95% CI (pp)",
              "Janus-only/base-only correct", "McNemar exact p"]
    return markdown_table(header, body) if body else ""
