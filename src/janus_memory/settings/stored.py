"""A run's settings with every default written out, and a stored config read back: the one place where defaults are
worked out.

* :func:`resolve_config`: a config with every default written out (the preset's JanusConfig with the overrides, the
  updater's own defaults under the preset's updater settings, the replay mode, the local context window): what
  ``<run>/config.json`` holds;
* :func:`stored_config`: a stored config (config.json, the database's config row) as the run ran it: the settings of
  older versions spelled out (migrate.py), then parsed, then (by default) resolved;
* :func:`stored_dump`: the same as plain JSON for comparing two runs' settings; a config this version cannot parse
  (an edited file, a plugin not loaded) is compared as stored, with the top-level, ``llm`` and Janus defaults filled
  in.

Used by the resume (run/resume.py: the stored settings and the check that a resume keeps them), the runner
(run/build.py re-exports :func:`resolve_config`) and the report (report/variants.py: which runs are seeds of one
configuration).
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from . import presets
from .config import RunConfig
from .llm_settings import LLMSettings, SettingsConflict, lift_llm
from .migrate import migrate_stored


def resolve_config(cfg: RunConfig) -> RunConfig:
    """The config with every default written out: all Janus settings (the preset's JanusConfig with the overrides),
    the updater's own defaults under the preset's updater settings, the replay mode and the local context window."""
    from ..registry import UPDATERS
    from ..updaters.base import COMMON_DEFAULTS

    upd_cls = UPDATERS.lookup(cfg.updater)  # ConfigError naming the closest name (a plugin not loaded)
    defaults = {**COMMON_DEFAULTS, **getattr(upd_cls, "DEFAULTS", {})}
    mirrored = {"temperature", "solver_max_tokens", "curator_max_tokens"}  # set by top-level options
    if cfg.llm.extra_body:
        mirrored.add("extra_body")
    upd_cfg = {k: v for k, v in defaults.items() if k not in mirrored}
    upd_cfg.update({k: v for k, v in presets.updater_overrides(cfg.preset, cfg.updater).items() if k in defaults})
    upd_cfg.update(cfg.updater_config)
    update = {"janus": cfg.janus_config().to_dict(), "updater_config": upd_cfg, "replay": cfg.replay_mode()}
    if cfg.llm.backend == "local":
        update["llm"] = {**cfg.llm.model_dump(), "n_ctx": cfg.context_window()}
    return RunConfig.parse({**cfg.model_dump(), **update})


def stored_config(data: dict, *, resolve: bool = True) -> RunConfig:
    """The settings a stored config ran with: keys of older versions spelled out as they ran (migrate_stored), parsed
    (ConfigError naming a bad key) and, unless ``resolve`` is False, with every default written out
    (:func:`resolve_config`). ``resolve=False`` keeps what was stored as given (a resume overlays options on it)."""
    cfg = RunConfig.parse(migrate_stored(dict(data)))
    return resolve_config(cfg) if resolve else cfg


def stored_dump(data: dict) -> dict:
    """A stored config as plain JSON with every default written out (:func:`stored_config`'s dump); a config this
    version cannot parse or migrate: as stored, with the top-level, ``llm`` and Janus defaults filled in."""
    try:
        return stored_config(data).model_dump()
    except Exception:  # noqa: BLE001 - a config this version cannot read (a plugin not loaded, a newer key): as stored
        pass
    try:
        d = _top_level_defaults(migrate_stored(dict(data)))
    except (ValueError, TypeError):  # an edited, contradictory config.json: compared as it is
        d = dict(data)
    if isinstance(d.get("llm"), dict):
        d["llm"] = {**LLMSettings().model_dump(), **d["llm"]}
    d["janus"] = janus_defaults(d.get("janus") if isinstance(d.get("janus"), dict) else None)
    return d


def janus_defaults(janus: dict | None) -> dict:
    """A stored ``janus`` section merged onto the JanusConfig defaults."""
    from ..controller import JanusConfig

    return {**JanusConfig().to_dict(), **(janus or {})}


def _top_level_defaults(stored: dict) -> dict:
    """``stored`` (flat backend keys lifted into ``llm``) with RunConfig's defaults for the keys it lacks, as plain
    JSON values."""
    try:
        stored = lift_llm(stored)
    except SettingsConflict:  # an edited config.json: compared as it is, so the diff shows the edit
        pass
    defaults: dict[str, Any] = {k: f.get_default(call_default_factory=True) for k, f in RunConfig.model_fields.items()
                                if k not in stored and not f.is_required()}
    defaults = {k: v.model_dump() if isinstance(v, BaseModel) else v for k, v in defaults.items()}
    return {**defaults, **stored}
