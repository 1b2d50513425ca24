"""`janus report DIR [DIR...]`: paper-style tables and PNG plots from finished run folders.

Tables (docs/research-notes.md §8): Table 1 accuracy (methods x datasets, average column), Table 2 trigger ablation
with trigger rate and cost, Table 3 Janus cost (#triggers x |E|, any tau/K sweep), Fig. 3 evaluation-set ablation,
Fig. 5 stream order (mean ± sample std over seeds). Plots (report/plots.py): test accuracy at memory checkpoints
(Fig. 4), trigger timeline, cumulative LLM tokens by role, eval-set ablation bars, stream-order spread.

Input folders are run folders (holding summary.json) or any folder above them (searched recursively), e.g. the root of a
grid ``<root>/<dataset>/<cell>/seed<k>``. A row label is the method name plus the cell's setting suffix, e.g.
``dc_rs+janus[trigger=random]``: the suffix comes from ``cell.json`` (written by grid/sweep) or, failing that, from the
folder name ``<cell>/seed<k>``. Runs with the same label and dataset are averaged only when they are seeds of one
configuration: the same stored settings apart from the seed (report/variants.py). Rows that would share a label get
what tells them apart (``dc_rs+janus (tau=0.2)``; the same run made twice: its folder, ``dc_rs (a)``) and the report
lists their folders. Unfinished run folders (run.sqlite without COMPLETE) are left out, each named in one line with how
far it got and how to continue it (store/unfinished.py).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import OutputError, RunFolderError, printable
from ..store.jsonio import atomic_write_text
from . import inject_report
from .runs import (  # noqa: F401  (re-exported)
    MethodRun,
    evaluations,
    find_run_dirs,
    load_method_runs,
    load_runs,
    mixed_models,
    parse_suffix,
    resolved_janus,
)
from .tables import (  # noqa: F401  (re-exported)
    COST_LEGEND,
    PAPER_COST_LEGEND,
    accuracy_table,
    cost_table,
    evalset_table,
    janus_cost_table,
    label_key,
    markdown_table,
    stream_order_table,
    trigger_table,
)


def _unchecked_notes(folders: list[Path]) -> list[str]:
    """One line per folder whose database predates the hash chain (store format < 4) or the state seals (format 4):
    what was not checked."""
    from ..store.chain import STORE_FORMAT_SEALED, store_format
    from ..store.integrity import db_problems
    from ..store.reader import RunReader

    out = []
    for d in folders:
        if RunReader(d).meta("config") is None:  # not a database a run wrote (no stored settings): nothing to say
            continue
        unchecked = db_problems(d)[1]
        if unchecked:
            out.append(f"note: {d} was written before run databases carried a hash chain (store format < 4): "
                       f"edited or deleted rows of {', '.join(unchecked)} are not detected (not checked)")
        elif RunReader(d)._with_db(store_format, 1) < STORE_FORMAT_SEALED:
            out.append(f"note: {d} was written before run databases sealed their memory texts and checkpoint rows "
                       "(store format 4): edited or deleted rows of those are not detected (not checked)")
    return out


# ------------------------------------------------------------------------------------------------ entry point
def build_report(run_dirs: list[str], out_dir: str | None = None, *, max_timelines: int = 24, log=None) -> dict:
    """Build ``report.md`` and PNG plots for the given run folders (or folders above them).

    ``out_dir`` defaults to ``<first DIR>/report``. Returns ``{"out_dir", "report", "plots": {name: path},
    "tables": {"accuracy", "cost", "trigger", "janus_cost", "evalset", "stream_order"}}``; every table holds its rows and
    markdown. At most ``max_timelines`` trigger-timeline and token plots are drawn (one per Janus method run).
    ``log(text)`` is told of each stage as it starts (`janus report` prints them to stderr).

    Raises:
        ValueError: no run folder found, or a folder's summary.json is not a janus summary.
    """
    if not run_dirs:
        raise RunFolderError("give at least one run folder")
    from .setup import caption, sections

    log = log or (lambda text: None)
    log(f"reading the run folders in {', '.join(str(d) for d in run_dirs)}")
    from ..store.finder import scan_run_dirs
    from ..store.unfinished import note
    from .variants import assign_tags, short_names

    finished, unfinished = scan_run_dirs(run_dirs)
    if not finished:
        find_run_dirs(run_dirs)  # raises: no finished run, naming the unfinished ones and how to continue them
    rows = load_runs(finished)
    left_out = [note(d) for d in unfinished] + _unchecked_notes(finished)
    from ..store.reader import RunReader

    mixed = [f"warning: {d}: {line}" for d in finished if (line := mixed_models(RunReader(d).summary()))]
    out = Path(out_dir).expanduser() if out_dir else Path(run_dirs[0]).expanduser() / "report"
    _check_out_folder(out)
    groups = sections(rows)
    n_dirs = len({r.run_dir for r in rows})
    log(f"building the tables: {len(rows)} method {'run' if len(rows) == 1 else 'runs'} in {n_dirs} run "
        f"{'folder' if n_dirs == 1 else 'folders'}, {len(groups)} {'group' if len(groups) == 1 else 'groups'} of "
        "comparable runs")
    names = short_names([r.run_dir for r in rows])
    secs = []
    for g in groups:
        tags = assign_tags(g)  # rows that share a label get what tells them apart; before any table is built
        secs.append({"caption": caption(g), "rows": g, "tables": section_tables(g, names), **tags,
                     "scripted": any(r.setup.get("backend") == "fake" for r in g)})
    main = secs[0]["tables"] if secs else section_tables([], names)
    log(f"drawing the plots into {out}: checkpoints and token overhead first")
    report = out / "report.md"
    try:
        plot_paths = _draw_plots(groups[0] if groups else [], main, out, max_timelines, log)
        plot_paths.update(inject_report.plot_trajectories(rows, out))  # runs with --inject
        log("writing report.md")
        atomic_write_text(report, "\n".join(_markdown(rows, secs, plot_paths, left_out, mixed)))  # no cut report.md
        _write_manifest(out, [report, *map(Path, plot_paths.values())])
    except OSError as e:  # the folder filled up or turned read-only after the check
        raise OutputError(_cannot_write(out, e)) from None
    return {"out_dir": str(out), "report": str(report), "plots": plot_paths, "tables": main, "unfinished": left_out,
            "warnings": mixed,
            "sections": [{"caption": x["caption"], "tables": x["tables"], "duplicates": x["duplicates"],
                          "sources": x["sources"], "scripted": x["scripted"]} for x in secs]}


def _num_text(x) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"


def _cannot_write(out: Path, e: OSError) -> str:
    return f"cannot write the report to {out}: {e.strerror or e}"


def _write_manifest(out: Path, paths: list[Path]) -> None:
    """``out/.janus-report.json``: the files `janus report` wrote into ``out`` (with those of earlier reports that
    are still there) and the sha256 of each as written, the record by which ``janus run --overwrite`` removes them
    and nothing else of the folder (a file edited since, its hash no longer matching, is kept)."""
    import hashlib
    import json

    from ..store.folder import RunFolder

    manifest = out / RunFolder.REPORT_MANIFEST
    try:
        old = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = {}
    old = old if isinstance(old, dict) else {}
    names, hashes = old.get("files"), old.get("sha256")
    old_names: list = names if isinstance(names, list) else []
    old_sha: dict = hashes if isinstance(hashes, dict) else {}
    written = {p.name for p in paths if p.parent == out}
    sha: dict[str, str | None] = {n: hashlib.sha256((out / n).read_bytes()).hexdigest() for n in written}
    # an earlier report's file keeps the hash it was written with (an edit since stays visible); one listed by a
    # manifest without hashes stays listed without one
    for n in old_names:
        if isinstance(n, str) and "/" not in n and n not in written and (out / n).is_file():
            sha[n] = old_sha.get(n) if isinstance(old_sha.get(n), str) else None
    body = {"files": sorted(sha), "sha256": {n: h for n, h in sorted(sha.items()) if h}}
    atomic_write_text(manifest, json.dumps(body, indent=1) + "\n")


def _check_out_folder(out: Path) -> None:
    """Make the report folder and check that a file can be created in it, before anything is drawn: OutputError
    (one line) when ``out`` is a file, sits under a file, or is on a read-only or unwritable file system."""
    import tempfile

    if out.exists() and not out.is_dir():
        raise OutputError(f"cannot write the report to {out}: it is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".janus-write-check-"):
            pass
    except OSError as e:
        raise OutputError(_cannot_write(out, e)) from None


def section_tables(rows: list[MethodRun], names: dict | None = None) -> dict:
    """The tables of one group of comparable runs. Stream-order runs (Fig. 5) vary only the order of the same stream:
    they feed the stream-order table alone; a seed sweep (each seed is another split and order) gets its own table.
    ``names``: {run folder: short name} for the paired table's folder column."""
    from .paired import paired_markdown, paired_rows

    main_rows = [r for r in rows if not r.stream_order]
    order_rows = [r for r in rows if r.stream_order]
    paired = paired_rows([r for r in main_rows if not r.suffix_keys], names)
    paper_checked = any(r.checker == "paper" for r in main_rows if not r.suffix_keys)
    accuracy = accuracy_table(main_rows)
    strict = accuracy_table(main_rows, strict=True) if paper_checked else None
    if strict is not None:  # "same": every cell equal to Table 1's (then one line says so instead of a copy)
        strict["same"] = strict["body"] == accuracy["body"]
        # a group that mixes checkers: Table 1 scores each run with its own, so the caption names the strict ones
        strict["strict_rows"] = sorted({r.label for r in main_rows if not r.suffix_keys and r.checker != "paper"})
    from .kept import kept_table
    from .published import published_table

    return {"accuracy": accuracy, "published": published_table(main_rows),
            # our strict checker's accuracy of the same answers, when any run scored with the authors' checker
            "accuracy_strict": strict,
            "cost": cost_table(main_rows), "trigger": trigger_table(main_rows),
            "janus_cost": janus_cost_table(main_rows), "evalset": evalset_table(main_rows),
            "stream_order": stream_order_table(order_rows), "seeds": stream_order_table(main_rows),
            "paired": {"rows": paired, "markdown": paired_markdown(paired)},
            "kept": kept_table(main_rows)}


def _draw_plots(rows: list[MethodRun], tables: dict, out: Path, max_timelines: int, log=None) -> dict[str, str]:
    from . import plots

    plot_paths: dict[str, str] = {}
    p = plots.plot_checkpoints(rows, out / "checkpoints.png")
    if p:
        plot_paths["checkpoints"] = str(p)
    p = plots.plot_token_overhead(rows, out / "token_overhead.png")
    if p:
        plot_paths["token_overhead"] = str(p)
    paired = {id(j) for _, j in plots.token_pairs(rows)} | {id(b) for b, _ in plots.token_pairs(rows)}
    for kind, fn in (("timeline", plots.plot_trigger_timeline), ("tokens", plots.plot_tokens_by_role)):
        # no timeline for trigger=never (nothing to mark); per-method token plots only for main labels that are not
        # already in the base-vs-Janus overhead view
        candidates = ([r for r in rows if r.janus and r.janus_cfg.get("trigger") != "never"] if kind == "timeline"
                      else [r for r in rows if not r.suffix_keys and id(r) not in paired])
        if candidates and log:
            log(f"drawing {len(candidates[:max_timelines])} {'trigger timeline' if kind == 'timeline' else 'token'} "
                f"plot(s)")
        for r in candidates[:max_timelines]:
            name = plots.safe_name(f"{kind}_{r.dataset}_{r.label}_seed{r.seed}")
            if name in plot_paths:  # several run folders with one dataset/label/seed: name each by its folder
                name = plots.safe_name(f"{name}_{r.run_dir.name}")
            n = 2
            while name in plot_paths:
                name, n = plots.safe_name(f"{name}_{n}"), n + 1
            p = fn(r, out / f"{name}.png")
            if p:
                plot_paths[name] = str(p)
    if tables["evalset"]["rows"]:
        plot_paths["evalset"] = str(plots.plot_evalset(tables["evalset"]["rows"], out / "evalset_ablation.png"))
    if tables["stream_order"]["rows"]:
        plot_paths["stream_order"] = str(plots.plot_stream_order(tables["stream_order"]["rows"], out / "stream_order.png"))

    return plot_paths


ENCODER_KEY = "Encoder (decides the triggers)"
ENCODER_KEY_NO_CONTROLLER = "Encoder (the updater's retrieval; no controller)"


def setup_fields(cfg: dict, rows: list[MethodRun]) -> dict[str, str]:
    """What one run folder ran with, as ordered fields for the report and view headers: the run preset (prompts,
    parsers, replays) and, when a method of the folder ran Janus, the controller as controller/describe.py says it
    (its preset label, warm-up, trigger, evaluation set, decision rule, what it does beyond them), then the encoder.
    The two presets are two things: ``preset: paper`` with ``janus preset: recommended`` is the paper's prompts and
    our recommended controller."""
    from ..settings.presets import encoder_note, run_preset_line

    replay = cfg.get("replay") or (cfg.get("preset_summary") or {}).get("replay")
    if "preset" in cfg:
        out = {"Run preset": run_preset_line(cfg.get("preset"), replay).removeprefix("run preset: ")}
    else:
        out = {"Run preset": "not recorded (a run made before the presets; it ran as the small preset does)"}
    janus = next((r for r in rows if r.janus), None)
    if janus is not None:
        d = janus.controller
        out.update({"Janus preset": d.label, "Janus warm-up": str(d.warmup), "Janus trigger": d.trigger,
                    "Janus evaluation set": d.evaluation, "Janus decision": d.rule})
        if d.extras:
            out["Janus also"] = "; ".join(d.extras)
        if d.paper_differences:
            out["Janus differs from the paper's"] = ", ".join(d.paper_differences)
    enc = cfg.get("encoder")
    key = ENCODER_KEY if janus is not None else ENCODER_KEY_NO_CONTROLLER
    out[key] = f"{enc}: {encoder_note(str(enc))}" if enc else "not recorded"
    return out


def _preset_lines(rows: list[MethodRun]) -> list[str]:
    """The runs' setups (``setup_fields``) for the report header, one field a line: once when every run folder has the
    same value; a value that differs between folders reads "(per cell, below)" and, per value, a line lists the row
    labels that have it (a folder without Janus has no Janus fields and makes none of them differ)."""
    from ..store.reader import RunReader

    by_dir = {d: setup_fields(RunReader(d).config(), [r for r in rows if r.run_dir == d])
              for d in dict.fromkeys(r.run_dir for r in rows)}
    if not by_dir:
        return []
    if any(ENCODER_KEY in f for f in by_dir.values()):  # beside Janus runs, a base run's encoder is one line with theirs
        by_dir = {d: {(ENCODER_KEY if k == ENCODER_KEY_NO_CONTROLLER else k): v for k, v in f.items()}
                  for d, f in by_dir.items()}
    # the fields in the order of the folder that has the most (a folder without Janus has no Janus fields)
    keys = list(dict.fromkeys(k for f in sorted(by_dir.values(), key=len, reverse=True) for k in f))
    varying = [k for k in keys if len({f[k] for f in by_dir.values() if k in f}) > 1]
    shared = {k: next(f[k] for f in by_dir.values() if k in f) for k in keys}
    lines = [f"- {k}: {'(per cell, below)' if k in varying else v}" for k, v in shared.items()]
    groups: dict[str, list[str]] = {}
    for d, f in by_dir.items():
        what = "; ".join(f"{k}: {f[k]}" for k in varying if k in f)
        if what:
            groups.setdefault(what, []).extend(r.label for r in rows if r.run_dir == d)
    if varying:
        labels = {what: sorted(dict.fromkeys(labs), key=label_key) for what, labs in groups.items()}
        lines += ["", "Per cell:", "", *(f"- {', '.join(labs)}: {what}" for what, labs in
                                        sorted(labels.items(), key=lambda kv: label_key(kv[1][0])))]
    return ["What the runs ran with (two presets: the run preset sets prompts, parsers and replays; the Janus preset "
            "is the controller):", "", *lines, ""]


def _markdown(rows: list[MethodRun], secs: list[dict], plot_paths: dict[str, str], left_out: list[str],
              mixed: Sequence[str] = ()) -> list[str]:
    md = ["# Janus experiment report", "",
          f"{len({r.run_dir for r in rows})} run folder(s), {len(rows)} method run(s). Accuracies in %; "
          "± is the sample std over seeds when a label has several. Only runs whose settings are the same apart from "
          "the seed are averaged; rows that share a method name say what tells them apart.", ""]
    md += [f"> **{printable(w, one_line=True)}**" for w in mixed] + ([""] if mixed else [])
    if left_out:
        md += ["**Unfinished runs, not in this report:**", "", *(f"- {x.removeprefix('not in the report: ')}"
                                                                for x in left_out), ""]
    md += _preset_lines(rows)
    if len(secs) > 1:
        md += [f"**These runs do not share one setup: {len(secs)} groups of comparable runs are reported separately "
               "(backend, model, encoder, preset and requested sizes differ).**", ""]
    for i, sec in enumerate(secs):
        if len(secs) > 1:
            md += [f"# Group {i + 1}", ""]
        md += [f"Setup: {sec['caption']}", ""]
        if sec["scripted"]:  # the fake backend's numbers never pass for a model's
            md += [f"> {SCRIPTED_NOTE}", ""]
        md += [f"> {w}" for w in sec["duplicates"]] + ([""] if sec["duplicates"] else [])
        md += _section_markdown(sec["tables"], sec["caption"], sec["sources"])
    md += inject_report.markdown_section(inject_report.injection_table(rows))  # runs with --inject
    md += ["## Plots", "", f"Plots show group 1 ({secs[0]['caption']})." if len(secs) > 1 else "", ""]
    for name, path in plot_paths.items():
        if name not in ("evalset", "stream_order"):
            md += [f"![{name}]({Path(path).name})", ""]
    return md


# said beside the results of a run on the fake backend (`janus report`, report.md, `janus run`'s end summary)
SCRIPTED_NOTE = ("[scripted] these runs used the fake backend: its answers come from a script (by default right or wrong "
                 "by a hash of the prompt and always wrong while the memory holds a planted instruction; with --model "
                 "rules right exactly when the memory states the rules a ticket needs), not from a model; their "
                 "accuracies and differences check the pipeline, they measure no memory")

PUBLISHED_TITLE = "## The paper's published numbers beside ours"
STRICT_TITLE = "## Table 1 with our strict checker (the same answers)"
STRICT_NOTE = ("Runs scored with the authors' checker (`checker: paper`, the paper preset) report its accuracy in "
               "Table 1: it credits the gold letter or option text in the answer tag, the first character of the "
               "output, or the gold option text anywhere in the output, thinking included. This table scores the "
               "same test answers with our strict checker (the extracted final answer only); the difference is "
               "checker leniency. APIBench: the authors' AST match (the first pool entry whose argument texts "
               "appear in the call) refuses model ids spelled as the library resolves them and credits some calls "
               "it should not, so the strict number can be higher or lower. Runs scored with the strict checker show "
               "the same number in both tables.")


STRICT_SAME = ("Table 1 scores with the authors' checker (`checker: paper`); our strict checker gives the same "
               "accuracy in every cell.")


def strict_same(strict: dict) -> str:
    """The one line that replaces an identical strict table; in a group that mixes checkers it says which rows Table 1
    scored with the strict checker (the adversary's report of a paper run beside a strict ExpeL run)."""
    mixed = strict.get("strict_rows") or []
    if not mixed:
        return STRICT_SAME
    return (f"Table 1 scores each run with its own checker: {', '.join(mixed)} with our strict checker "
            "(`checker: strict`), the other rows with the authors' (`checker: paper`); our strict checker gives the "
            "same accuracy in every cell.")


def _section_markdown(tables: dict, cap: str, sources: Sequence[str] = ()) -> list[str]:
    capline = f"*{cap}*"
    md = []
    if tables["accuracy"]["labels"]:  # a sweep of variants only (every label has a [..] suffix) has no Table 1 rows
        md += ["## Table 1: test accuracy (frozen memory, held-out split)", "", tables["accuracy"]["markdown"], "",
               capline, ""]
        pub = tables.get("published")
        if pub and pub["body"]:
            md += [PUBLISHED_TITLE, "", pub["note"], "", pub["markdown"], ""]
        strict = tables.get("accuracy_strict")
        if strict and strict["same"]:
            md += [strict_same(strict), ""]
        elif strict:
            md += [STRICT_TITLE, "", STRICT_NOTE, "", strict["markdown"], "", capline, ""]
    if sources:
        md += ["Rows that share a method name, by what tells them apart, and their run folders:", "",
               *(f"- {x}" for x in sources), ""]
    if tables["paired"]["markdown"]:
        md += ["## Base vs +Janus, paired on the same test items", "",
               "Diff = +Janus minus base accuracy on the items both answered; 95% CI: Newcombe's paired square-and-add "
               "interval; p: exact McNemar (two-sided sign test on the items where exactly one method is right). Runs: "
               "both methods in one run folder, or a grid's base cell and +Janus cell with the same dataset, seed and "
               "setup (the same test split).", "",
               tables["paired"]["markdown"], "", capline, ""]
    from .kept import kept_markdown

    md += kept_markdown(tables.get("kept") or {}, capline)  # genuine candidates rolled back, stated rules held
    if tables["cost"]["markdown"]:
        md += ["## Cost per method: what the runs paid", "",
               "LLM calls and tokens paid = the backend calls this run made and their prompt + completion tokens, "
               "every role (solver, curator, Janus evaluation, held-out test); a reply served by the response cache is "
               "not paid: it is counted under cache hits (the method that runs second in a folder can find the "
               "first's replies there). Janus calls and tokens paid: the evaluation role alone. " + COST_LEGEND + ". "
               "Mean over seeds; n/a: the run folder does not hold the number (made before it was stored).", "",
               tables["cost"]["markdown"], "", capline, ""]
        retried = [(r["label"], r["retries"]) for r in tables["cost"]["rows"] if r.get("retries")]
        if retried:  # a server that dropped connections: the attempts repeated, not hidden in the calls paid
            md += ["Retries (attempts repeated after a transient failure: a dropped connection, HTTP 429 or 5xx, a "
                   "timeout; not calls paid): " + ", ".join(f"{lab} {_num_text(n)}" for lab, n in retried) + ".", ""]
    if tables["trigger"]["markdown"]:
        paper = (" " + PAPER_COST_LEGEND + "." if tables["trigger"].get("paper_cost") else "")
        md += ["## Table 2: trigger-policy ablation", "",
               "A row per Janus policy: the trigger for the paper's controller, the preset label for the recommended "
               "one. Trig. rate = triggers / post-warm-up steps; MMT #Trig = the MMT run's triggers (random and "
               "periodic are matched to it); evaluation set: its sizes and, for a sequential rule, how many of its "
               "tasks a comparison reads (usually-most while tied); |E| used = mean size of the evaluation set built "
               "at a trigger (smaller than configured while few tasks are seen or few answers flipped); tasks read = "
               "mean tasks a comparison evaluated under both memories. " + COST_LEGEND + "." + paper + " The base row "
               "has no trigger (—).",
               "", tables["trigger"]["markdown"], "", capline, ""]
        md += [f"> warning: {n}" for n in tables["trigger"].get("notes", [])] + [""]
    if tables["janus_cost"]["markdown"]:
        paper = (" " + PAPER_COST_LEGEND + "." if tables["janus_cost"].get("paper_cost") else "")
        md += ["## Table 3: Janus cost", "",
               "Janus = the controller's preset (paper, recommended, custom: what differs); τ = cosine threshold of "
               "the trigger (— for a trigger that does not read it); evaluation set: coverage K' + boundary K_b + "
               "fresh K_F for the paper's hybrid set (K = K' + K_b), or the panel's size, and for a sequential rule "
               "how many tasks a comparison reads. " + COST_LEGEND + "." + paper,
               "", tables["janus_cost"]["markdown"], "", capline, ""]
    if tables["evalset"]["markdown"]:
        md += ["## Evaluation-set ablation (Fig. 3)", "", tables["evalset"]["markdown"], "", capline, "",
               "![evaluation-set ablation](evalset_ablation.png)", ""]
    if tables["stream_order"]["markdown"]:
        md += ["## Stream order (Fig. 5)", "", "Same stream tasks and test split, shuffled order.", "",
               tables["stream_order"]["markdown"], "", capline, "", "![stream order](stream_order.png)", ""]
    if tables["seeds"]["markdown"]:
        md += ["## Seed sweep", "", "Each seed draws another stream/test split and order (not a stream-order study).",
               "", tables["seeds"]["markdown"], "", capline, ""]
    return md
