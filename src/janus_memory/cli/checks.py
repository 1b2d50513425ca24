"""Checks `janus run`/`janus demo` make before printing anything: every user-fixable problem that can be seen without
loading a model gives its one error line before the preset header (cli/app.py), and before any folder is made."""
from __future__ import annotations

from ..errors import ConfigError


def preflight(cfg, resume: bool = False, overwrite: bool = False):
    """ConfigError / OutputError / ModelNotFound (JanusErrors) for an unknown encoder, a resume of a finished run or
    whose options change a stored setting, a data folder or dataset file that is missing or unreadable, an output
    folder that cannot be created or written (or already holds a run) and a missing embedded model file. Nothing is
    created.

    Returns the loaded (stream, test) splits, for run_experiment(splits=...)."""
    from ..run.build import check_encoder, load_splits
    from ..tasks.data import resolve_data_dir

    check_encoder(cfg.encoder)
    if resume:
        from ..run.resume import check_before_resume, refuse_changed_config
        from ..store.reader import RunReader

        # what `janus run --resume` refuses without a model (a damaged database, missing steps, an edited
        # config.json, a finished run ...), in the words `janus report` uses, before the header is printed
        check_before_resume(cfg.out)
        reader = RunReader(cfg.out)
        if reader.has_db and reader.meta("config") is not None:  # anything else: the runner's own message
            refuse_changed_config(reader, cfg)
    else:
        from ..store.store import RunStore

        RunStore.check_new_uncreated(cfg.out, overwrite=overwrite,  # a probe, removed at once
                                     methods=[m for m, _ in cfg.methods()])
    from ..registry import DATASETS

    spec = DATASETS.get(cfg.dataset)
    try:
        if getattr(spec, "needs_data", True) or cfg.data_dir is not None:  # generated tasks need no data folder
            resolve_data_dir(cfg.data_dir)
    except FileNotFoundError as e:
        raise ConfigError(str(e)) from None
    splits = load_splits(cfg)  # the dataset files themselves: found, readable, parsable
    if cfg.llm.backend == "local":
        from ..llm.model_fetch import resolve_model_path

        resolve_model_path(cfg.llm.model_path)  # raises ModelNotFound naming the path and the fix (`janus model fetch`)
    return splits


def grid_preflight(base, seeds) -> None:
    """`janus grid`: the dataset files of every split seed load and the grid root can be created or written (a probe,
    removed at once), before any cell starts; ConfigError / OutputError otherwise."""
    from ..run.build import check_encoder, load_splits
    from ..store.store import RunStore

    check_encoder(base.encoder)
    RunStore.check_new_uncreated(base.out, run=False)
    for seed in seeds:
        load_splits(base.model_copy(update={"seed": seed}))
