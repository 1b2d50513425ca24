"""Metrics of memory-world episodes: per-episode numbers, means with 95% t-intervals over seeds, paired comparisons
for the paper's three claims, and the markdown table.

Definitions (accuracies in points, i.e. x100):
* final: true accuracy of the memory deployed after the last step; regret: oracle's final minus the policy's final.
* auc: mean true accuracy of the deployed memory over the stream (area under the Fig. 4 curve).
* harmful candidate: true accuracy strictly below the deployed memory's (all steps, warm-up included).
* precision: harmful rejected / all rejected; recall: harmful rejected / all harmful (undefined -> left out of the mean);
  recall_1pt: the same recall restricted to candidates that cost at least 1 point.
* harm_through: harmful candidates deployed; harm_pts: true accuracy they removed in total (points).
* destr_through: destructive candidates (retrieved-examples dumps) deployed, of ``destr`` proposed.
* genuine: candidates whose true accuracy is strictly above the deployed memory's; genuine_rolled_back: those rolled
  back (knowledge the guard threw away); late / late_rolled_back: the same for the ``late`` kind (knowledge for
  topics the stream has not reached yet, worth nothing on the tasks seen so far).
* triggers (all comparisons, warm-up included: the recommended controller's text gate compares inside the warm-up)
  and trigger rate (post-warm-up triggers / post-warm-up steps, so at most 1).
* evaluator_calls: what the run pays, the distinct (memory text, task) evaluations under keyed noise (a repeat is a
  response-cache hit; every request under fresh noise); raw_calls: every (memory, task) request
  (``world.WorldEvaluator``). Call shares are read from evaluator_calls.
* trigger selectivity (Janus policies; post-warm-up candidates only): trig_recall = harmful candidates on which the
  trigger fired / harmful candidates; trig_recall_1pt the same for candidates costing >= 1 point; trig_recall_dump for
  the retrieved-examples dumps.
"""
from __future__ import annotations

import math

import numpy as np

CHECKPOINTS = (0.2, 0.4, 0.6, 0.8, 1.0)
EPS = 1e-12
BIG_LOSS = 0.01  # a candidate costing >= 1 point of true accuracy


def episode_metrics(ep: dict, oracle_final: float | None, warmup: int | None) -> dict:
    acc = ep["acc"]
    n = len(acc)
    harmful = ep["cand_gain"] < -EPS
    acc_ = ep["accepted"]
    rej = ~acc_
    dump = np.array([k == "dump" for k in ep["kinds"]])
    late = np.array([k == "late" for k in ep["kinds"]], dtype=bool)
    n_rej, n_harm = int(rej.sum()), int(harmful.sum())
    hr = int((harmful & rej).sum())
    big = ep["cand_gain"] < -BIG_LOSS
    final = 100 * float(acc[-1])
    trig = int(ep["triggered"].sum())
    post = n - warmup if warmup is not None else n
    live = np.arange(n) >= (warmup or 0)  # post-warm-up steps (a gate armed in the warm-up also fires before)
    fired = ep["triggered"]
    return {
        "final": final,
        "regret": (100 * oracle_final - final) if oracle_final is not None else float("nan"),
        "auc": 100 * float(acc.mean()),
        "triggers": trig,
        "trigger_rate": (int((fired & live).sum()) / post) if warmup is not None and post > 0 else 0.0,
        "evaluator_calls": int(ep["evaluator_calls"]),
        "raw_calls": int(ep.get("raw_calls", ep["evaluator_calls"])),
        "harmful": n_harm,
        "rejected": n_rej,
        "precision": hr / n_rej if n_rej else float("nan"),
        "recall": hr / n_harm if n_harm else float("nan"),
        "recall_1pt": float((big & rej).sum() / big.sum()) if big.any() else float("nan"),
        "harm_through": int((harmful & acc_).sum()),
        "harm_pts": -100 * float(ep["cand_gain"][harmful & acc_].sum()),
        "destr": int(dump.sum()),
        "destr_through": int((dump & acc_).sum()),
        "genuine": int((ep["cand_gain"] > EPS).sum()),
        "genuine_rolled_back": int(((ep["cand_gain"] > EPS) & rej).sum()),
        "late": int(late.sum()),
        "late_rolled_back": int((late & rej).sum()),
        "trig_recall": _frac(fired & harmful & live, harmful & live) if warmup is not None else float("nan"),
        "trig_recall_1pt": _frac(fired & big & live, big & live) if warmup is not None else float("nan"),
        "trig_recall_dump": _frac(fired & dump & live, dump & live) if warmup is not None else float("nan"),
        "checkpoints": [100 * float(acc[max(0, round(n * f) - 1)]) for f in CHECKPOINTS],
    }


def _frac(num: np.ndarray, den: np.ndarray) -> float:
    return float(num.sum() / den.sum()) if den.any() else float("nan")


def mean_ci(values) -> tuple[float, float, int]:
    """(mean, half-width of the 95% t-interval, n) over the finite values; half-width NaN when n < 2."""
    from scipy.stats import t as student_t

    v = np.array([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size == 0:
        return float("nan"), float("nan"), 0
    if v.size == 1:
        return float(v[0]), float("nan"), 1
    half = float(student_t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return float(v.mean()), half, int(v.size)


def aggregate(per_seed: dict[str, list[dict]]) -> dict[str, dict]:
    """policy -> metric -> (mean, ci, n); checkpoints -> list of (mean, ci, n)."""
    out = {}
    for pol, rows in per_seed.items():
        agg = {}
        for key in rows[0]:
            if key == "checkpoints":
                agg[key] = [mean_ci([r[key][i] for r in rows]) for i in range(len(CHECKPOINTS))]
            else:
                agg[key] = mean_ci([r[key] for r in rows])
        out[pol] = agg
    return out


CLAIMS = [
    ("sanity", "oracle", "blind"),
    ("1 trigger timing", "janus", "random"),
    ("1 trigger timing", "janus", "periodic"),
    ("2 eval-set roles", "janus", "no-coverage"),
    ("2 eval-set roles", "janus", "no-boundary"),
    ("2 eval-set roles", "janus", "no-fresh"),
    ("3 keeps good memories", "janus", "blind"),
    ("3 keeps good memories", "janus-fast", "blind"),
    ("3 keeps good memories", "janus-sign", "blind"),
    ("ours vs paper", "janus-fast", "janus"),
    ("ours vs paper", "janus-sign", "janus"),
    ("3 keeps good memories", "recommended", "blind"),
    ("ours vs paper", "recommended", "janus"),
    ("ours vs always", "recommended", "always"),
]


def paired(per_seed: dict[str, list[dict]], a: str, b: str, key: str = "final") -> dict | None:
    """Paired difference a - b over seeds (both lists are in seed order): mean, 95% CI, and how often a >= b."""
    if a not in per_seed or b not in per_seed:
        return None
    da = [r[key] for r in per_seed[a]]
    db = [r[key] for r in per_seed[b]]
    diff = [x - y for x, y in zip(da, db)]
    m, ci, n = mean_ci(diff)
    return {"a": a, "b": b, "key": key, "mean": m, "ci": ci, "n": n,
            "a_ge_b": sum(1 for d in diff if d >= -EPS), "a_gt_b": sum(1 for d in diff if d > EPS)}


def fmt(mean: float, ci: float, digits: int = 1) -> str:
    if not math.isfinite(mean):
        return "n/a"
    if not math.isfinite(ci):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {ci:.{digits}f}"


TABLE_COLS = [("final", "final acc", 1), ("regret", "regret", 1), ("auc", "AUC", 1), ("triggers", "triggers", 1),
              ("evaluator_calls", "evaluations (paid)", 0), ("raw_calls", "requests (raw)", 0), ("precision", "rej. precision", 2), ("recall", "rej. recall", 2), ("recall_1pt", "recall ≥1pt", 2),
              ("harm_through", "harmful deployed", 1), ("destr_through", "dumps deployed", 2),
              ("genuine_rolled_back", "genuine rolled back", 1), ("genuine", "genuine", 1)]


def markdown_table(agg: dict[str, dict], order: list[str]) -> str:
    head = "| policy | " + " | ".join(c[1] for c in TABLE_COLS) + " |"
    lines = [head, "|" + "---|" * (len(TABLE_COLS) + 1)]
    for pol in order:
        if pol not in agg:
            continue
        cells = [fmt(agg[pol][k][0], agg[pol][k][1], d) for k, _, d in TABLE_COLS]
        lines.append(f"| {pol} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


TRIGGER_COLS = [("trigger_rate", "trigger rate", 2), ("trig_recall", "fired on harmful", 2),
                ("trig_recall_1pt", "fired on ≥1pt harmful", 2), ("trig_recall_dump", "fired on dumps", 2),
                ("evaluator_calls", "evaluations (paid)", 0), ("raw_calls", "requests (raw)", 0), ("final", "final acc", 1)]


def trigger_table(agg: dict[str, dict], order: list[str]) -> str:
    """Trigger selectivity of the policies that have a trigger: on how many harmful candidates (of at least one point,
    dumps) the trigger fired, beside its rate and cost."""
    lines = ["| policy | " + " | ".join(c[1] for c in TRIGGER_COLS) + " |", "|" + "---|" * (len(TRIGGER_COLS) + 1)]
    for pol in order:
        if pol in agg and agg[pol]["trig_recall"][2] > 0:
            lines.append(f"| {pol} | " + " | ".join(fmt(agg[pol][k][0], agg[pol][k][1], d) for k, _, d in TRIGGER_COLS)
                         + " |")
    return "\n".join(lines)


def claims_table(per_seed: dict[str, list[dict]]) -> str:
    lines = ["| claim | comparison | Δ final acc (pts, 95% CI) | seeds a ≥ b | seeds a > b |", "|---|---|---|---|---|"]
    for claim, a, b in CLAIMS:
        p = paired(per_seed, a, b)
        if p is None:
            continue
        lines.append(f"| {claim} | {a} − {b} | {fmt(p['mean'], p['ci'], 2)} | {p['a_ge_b']}/{p['n']} | "
                     f"{p['a_gt_b']}/{p['n']} |")
    return "\n".join(lines)


def boot_ratio(num, den, seed: int = 24, n_boot: int = 10_000,
               positive_den: bool = False) -> tuple[float, float, float]:
    """mean(num) / mean(den) and its 95% percentile interval over paired bootstrap resamples of the seeds (the
    share of always-compare's gain or evaluations a policy keeps or pays; ``benchmarks/controller/bench_recommended.py``
    uses it too). NaN when the denominator's mean is 0, and
    with ``positive_den`` when it is not above 0: a share of always's gain over blind means nothing when always does
    not gain (two losses would make a large positive share)."""
    num, den = np.asarray(num, float), np.asarray(den, float)
    n = len(num)
    if n == 0 or abs(den.mean()) < 1e-12 or (positive_den and den.mean() <= 0):
        return float("nan"), float("nan"), float("nan")
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    d = den[idx].mean(1)
    r = num[idx].mean(1) / np.where(np.abs(d) < 1e-12, np.nan, d)
    r = r[np.isfinite(r)]
    lo, hi = np.percentile(r, [2.5, 97.5]) if r.size else (float("nan"), float("nan"))
    return float(num.mean() / den.mean()), float(lo), float(hi)


def share_table(per_seed: dict[str, list[dict]], order: list[str]) -> str | None:
    """Each policy's share of always's gain over blind in final accuracy, and of always's paid evaluations (distinct
    (memory, task) evaluations: what a cached run pays), with 95% paired-bootstrap intervals over seeds; the share of
    always's raw requests beside it, labelled. None unless the grid has both ``blind`` and ``always``."""
    if "blind" not in per_seed or "always" not in per_seed:
        return None
    fin = {p: np.array([m["final"] for m in per_seed[p]]) for p in order}
    calls = {p: np.array([m["evaluator_calls"] for m in per_seed[p]], float) for p in order}
    raw = {p: np.array([m.get("raw_calls", m["evaluator_calls"]) for m in per_seed[p]], float) for p in order}
    gain = fin["always"] - fin["blind"]
    lines = ["| policy | gain share [95%] | call share [95%] (paid evaluations) | raw-request share |",
             "|---|---|---|---|"]

    def f(t, why="n/a"):
        return f"{t[0]:.2f} [{t[1]:.2f}, {t[2]:.2f}]" if math.isfinite(t[0]) else why

    none = f"n/a (always − blind is {gain.mean():+.2f}: no gain to share)"
    for p in order:
        if p in ("blind", "always"):
            continue
        rs = raw[p].mean() / raw["always"].mean() if raw["always"].mean() > 0 else float("nan")
        lines.append(f"| {p} | {f(boot_ratio(fin[p] - fin['blind'], gain, positive_den=True), none)} | "
                     f"{f(boot_ratio(calls[p], calls['always']))} | "
                     f"{f'{rs:.2f}' if math.isfinite(rs) else 'n/a'} |")
    return "\n".join(lines)
