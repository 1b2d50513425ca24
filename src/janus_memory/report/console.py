"""What `janus report` prints after writing report.md: per group of comparable runs the headline accuracy table (the
rows of the report's Table 1; for a sweep of variant cells only, Table 3's accuracy columns), what the runs paid per
method, its setup line, the warnings about runs made twice, where rows that share a method name come from, the base vs
+Janus paired comparisons with their run folders (one line each), then one line per unfinished run folder left out.
Tables are `janus run`'s (summary_table.fit_table): on a terminal they fit its width (80 columns), off one (``| cat``)
nothing is wrapped or cut.
"""
from __future__ import annotations

from .summary_table import fit_table


def _print(console, text: str) -> None:
    from ..errors import printable

    console.print(printable(text), markup=False, soft_wrap=True)


def print_report(res: dict, console) -> None:
    """Print the console view of a :func:`report.build_report` result."""
    width = console.width if console.is_terminal else None
    secs = res["sections"]
    for i, sec in enumerate(secs):
        acc = sec["tables"]["accuracy"]
        spread = any(" ± " in c for row in acc["body"] for c in row)
        setup = sec["caption"] + (" (± = sample std over seeds)" if spread else "")
        group = f"group {i + 1} of {len(secs)}: " if len(secs) > 1 else ""
        if group:
            _print(console, f"{group}{setup}")
        tag = "[scripted] " if sec.get("scripted") else ""
        if acc["labels"]:
            t = fit_table(f"{tag}Table 1: test accuracy (%)", tuple(acc["header"]), acc["body"], width=width)
            console.print(t, crop=False)
            pub = sec["tables"].get("published")
            if pub and pub["body"]:
                t = fit_table("the paper's published numbers beside ours", tuple(pub["header"]), pub["body"],
                              width=width)
                console.print(t, crop=False)
                _print(console, pub["note"])
            strict = sec["tables"].get("accuracy_strict")
            if strict and strict["same"]:
                from .report import strict_same

                _print(console, strict_same(strict).replace("`", "").rstrip("."))
            elif strict:
                t = fit_table("Table 1, strict checker (%)", tuple(strict["header"]),
                              strict["body"], width=width)
                console.print(t, crop=False)
                _print(console, "the first table scores with the authors' checker (checker: paper): gold letter "
                                "or option text in the answer tag, the output's first character, or the gold option "
                                "text anywhere, thinking included; the strict table is ours; the difference is "
                                "checker leniency (APIBench: the authors' AST match, which can go either way)")
        else:
            _print_cost_rows(sec, group, console, width)
        _print_paid(sec, console, width)

        print_kept_report(sec["tables"].get("kept") or {}, console, width)  # genuine rollbacks, stated rules held
        if not group:  # the setup as a line of its own: a caption would wrap to the table's width
            _print(console, f"setup: {setup}")
        for line in sec["duplicates"]:
            _print(console, line)
        if sec["sources"]:
            _print(console, "rows that share a method name, and their run folders:")
            for line in sec["sources"]:
                _print(console, f"  {line}")
        _print_paired(sec["tables"]["paired"]["rows"], group, console, tag)
        if tag:
            from .report import SCRIPTED_NOTE

            _print(console, SCRIPTED_NOTE)
    for line in res.get("unfinished", []):
        _print(console, line)
    for line in res.get("warnings", []):  # a run whose responses came from more than one model
        _print(console, line)


def _print_cost_rows(sec: dict, group: str, console, width) -> None:
    """A sweep of variant cells (every label has a [..] suffix): Table 3's rows, the accuracy of every Janus label."""
    from .tables import _na, _num, _pct, display_name

    rows = sec["tables"]["janus_cost"]["rows"]
    if not rows:
        _print(console, f"{group}no Table 1 row (every run is a variant cell); the tables are in report.md")
        return
    body = [[r["label"], display_name(r["dataset"]), r["controller"], _pct(r["test_accuracy"], r["std"]),
             _num(r["triggers"]), _na(r["evaluations"])] for r in rows]
    t = fit_table("test accuracy (%) of every Janus label (Table 3)",
                  ("Method", "Dataset", "Janus", "Test acc", "#Trig", "Evaluations needed"), body, width=width)
    console.print(t, crop=False)


def _print_paid(sec: dict, console, width) -> None:
    """What the runs paid per method (the report's cost table, its main columns): backend calls and tokens, replies
    the response cache served (not paid), and the evaluations the Janus controller used."""
    from .tables import _na, display_name

    rows = sec["tables"]["cost"]["rows"]
    if not any(r["calls"] is not None for r in rows):
        return
    body = [[r["label"], display_name(r["dataset"]), _na(r["calls"]), _na(r["tokens"]), _na(r["cache_hits"]),
             _na(r.get("retries")), *((_na(r["janus_calls"]), _na(r["evaluations"])) if r["janus"] else ("—", "—"))]
            for r in rows]
    t = fit_table("cost per method: what the runs paid", ("Method", "Dataset", "LLM calls paid", "tokens paid",
                                                         "cache hits (not paid)", "retries", "Janus calls paid",
                                                         "Janus evaluations needed"), body,
                  caption=EVALUATIONS_NEEDED + "; retries = " + RETRIES, width=width)
    console.print(t, crop=False)


# what the cost columns count, said under the tables (janus report, janus run)
EVALUATIONS_NEEDED = ("Janus evaluations needed = the (memory, task) evaluations the controller's decisions used, from "
                      "the decision log: the same whatever the response cache held; Janus calls paid = those the "
                      "backend answered in this run (0 when the cache served them all)")
RETRIES = ("attempts repeated after a transient failure (a dropped connection, HTTP 429 or 5xx, a timeout); they are "
           "not calls paid")


def paired_line(p: dict) -> str:
    """One paired comparison in one line (any width: a terminal wraps it, nothing is cut)."""
    from .tables import display_name

    lo, hi = p["ci95"]
    return (f"  {p['base']} vs {p['label']}, {display_name(p['dataset'])} seed {p['seed']}, run folder(s) "
            f"{p['folders']}: n={p['n']}, diff {100 * p['diff']:+.1f} pp, 95% CI [{100 * lo:+.1f}, {100 * hi:+.1f}], "
            f"McNemar p={p['p_mcnemar']:.3g}")


def _print_paired(prs: list[dict], group: str, console, tag: str = "") -> None:
    if prs:
        _print(console, f"{tag}{group}base vs +Janus, paired on the same test items (+Janus minus base accuracy):")
        for p in prs:
            _print(console, (f"  {tag}" + paired_line(p).lstrip()) if tag else paired_line(p))


def print_kept_report(table: dict, console, width: int | None = None) -> None:
    """`janus report`'s console table for :func:`kept_table` (nothing when it has no rows)."""
    if table.get("body"):
        t = fit_table("what the memory kept", tuple(table["header"]), table["body"], width=width)
        t.columns[-1].justify = "left"  # names
        console.print(t, crop=False)
