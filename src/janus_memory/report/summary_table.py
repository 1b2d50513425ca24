"""The tables `janus run` prints at the end (rich): accuracy per method, cost per method, LLM usage by role, then cost
remarks. Each table fits an 80-column terminal (short headers that wrap at spaces, method names never cut); off a
terminal the console is wide enough that nothing is wrapped (cli/closing.make_console).

Cost is given twice per method: *needed* (standalone: every LLM response the method used, whether this run paid for it
or the response cache served it; what the method costs on its own with an empty cache) and *paid* (backend calls this run
actually made). The Janus overhead (:func:`janus_overhead`, also used by the report's
token_overhead.png) compares the stream tokens ``X+janus`` needed with those of ``X``, so the method that happens to run
second (and finds the cache warm) does not look cheaper and the held-out test, the same for both, does not dilute it.
"""
from __future__ import annotations

SCRIPTED_RUN_NOTE = ("[scripted] this run used the fake backend: its answers come from a script (by default right or "
                     "wrong by a hash of the prompt and always wrong while the memory holds a planted instruction; "
                     "with --model rules right exactly when the memory states the rules a ticket needs), not from a "
                     "model; the accuracies above check the pipeline, they measure no memory")


def is_scripted(summary: dict) -> bool:
    """Whether a run's summary is of the fake (scripted) backend."""
    return str(((summary or {}).get("backend") or {}).get("identity") or "").startswith("fake:")


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def method_cost(usage: dict) -> dict:
    """{"needed_calls", "needed_tokens", "paid_calls", "paid_tokens", "cache_hits"} of one method's per-role usage.

    Needed = paid + served by the cache (``hit_*_tokens``, kept by llm/usage.py)."""
    paid_calls = sum(r.get("calls") or 0 for r in usage.values())
    hits = sum(r.get("cache_hits") or 0 for r in usage.values())
    paid_tok = sum((r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0) for r in usage.values())
    hit_tok = sum((r.get("hit_prompt_tokens") or 0) + (r.get("hit_completion_tokens") or 0) for r in usage.values())
    return {"needed_calls": paid_calls + hits, "needed_tokens": paid_tok + hit_tok, "paid_calls": paid_calls,
            "paid_tokens": paid_tok, "cache_hits": hits}


def overhead_pct(base_tokens: int, janus_tokens: int) -> float | None:
    """Janus overhead in % of the base method's needed tokens: 100 * (janus - base) / base (None if base is 0)."""
    return None if not base_tokens else 100.0 * (janus_tokens - base_tokens) / base_tokens


OVERHEAD_BASIS = "stream tokens, cache hits included, held-out test excluded"


def janus_overhead(base_usage: dict, janus_usage: dict) -> dict:
    """The one definition of the Janus overhead, for the console and the report's plot: the tokens each method needed
    while building its memory (every role but ``test``: the held-out test costs both methods the same and grows with
    --test-size), cache hits included. Returns the two costs and ``pct`` (None when the base needed nothing)."""
    b = method_cost({k: v for k, v in (base_usage or {}).items() if k != "test"})
    j = method_cost({k: v for k, v in (janus_usage or {}).items() if k != "test"})
    return {"base": b, "janus": j, "pct": overhead_pct(b["needed_tokens"], j["needed_tokens"])}


# what the overhead line is not: the README's cost figure compares two Janus controllers, not Janus with no Janus
OVERHEAD_NOT = ("the whole cost of guarding, against no guard at all (the README's cost figure is another ratio: the "
                "recommended controller's paid evaluations as a share of an always-compare controller's)")


def overhead_line(name: str, base_name: str, o: dict) -> str:
    """The console's overhead sentence: what it counts (the tokens each method needed in the stream), against what
    (the same updater without Janus), and how it relates to the README's figure (:data:`OVERHEAD_NOT`)."""
    return (f"Janus overhead: {o['pct']:+.1f}% tokens over {base_name} without Janus ({OVERHEAD_BASIS}): {name} "
            f"needed {o['janus']['needed_tokens']:,} vs {o['base']['needed_tokens']:,} for {base_name} "
            f"({o['janus']['needed_calls']:,} vs {o['base']['needed_calls']:,} LLM responses); {OVERHEAD_NOT}")


def cost_remarks(methods: dict) -> list[str]:
    """Plain sentences: Janus overhead per base/+janus pair, and which methods' results came from the cache."""
    costs = {name: method_cost(m.get("usage") or {}) for name, m in methods.items()}
    out = []
    for name in costs:
        base_name = name[: -len("+janus")]
        if name.endswith("+janus") and base_name in costs:
            o = janus_overhead(methods[base_name].get("usage"), methods[name].get("usage"))
            if o["pct"] is not None:
                out.append(overhead_line(name, base_name, o))
    for name, c in costs.items():
        if c["needed_calls"] and not c["paid_calls"]:
            out.append(f"{name}: every response came from the response cache (0 paid calls); its results are replayed "
                       "from an earlier run with the same requests, and 'needed' is what it costs with an empty cache")
        elif c["cache_hits"]:
            out.append(f"{name}: {c['cache_hits']:,} of {c['needed_calls']:,} responses came from the response cache")
    return out


def _longest_word(text: str) -> int:
    return max((len(w) for w in str(text).split()), default=0)


def fit_table(title: str, header: tuple[str, ...], rows: list[list[str]], caption: str | None = None,
           width: int | None = None):
    """A rich table that fits ``width`` columns (a terminal's) without cutting anything: the first column (method or
    role names) does not wrap unless it cannot fit whole beside the others at their narrowest (then it wraps at
    spaces, e.g. a report row "dc_rs+janus (tau=0.2, my-long-folder)"); the others are right-aligned and, when the
    table is too wide, get fixed widths between their longest word and their longest cell (headers included), so they
    wrap at spaces only. Columns that can be shown whole are chosen cheapest first. A number or a name is never cut or
    ellipsized. Every text is plain (no rich markup): a label like ``dc_rs+janus[tau=0.2]`` keeps its brackets."""
    from rich.table import Table
    from rich.text import Text

    from ..errors import printable

    rows = [[printable(str(c), one_line=True) for c in r] for r in rows]  # names from a run folder: escaped
    t = Table(title=Text(title), caption=None if caption is None else Text(caption))
    t.add_column(Text(header[0]), justify="left", no_wrap=True)
    for col in header[1:]:
        t.add_column(Text(col), justify="right", overflow="fold")
    for r in rows:
        t.add_row(*(Text(str(c)) for c in r))
    cells = list(zip(header, *rows))
    least = [max(_longest_word(c) for c in col) for col in cells]
    most = [max(len(str(c)) for c in col) for col in cells]
    budget = (width or 0) - (3 * len(header) + 1) - most[0] - sum(least[1:])  # borders and padding: 3 per column + 1
    if width is None or (3 * len(header) + 1) + sum(most) <= width:
        return t
    for i in sorted(range(1, len(header)), key=lambda i: most[i] - least[i]):
        grow = most[i] - least[i] if most[i] - least[i] <= budget else 0
        t.columns[i].width, budget = least[i] + grow, budget - grow
    if budget < 0:  # the names do not fit whole beside the narrowest columns: they wrap at spaces instead of being cut
        first = t.columns[0]
        first.no_wrap, first.overflow = False, "fold"
        first.width = max(least[0], width - (3 * len(header) + 1) - sum(least[1:]))
    return t


# a resumed run: the calls a killed or stopped attempt paid for steps it never committed are not lost money counted
# twice or hidden: their replies were cached, and the resume's repeat of those steps counts them as cache hits
RESUMED_NOTE = ("; resumed run: calls an interrupted attempt paid for steps it never committed came back from the "
                "response cache and count as cache hits, not as paid (the cache hits also hold any answers the shared "
                "cache had from other runs with the same requests)")
# ``summary["resumed"]``: True, or "no_cache" for a run resumed without a response cache (nothing came back from it)
RESUMED_NOTES = {True: RESUMED_NOTE,
                 "no_cache": ("; resumed run without a response cache: what an interrupted attempt paid for steps it "
                              "never committed was paid again and is not counted here")}


def print_summary(summary: dict, console) -> None:
    """Print the end-of-run tables and remarks. Tables are never cropped (crop=False): on a terminal they are built
    to its width, off a terminal the console is wide (cli/closing.make_console)."""
    methods = summary["methods"]
    width = console.width if console.is_terminal else None
    tag = "[scripted] " if is_scripted(summary) else ""
    rows = [[name, _fmt(m["online_accuracy"]), f"{_fmt(m['test_accuracy'])} ({m['test_correct']}/{m['test_tasks']})",
             *("-" if m[k] is None else str(m[k]) for k in ("triggers", "accepts", "rollbacks"))]
            for name, m in methods.items()]
    console.print(fit_table(f"{tag}{summary['dataset']} / {summary['updater']}: accuracy",
                         ("method", "online acc", "test acc", "triggers", "accepted", "rolled back"), rows, width=width),
                  crop=False)

    print_kept(summary, console, width)  # genuine candidates rolled back, stated rules held
    keys = ("needed_calls", "needed_tokens", "paid_calls", "paid_tokens", "cache_hits")
    rows = [[name, *(f"{method_cost(m['usage'])[k]:,}" for k in keys)] for name, m in methods.items()]
    console.print(fit_table("cost per method", ("method", "calls needed", "tokens needed", "calls paid", "tokens paid",
                                             "cache hits"), rows,
                         caption="needed = every response the method's requests got, cache included (its cost with "
                                 "an empty cache; speculative reads too); paid = calls this run made"
                                 + RESUMED_NOTES.get(summary.get("resumed"), ""),
                         width=width), crop=False)
    print_injections(summary, console, width)
    rows = [[role, *(f"{r.get(k, 0) or 0:,}" for k in ("calls", "cache_hits", "retries", "prompt_tokens",
                                                         "completion_tokens")),
             f"{r.get('wall_s', 0):.1f}"] for role, r in summary["usage_total"].items()]
    console.print(fit_table("LLM usage by role (whole run)", ("role", "calls paid", "cache hits", "retries",
                                                           "prompt tokens paid", "completion tokens paid", "wall s"),
                            rows, caption="paid = backend calls; cache hits = served by the response cache; retries = "
                                          "attempts repeated after a transient failure (a dropped connection, HTTP 429 "
                                          "or 5xx, a timeout), not calls paid", width=width),
                  crop=False)
    for line in cost_remarks(methods):
        console.print(line, markup=False, soft_wrap=True)
    if tag:
        console.print(SCRIPTED_RUN_NOTE, markup=False, soft_wrap=True)
    eng = summary.get("engine")
    if eng and eng.get("calls"):
        gen = f"{eng['gen_tok_s']:.1f} tok/s" if eng.get("gen_tok_s") else "not measured (too few tokens generated)"
        console.print(f"embedded engine: {eng['calls']} calls this session, prompt {eng.get('prompt_tok_s', 0):.1f} "
                      f"tok/s, generation {gen}, {eng.get('cached_prompt_tokens', 0)} "
                      "prompt tokens reused from the KV cache", markup=False, soft_wrap=True)


UNSCORED_WHY = {"unparsed": "no final answer found", "truncated": "cut at the token limit before an answer",
                "timeout": "the checker timed out", "error": "the checker failed"}


def unscored_answer_lines(method: str, records: list) -> list[str]:
    """Lines naming the test answers of one method (test.jsonl records) that could not be scored (status unparsed,
    truncated, timeout, error or any other non-ok status: counted wrong) and those scored only through the weak
    fallback (no final-answer marker), with their task ids grouped by why; [] when every answer was scored."""
    recs = [r for r in records if isinstance(r, dict)]
    groups: dict[str, list[str]] = {}
    fallback = []
    for r in recs:
        st = r.get("status")
        if st == "fallback":
            fallback.append(f"{r.get('task_id')} ({'correct' if r.get('correct') is True else 'wrong'})")
        elif st not in (None, "ok"):
            groups.setdefault(str(st), []).append(str(r.get("task_id")))
    out = []
    if groups:
        n = sum(len(v) for v in groups.values())
        parts = "; ".join(f"{st} ({UNSCORED_WHY.get(st, 'status ' + st)}): {', '.join(ids)}" for st, ids in groups.items())
        out.append(f"[{method}] test: {n} of {len(recs)} answers could not be scored (counted wrong): {parts}")
    if fallback:
        out.append(f"[{method}] test: {len(fallback)} of {len(recs)} answers had no final-answer marker and were scored "
                   f"from their last number or letter: {', '.join(fallback)}")
    return out


def print_injections(summary: dict, console, width: int | None = None) -> None:
    """Per method: injected harmful candidates, how many were deployed / blocked, and for each blocked one whether
    the trigger fired and how the evaluation set E scored the old and the injected memory (runs with --inject only)."""
    found = {name: m["injections"] for name, m in summary["methods"].items() if m.get("injections")}
    if not found:
        return
    rows = []
    for name, s in found.items():
        detail = "; ".join(f"{b['kind']}@{b['step']}: " + ("fired" if b["triggered"] else "not fired")
                           + (f", {b['old_score']:.2f} vs {b['new_score']:.2f}"
                              if b["old_score"] is not None and b["new_score"] is not None else "")
                           for b in s["blocked_steps"]) or "-"
        rows.append([name, str(s["injected"]), str(s["deployed"]), str(s["blocked"]), detail])
    t = fit_table(f"injected harmful candidates ({next(iter(found.values()))['plan']})",
               ("method", "injected", "deployed", "blocked", "blocked: trigger fired, E score old vs injected"), rows,
               width=width)
    t.columns[-1].justify = "left"
    console.print(t, crop=False)


def print_kept(summary: dict, console, width: int | None = None) -> None:
    """`janus run`'s table of what each method's memory kept (nothing when no method ran Janus and the dataset is not
    a generated rules one)."""
    from .kept import SHORT, cells, method_kept, shows_anything
    run_dir = summary.get("run_dir")
    if not run_dir:
        return
    from ..store.reader import RunReader

    cfg = RunReader(run_dir).config()
    kept = {name: method_kept(run_dir, name, janus=bool(m.get("janus")), cfg=cfg)
            for name, m in summary["methods"].items()}
    if not shows_anything(list(kept.values())):
        return
    rows = [[name, *cells(k)] for name, k in kept.items()]
    t = fit_table("what the memory kept", ("method", *SHORT), rows, width=width,
                  caption="genuine rolled back: the updater's own candidates that Janus did not deploy, of all it "
                          "proposed (injected ones excluded; — = no controller); stated rules held: the rules the stream "
                          "stated whose number and unit the final memory holds, and the ones it lost (— = not a "
                          "generated rules dataset)")
    t.columns[-1].justify = "left"  # names
    console.print(t, crop=False)
