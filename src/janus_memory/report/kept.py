"""What a method's memory kept, beside its gain and cost: the genuine candidates it rolled back and, on the generated
rules datasets, how many of the rules its stream stated the final memory holds. Shown by `janus run`'s closing
summary (summary_table.print_kept) and `janus report` (:func:`kept_table`, report.md; console.print_kept_report).

* **Genuine candidates rolled back**: steps whose candidate was the updater's own (not an ``--inject`` harmful one),
  differed from the memory before it, and was not deployed (``deployed: previous`` in the decision log,
  docs/run-folder.md), out of all such genuine candidates. A guard that rolls back many of them keeps the memory from
  learning: on ``rules_late`` a candidate that adds a late rule is worth nothing on the tickets seen so far.
  Only for a method that ran Janus (the others deploy every candidate).
* **Stated rules held**: the rules the run's stream stated (``meta["stated"]`` of its tasks, tasks/rules.py
  ``stated_rules``) whose true number the final memory holds, written with its unit on a line that names the rule
  (tasks/rules.py ``held_rules``), and the rules it lost. Only for the generated ``rules`` datasets.

Both are read from the run folder (decision log, final memory, stored config), so a folder written before they were
shown gets them too.
"""
from __future__ import annotations

from pathlib import Path

SHORT = ("genuine rolled back", "stated rules held", "rules lost")  # `janus run`'s headers; the caption says what they count


def genuine_rollbacks(lines: list[dict]) -> tuple[int, int]:
    """(genuine candidates rolled back, genuine candidates) of a decision log: a genuine candidate is a step's
    candidate that was not injected and differs from the memory before it; rolled back when not deployed."""
    rolled = genuine = 0
    for line in lines:
        if not isinstance(line, dict) or line.get("injected"):
            continue
        old, cand = line.get("old_memory_sha256"), line.get("candidate_memory_sha256")
        if old is None or cand is None or old == cand:
            continue
        genuine += 1
        rolled += int(line.get("deployed") != "candidate")
    return rolled, genuine


def reoffers_deployed(lines: list[dict]) -> int:
    """Re-offers (``seq_reoffer``) deployed in a decision log: earlier rolled-back additions that came back."""
    from ..controller.reoffer import offer_deployed

    return sum(1 for ln in lines if isinstance(ln, dict) and isinstance(ln.get("decision"), dict)
               and offer_deployed(ln["decision"].get("reoffer")))


def stated_and_held(run_dir: str | Path, method: str, cfg: dict | None = None) -> tuple[list[str], list[str]] | None:
    """(rules the run's stream stated, those the final memory of ``method`` holds), both in stating order; None when
    the run is not on a generated rules dataset or its stream or memory cannot be read."""
    from ..errors import JanusError
    from ..store.reader import RunReader
    from ..tasks.rules import VARIANTS, held_rules, make_world, stated_rules

    reader = RunReader(run_dir)
    cfg = reader.config() if cfg is None else cfg
    dataset, seed = cfg.get("dataset"), cfg.get("seed") or 0
    if dataset not in VARIANTS or not isinstance(seed, int):
        return None
    try:
        from ..tasks import load_split

        tasks = load_split(dataset, "stream", seed=seed, limit=cfg.get("stream_size")).tasks
        splits = reader.json_file("splits.json") or {}
        ids = (splits.get("stream") or {}).get("ids") if isinstance(splits, dict) else None
        if isinstance(ids, list) and ids:
            run_ids = set(ids)
            tasks = [t for t in tasks if t.id in run_ids]
        last = reader.last_memory(method)
    except (OSError, ValueError, RuntimeError, JanusError):
        return None
    stated = stated_rules(tasks)
    memory = (last or {}).get("text") or ""
    held = held_rules(memory, make_world(dataset, seed), stated)
    return stated, [k for k in stated if held[k]]


def method_kept(run_dir: str | Path, method: str, *, janus: bool, cfg: dict | None = None) -> dict:
    """``{"rolled_back", "genuine"}`` (None without Janus or a readable decision log) and ``{"stated", "held"}``
    (None off the rules datasets) of one method of a run folder."""
    from ..errors import JanusError
    from ..store.reader import RunReader

    out: dict = {"rolled_back": None, "genuine": None, "stated": None, "held": None}
    if janus:
        try:
            lines = RunReader(run_dir).decisions(method)
            out["rolled_back"], out["genuine"] = genuine_rollbacks(lines)
            out["back"] = reoffers_deployed(lines)
        except (OSError, ValueError, JanusError):
            pass
    rules = stated_and_held(run_dir, method, cfg)
    if rules is not None:
        out["stated"], out["held"] = rules
    return out


def cells(k: dict) -> list[str]:
    """The three table cells of a :func:`method_kept` result: "2 of 9", "3 of 4" and the rules lost ("handling"),
    "—" where a number does not apply or nothing was lost (several runs summed: "—" too, the names are per run)."""
    rolled = "—" if k["genuine"] is None else f"{k['rolled_back']} of {k['genuine']}"
    if k.get("back"):  # rolled back at their step, offered again and deployed later
        rolled += f" ({k['back']} back by a re-offer)"
    if k["stated"] is None:
        return [rolled, "—", "—"]
    lost = [] if k.get("several") else [r for r in k["stated"] if r not in k["held"]]
    return [rolled, f"{len(k['held'])} of {len(k['stated'])}", ", ".join(lost) or "—"]


def shows_anything(kept: list[dict]) -> bool:
    return any(k["genuine"] is not None or k["stated"] is not None for k in kept)


# ------------------------------------------------------------------------------------------------ janus report
def kept_table(rows: list) -> dict:
    """The report's table over its method runs (report/runs.MethodRun): per label and dataset, the counts summed over
    its runs (seeds); ``{"header", "body", "rows", "markdown"}`` with an empty markdown when nothing applies."""
    from .tables import display_name, markdown_table

    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        if r.stream_order:
            continue
        k = r.extra.get("kept")
        if k is None:
            k = r.extra["kept"] = method_kept(r.run_dir, r.method, janus=r.janus)
        groups.setdefault((r.label, r.dataset), []).append(k)
    out_rows, body = [], []
    for (label, dataset), ks in groups.items():
        merged = _merge(ks)
        out_rows.append({"label": label, "dataset": dataset, "runs": len(ks), **merged})
        body.append([label, display_name(dataset), str(len(ks)), *cells(merged)])
    header = ["Method", "Dataset", "Runs", "Genuine candidates rolled back", "Stated rules held (final memory)",
              "Rules lost"]
    shown = shows_anything([r for r in out_rows])
    return {"header": header, "body": body if shown else [], "rows": out_rows if shown else [],
            "markdown": markdown_table(header, body) if shown else ""}


def _merge(ks: list[dict]) -> dict:
    """Counts of several runs of one label summed; the rules lost are named only for a single run."""
    out: dict = {"rolled_back": None, "genuine": None, "stated": None, "held": None}
    with_j = [k for k in ks if k["genuine"] is not None]
    if with_j:
        out["rolled_back"] = sum(k["rolled_back"] for k in with_j)
        out["genuine"] = sum(k["genuine"] for k in with_j)
        out["back"] = sum(k.get("back") or 0 for k in with_j)
    with_r = [k for k in ks if k["stated"] is not None]
    if len(with_r) == 1:
        out["stated"], out["held"] = with_r[0]["stated"], with_r[0]["held"]
    elif with_r:  # several runs: "7 of 8" over all of them (a rule stated in two runs counts twice)
        out["stated"] = [f"{i}:{r}" for i, k in enumerate(with_r) for r in k["stated"]]
        out["held"] = [f"{i}:{r}" for i, k in enumerate(with_r) for r in k["held"]]
        out["several"] = True
    return out


KEPT_TITLE = "## What the memory kept"
KEPT_NOTE = ("Genuine candidates rolled back = the updater's own candidates (not injected, different from the memory "
             "before them) that Janus did not deploy, out of all of them; a guard that rolls back many keeps the memory "
             "from learning (a re-offer may deploy one later: counted apart). Stated rules held = the rules the "
             "run's stream stated (generated rules datasets) whose "
             "true number, written with its unit on a line naming the rule, the final memory holds. Summed over a "
             "label's runs; — = does not apply (no controller; not a rules dataset).")


def kept_markdown(table: dict, capline: str) -> list[str]:
    """report.md's section for :func:`kept_table` ([] when it has no rows)."""
    if not table.get("markdown"):
        return []
    return [KEPT_TITLE, "", KEPT_NOTE, "", table["markdown"], "", capline, ""]
