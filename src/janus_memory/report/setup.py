"""What a report's numbers were measured with, and keeping incompatible runs apart.

Runs are comparable in one table only when they share backend, model, encoder and preset and, per dataset, the requested
stream/test sizes. ``sections`` splits MethodRun rows into such groups (the largest group first); ``caption`` names the
setup and the actual n of each dataset, for the report header and under every table.
"""
from __future__ import annotations

from collections import Counter


def base_key(r) -> tuple:
    s = r.setup
    return (s.get("backend", "?"), s.get("model", "?"), s.get("encoder", "?"), s.get("preset", "-"))


def size_key(r) -> tuple:
    return (r.setup.get("stream_size"), r.setup.get("test_size"))


def sections(rows: list) -> list[list]:
    """Groups of comparable rows: per (backend, model, encoder, preset), the most common requested sizes of each dataset
    form the main group; every other (dataset, sizes) becomes its own group. Largest group first."""
    out: list[list] = []
    by_base: dict[tuple, list] = {}
    for r in rows:
        by_base.setdefault(base_key(r), []).append(r)
    for group in by_base.values():
        main, extra = [], {}
        for ds in dict.fromkeys(r.dataset for r in group):
            rs = [r for r in group if r.dataset == ds]
            counts = Counter(size_key(r) for r in rs)
            top = max(counts, key=lambda k: (counts[k], str(k)))
            main += [r for r in rs if size_key(r) == top]
            for r in rs:
                if size_key(r) != top:
                    extra.setdefault((ds, size_key(r)), []).append(r)
        out += [main, *extra.values()]
    return sorted([g for g in out if g], key=lambda g: -len(g))


def _n(values) -> str:
    vals = sorted({v for v in values if v is not None})
    return "/".join(str(v) for v in vals) if vals else "?"


def caption(rows: list) -> str:
    """'backend fake, model scripted, encoder hashing, run preset paper; Janus recommended; GSM8K: stream n=30, test
    n=10; seeds 0, 1': the run preset (prompts, parsers, replays) and the Janus controllers (their preset labels,
    controller/describe.py) are named apart."""
    from .tables import dataset_key, display_name

    if not rows:
        return ""
    setups = sorted({base_key(r) for r in rows})
    head = "; ".join(f"backend {b}, model {m}, encoder {e}, run preset {p}" for b, m, e, p in setups)
    janus = sorted({r.controller.label for r in rows if r.janus})
    if janus:
        head += f"; Janus {', '.join(janus)}"
    parts = []
    for ds in sorted({r.dataset for r in rows}, key=dataset_key):
        rs = [r for r in rows if r.dataset == ds]
        parts.append(f"{display_name(ds)}: stream n={_n(r.summary.get('stream_tasks') for r in rs)}, "
                     f"test n={_n(r.summary.get('test_tasks') for r in rs)}")
    # a negative seed (stored before seeds were range-checked) ran the split of its absolute value: random.Random
    # drops the sign, so "-1, 1" are one seed twice, which the caption says
    seeds = ", ".join(f"{s} (ran as seed {-s})" if s < 0 else str(s)
                      for s in sorted({r.seed for r in rows}, key=lambda s: (abs(s), s)))
    return f"{head}; {'; '.join(parts)}; seeds {seeds}"
