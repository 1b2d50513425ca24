"""Which method runs `janus report` may average, and how rows that share a method name are told apart.

A row of a report table is a label (method name plus a grid cell's suffix, runs.py) on one dataset, averaged over
seeds. Two runs are seeds of one configuration only when everything they were run with is the same apart from the
seed: their **identity** (:func:`identity`) is the stored config.json, flattened to dotted keys, without

- the seed that is being averaged over (``seed``; ``stream_order_seed`` for stream-order runs, whose ``seed`` fixes
  the split and stays);
- settings that do not change what is measured: the ones a resume may change (resume.RESUME_FREE_KEYS: out, cache,
  endpoint, concurrency), ``checkpoints`` (extra test points only), ``controller`` (the label names the method),
  ``data_dir`` (replaced by the data files' sha256 from splits.json, key ``data``) and config.json's derived
  ``preset_summary``;
- for a method without Janus, the Janus-only settings (``janus.*``, ``janus_preset``, ``replay``, ``batch_eval``);
- ``janus.trigger_rate`` unless the trigger is random and ``janus.trigger_period`` unless it is periodic; for a grid's
  random/periodic cell (cell.json ``matched``) neither: they are matched to each seed's MMT run by design.

:func:`assign_tags` (per group of comparable runs) names the rows that would otherwise share a label: the settings in
which runs of one label differ (``dc_rs+janus (tau=0.2)``); runs with the same identity *and* seed are the same run
made twice, never averaged: each gets its folder's name (``dc_rs (a)``) and a warning names the folders.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

JANUS_ONLY = ("janus", "janus_preset", "replay", "batch_eval")
NOT_MEASURED = ("checkpoints", "controller", "data_dir", "preset_summary", "seed", "stream_order_seed")
PER_DATASET = ("dataset", "data", "stream_size", "test_size")  # differ between the columns of one row by nature
MAX_TAG = 32  # a longer settings tag becomes "setup N", spelled out under the table
UNSET = "unset"


def resolved_janus(cfg_janus: dict | None) -> dict:
    """The run's Janus overrides merged onto the JanusConfig defaults (settings/stored.janus_defaults)."""
    from ..settings.stored import janus_defaults

    return janus_defaults(cfg_janus)


def _flat(d: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):  # an empty section adds no key (as if absent)
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _normalised(cfg: dict) -> dict:
    """config.json as the runner reads it back, every default written out (settings/stored.stored_dump: the settings
    of runs made before a key existed spelled out as they ran, the updater's own defaults too); a config this version
    cannot parse gets the top-level, llm and Janus defaults only."""
    from ..settings.stored import stored_dump

    return stored_dump(cfg)


def _data(splits: Any) -> str | None:
    """The data files the run read (splits.json ``source_sha256`` of stream and test), or None when not recorded."""
    if not isinstance(splits, dict):
        return None
    shas = [str(s.get("source_sha256"))[:12] for s in (splits.get("stream"), splits.get("test"))
            if isinstance(s, dict) and s.get("source_sha256")]
    return "+".join(dict.fromkeys(shas)) or None


def identity(cfg: dict, splits: Any, *, janus: bool, stream_order: bool, matched: bool) -> dict[str, Any]:
    """The settings that make a method run what it is (module docstring), flattened: ``{"llm.temperature": 0.7,
    "janus.tau": 0.0, "data": "3730d312f6e3", ...}``. Values are JSON values (lists as compact JSON text)."""
    from ..run.resume import RESUME_FREE_KEYS

    flat = _flat(_normalised(cfg))
    drop = set(RESUME_FREE_KEYS) | set(NOT_MEASURED)
    if stream_order:
        drop.discard("seed")  # the split seed of a stream-order study: the same for every order
    trigger = flat.get("janus.trigger")
    if matched or trigger != "random":
        drop.add("janus.trigger_rate")
    if matched or trigger != "periodic":
        drop.add("janus.trigger_period")
    out = {}
    for k, v in flat.items():
        if k in drop or (not janus and k.split(".", 1)[0] in JANUS_ONLY):
            continue
        out[k] = json.dumps(v, sort_keys=True, separators=(",", ":")) if isinstance(v, (list, dict)) else v
    data = _data(splits)
    if data is not None:
        out["data"] = data
    return out


def key_text(ident: dict) -> str:
    return json.dumps(ident, sort_keys=True, default=str)


def base_identity(ident: dict) -> str:
    """What a base run and its +Janus run share (the identity without the Janus-only settings), as text."""
    return key_text({k: v for k, v in ident.items() if k.split(".", 1)[0] not in JANUS_ONLY})


def origin(run_dir: Path) -> Path:
    """The folder a run belongs to: a grid or sweep root for a cell folder ``<root>/<dataset>/<cell>/seed<k>`` (it
    holds cell.json), else the run folder itself."""
    cell = re.fullmatch(r"(seed|order)\d+", run_dir.name) and (run_dir / "cell.json").is_file()
    return run_dir.parents[2] if cell and len(run_dir.parents) > 2 else run_dir


def short_names(paths) -> dict[Path, str]:
    """Each folder by the fewest trailing path parts that tell it from the others: runs/a, runs/b -> a, b; a grid's
    gsm8k/dc_rs/seed0, gsm8k/dc_rs+janus/seed0 -> dc_rs/seed0, dc_rs+janus/seed0."""
    full = {p: Path(p).expanduser().absolute().parts for p in dict.fromkeys(paths)}
    out = {}
    for p, parts in full.items():
        for n in range(1, len(parts) + 1):
            tail = parts[-n:]
            if sum(1 for q in full.values() if q[-n:] == tail) == 1 or n == len(parts):
                out[p] = "/".join(tail).replace("//", "/")
                break
    return out


def _value(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return str(v).lower()
    return str(v)


def _varying(idents: list[dict], skip: tuple[str, ...] = ()) -> set[str]:
    keys = {k for d in idents for k in d if k not in skip}
    return {k for k in keys if len({json.dumps(d.get(k, UNSET), default=str) for d in idents}) > 1}


def _key_names(keys: set[str]) -> dict[str, str]:
    """A setting by its last dotted part (tau, temperature, top_k) unless two varying settings share it."""
    leaf = Counter(k.rsplit(".", 1)[-1] for k in keys)
    return {k: k.rsplit(".", 1)[-1] if leaf[k.rsplit(".", 1)[-1]] == 1 else k for k in keys}


def assign_tags(rows: list) -> dict:
    """Tell apart the rows of one group of comparable runs (setup.sections) that share a label; sets each
    MethodRun's ``tag`` and ``label`` (``cell_label`` keeps the name without the tag).

    Returns ``{"duplicates": [warning lines], "sources": [lines naming each tagged row's settings and folders]}``.
    """
    warnings: list[str] = []
    for part in ([r for r in rows if not r.stream_order], [r for r in rows if r.stream_order]):
        if part:
            warnings += _tag_part(part)
    return {"duplicates": warnings, "sources": sources(rows)}


def _tag_part(rows: list) -> list[str]:
    from .labels import display_name

    by_label: dict[str, list] = {}
    for r in rows:
        by_label.setdefault(r.cell_label, []).append(r)
    keys: set[str] = set()
    for rs in by_label.values():
        keys |= _varying([r.ident for r in rs], PER_DATASET)  # one row, different settings in two columns
        for ds in {r.dataset for r in rs}:
            keys |= _varying([r.ident for r in rs if r.dataset == ds])
    names = _key_names(keys)
    setups: dict[str, str] = {}
    for r in rows:
        r.settings = ""
        parts = [f"{names[k]}={_value(r.ident[k])}" for k in sorted(keys, key=lambda k: names[k]) if k in r.ident]
        text = ", ".join(parts)
        if len(text) > MAX_TAG:
            setups.setdefault(text, f"setup {len(setups) + 1}")
            r.settings, text = text, setups[text]
        r.tag = text
    # the same settings and seed in two folders: the same run twice; one row per origin (grid root or run folder)
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault((r.dataset, r.cell_label, r.tag, key_text(r.ident)), []).append(r)
    twice = {k: rs for k, rs in groups.items() if len({r.seed for r in rs}) < len(rs)}
    warnings = []
    if twice:
        shorts = short_names([r.run_dir for r in rows])
        for (ds, label, _, _), rs in sorted(twice.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            for seed in sorted({r.seed for r in rs}):
                same = sorted({shorts[r.run_dir] for r in rs if r.seed == seed})
                if len(same) > 1:
                    warnings.append(f"warning: {label} on {display_name(ds)} seed {seed} was run {len(same)} times "
                                    f"with the same settings ({', '.join(same)}): separate rows named by folder, not "
                                    "averaged as seeds")
        origins = short_names([origin(r.run_dir) for r in rows])
        for r in rows:
            r.tag = ", ".join(x for x in (r.tag, origins[origin(r.run_dir)]) if x)
        groups = {}
        for r in rows:
            groups.setdefault((r.dataset, r.cell_label, r.tag, key_text(r.ident)), []).append(r)
        folders = short_names([r.run_dir for r in rows])
        for rs in groups.values():  # one origin holding the same run twice (folders named seed<k> by hand)
            if len({r.seed for r in rs}) < len(rs):
                for r in rs:
                    r.tag = ", ".join(x for x in (r.tag, folders[r.run_dir]) if x)
    for r in rows:
        r.label = f"{r.cell_label} ({r.tag})" if r.tag else r.cell_label
    return warnings


def sources(rows: list) -> list[str]:
    """For every tagged row: where it comes from ("dc_rs+janus (tau=0.2): runs/b"); a "setup N" row also gets its
    settings."""
    from .labels import label_key

    shorts = short_names([r.run_dir for r in rows])
    out: dict[str, dict] = {}
    for r in rows:
        if r.tag:
            e = out.setdefault(r.label, {"folders": [], "settings": r.settings})
            e["folders"].append(shorts[r.run_dir])
    lines = []
    for label in sorted(out, key=label_key):
        e = out[label]
        folders = ", ".join(sorted(dict.fromkeys(e["folders"])))
        lines.append(f"{label}: {folders}" + (f" ({e['settings']})" if e["settings"] else ""))
    return lines
