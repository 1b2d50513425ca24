"""The flags `janus run`, `demo`, `grid` and `sweep` share (model, data, Janus, output, injection and executor
options) and the argument types every option uses (paths, bounded integers, seed lists, fractions, on/off).
"""
from __future__ import annotations

import argparse


def path_arg(text: str) -> str:
    """An argparse type: a path that can name a file here (janus_memory/paths.py: not too long, no symlink loop)."""
    from ..paths import check_path

    try:
        return check_path(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


# every option whose value is a path gets path_arg (build_parser): those with a path metavar or one of these names
PATH_METAVARS = frozenset({"DIR", "FILE", "PATH"})


PATH_DESTS = frozenset({"out", "resume", "config", "data_dir", "cache_dir", "model_path", "from_dir", "run_dir", "dirs",
                        "grid", "inputs"})


def _typed_paths(p: argparse.ArgumentParser) -> None:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                _typed_paths(sp)
        elif (a.metavar in PATH_METAVARS or a.dest in PATH_DESTS) and a.type is None and a.nargs != 0:
            a.type = path_arg


def int_at_least(lo: int):
    """An argparse type: an integer >= ``lo`` (one line naming the range otherwise)."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {lo}, got {text!r}") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"must be an integer >= {lo}, got {v}")
        return v

    parse.__name__ = f"int >= {lo}"
    return parse


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0-65535 (0: any free port)."""
    v = int_at_least(0)(text)
    if v > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0-65535, got {v}")
    return v


def seed_list(text: str) -> str:
    """--seeds: one or more comma-separated integers, as --seed takes (kept as the text; cli._grid splits it)."""
    parts = [x.strip() for x in text.split(",") if x.strip()]
    try:
        [int(x) for x in parts]
    except ValueError:
        parts = []
    if not parts:
        raise argparse.ArgumentTypeError(f"expected one or more comma-separated integers like 0,1,2, got {text!r}")
    return text


def fractions(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated fractions like 0.2,0.4, got {text!r}") from None


def on_off(text: str) -> bool:
    t = text.strip().lower()
    if t in ("on", "true", "yes", "1"):
        return True
    if t in ("off", "false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected on or off, got {text!r}")


def add_run_options(p: argparse.ArgumentParser, *, demo: bool, names: dict[str, str], grid: bool = False) -> None:
    """The options of `janus run` (``demo``: the demo's subset; ``grid``: without the options a grid sets per cell
    or does itself: updater, controller, seed, resume, stream order, overwrite)."""
    _add_data_options(p.add_argument_group("data"), demo=demo, names=names, grid=grid)
    m = p.add_argument_group("model")
    m.add_argument("--backend", metavar="NAME",
                   help=f"chat backend: {names['backends']} (local = embedded GGUF, the default; openai = any "
                        "OpenAI-compatible server; fake = scripted, plumbing only)")
    m.add_argument("--base-url", metavar="URL",
                   help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (API key from $OPENAI_API_KEY)")
    m.add_argument("--model", metavar="NAME", help="model name at the endpoint (with --backend openai)")
    m.add_argument("--model-path", metavar="FILE",
                   help="GGUF file for the embedded backend (default: $JANUS_LOCAL_GGUF or the fetched model)")
    m.add_argument("--temperature", type=float, help="sampling temperature of every LLM call, in [0, 2]")
    m.add_argument("--solver-max-tokens", type=int, help="output token limit of each solving call (stream, replay, test)")
    m.add_argument("--curator-max-tokens", type=int, help="output token limit of each memory-update call")
    m.add_argument("--concurrency", type=int, help="LLM requests in flight at once, one budget for all the run's methods "
                                                   "(a grid's or sweep's workers share it per endpoint)")
    m.add_argument("--n-ctx", type=int, help="context window of the embedded backend (default 0: max of the solver/"
                                             "curator max tokens + 2048 prompt tokens; a smaller value is refused)")
    m.add_argument("--request-timeout", type=float, help="seconds per HTTP request to an OpenAI-compatible server (default 120)")
    m.add_argument("--max-retries", type=int, help="retries per LLM request on transient errors (default 6)")
    m.add_argument("--request-deadline", type=float,
                   help="seconds one LLM request may take including retries (default: none; e.g. 600 for openai)")
    m.add_argument("--allow-weak-sandbox", action="store_true", default=None,
                   help="when bubblewrap is missing, run model-written code (HumanEval, DC's EXECUTE CODE! step) in the "
                        "weak sandbox (unshare), which cannot stop writes to your home (~/.ssh), the virtualenv and "
                        "its site-packages, or host Unix sockets; without it HumanEval stops and DC skips the step")
    m.add_argument("--n-parallel", type=int, help="embedded engine: llama.cpp slots decoded together (default 1; "
                                                  "docs/perf.md)")
    m.add_argument("--batch-eval", choices=["on", "off", "auto"], type=str.lower,
                   help="send a Janus comparison's replays (entries x old/new memory) as one batch: auto (default: "
                        "batched, early-stopping rounds prefetched only with parallel slots/requests), on, or off "
                        "(each memory's replays on their own; faster on a CPU llama.cpp server, docs/perf.md)")
    m.add_argument("--speculate", choices=["on", "off", "auto"], type=str.lower,
                   help="with a batched evaluation, send every read a sequential Janus comparison may make at once "
                        "(one round of latency; reads it never uses are paid and counted): auto (default: when the "
                        "backend serves requests in parallel), on, or off; the decisions are the same either way")
    m.add_argument("--parallel-methods", choices=["on", "off", "auto"], type=str.lower,
                   help="run the methods (base and +Janus) side by side, sharing --concurrency: auto (default: when "
                        "the backend serves requests in parallel, a server or several --n-parallel slots), on, or "
                        "off (one after another); the results are the same either way")
    m.add_argument("--encoder", metavar="SPEC", help="memory/task encoder: minilm (default), hashing, st:<model>")
    m.add_argument("--no-cache", action="store_true", default=None, help="do not use the persistent LLM response cache")
    m.add_argument("--cache-dir", metavar="DIR", help="LLM response cache folder (default: $JANUS_CACHE_DIR/llm-cache, "
                                                      "else ~/.cache/janus-memory/llm-cache)")
    o = p.add_argument_group("output")
    o.add_argument("--out", metavar="DIR", help="grid root: each cell runs in DIR/<dataset>/<cell>/seed<k>" if grid
                   else "folder to create, made with its parents, holding one run folder per act (scripted/, "
                        "real/) (default: runs/demo-<date>-<time>, a new folder per demo)" if demo else
                   "run folder to create, made with its parents, relative to the current folder; a finished run there "
                   "needs --overwrite or another --out")  # show_defaults appends (default: runs/latest)
    if not grid:
        o.add_argument("--overwrite", action="store_true", help="reuse an --out folder that holds a finished run")
    o.add_argument("-q", "--quiet", action="count", default=0,
                   help="no per-run progress lines (warnings and the final list of runs are still printed)" if grid
                   else "no settings header, estimate, progress bars, per-step, per-trigger or test-phase lines: "
                        "warnings, injected candidates, unscored answers, the run folder, the summary tables and the "
                        "closing lines are still printed (giving it twice changes nothing more)")
    _add_janus_options(p.add_argument_group("janus"))
    from ..inject.plan import KINDS as INJECT_KINDS

    x = p.add_argument_group("injected harmful candidates")
    x.add_argument("--inject", metavar="KIND@STEP[,...]",
                   help="replace the updater's candidate at these stream steps with a harmful one (kinds: "
                        f"{', '.join(INJECT_KINDS)}; docs/experiments.md), e.g. poison@5,wipe@12; every method of the "
                        "run gets the same injected candidates"
                        + ("; act 1 injects a poison and act 2 a falsified rule at the last stream step, '' for none"
                           if demo else ""))


def _add_data_options(g, *, demo: bool, names: dict[str, str], grid: bool) -> None:
    """The "data" group of `janus run` / `demo` / `grid` (see add_run_options)."""
    from ..settings.presets import SEED_HELP, SEED_MAX

    if not demo:
        g.add_argument("--dataset", metavar="NAME", help=f"dataset name ({names['datasets']}); required unless "
                                                          "--config names one" if grid else
                       f"dataset name ({names['datasets']})")
        g.add_argument("--stream-size", type=int, help="number of stream (memory-building) tasks, >= 1 (default: the "
                                                        "dataset's whole stream split: 500 tasks for gsm8k, the default "
                                                        "dataset; every dataset's split sizes: docs/tasks.md)")
        g.add_argument("--test-size", type=int, help="number of held-out test tasks, >= 1 (default: the dataset's whole "
                                                      "test split: 500 tasks for gsm8k)")
        if not grid:
            g.add_argument("--updater", metavar="NAME", help=f"memory updater: {names['updaters']}")
            g.add_argument("--controller", choices=["janus", "none", "both"],
                           help="run the updater with Janus, without, or both side by side")
        g.add_argument("--config", metavar="FILE",
                       help="YAML/JSON file with RunConfig keys (command-line options override it)")
        if not grid:
            g.add_argument("--resume", metavar="DIR", help="continue an interrupted run from its last committed step")
        g.add_argument("--checkpoints", type=fractions, metavar="FRACTIONS",
                       help="also test the memory at these stream fractions, e.g. 0.2,0.4,0.6,0.8 (paper Fig. 4); "
                            "default: none")
        if not grid:
            g.add_argument("--stream-order-seed", type=int,
                           help=f"re-order the stream (same tasks, same test split; a seed in [0, {SEED_MAX}]) "
                                "for the stream-order study; default: the split order")
        g.add_argument("--checkpoint-restore", choices=["paper", "exact"],
                       help="memories tested at --checkpoints: paper = restored as the authors' Fig. 4 script does "
                            "(DC-RS pool of successes only, ExpeL counts 2; paper preset), exact = the stream's exact "
                            "snapshots (small preset)")
        g.add_argument("--option-order", choices=["question", "seeded"],
                       help="GPQA option order: question = shuffled by the question alone, the same for every seed "
                            "(the authors'; paper preset), seeded = by record id and --seed, so seeds also vary the "
                            "positions (small preset)")
        g.add_argument("--apibench-split", choices=["paper", "registry"],
                       help="APIBench-HF stream/test split: paper = stable shuffle keyed 'APIBench:hf:<seed>' (the "
                            "authors'; paper preset), registry = keyed 'apibench_hf:<seed>' (small preset)")
        g.add_argument("--apibench-question", choices=["code", "instruction"],
                       help="APIBench-HF question: code = the row's whole code field, which holds the reference "
                            "output (the authors'; paper preset), instruction = the instruction alone (small preset)")
        g.add_argument("--checker", choices=["paper", "strict"],
                       help="answer checker of stream feedback, replays and test: paper = the authors' (lenient "
                            "multiple-choice rules, thinking included; our strict verdict is recorded beside it and "
                            "janus report shows both accuracies), strict = ours; default: the preset's (paper/small)")
        g.add_argument("--faithful", action="store_true", default=None,
                       help="score with the paper's own checker where it differs (math: exact match of the last box)")
    g.add_argument("--data-dir", metavar="DIR",
                   help="folder with the benchmark files, laid out as the package's own copy (gsm8k/test.jsonl, ...; "
                        "plain, .xz or .gz) (default: $JANUS_DATA_DIR, else the data shipped in the package)")
    if not grid:
        g.add_argument("--seed", type=int, help=SEED_HELP)
    g.add_argument("--preset", choices=["paper", "small"],
                   help=("paper = the authors' code rule for rule (default of run); small = our capped prompts, strict "
                         "parsers, frozen replays and JanusConfig.fast() for a 1.5B model (default of demo); explicit "
                         "options win. See docs/fidelity.md") if not demo else "small (default) or paper")


def _add_janus_options(j) -> None:
    j.add_argument("--warmup", type=int, help="Janus warm-up steps (paper: 20)")
    j.add_argument("--coverage-size", type=int, help="coverage set size K' (paper: 12)")
    j.add_argument("--boundary-size", type=int, help="boundary set size K-K' (paper: 8)")
    j.add_argument("--fresh-size", type=int, help="fresh set size K_F (paper: 5)")
    j.add_argument("--tau", type=float, help="MMT threshold in [-1, 1]: compare when the cosine is below it (paper: "
                                             "0.0; --trigger always compares at every step)")
    j.add_argument("--beta", type=float, help="momentum coefficient in [0, 1) (paper: 0.9)")
    from ..controller.trigger import TRIGGER_POLICIES

    j.add_argument("--trigger", metavar="POLICY", help=f"trigger policy: {', '.join(TRIGGER_POLICIES)} (selective: "
                                                       "docs/controller.md)")
    j.add_argument("--janus-preset", choices=["paper", "fast", "recommended"],
                   help="controller switches: paper (JanusConfig.paper) or fast (early stop, dedup, incremental "
                        "k-means, identical-memory shortcut) or recommended (compare every step with a sequential "
                        "test on a stable panel of earlier tasks, rewordings checked on one task, dumps/wipes "
                        "compared inside the warm-up too; docs/controller.md); default: the run preset's "
                        "(paper -> paper, small -> fast)")
    j.add_argument("--replay", choices=["fresh", "frozen"],
                   help="Janus replays: fresh = a new sample per (trigger, entry, memory) as the authors (paper "
                        "preset); frozen = the stream solver's cached answer (small preset; cheaper, no noise flips)")
    j.add_argument("--twin-cache", choices=["separate", "shared"],
                   help="the base method and its +Janus twin: separate = independent answers (the twin's requests "
                        "get their own sample indices; the authors' separate runs; paper preset), shared = identical "
                        "requests share cached answers (small preset)")
    j.add_argument("--replay-failures", choices=["zero", "abort"],
                   help="a replay request that fails after the retries: zero = that entry scores 0 for that memory "
                        "and the comparison goes on (the authors'; paper preset), abort = the comparison ends and "
                        "the deployed memory is kept (small preset)")
    j.add_argument("--replay-limit", type=int, help="cap the evaluation set |E| per trigger (default: no cap, as the paper)")
    j.add_argument("--clustering", choices=["paper", "sklearn", "incremental"],
                   help="coverage k-means: paper = the authors' kmeans_pytorch (random initial points, warm restarts "
                        "snapped to data points, 50 iterations; seeded), the paper preset's; sklearn = scikit-learn "
                        "k-means++ with exact warm starts; incremental = history-independent (fast preset)")
    j.add_argument("--same-memory-shortcut", type=on_off, metavar="on|off",
                   help="evaluate identical old/new memories once (no noise flips); off in the paper preset")


def add_executor_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", choices=["local", "ray"], default="local", help="local processes (default) or a Ray cluster")
    p.add_argument("--workers", type=int_at_least(1), default=2, metavar="N",
                   help="parallel runs (local) / CPUs for a local Ray instance")
    p.add_argument("--address", help="Ray cluster address (e.g. auto or ray://head:10001)")
