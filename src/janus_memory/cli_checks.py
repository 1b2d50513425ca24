"""Checks `janus run`/`janus demo` make before printing anything: every user-fixable problem that can be seen without
loading a model or a dataset gives its one error line before the preset header (cli.py)."""
from __future__ import annotations

from .errors import ConfigError


def preflight(cfg, resume: bool = False) -> None:
    """ConfigError / ModelNotFound (JanusErrors) for a missing data folder or a missing embedded model file, and for a
    resume whose options change a stored setting."""
    from .tasks.data import resolve_data_dir

    import janus_memory.encoders  # noqa: F401  (registers the built-in encoder kinds)
    from .registry import ENCODERS

    kind = str(cfg.encoder or "").partition(":")[0]
    if cfg.encoder and kind not in ENCODERS:
        raise ConfigError(f"unknown encoder {cfg.encoder!r}: choose one of {', '.join(ENCODERS.names())} "
                          "('minilm', 'hashing[:n]' or 'st:<name-or-path>')")
    if resume:
        from .runner.reader import RunReader
        from .runner.resume import refuse_changed_config

        reader = RunReader(cfg.out)
        if reader.has_db and reader.meta("config") is not None:  # anything else: the runner's own message
            refuse_changed_config(reader, cfg)

    try:
        resolve_data_dir(cfg.data_dir)
    except FileNotFoundError as e:
        raise ConfigError(str(e)) from None
    if cfg.llm.backend == "local":
        from .model_fetch import resolve_model_path

        resolve_model_path(cfg.llm.model_path)  # raises ModelNotFound naming the path and the fix (`janus model fetch`)
