"""``janus replay``: replay recorded memory trajectories through the trigger (see bench/replay.py).

Hooked into the CLI with ``add_replay_parser(subparsers)`` (cli/parser.py) and ``run_replay(args) -> exit code``
(cli/app.py).
Writes ``replay.json`` (rows + per-step records), ``replay.md`` (tables) and one cosine-timeline PNG per
trajectory into ``--out``; prints the pooled and per-trajectory tables.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import printable

# the parser is built on every `janus` start: keep numpy/scikit-learn imports inside the handler
DEFAULT_SETTINGS = "mmt,mmt-magnitude,mmt-quantile,items,selective,recommended"  # == ",".join(replay.DEFAULT_PRESETS)
KINDS = ("dump", "wipe")


class ReplayInputError(ValueError):
    pass

OPTION_KEYS = ("tau", "beta", "retention_min", "shrink_max", "magnitude_ratio", "magnitude_window", "tau_quantile",
               "tau_window")


def add_replay_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("replay", help="replay recorded memory trajectories through the trigger (rate, cosine "
                                             "timeline, recall of destructive steps)")
    p.add_argument("inputs", nargs="+", help="trajectory JSONL file(s): ours (memory_before/memory_after), Dynamic "
                                             "Cheatsheet's per-step log or its published result file (final_cheatsheet"
                                             " per task), detected per file (.xz/.gz too); folder(s) of them; run "
                                             "folder(s); or dc-trajectories, the shipped Dynamic Cheatsheet runs")
    p.add_argument("--encoder", default="hashing,minilm", help="comma-separated encoder specs (default hashing,minilm)")
    p.add_argument("--warmup", default="0,20", help="comma-separated warm-up lengths (default 0,20)")
    p.add_argument("--z-source", default="memory", help="memory (phi of whole memories, the paper), items (phi of "
                                                        "removed/added items), or both: memory,items")
    p.add_argument("--settings", default=DEFAULT_SETTINGS,
                   help=f"comma-separated named settings (default: all of {DEFAULT_SETTINGS})")
    p.add_argument("--trigger", help="also replay a custom setting with this trigger (mmt, selective, ...) and the "
                                     "options below")
    for k in OPTION_KEYS:
        p.add_argument("--" + k.replace("_", "-"), type=int if k.endswith("window") else float, help="trigger option")
    p.add_argument("--arm-warmup", action="store_true", default=None, help="selective: item gate fires in warm-up")
    p.add_argument("--no-mmt", action="store_true", help="selective: item gate only")
    p.add_argument("--out", help="folder for replay.json, replay.md and PNG timelines")
    p.add_argument("--cache-dir", help="embedding cache folder (default ~/.cache/janus-memory/embeddings)")
    return p


def custom_setting(args) -> dict | None:
    if not args.trigger:
        return None
    ov = {"trigger": args.trigger}
    for k in OPTION_KEYS:
        if getattr(args, k, None) is not None:
            ov[k] = getattr(args, k)
    if args.arm_warmup:
        ov["arm_warmup"] = True
    if args.no_mmt:
        ov["use_mmt"] = False
    return ov


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ReplayInputError(f"--{what} expects comma-separated integers, got {text!r}") from None


def fmt_table(rows: list[dict]) -> str:
    head = ("trajectory", "encoder", "z", "setting", "wu", "fired", "rate", "dumps", "wipes", "destructive",
            "in warm-up", "eval calls")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["trajectory"], r["encoder"], r["z_source"], r["setting"], str(r["warmup"]),
                 f"{r['fired']}/{r['eligible']}", f"{100 * r['rate']:.0f}%"]
        cells += [f"{r[k + '_caught']}/{r[k + '_total']}" for k in KINDS + ("any",)]
        cells += [str(r["any_in_warmup"]), str(r["evaluator_calls"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_replay(args) -> int:
    """Handler of ``janus replay``; returns the exit code (2 on unreadable input or bad options)."""
    from janus_memory.bench.replay import PRESETS, load_trajectories, pooled, run_grid
    from janus_memory.bench.replay import ReplayInputError as LoadError
    from janus_memory.encoders import get_encoder

    try:
        trajs = [t for path in args.inputs for t in load_trajectories(path)]
        warmups = _ints(args.warmup, "warmup")
        z_sources = tuple(x.strip() for x in args.z_source.split(",") if x.strip())
        if any(z not in ("memory", "items") for z in z_sources):
            raise ReplayInputError(f"--z-source must list memory and/or items, got {args.z_source!r}")
        names = [x.strip() for x in args.settings.split(",") if x.strip()]
        unknown = [n for n in names if n not in PRESETS]
        if unknown:
            raise ReplayInputError(f"unknown setting(s) {unknown}; known: {', '.join(PRESETS)}")
        settings = {n: PRESETS[n] for n in names}
        custom = custom_setting(args)
        if custom is not None:
            settings["custom"] = custom
        from janus_memory.bench.replay import setting_config

        for ov in settings.values():
            setting_config(ov, 0)  # validate every setting before encoding anything
        cache = Path(args.cache_dir).expanduser() if args.cache_dir else Path.home() / ".cache/janus-memory/embeddings"
        encoders = {e.strip(): get_encoder(e.strip(), cache_dir=cache) for e in args.encoder.split(",") if e.strip()}
    except (ReplayInputError, LoadError, ValueError, ImportError, FileNotFoundError) as e:
        print(printable(f"error: {e}"), file=sys.stderr)
        return 2
    import time

    from janus_memory.bench.replay import FORMATS

    for t in trajs:  # which format each input was read as: a wrong guess shows before any number
        print(f"replay: read {t.name} as {FORMATS[t.format]}: {len(t.steps)} steps", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    rows, records = run_grid(trajs, encoders, settings, warmups, z_sources, progress=lambda text: print(
        f"replay: {text}, {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True))  # stderr: tables stay clean
    pool = pooled(rows)
    print("pooled over trajectories (rate = fired / (steps - 1) per trajectory, summed):")
    print(fmt_table(pool))
    print("\nper trajectory:")
    print(fmt_table(rows))
    if args.out:
        _write(Path(args.out), rows, pool, records, trajs, list(encoders), warmups)
    return 0


def _write(out: Path, rows, pool, records, trajs, encoders, warmups) -> None:
    from janus_memory.bench.replay_plot import plot_timeline

    out.mkdir(parents=True, exist_ok=True)
    from janus_memory.bench.replay import FORMATS

    recs = [{"trajectory": k[0], "encoder": k[1], "z_source": k[2], "setting": k[3], "warmup": k[4], "steps": v}
            for k, v in records.items()]
    inputs = [{"trajectory": t.name, "format": t.format, "steps": len(t.steps)} for t in trajs]
    (out / "replay.json").write_text(json.dumps({"inputs": inputs, "pooled": pool, "rows": rows, "records": recs},
                                                indent=1))
    read = "\n".join(f"- {t.name}: {FORMATS[t.format]}, {len(t.steps)} steps" for t in trajs)
    (out / "replay.md").write_text("# janus replay\n\n## Inputs\n\n" + read + "\n\n## Pooled\n\n" + fmt_table(pool)
                                   + "\n\n## Per trajectory\n\n" + fmt_table(rows) + "\n")
    wu = min(warmups)
    for t in trajs:
        path = plot_timeline(out / f"timeline_{t.name.replace('/', '_')}.png", t.name, records, encoders, wu)
        if path:
            print(f"plot: {path}")
    print(f"written: {out / 'replay.json'}, {out / 'replay.md'}")
