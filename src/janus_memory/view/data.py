"""What `janus view` shows, read from finished run folders: one JSON-ready dict (format ``janus-view/1``).

Everything is read through RunReader (store/reader.py) and computed by the report's own functions: the rows
(runs.load_runs), the groups of comparable runs and their captions (report/setup.py), Table 1 and the paired base vs
+Janus comparison (report's section tables, paired.py), the Wilson intervals (paired.wilson), the running accuracy
(inject_report), the cumulative tokens (plots.cumulative_tokens), the cost per method (summary_table.method_cost) and
the memory versions and line diffs (memdiff). This module only arranges them compactly, per step and per method:

* ``f``: flags per step (bits below), ``c``: the MMT cosine (3 decimals, null before the momentum exists), ``t``: index
  of the step's task in the run's ``tasks`` table, ``acc``: online accuracy so far (%), ``tok``: cumulative tokens;
* ``d``: one detail object per step (answer, extracted answer, memory diff old -> candidate, decision and reason,
  evaluation set with each task's role and both memories' verdicts), drawn by the page only when a step is opened.

Texts from model output and datasets are cut at :data:`MAX_TEXT` characters (the cut is said in the page), memory
diffs at :data:`MAX_DIFF_LINES` lines, so a 10,000-step run stays a page a browser opens (benchmarks/performance/bench_view.py).
"""
from __future__ import annotations

import bisect
import math
from pathlib import Path

from ..errors import JanusError, RunFolderError

FORMAT = "janus-view/1"
MAX_TEXT = 3000  # characters of one answer, task or gold text in the page
MAX_DIFF_LINES = 300  # lines of one memory diff in the page
DIFF_CONTEXT = 2

# step flags (bits of ``f``)
CORRECT, TRIGGERED, DEPLOYED, ROLLED_BACK, INJECTED, WARMUP, CHANGED, REJECTED = (1 << i for i in range(8))


def view_data(run_dirs: list[str | Path]) -> dict:
    """The page's data for the finished run folders at or below ``run_dirs`` (unfinished ones are named in
    ``unfinished``, as `janus report` does). Raises RunFolderError when there is no finished run."""
    from ..report.runs import load_runs
    from ..report.variants import short_names
    from ..store.finder import find_run_dirs, scan_run_dirs
    from ..store.unfinished import describe

    if not run_dirs:
        raise RunFolderError("give at least one run folder")
    unchecked: list[Path] = []  # folders without run.sqlite: shown, each marked unchecked (janus report refuses them)
    finished, unfinished = scan_run_dirs(run_dirs, unchecked=unchecked)
    if not finished:
        find_run_dirs(run_dirs)  # raises: no finished run, naming the unfinished ones and how to continue them
    rows = load_runs(finished)
    names = short_names([r.run_dir for r in rows])
    dirs = sorted(dict.fromkeys(r.run_dir for r in rows), key=_finished_at)  # the order the runs ended: the demo's
    runs = [run_data(d, [r for r in rows if r.run_dir == d], names[d]) for d in dirs]  # act 1 before act 2
    for run, d in zip(runs, dirs):
        if d in unchecked:
            run["task_note"] = " ".join(x for x in (UNCHECKED, run.get("task_note")) if x)
    return clean({"format": FORMAT, "runs": runs, "compare": compare_data(rows, names),  # after runs: it tags labels
                  "unfinished": [describe(d) for d in unfinished], "unchecked": [str(d) for d in unchecked]})


def _finished_at(run_dir) -> float:
    """When a run ended (its COMPLETE marker's time; a folder without one last): the page's order of runs."""
    try:
        return (Path(run_dir) / "COMPLETE").stat().st_mtime
    except OSError:
        return math.inf


UNCHECKED = ("unchecked: this folder has no run.sqlite, so its numbers and texts are shown as its exported files hold "
             "them, not checked against the run's database (janus report refuses such a folder)")


# ------------------------------------------------------------------------------------------------ several runs
def compare_data(rows: list, names: dict) -> list[dict]:
    """Per group of comparable runs (report/setup.sections): its caption, Table 1 and the paired base vs +Janus
    comparisons, as `janus report` computes them (rows that share a label tagged first, then the report's section
    tables), with the report's notes on runs made twice and where tagged rows come from. Tags the rows' labels."""
    from ..report.report import section_tables
    from ..report.setup import caption, sections
    from ..report.tables import display_name
    from ..report.variants import assign_tags

    out = []
    for g in sections(rows):
        tags = assign_tags(g)
        t = section_tables(g, names)
        acc = t["accuracy"]
        paired = [{"dataset": display_name(p["dataset"]), "base": p["base"], "label": p["label"], "seed": p["seed"],
                   "folders": p["folders"], "n": p["n"], "base_acc": p["base_acc"], "janus_acc": p["janus_acc"],
                   "diff": p["diff"], "ci95": list(p["ci95"]), "janus_only": p["janus_only"],
                   "base_only": p["base_only"], "p": p["p_mcnemar"]} for p in t["paired"]["rows"]]
        out.append({"caption": caption(g), "header": acc["header"], "body": acc["body"], "paired": paired,
                    "notes": [*tags["duplicates"], *tags["sources"]]})
    return out


# ------------------------------------------------------------------------------------------------ one run
def run_data(run_dir: Path, rows: list, name: str) -> dict:
    """Header, task table and methods of one run folder (``rows``: its MethodRun rows)."""
    from ..report.memdiff import memory_versions
    from ..report.tables import label_key
    from ..store.reader import RunReader

    reader = RunReader(run_dir)
    cfg, summary = reader.config(), reader.summary() or {}
    try:
        versions, _ = memory_versions(run_dir)
    except RunFolderError:  # a method whose memory never changed stores no version (memory-free)
        versions = {}
    tasks = TaskTable(cfg, reader)
    methods = [method_data(reader, r, versions.get(r.method, []), tasks)
               for r in sorted(rows, key=lambda r: label_key(r.label))]
    head = header(cfg, summary, rows, reader)
    from ..report.runs import mixed_models

    return {"name": name, "path": str(Path(run_dir).expanduser().absolute()), "header": head,
            "story": story(head, methods), "methods": methods, "tasks": tasks.rows, "task_note": tasks.note,
            "models_warning": mixed_models(summary)}  # responses from more than one model: said on the page


def header(cfg: dict, summary: dict, rows: list, reader) -> dict:
    """What the run measured with and what it cost: backend, model, dataset, preset, sizes, seeds, wall time, usage."""
    from ..report.report import setup_fields
    from ..report.setup import caption
    from ..report.summary_table import method_cost
    from ..report.tables import display_name

    setup = rows[0].setup
    usage = summary.get("usage_total") or {}
    cost = method_cost(usage)
    dollars = [u.get("cost_usd") for u in usage.values() if isinstance(u, dict) and u.get("cost_usd") is not None]
    janus = rows[0].janus_cfg
    first = rows[0].summary
    return {
        "dataset": rows[0].dataset, "dataset_name": display_name(rows[0].dataset), "updater": rows[0].updater,
        "backend": setup.get("backend"), "model": setup.get("model"), "encoder": setup.get("encoder"),
        "identity": (summary.get("backend") or {}).get("identity"), "preset": setup.get("preset"),
        # the run preset and the controller, described once (report.setup_fields, controller/describe.py)
        "setup": [[k, v] for k, v in setup_fields(cfg, rows).items() if not k.startswith("Encoder")],
        "stream_n": first.get("stream_tasks"), "test_n": first.get("test_tasks"),
        "stream_size": cfg.get("stream_size"), "test_size": cfg.get("test_size"),
        "seed": cfg.get("seed"), "stream_order_seed": cfg.get("stream_order_seed"), "janus_seed": janus.get("seed"),
        "inject": cfg.get("inject"), "wall_s": summary.get("wall_s"), "calls": cost["needed_calls"],
        "paid_calls": cost["paid_calls"], "tokens": cost["needed_tokens"], "paid_tokens": cost["paid_tokens"],
        "cost_usd": sum(dollars) if dollars else None,
        "version": (reader.json_file("environment.json") or {}).get("janus_memory"), "caption": caption(rows),
    }


class TaskTable:
    """The run's stream tasks (id, question, gold), loaded from the dataset files the run names (config.json:
    dataset, data_dir, seed, stream_size); a step refers to its task by index. When the files are gone or changed,
    the table holds the ids only and ``note`` says why."""

    def __init__(self, cfg: dict, reader):
        self.rows: list[list] = []
        self.index: dict[str, int] = {}
        self.note = ""
        self._texts: dict[str, tuple[str, str]] = {}
        splits = reader.json_file("splits.json") or {}
        stream = splits.get("stream") if isinstance(splits, dict) else None
        try:
            from ..tasks import load_split

            split = load_split(cfg.get("dataset"), "stream", data_dir=cfg.get("data_dir"), seed=cfg.get("seed") or 0,  # type: ignore[arg-type]
                               limit=cfg.get("stream_size"))
            self._texts = {t.id: (t.question, _gold_text(t.gold)) for t in split.tasks}
            if isinstance(stream, dict) and stream.get("sha256") and stream["sha256"] != split.sha256:
                self.note = ("the dataset file changed since the run (its sha256 differs from splits.json): task "
                             "texts may not be the ones the run saw")
        except (OSError, ValueError, RuntimeError, JanusError) as e:
            first = (str(e).splitlines() or [type(e).__name__])[0]
            self.note = f"task texts not shown: the run's dataset could not be loaded here ({first})"

    @classmethod
    def from_texts(cls, texts: dict[str, tuple[str, str]], note: str = "") -> "TaskTable":
        """A table over given ``{task id: (question, gold)}`` (tests, benchmarks/performance/bench_view.py)."""
        t = cls.__new__(cls)
        t.rows, t.index, t.note, t._texts = [], {}, note, dict(texts)
        return t

    def of(self, task_id) -> int | None:
        if task_id is None:
            return None
        task_id = str(task_id)
        if task_id not in self.index:
            q, gold = self._texts.get(task_id, (None, None))
            self.index[task_id] = len(self.rows)
            self.rows.append([task_id, cut(q), cut(gold)])
        return self.index[task_id]


def _gold_text(gold) -> str:
    if isinstance(gold, str):
        return gold
    import json

    return json.dumps(gold, ensure_ascii=False, default=str)


# ------------------------------------------------------------------------------------------------ the story
MAX_STORY_ROWS = 6  # decisions listed per blind/Janus pair at the top of the page; the others are counted
STORY_LINE_CHARS = 110  # characters of one changed memory line in the story
SCRIPTED_NOTE = ("[scripted] answers from a script, not a model (the fake backend: by default right or wrong by a "
                 "hash of the prompt, always wrong while the memory holds a planted instruction; with --model rules "
                 "right exactly when the memory states the rules a ticket needs): the scores show what Janus does, "
                 "not how good a memory is")


def story(head: dict, methods: list[dict]) -> dict:
    """The decisions that mattered in one run, for the top of the page: per Janus method and its blind twin (the
    method of the same name without ``+janus``), one row per rollback and per planted candidate, in step order
    (planted ones first when there are more than :data:`MAX_STORY_ROWS`), each with the step, what the candidate
    changed, what blind deployment did at that step, Janus's scores on its evaluation set (right answers / entries
    evaluated, and the decision) and both final memories' held-out test; a run without such a step says so in one
    line. A blind method with planted candidates and no Janus twin gets its rows too."""
    scripted = head.get("backend") == "fake"
    by_name = {m["name"]: m for m in methods}
    pairs: list[tuple[dict | None, dict | None]] = []
    for m in methods:
        if m["janus"]:
            base = by_name.get(m["name"][: -len("+janus")]) if m["name"].endswith("+janus") else None
            if base is None or base["janus"]:
                base = next((b for b in methods if not b["janus"]), None)
            pairs.append((base, m))
    twinned = {id(b) for b, _ in pairs if b is not None}
    pairs += [(b, None) for b in methods if not b["janus"] and id(b) not in twinned
              and any(f & INJECTED for f in b["f"])]
    return {"scripted": scripted, "note": SCRIPTED_NOTE if scripted else None,
            "pairs": [_story_pair(base, janus) for base, janus in pairs]}


def _story_pair(base: dict | None, janus: dict | None) -> dict:
    lead = janus or base
    assert lead is not None
    steps = [i for i in range(lead["n"]) if lead["f"][i] & (ROLLED_BACK | INJECTED)]
    if janus is not None and base is not None:  # a planted candidate blind deployed while Janus's lane has none
        steps = sorted(set(steps) | {i for i in range(min(base["n"], janus["n"])) if base["f"][i] & INJECTED})
    shown = steps
    if len(steps) > MAX_STORY_ROWS:
        planted = [i for i in steps if (lead["f"][i] | (base["f"][i] if base and i < base["n"] else 0)) & INJECTED]
        shown = sorted((planted + [i for i in steps if i not in planted])[:MAX_STORY_ROWS])
    held = _held_out(base, janus)
    rows = [_story_row(base, janus, i, held) for i in shown]
    out: dict = {"blind": base["label"] if base else None, "janus": janus["label"] if janus else None,
                 "held_out": held, "rows": rows}
    left = [i + 1 for i in steps if i not in shown]
    if left:
        out["more"] = (f"{len(left)} more rollback{'s' if len(left) != 1 else ''} of the updater's own candidates "
                       f"(step{'s' if len(left) != 1 else ''} {_steps_text(left)}): under Steps that matter below")
    if not rows:
        if janus is None:
            out["none"] = "nothing planted and no Janus method: blind deployment kept every candidate"
        else:
            cmp = sum(1 for f in janus["f"] if f & TRIGGERED)
            out["none"] = (f"no rollback and nothing planted: Janus compared {cmp} candidate{'s' if cmp != 1 else ''} "
                           "and deployed every one" if cmp else
                           "no rollback and nothing planted: Janus compared no candidate (warm-up or trigger)")
    return out


def _steps_text(steps: list[int]) -> str:
    return ", ".join(map(str, steps)) if len(steps) <= 8 else f"{steps[0]}-{steps[-1]}"


def _held_out(base: dict | None, janus: dict | None) -> str:
    """``blind 0/3, Janus 2/3 (+66.7 pp)``: both final memories' held-out test."""
    def acc(m):
        t = m.get("test") if m else None
        return (t[0], t[1]) if t and t[1] else None

    b, j = acc(base), acc(janus)
    parts = ([f"blind {b[0]}/{b[1]}"] if b else []) + ([f"Janus {j[0]}/{j[1]}"] if j else [])
    if not parts:
        return "no held-out test"
    text = ", ".join(parts)
    if b and j:
        text += f" ({100 * (j[0] / j[1] - b[0] / b[1]):+.1f} pp)"
    return text


def _story_row(base: dict | None, janus: dict | None, i: int, held: str) -> dict:
    lead = janus or base
    assert lead is not None
    d, f = lead["d"][i], lead["f"][i]
    bd = base["d"][i] if base and i < base["n"] else None
    bf = base["f"][i] if base and i < base["n"] else 0
    planted = d.get("inj") or (bd or {}).get("inj")
    row = {"step": i + 1, "method": lead["name"], "planted": planted,
           "changed": _changed(d if f & CHANGED or bd is None else bd, (f | bf) & CHANGED),
           "blind": _blind_text(bd, bf, d, janus is not None) if base else "no blind run in this folder",
           "janus": _janus_text(d, f) if janus else "no Janus method in this run", "held_out": held}
    if janus is not None:
        row.update(_scores(d))
        row["decision"] = "rolled back" if f & ROLLED_BACK else "deployed" if f & DEPLOYED else "kept the old memory"
    return row


def _changed(d: dict, changed: int) -> dict:
    """What a step's candidate changed: ``{"text": "+3 -0 lines", "lines": [[sign, text], ...]}`` (at most 2
    changed lines: the first removed and the first added one, else the first two; each cut to
    :data:`STORY_LINE_CHARS`), or a note when the texts are not stored."""
    if not changed:
        return {"text": "nothing: the candidate is the old memory unchanged", "lines": []}
    if d.get("dn"):
        return {"text": d["dn"], "lines": []}
    diff = [x for x in d.get("df") or [] if x[0] in "+-"]
    add, rem = sum(1 for x in diff if x[0] == "+"), sum(1 for x in diff if x[0] == "-")
    real = [x for x in diff if x[1].strip()]
    first = [next((x for x in real if x[0] == s), None) for s in "-+"]
    pick = [x for x in first if x] if all(first) else real[:2]
    lines = [[s, t if len(t) <= STORY_LINE_CHARS else t[: STORY_LINE_CHARS - 1] + "…"] for s, t in pick]
    more = "" if not d.get("dc") else f" (and {d['dc']} diff lines not shown)"
    return {"text": f"+{add} -{rem} line{'s' if add + rem != 1 else ''}{more}", "lines": lines}


def _blind_text(bd: dict | None, bf: int, d: dict, twin: bool) -> str:
    if bd is None:
        return "—"
    what = "deployed it" if bf & DEPLOYED else "kept its old memory"
    if not twin or bd.get("inj"):
        return what + (" (blind deployment keeps every candidate)" if bf & DEPLOYED and not bd.get("inj") else "")
    same = bd.get("cm") and bd.get("cm") == d.get("cm")
    return ("deployed the same candidate" if same else "deployed its own candidate (its memory differs by then)") \
        if bf & DEPLOYED else what


def _scores(d: dict) -> dict:
    """The evaluation set's right answers under each memory over the entries each was evaluated on
    (``old``/``new``: [right, evaluated]) and the decision's scores."""
    rows = d.get("e") or []
    old = [r[2] for r in rows if r[2] is not None]
    new = [r[3] for r in rows if r[3] is not None]
    return {"old": [sum(old), len(old)], "new": [sum(new), len(new)], "old_score": d.get("os"),
            "new_score": d.get("ns"), "n_set": len(rows)}


def _janus_text(d: dict, f: int) -> str:
    """``old 3/3 (1.00) vs candidate 0/3 (0.00): rolled back`` (right answers on the evaluation set / entries each
    memory was evaluated on, the decision's scores, a few words of reason when it is not plain), or why there was no
    comparison."""
    if not f & TRIGGERED:
        skip = "inside the warm-up" if f & WARMUP else "the trigger did not fire"
        return f"no comparison ({skip}): deployed unexamined" if f & DEPLOYED else f"no comparison ({skip})"
    s = _scores(d)

    def part(name, kn, score):
        k, n = kn
        if not n:
            return f"{name} not evaluated (early stop)"
        return f"{name} {k}/{n}" + (f" ({score:.2f})" if isinstance(score, (int, float)) else "")

    of = f" of {s['n_set']} entries" if s["n_set"] and max(s["old"][1], s["new"][1]) < s["n_set"] else ""
    verdict = "rolled back" if f & ROLLED_BACK else "deployed" if f & DEPLOYED else "kept the old memory"
    why = WHY.get(d.get("r") or "")
    return (f"{part('old', s['old'], s['old_score'])} vs {part('candidate', s['new'], s['new_score'])}{of}: {verdict}"
            + (f" ({why})" if why else ""))


# why a comparison ended as it did, in a few words (the page's step panel says it whole, view.js REASONS)
WHY = {"new_ge_old": "ties go to the candidate", "early_stop_new_ge_old": "early stop: it cannot lose any more",
       "early_stop_old_better": "early stop: it cannot catch up any more",
       "sign_test_not_significant": "no significant difference",
       "sprt_truncated_no_lead": "a tie: this preset deploys only a candidate that leads",
       "sprt_new_worse": "worse on the tasks the memories disagree on",
       "sprt_new_not_worse": "not worse on the tasks the memories disagree on",
       "indeterminate_candidate": "no outcome on any task", "near_copy": "a rewording, checked on a few tasks"}


# ------------------------------------------------------------------------------------------------ one method
def method_data(reader, r, versions: list[dict], tasks: TaskTable) -> dict:
    """The timeline and step details of one method run ``r`` (a MethodRun)."""
    from ..report.paired import wilson
    from ..report.plots import cumulative_tokens
    from ..report.runs import evaluations
    from ..report.summary_table import method_cost

    pairs = _steps(reader, r.method)
    cands = {c["step"]: c for c in reader.candidates(r.method)} if reader.has_db else {}
    line = timeline(pairs, cands, versions, tasks, r.eval_set.roles if r.janus else None)
    flags = line["f"]
    steps_axis, cum, estimated = cumulative_tokens(r)
    tok = [sum(series[i] for series in cum.values()) for i in range(len(steps_axis))] if cum else []
    s = r.summary
    n = len(pairs)
    online_k = sum(1 for x in flags if x & CORRECT)
    test_k, test_n = s.get("test_correct"), s.get("test_tasks")
    cost = method_cost(s.get("usage") or {})
    roles = {role: {"calls": (u.get("calls") or 0) + (u.get("cache_hits") or 0),
                    "tokens": sum(u.get(k) or 0 for k in ("prompt_tokens", "completion_tokens", "hit_prompt_tokens",
                                                           "hit_completion_tokens")),
                    "cost_usd": u.get("cost_usd"), "retries": u.get("retries") or 0}
             for role, u in (s.get("usage") or {}).items() if isinstance(u, dict)}
    return {
        "name": r.method, "label": r.label, "janus": r.janus, "n": n,
        "online": [online_k, n, *wilson(online_k, n)] if n else None,
        "test": [test_k, test_n, *wilson(test_k, test_n)] if isinstance(test_k, int) and test_n else None,
        "triggers": s.get("triggers"), "accepts": s.get("accepts"), "rollbacks": s.get("rollbacks"),
        "trigger_rate": s.get("trigger_rate"), "tau": r.janus_cfg.get("tau") if r.janus else None,
        "trigger": r.janus_cfg.get("trigger") if r.janus else None,
        "injections": _injections(s.get("injections")), "checkpoints": _checkpoints(s.get("checkpoints")),
        "cost": {**cost, "roles": roles, "estimated": sorted(estimated),
                 "evaluations": evaluations(r) if r.janus else None},
        **line, "tok_steps": steps_axis, "tok": tok,
    }


def timeline(pairs: list[tuple[dict, dict]], cands: dict[int, dict], versions: list[dict], tasks: TaskTable,
             roles=None) -> dict:
    """``f``, ``c``, ``t``, ``d`` and ``acc`` of one method from its (decision line, step record) pairs, its stored
    candidates by step and its deployed memory versions; ``roles``: the run's evaluation set's (see eval_rows)."""
    from ..report.inject_report import running_accuracy

    walk = _Versions(versions)
    flags, cos, task, details = [], [], [], []
    for dec, rec in pairs:
        f, c, detail = step_view(dec, rec, walk, cands.get(dec.get("step")), tasks, roles)  # type: ignore[arg-type]
        flags.append(f)
        cos.append(c)
        task.append(tasks.of(dec.get("task_id") or rec.get("task_id")))
        details.append(detail)
    return {"f": flags, "c": cos, "t": task, "d": details,
            "acc": [round(a, 2) for a in running_accuracy([d for d, _ in pairs])]}


def _steps(reader, method: str) -> list[tuple[dict, dict]]:
    """(decision line, step record) per committed step, from the database, else the exported jsonl files."""
    if reader.has_db:
        return list(reader.steps(method))
    decs = reader.jsonl(f"{method}/decisions.jsonl")
    recs = {x.get("step"): x for x in reader.jsonl(f"{method}/steps.jsonl")}
    return [(d, recs.get(d.get("step"), {})) for d in decs]


class _Versions:
    """The memory deployed at a step, as memdiff.memory_at finds it (the latest version with version step <= step),
    by bisection: a 10,000-step run asks 10,000 times."""

    def __init__(self, versions: list[dict]):
        self.versions = versions
        self.steps = [v["step"] for v in versions]

    def at(self, step: int) -> dict | None:
        i = bisect.bisect_right(self.steps, step) - 1
        return self.versions[i] if i >= 0 else None


def step_view(dec: dict, rec: dict, walk: _Versions, cand: dict | None,
              tasks: TaskTable, roles=None) -> tuple[int, float | None, dict]:
    """(flags, cosine, detail) of one step."""
    from ..controller.decision_rules import STORED_REASON_NAMES
    from ..report.memdiff import line_diff

    d: dict = dec["decision"] if isinstance(dec.get("decision"), dict) else {}
    step = dec.get("step")
    injected = dec.get("injected") or ((rec.get("info") or {}).get("injected") or {}).get("kind")
    deployed = dec.get("deployed") == "candidate"
    changed = dec.get("candidate_memory_sha256") != dec.get("old_memory_sha256")
    f = ((CORRECT if dec.get("correct") is True else 0) | (TRIGGERED if d.get("triggered") else 0)
         | (DEPLOYED if deployed else 0) | (ROLLED_BACK if not deployed and d.get("accept") is False else 0)
         | (INJECTED if injected else 0) | (WARMUP if d.get("phase") == "warmup" else 0)
         | (CHANGED if changed else 0) | (REJECTED if dec.get("candidate_rejected") else 0))
    cos = d.get("cosine")
    reason = d.get("reason")
    out = {"a": cut(rec.get("output")), "r": STORED_REASON_NAMES.get(reason, reason), "dep": dec.get("deployed")}  # type: ignore[arg-type]
    _put(out, "x", rec.get("extracted"))
    _put(out, "st", rec.get("status") if rec.get("status") not in (None, "ok") else None)
    _put(out, "rs", cut(rec.get("reasoning")))
    _put(out, "inj", injected)
    _put(out, "rej", dec.get("candidate_rejected"))
    for key, name in (("old_score", "os"), ("new_score", "ns"), ("p_value", "p"), ("trigger_count", "tc"),
                      ("evaluator_calls", "ec"), ("z_norm", "z"), ("phase", "ph")):
        _put(out, name, d.get(key))
    if d.get("warnings"):
        out["w"] = [str(w) for w in d["warnings"]]
    if isinstance(d.get("reoffer"), dict):  # seq_reoffer: content rolled back earlier, offered again at this step
        from ..controller.reoffer import offer_deployed

        r, n = d["reoffer"], len(d["reoffer"].get("lines") or [])
        out["ro"] = (f"offer {r.get('offer', '?')} of {n} item{'s' * (n != 1)} rolled back earlier: "
                     + ("deployed: the memory after this step holds it" if offer_deployed(r) else "rolled back again"))
    out["om"], out["cm"] = (dec.get("old_memory_sha256") or "")[:12], (dec.get("candidate_memory_sha256") or "")[:12]
    if changed:
        old = walk.at(step - 1) if isinstance(step, int) else None
        new = cand["text"] if cand else (walk.at(step)["text"] if deployed and walk.at(step) else None)  # type: ignore[index, arg-type]
        if old is None or new is None or (cand is None and not deployed):
            out["dn"] = ("the candidate's text is not stored in this folder (no run.sqlite)" if new is None
                         else "the old memory's text is not stored in this run")
        else:
            out["df"], more = line_diff(old["text"], new, context=DIFF_CONTEXT, max_lines=MAX_DIFF_LINES)
            _put(out, "dc", more)
    rows = eval_rows(d, tasks, dec.get("old_memory_sha256") or "", dec.get("candidate_memory_sha256") or "", roles)
    if rows:
        out["e"] = rows
    return f, (round(cos, 3) if isinstance(cos, (int, float)) and math.isfinite(cos) else None), out


def eval_rows(d: dict, tasks: TaskTable, old_sha: str = "", new_sha: str = "", roles=None) -> list[list]:
    """The evaluation set of a trigger: ``[task index, role, old verdict, new verdict, old answer, new answer]`` per
    entry in evaluation order (verdict 1/0, null when not evaluated: early stopping, or a failed evaluation). The
    role is what the run's evaluation-set strategy names (``roles(decision)``, controller/evalset; the paper's set's
    by default: the entry's place in coverage + boundary + fresh, or every role holding its id)."""
    ids = d.get("eval_ids") or []
    if not ids:
        return []
    if roles is None:
        from ..controller import JanusConfig
        from ..controller.strategy import eval_set_for

        roles = eval_set_for(JanusConfig()).roles
    role_of = roles(d)
    answers = _answers(d.get("evaluations") or [], ids, old_sha, new_sha)
    oc, nc = d.get("old_correct") or [], d.get("new_correct") or []
    out = []
    for p, tid in enumerate(ids):
        old_ans, new_ans = answers[p]
        out.append([tasks.of(tid), role_of[p], _verdict(oc, p), _verdict(nc, p), old_ans, new_ans])
    return out


def _answers(evaluations: list[dict], ids: list, old_sha: str, new_sha: str) -> list[tuple]:
    """(old memory's extracted answer, new memory's) per entry, from the comparison's evaluation records (each names
    the memory it used by a sha256 prefix): the k-th entry of a task id takes the k-th record of that id under each
    memory. When both memories are the same text (one hash), both answers are the same record's."""
    by: dict[tuple[str, str], list] = {}
    for e in evaluations:
        if isinstance(e, dict) and e.get("memory_sha256"):
            mem = str(e["memory_sha256"])
            who = "old" if old_sha.startswith(mem) else "new" if new_sha.startswith(mem) else None
            if who:
                by.setdefault((who, str(e.get("task_id"))), []).append(cut(e.get("extracted"), 200))
    taken: dict[str, int] = {}
    out = []
    for tid in ids:
        tid = str(tid)
        k = taken.get(tid, 0)
        taken[tid] = k + 1
        old, new = by.get(("old", tid), []), by.get(("new", tid), [])
        if old_sha == new_sha:
            new = old
        out.append((old[k] if k < len(old) else None, new[k] if k < len(new) else None))
    return out


def _verdict(xs: list, p: int):
    return None if p >= len(xs) or xs[p] is None else int(bool(xs[p]))


def _injections(s) -> dict | None:
    if not isinstance(s, dict):
        return None
    return {k: s.get(k) for k in ("plan", "injected", "deployed", "blocked")}


def _checkpoints(cps) -> list[list]:
    return [[c.get("step"), c.get("test_accuracy")] for c in cps or [] if isinstance(c, dict)]


def _put(out: dict, key: str, value) -> None:
    if value is not None and value != "" and value != []:
        out[key] = value


def cut(text, limit: int = MAX_TEXT):
    """``text`` as a string of at most ``limit`` characters plus a note of how many were left out (None stays None)."""
    if text is None:
        return None
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit:,} more characters not shown; the whole text is in the run folder]"


def clean(x):
    """JSON-ready: non-finite floats (NaN, inf) become null, tuples lists, keys strings."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    return x
