"""The first real-model measurement of Janus: the embedded model on a stream of generated `rules` tickets with
harmful candidates injected (a falsified rule, a wiped memory), four ways:

* blind          the updater deploys every candidate;
* paper          Janus, the paper's controller (JanusConfig.paper(): momentum trigger, hybrid set 12 + 8 + 5 or
                 ``--eval``), with the warm-up scaled to the stream (``--warmup``; the paper's 20 is for 500-task
                 streams);
* recommended    Janus, JanusConfig.recommended() (compare every update on a panel, sequential test), same warm-up;
* always         Janus, the paper's controller comparing at every post-warm-up step (trigger always, the same
                 evaluation set): the yardstick.

Three runs (`janus run` each, one folder each under ``--out``) share the response cache: the blind stream is paid
once, and a Janus method pays only for what differs from it (its comparisons and the steps after a rollback). The
cost per method is what the method needs on its own: its calls including the ones the cache served (a baseline gets
every saving ours gets), split into stream, Janus evaluation and test.

What it prints and writes (``--out``/measurement.json and .md): final held-out accuracy per method with Wilson 95%
intervals; each Janus method paired with blind on the same test tickets (difference, Newcombe 95% interval, exact
McNemar p); what happened to each injected candidate (deployed or blocked, the evaluation set's scores); LLM calls
per method; the wall time and the load average at start and end.

The updater is ExpRAG by default (``janus_replay: top_k``, top-k 4: a replay shows the memory's 4 records most similar
to the ticket, the prompt a stream solve or the held-out test would build from that memory, so a comparison costs what
a stream call costs; ``--replay whole_bank`` shows every other record): on the embedded model it is the one whose
memory keeps the rules (docs/measurements.md, "The rules family"). Each run prints the most calls it can make before
it starts; the paper's evaluation set (12 + 8 + 5, ``--eval``) makes most of them.

Usage (the command in docs/measurements.md, with its estimate: many hours on a quiet 2-core machine, more under load;
each run folder is resumable, so it can be run in sittings):
  python benchmarks/probes/rules_real_run.py --dataset rules_small --stream 30 --test 20 --warmup 8 \
      --inject falsify@12,wipe@20,falsify@26 --eval 4,2,2 --out runs/rules-real
  python benchmarks/probes/rules_real_run.py --backend fake --stream 12 --test 4 --warmup 4 --inject falsify@6,wipe@9 \\
      --out /tmp/rr   # the plumbing in seconds, scripted backend (its numbers mean nothing)

A rerun with the same settings continues from the runs already finished (each run folder is resumed or read back),
and the response cache makes repeated requests free; Ctrl-C stops and keeps every committed step.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

METHODS = ("blind", "paper", "always", "recommended")
RUNS = ("paper", "always", "recommended")  # the order they run in: the cheapest first


def run_settings(a) -> dict[str, dict]:
    """The RunConfig of each of the three runs (the blind method comes with the paper run)."""
    llm = {"backend": a.backend, "temperature": 0.0}
    if a.model_path:
        llm["model_path"] = a.model_path
    if a.backend == "openai":
        llm.update(base_url=a.base_url, model=a.model)
    if a.backend == "local" and a.n_ctx:
        llm["n_ctx"] = a.n_ctx
    base = dict(preset="small", dataset=a.dataset, seed=a.seed, stream_size=a.stream, test_size=a.test,
                updater=a.updater, inject=a.inject, encoder=a.encoder, solver_max_tokens=a.solver_max_tokens,
                curator_max_tokens=a.curator_max_tokens, **llm)
    if a.updater == "exprag":  # Janus wraps ExpRAG only with one of our replay options (updaters/exprag.py)
        base["updater_config"] = {"janus_replay": a.replay, "top_k": a.top_k}
    if a.cache_dir:
        base["cache_dir"] = a.cache_dir
    out = Path(a.out)
    sizes = dict(zip(("coverage_size", "boundary_size", "fresh_size"), eval_sizes(a.eval)))
    return {
        "paper": {**base, "controller": "both", "janus_preset": "paper", "janus": {"warmup": a.warmup, **sizes},
                  "out": str(out / "paper")},
        "always": {**base, "controller": "janus", "janus_preset": "paper",
                   "janus": {"warmup": a.warmup, "trigger": "always", **sizes}, "out": str(out / "always")},
        "recommended": {**base, "controller": "janus", "janus_preset": "recommended", "janus": {"warmup": a.warmup},
                        "out": str(out / "recommended")},
    }


def eval_sizes(text: str) -> tuple[int, int, int]:
    """``--eval C,B,F``: the paper and always methods' evaluation set (coverage, boundary, fresh)."""
    try:
        sizes = tuple(int(x) for x in text.split(","))
    except ValueError:
        sizes = ()
    if len(sizes) != 3 or min(sizes) < 0 or sum(sizes) < 1:
        raise SystemExit(f"error: --eval takes three counts, coverage,boundary,fresh (the paper's: 12,8,5), got {text!r}")
    return sizes  # type: ignore[return-value]


def call_budget(settings: dict) -> str:
    """The most LLM calls one run can make (run/estimate.py; the cache serves some of them), as a line."""
    from janus_memory.run.build import load_splits
    from janus_memory.run.estimate import count_calls
    from janus_memory.settings.config import RunConfig

    cfg = RunConfig.parse(settings)
    stream, test = load_splits(cfg)
    c = count_calls(cfg, len(stream.tasks), len(test.tasks))
    if c is None:
        return "calls: the updater does not declare its calls per step"
    return (f"at most {c.most} calls: stream {c.stream_high}, Janus comparisons {c.janus} (2 memories x up to "
            f"{c.eval_size} tasks per comparison), test {c.test}")


def run_one(settings: dict, log) -> dict:
    """Run (or resume, or read back) one run folder, printing `janus run`'s plain progress lines (a line at least
    every 30 s, the time left from the measured speed); its summary."""
    from janus_memory.cli.progress import ConsoleProgress, Heartbeat, run_time_left
    from janus_memory.run.build import load_splits
    from janus_memory.run.experiment import run_experiment
    from janus_memory.settings.config import RunConfig

    cfg = RunConfig.parse(settings)
    root = Path(cfg.out)
    same_settings(root, settings)
    if (root / "COMPLETE").exists():
        log(f"{root}: finished before, read back")
        return json.loads((root / "summary.json").read_text(encoding="utf-8"))
    resume = (root / "run.sqlite").exists()
    stream, test = load_splits(cfg)
    from janus_memory.controller.strategy import eval_set_for

    progress = ConsoleProgress(log, None, time_left=run_time_left(cfg, len(stream.tasks), len(test.tasks)),
                               eval_set=eval_set_for(cfg.janus_config()))
    with Heartbeat(progress):
        return run_experiment(cfg, log=log, on_event=progress, resume=resume, splits=(stream, test))


def same_settings(root: Path, settings: dict) -> None:
    """A run folder is continued or read back only under the settings it was started with (kept beside it in
    probe_settings.json); other settings are an error naming what differs, never a table labelled with them."""
    keep = root.parent / f"{root.name}.probe_settings.json"
    want = json.loads(json.dumps(settings, default=str))
    if keep.exists():
        had = json.loads(keep.read_text(encoding="utf-8"))
        diff = sorted(k for k in set(had) | set(want) if had.get(k) != want.get(k))
        if diff:
            shown = "; ".join(f"{k}: {had.get(k)!r} there, {want.get(k)!r} now" for k in diff)
            raise SystemExit(f"error: {root} was run with other settings ({shown}); give the same options to continue "
                             f"or read it back, or another --out")
    else:  # a new folder (or one from before the settings were kept: these settings are its from now on)
        root.parent.mkdir(parents=True, exist_ok=True)
        keep.write_text(json.dumps(want, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _test_verdicts(root: Path, method: str) -> dict[str, bool]:
    rows = [json.loads(x) for x in (root / method / "test.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    return {r["task_id"]: bool(r["correct"]) for r in rows if r.get("memory", "final") in ("final", None)}


def _calls(usage: dict) -> dict:
    """Calls a method needs on its own per phase: paid + served by the cache."""
    need = lambda r: int((usage.get(r) or {}).get("calls", 0)) + int((usage.get(r) or {}).get("cache_hits", 0))  # noqa: E731
    paid = lambda r: int((usage.get(r) or {}).get("calls", 0))  # noqa: E731
    stream = sum(need(r) for r in usage if r not in ("janus", "test"))
    return {"stream": stream, "janus": need("janus"), "test": need("test"),
            "total": stream + need("janus") + need("test"), "paid_here": sum(paid(r) for r in usage)}


def collect(a, summaries: dict[str, dict]) -> dict:
    from janus_memory.report.kept import method_kept
    from janus_memory.report.paired import paired_compare, wilson

    out = Path(a.out)
    where = {"blind": ("paper", a.updater), "paper": ("paper", f"{a.updater}+janus"),
             "always": ("always", f"{a.updater}+janus"), "recommended": ("recommended", f"{a.updater}+janus")}
    res: dict = {"methods": {}, "paired": {}}
    verdicts = {}
    for name, (run, method) in where.items():
        if run not in summaries:
            continue
        m = summaries[run]["methods"][method]
        verdicts[name] = _test_verdicts(out / run, method)
        k, n = m["test_correct"], m["test_tasks"]
        inj = m.get("injections") or {}
        res["methods"][name] = {
            "run": run, "method": method, "test_correct": k, "test_tasks": n, "wilson95": list(wilson(k, n)),
            "online_accuracy": m.get("online_accuracy"), "triggers": m.get("triggers"), "rollbacks": m.get("rollbacks"),
            "calls": _calls(m.get("usage") or {}),
            "injections": {"deployed": inj.get("deployed_steps"), "blocked": inj.get("blocked_steps")},
            # what the memory kept: genuine candidates rolled back, stated rules the final memory holds
            "kept": method_kept(out / run, method, janus=bool(m.get("janus"))),
            "reoffers": m.get("reoffers"), "reoffers_deployed": m.get("reoffers_deployed"),
        }
    for name in METHODS[1:]:
        if name in verdicts:
            res["paired"][name] = paired_compare(verdicts["blind"], verdicts[name])
    return res


def markdown(a, res: dict, wall: float, loads: tuple) -> str:
    from janus_memory.inject.plan import parse_inject
    from janus_memory.report.kept import cells

    model = "Embedded model" if a.backend == "local" else f"Backend {a.backend}"
    lines = [f"{model}, dataset {a.dataset} seed {a.seed}: stream {a.stream}, test {a.test}, updater "
             f"{a.updater}" + (f" (janus_replay {a.replay}, top-k {a.top_k})" if a.updater == "exprag" else "")
             + f", encoder {a.encoder}, --inject {a.inject}, warm-up {a.warmup}, evaluation set of the paper and "
             f"always methods {a.eval} (coverage, boundary, fresh); wall {wall / 60:.1f} min, load average "
             f"{loads[0]:.2f} at start, {loads[1]:.2f} at end.", "",
             "| method | test correct | Wilson 95% | vs blind (Newcombe 95%) | McNemar p | triggers | rolled back | "
             "LLM calls needed (stream + Janus + test) | injected: deployed / blocked (E old vs candidate) | "
             "genuine rolled back | stated rules held | rules lost |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in METHODS:
        if name not in res["methods"]:
            lines.append(f"| {name} | not run yet (`--runs`) | | | | | | | | | | |")
            continue
        m = res["methods"][name]
        lo, hi = m["wilson95"]
        pc = res["paired"].get(name)
        vs = "-" if pc is None else f"{pc['diff'] * 100:+.1f} pp [{pc['ci95'][0] * 100:+.1f}, {pc['ci95'][1] * 100:+.1f}]"
        p = "-" if pc is None else f"{pc['p_mcnemar']:.3g}"
        c = m["calls"]
        inj = m["injections"]
        kinds = {i.step: i.kind for i in parse_inject(a.inject)}
        deployed = [f"{kinds.get(int(st), '?')}@{st}" for st in inj.get("deployed") or []]
        blocked = [f"{b['kind']}@{b['step']} (E {b['old_score']:.2f} vs {b['new_score']:.2f})"
                   if b.get("old_score") is not None else f"{b['kind']}@{b['step']}" for b in inj.get("blocked") or []]
        lines.append(f"| {name} | {m['test_correct']}/{m['test_tasks']} | {lo:.2f}-{hi:.2f} | {vs} | {p} | "
                     f"{m['triggers'] if m['triggers'] is not None else '-'} | "
                     f"{m['rollbacks'] if m['rollbacks'] is not None else '-'} | "
                     f"{c['total']} ({c['stream']} + {c['janus']} + {c['test']}) | "
                     f"{', '.join(deployed) or 'none'} / {', '.join(blocked) or 'none'} | "
                     + " | ".join(cells(m["kept"])) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="The first real-model measurement of Janus: blind, the paper's controller, always-compare and the "
                    "recommended controller on a stream of generated rules tickets with harmful candidates injected "
                    "(the module docstring says more).", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--backend", default="local", choices=("local", "fake", "openai"))
    ap.add_argument("--model-path", default=None)
    ap.add_argument("--base-url", default=None, help="--backend openai: the server's OpenAI-compatible URL")
    ap.add_argument("--model", default=None, help="--backend openai: the model name the server serves")
    ap.add_argument("--dataset", default="rules")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stream", type=int, default=32)
    ap.add_argument("--test", type=int, default=20)
    ap.add_argument("--updater", default="exprag",
                    help="exprag (default: the updater whose memory keeps the rules on this model, with "
                         "janus_replay top_k) or any other")
    ap.add_argument("--top-k", type=int, default=4, help="ExpRAG: records shown with each stream and test ticket")
    ap.add_argument("--replay", default="top_k", choices=("top_k", "whole_bank"),
                    help="ExpRAG's Janus replay: top_k (default: a replay shows the memory's top-k records for the "
                         "ticket, the prompt the stream or the test would build from it) or whole_bank (every other "
                         "record: a 30-ticket bank makes 4-10k-token prompts)")
    ap.add_argument("--n-ctx", type=int, default=16384,
                    help="embedded model's context per request (a top-k replay holds k tickets with their answers, "
                         "~0.4-2k tokens for k = 4; --replay whole_bank holds every ticket: 30 make ~4-10k; a prompt "
                         "past the context stops the run)")
    ap.add_argument("--inject", default="falsify@14,wipe@22,falsify@28")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--eval", default="12,8,5",
                    help="coverage,boundary,fresh of the paper and always methods' evaluation set (the paper's 12,8,5 "
                         "is most of the cost: 2 memories x 25 tasks per comparison)")
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--solver-max-tokens", type=int, default=384)
    ap.add_argument("--curator-max-tokens", type=int, default=320)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out", default="runs/rules-real")
    ap.add_argument("--runs", default=",".join(RUNS),
                    help="which runs to make or read back (default: all three); they go in the order paper (with "
                         "blind), always, recommended, the cheapest first, whatever the order given; the tables show "
                         "the methods of these runs")
    a = ap.parse_args(argv)
    log = lambda m: print(m, flush=True)  # noqa: E731
    load0, t0 = os.getloadavg()[0], time.time()
    summaries = {}
    wanted = [r.strip() for r in a.runs.split(",") if r.strip()]
    if not wanted or set(wanted) - set(RUNS) or "paper" not in wanted:
        raise SystemExit(f"error: --runs takes some of {', '.join(RUNS)}, the paper run included (it has the blind "
                         f"method every other method is paired with), got {a.runs!r}")
    from janus_memory.errors import ConfigError

    try:
        runs = {k: v for k, v in run_settings(a).items() if k in wanted}
        budgets = {name: call_budget(settings) for name, settings in runs.items()}
    except ConfigError as e:
        raise SystemExit(f"error: {e}") from None
    for name, line in budgets.items():
        log(f"run {name}: {line}")
    try:
        for name, settings in runs.items():
            log(f"== run {name}: {settings['out']}")
            summaries[name] = run_one(settings, log)
    except KeyboardInterrupt:
        log("interrupted: every committed step is kept; the same command continues")
        return 130
    except ConfigError as e:
        raise SystemExit(f"error: {e}") from None
    wall, load1 = time.time() - t0, os.getloadavg()[0]
    res = collect(a, summaries)
    md = markdown(a, res, wall, (load0, load1))
    print(md)
    out = Path(a.out)
    record = {"command": "python benchmarks/probes/rules_real_run.py " + " ".join(sys.argv[1:] if argv is None else argv),
              "settings": vars(a), "wall_s": round(wall, 1), "load_start": load0, "load_end": load1,
              "when": time.strftime("%Y-%m-%dT%H:%M:%S"), **res}
    (out / "measurement.json").write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    (out / "measurement.md").write_text(md, encoding="utf-8")
    log(f"wrote {out / 'measurement.json'} and {out / 'measurement.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
