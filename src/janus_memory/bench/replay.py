"""Trajectory replay: run recorded memory trajectories through the real trigger code.

A trajectory is a list of steps ``(step, task text, memory before, memory after)``. Inputs (``load_trajectories``):

* a JSONL file with ``step``, ``memory_before``, ``memory_after`` (optional ``question``/``task``, ``task_id``,
  ``destructive``: a label that replaces the rule below);
* a Dynamic Cheatsheet per-step log as in ``dc-trajectories`` (shipped in the package, tasks/shipped; the name alone
  finds it: ``janus replay dc-trajectories``) (``previous_cheatsheet``/``new_cheatsheet``);
* Dynamic Cheatsheet's own published result file as it is (``results/<TASK>/<model>_<approach>.jsonl`` of
  suzgunmirac/dynamic-cheatsheet: one record per task with ``input``, ``raw_input``, ``steps``, ``final_answer``,
  ``final_cheatsheet`` ...): the memory after record i is its ``final_cheatsheet``, the memory before it record
  i-1's (``(empty)``, DC's initial cheatsheet, for the first); the task text is ``raw_input`` (else ``input``);
* a folder of such JSONL files (one trajectory per file, sorted by name; each may be .xz or .gz compressed);
* a run folder of ours (``run.sqlite``): one trajectory per method, each step's recorded old memory and candidate
  (the task text is its id: questions are not stored in the run folder).

Replay is open-loop: every recorded candidate is treated as deployed (the controller's evaluator always answers
"both memories solve every task", so it accepts), so each step sees exactly the recorded (before, after) pair.
What a setting would have compared is measured; what the updater would have proposed after a rollback cannot be.

Destructive steps (``mark_destructive``; documented in docs/bench.md, "Destructive-step rule"):

* ``dump``: the first non-empty line of the new memory matches ``DUMP_PATTERN`` (Dynamic Cheatsheet's block of
  retrieved previous solutions carried forward in place of the cheatsheet);
* ``wipe``: the old memory is not itself a dump, has at least ``WIPE_MIN_ITEMS`` items (non-empty lines), and the
  new memory has fewer than half as many items and keeps fewer than half of the old items verbatim.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from janus_memory.controller import Janus, JanusConfig, StepInput
from janus_memory.controller.changes import change_stats, changed_items_texts, memory_items
from janus_memory.tasks.data import DataFileError, read_data_bytes

DUMP_PATTERN = re.compile(r"^#+\s*PREVIOUS SOLUTIONS", re.IGNORECASE)
WIPE_MIN_ITEMS = 10
WIPE_FRACTION = 0.5
KINDS = ("dump", "wipe")


class ReplayInputError(ValueError):
    """A trajectory file or folder that cannot be read (message names the file and the problem)."""


@dataclass
class ReplayStep:
    step: int
    task_id: str
    task_text: str
    before: str
    after: str
    label: str | None = None  # "dump"/"wipe"/"" from the input; None = use the rule

    @property
    def destructive(self) -> str:
        """"dump", "wipe" or "" (not destructive)."""
        return self.label if self.label is not None else mark_destructive(self.before, self.after)


@dataclass
class Trajectory:
    name: str
    steps: list[ReplayStep] = field(default_factory=list)
    format: str = "janus"  # a key of FORMATS: which input format it was read from


# the formats a trajectory is read from (detected per file from its first record), as `janus replay` names them
FORMATS = {
    "janus": "janus trajectory (memory_before/memory_after per step)",
    "dc-steps": "Dynamic Cheatsheet per-step log (previous_cheatsheet/new_cheatsheet per step)",
    "dc-results": "Dynamic Cheatsheet result file (final_cheatsheet per task; the memory before a task is the previous "
                  "task's)",
    "run": "janus run folder (each step's stored old memory and candidate)",
}
DC_INITIAL = "(empty)"  # Dynamic Cheatsheet's initial cheatsheet


# ----------------------------------------------------------------------------- destructive rule


def is_dump(text: str) -> bool:
    items = memory_items(text)
    return bool(items) and bool(DUMP_PATTERN.match(text.strip()))


def mark_destructive(before: str, after: str) -> str:
    """"dump", "wipe" or "" by the documented rule (module docstring)."""
    if is_dump(after):
        return "dump"
    if is_dump(before):
        return ""
    ch = change_stats(before, after)
    if (ch.old_items >= WIPE_MIN_ITEMS and ch.new_items < WIPE_FRACTION * ch.old_items
            and ch.line_survival < WIPE_FRACTION):
        return "wipe"
    return ""


# ----------------------------------------------------------------------------- loading


def _label(v, where: str) -> str | None:
    if v is None:
        return None
    if v is True:
        return "dump"
    if v is False or v == "":
        return ""
    if v in KINDS:
        return v
    raise ReplayInputError(f"{where}: 'destructive' must be true/false/\"dump\"/\"wipe\", got {v!r}")


def detect_format(row, where: str) -> str:
    """The format of a trajectory file, from its first record (a key of FORMATS)."""
    if not isinstance(row, dict):
        raise ReplayInputError(f"{where}: expected a JSON object")
    if "final_cheatsheet" in row:
        return "dc-results"
    if "previous_cheatsheet" in row or "new_cheatsheet" in row:
        return "dc-steps"
    if "memory_before" in row or "memory_after" in row:
        return "janus"
    keys = ", ".join(sorted(map(str, row))[:8]) or "none"
    raise ReplayInputError(f"{where}: not a trajectory record: needs memory_before/memory_after, previous_cheatsheet/"
                           f"new_cheatsheet, or Dynamic Cheatsheet's final_cheatsheet (keys: {keys})")


def _row_to_step(row, where: str, index: int, fmt: str = "janus") -> ReplayStep:
    if not isinstance(row, dict):
        raise ReplayInputError(f"{where}: expected a JSON object")
    if fmt == "dc-steps":
        before, after = row.get("previous_cheatsheet"), row.get("new_cheatsheet")
        if not isinstance(before, str) or not isinstance(after, str):
            raise ReplayInputError(f"{where}: a {FORMATS[fmt]} record needs string fields previous_cheatsheet and "
                                   "new_cheatsheet")
    else:
        before, after = row.get("memory_before"), row.get("memory_after")
        if not isinstance(before, str) or not isinstance(after, str):
            raise ReplayInputError(f"{where}: a {FORMATS[fmt]} record needs string fields memory_before/memory_after")
    step = row.get("step", index)
    if isinstance(step, bool) or not isinstance(step, int):
        raise ReplayInputError(f"{where}: 'step' must be an integer, got {step!r}")
    task = row.get("question", row.get("task", ""))
    task = task if isinstance(task, str) else json.dumps(task, sort_keys=True)
    tid = str(row.get("task_id", f"step{step}"))
    return ReplayStep(step, tid, task or tid, before, after, _label(row.get("destructive"), where))


def _dc_result_step(row, where: str, index: int, before: str) -> ReplayStep:
    """Record ``index`` (1-based) of a Dynamic Cheatsheet result file, whose memory before it is ``before``."""
    if not isinstance(row, dict):
        raise ReplayInputError(f"{where}: expected a JSON object")
    if "final_cheatsheet" not in row:
        raise ReplayInputError(f"{where}: no final_cheatsheet; the file's first record is a {FORMATS['dc-results']} "
                               "record, this one is not (a mixed or damaged file?)")
    after = row["final_cheatsheet"]
    if after is None:
        raise ReplayInputError(f"{where}: final_cheatsheet is null: this approach keeps no cheatsheet (Dynamic "
                               "Cheatsheet's default or Dynamic_Retrieval runs); there is no memory to replay")
    if not isinstance(after, str):
        raise ReplayInputError(f"{where}: final_cheatsheet must be a string, got {type(after).__name__}")
    if "steps" in row and not isinstance(row["steps"], list):
        raise ReplayInputError(f"{where}: 'steps' must be a list of rounds, got {type(row['steps']).__name__}")
    task = next((row[k] for k in ("raw_input", "input", "input_txt") if isinstance(row.get(k), str) and row[k]), "")
    tid = f"step{index}"
    return ReplayStep(index, tid, task or tid, before, after)


def _records(path: Path) -> list[tuple[int, object]]:
    """(line number, parsed JSON) of every non-empty line; ReplayInputError naming the line that does not parse."""
    try:
        # utf-8-sig: a byte-order mark is no JSON error; not splitlines: U+2028 may sit inside a JSON string;
        # read_data_bytes: .xz/.gz unpacked, and a file its SOURCE.md lists checked against its sha256
        lines = read_data_bytes(path).decode("utf-8-sig").split("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise ReplayInputError(f"{path}: cannot read ({e})") from None
    except DataFileError as e:
        raise ReplayInputError(str(e)) from None
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ReplayInputError(f"{path}:{n}: invalid JSON ({e.msg}); truncated file?") from None
        try:  # a JSON escape such as \ud800 decodes to a lone surrogate, which no text can hold
            json.dumps(row, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ReplayInputError(f"{path}:{n}: a string holds a lone surrogate (a \\ud800-\\udfff escape without its "
                                   "pair): not text") from None
        out.append((n, row))
    return out


def load_jsonl(path: Path) -> Trajectory:
    """One trajectory from a JSONL file of any of the line formats (FORMATS, detected from the first record)."""
    records = _records(path)
    if not records:
        raise ReplayInputError(f"{path}: no steps")
    fmt = detect_format(records[0][1], f"{path}:{records[0][0]}")
    steps: list[ReplayStep] = []
    for n, row in records:
        if fmt == "dc-results":
            steps.append(_dc_result_step(row, f"{path}:{n}", len(steps) + 1,
                                         steps[-1].after if steps else DC_INITIAL))
        else:
            steps.append(_row_to_step(row, f"{path}:{n}", len(steps) + 1, fmt))
    order = [s.step for s in steps]
    if order != sorted(order) or len(set(order)) != len(order):
        raise ReplayInputError(f"{path}: steps must be strictly increasing")
    return Trajectory(_jsonl_name(path), steps, fmt)


def load_run_folder(root: Path) -> list[Trajectory]:
    """One trajectory per method of a run folder: (old memory, candidate) of every committed step."""
    from janus_memory.errors import RunFolderError
    from janus_memory.store.reader import RunReader

    db = root / "run.sqlite"
    reader = RunReader(root)
    try:  # texts read back and checked by the run folder's reader (store format 3: stored once, as deltas)
        texts = {r["sha256"]: r["text"] for r in reader.texts("memories")}
        cands = reader.texts("candidates")
        tids = {(m, s): json.loads(r).get("task_id") for m, s, r in reader._query("SELECT method, step, record FROM steps")}
    except RunFolderError as e:  # not a readable database, or a text that does not read back (damaged)
        raise ReplayInputError(str(e).splitlines()[0]) from None
    for c in cands:
        texts.setdefault(c["sha256"], c["text"])
    out: dict[str, Trajectory] = {}
    for method, step, parent, text in ((c["method"], c["step"], c["parent"], c["text"]) for c in cands):
        if parent not in texts:
            raise ReplayInputError(f"{db}: {method} step {step}: old memory {str(parent)[:12]} not stored")
        tid = str(tids.get((method, step)) or f"step{step}")
        out.setdefault(method, Trajectory(f"{root.name}/{method}", format="run")).steps.append(
            ReplayStep(step, tid, tid, texts[parent], text))
    if not out:
        raise ReplayInputError(f"{root}: the run folder holds no recorded candidates")
    return list(out.values())


_JSONL = (".jsonl", ".jsonl.xz", ".jsonl.gz")


def _jsonl_name(path: Path) -> str:
    """The trajectory name of a file: its name without ``.jsonl`` (and ``.xz`` / ``.gz``)."""
    for suffix in (".xz", ".gz", ".jsonl"):
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            path = path.with_name(path.name[:-len(suffix)])
    return path.name


def _in_data_folder(p: Path) -> Path | None:
    """A relative path that does not exist here, found in the data folder instead (``dc-trajectories``: the Dynamic
    Cheatsheet trajectories, from JANUS_DATA_DIR or the copy shipped in the package), plain or compressed."""
    from janus_memory.tasks.data import COMPRESSED_SUFFIXES, resolve_data_dir

    if p.is_absolute() or ".." in p.parts:
        return None
    try:
        root = resolve_data_dir(None)
    except FileNotFoundError:
        return None
    for cand in [root / p] + [root / p.parent / (p.name + s) for s in COMPRESSED_SUFFIXES]:
        if cand.exists():
            return cand
    return None


def load_trajectories(path: str | Path) -> list[Trajectory]:
    """Trajectories from a JSONL file (plain, .xz or .gz), a folder of them, or a run folder (see module
    docstring). A relative path that does not exist is looked up in the data folder (``dc-trajectories``)."""
    p = Path(path).expanduser()
    if not p.exists():
        p = _in_data_folder(p) or p
    if p.is_file():
        return [load_jsonl(p)]
    if p.is_dir():
        if (p / "run.sqlite").is_file():
            return load_run_folder(p)
        files = sorted(f for f in p.iterdir() if f.is_file() and f.name.endswith(_JSONL))
        if not files:
            raise ReplayInputError(f"{p}: no *.jsonl files and no run.sqlite")
        return [load_jsonl(f) for f in files]
    raise ReplayInputError(f"{p}: no such file or folder")


# ----------------------------------------------------------------------------- replay


@dataclass
class Embedded:
    """Per-step embeddings of one trajectory under one encoder and z source."""

    task: np.ndarray
    before: np.ndarray
    after: np.ndarray


def embed_trajectory(traj: Trajectory, encoder, z_source: str = "memory") -> Embedded:
    """``z_source="memory"``: phi(before), phi(after) (the paper). ``"items"``: phi(removed items),
    phi(added items), so ``z`` is built from the changed items only."""
    if z_source not in ("memory", "items"):
        raise ValueError(f"z_source must be 'memory' or 'items', got {z_source!r}")
    if z_source == "memory":
        pairs = [(s.before, s.after) for s in traj.steps]
    else:
        pairs = [changed_items_texts(s.before, s.after) for s in traj.steps]
    flat = [t for pair in pairs for t in pair]
    mem = np.asarray(encoder.encode(flat), dtype=np.float64)
    task = np.asarray(encoder.encode([s.task_text for s in traj.steps]), dtype=np.float64)
    return Embedded(task, mem[0::2], mem[1::2])


def _accept_all(memory: str, tasks: list) -> list[bool]:
    return [True] * len(tasks)


def replay_setting(traj: Trajectory, emb: Embedded, cfg: JanusConfig) -> list[dict]:
    """Drive a fresh controller over the trajectory; one record per step."""
    janus = Janus(cfg, _accept_all)
    out = []
    for i, s in enumerate(traj.steps):
        d = janus.decide(StepInput({"id": f"{i}:{s.task_id}"}, emb.task[i], s.before, s.after,
                                   emb.before[i], emb.after[i]))
        sig = d.trigger_signals
        out.append({"step": s.step, "phase": d.phase, "cosine": d.cosine, "z_norm": d.z_norm,
                    "fired": d.triggered, "fired_by": sig.get("fired_by", cfg.trigger.kind if d.triggered else ""),
                    "threshold": sig.get("threshold", cfg.trigger.tau if d.phase == "stream" else None),
                    "retention": sig.get("retention"), "destructive": s.destructive,
                    "evaluator_calls": d.evaluator_calls_full, "gated": sig.get("forced_by") == "gate"})
    return out


def summarise(records: list[dict]) -> dict:
    """Trigger rate over steps 2..T (step 1 has no previous update, so no momentum; it counts too when the setting
    fired there, as ``trigger="always"`` does) and recall per kind; ``<kind>_gated``: marked steps whose comparison
    the text gate forced (``gate_full_compare``: a full paper-rule comparison; ``gate_compare``: one by the configured
    rule)."""
    n = len(records)
    fired = sum(r["fired"] for r in records)
    eligible = max(1, n - 1 + (1 if records and records[0]["fired"] else 0))  # step 1 counts when fired there
    row = {"steps": n, "eligible": eligible, "fired": fired, "rate": fired / eligible,
           "evaluator_calls": sum(r["evaluator_calls"] for r in records if r["fired"])}
    for kind in KINDS + ("any",):
        marked = [r for r in records if (r["destructive"] if kind == "any" else r["destructive"] == kind)]
        row[f"{kind}_total"] = len(marked)
        row[f"{kind}_caught"] = sum(r["fired"] for r in marked)
        row[f"{kind}_in_warmup"] = sum(r["phase"] == "warmup" for r in marked)
        row[f"{kind}_gated"] = sum(r["fired"] and r.get("gated", False) for r in marked)
    return row


# ----------------------------------------------------------------------------- grid

# Named trigger settings (JanusConfig overrides); warm-up is a separate axis of the grid.
PRESETS: dict[str, dict] = {
    "mmt": {"trigger": "mmt"},
    "mmt-magnitude": {"trigger": "selective", "retention_min": 0.0, "shrink_max": 0.0, "magnitude_ratio": 1.5,
                      "arm_warmup": False},
    "mmt-quantile": {"trigger": "selective", "retention_min": 0.0, "shrink_max": 0.0, "magnitude_ratio": 0.0,
                     "tau_quantile": 0.2, "arm_warmup": False},
    "items": {"trigger": "selective", "use_mmt": False, "retention_min": 0.25, "shrink_max": 0.5,
              "magnitude_ratio": 0.0, "arm_warmup": True},
    "selective": {"trigger": "selective"},
    # JanusConfig.recommended(): compares at every step, a full comparison on the item gate's steps
    "recommended": {"recommended": True},
}
DEFAULT_PRESETS = ("mmt", "mmt-magnitude", "mmt-quantile", "items", "selective", "recommended")


def setting_config(overrides: dict, warmup: int) -> JanusConfig:
    """The controller config of one grid cell (incremental clustering: the evaluation set does not affect the
    trigger in an open-loop replay, and it keeps the replay fast)."""
    overrides = dict(overrides)
    if overrides.pop("recommended", False):  # the preset itself (its clustering included), at this warm-up
        return JanusConfig.recommended(**{**overrides, "warmup": warmup})
    return JanusConfig(**{"clustering": "incremental", **overrides, "warmup": warmup})


def run_grid(trajs: list[Trajectory], encoders: dict, settings: dict[str, dict], warmups: list[int],
             z_sources: tuple[str, ...] = ("memory",), progress=None) -> tuple[list[dict], dict]:
    """Replay every trajectory under every (encoder, z source, setting, warm-up).

    Args:
        encoders: label -> encoder object (``encode(list[str])``). settings: label -> JanusConfig overrides.
        progress: ``progress(text)`` after each trajectory is embedded (the slow part), so a long replay is never
            silent.
    Returns:
        (rows, records): one summary row per cell; records[(traj, encoder, z_source, setting, warmup)] = steps.
    """
    rows, records = [], {}
    for enc_name, enc in encoders.items():
        for zs in z_sources:
            embs = []
            for i, t in enumerate(trajs, 1):
                embs.append(embed_trajectory(t, enc, zs))
                if progress is not None:
                    progress(f"embedded {t.name} ({i}/{len(trajs)}, encoder {enc_name}, z {zs})")
            for s_name, ov in settings.items():
                for wu in warmups:
                    cfg = setting_config(ov, wu)
                    for t, em in zip(trajs, embs):
                        rec = replay_setting(t, em, cfg)
                        records[(t.name, enc_name, zs, s_name, wu)] = rec
                        rows.append({"trajectory": t.name, "encoder": enc_name, "z_source": zs, "setting": s_name,
                                     "warmup": wu, **summarise(rec)})
    return rows, records


def pooled(rows: list[dict]) -> list[dict]:
    """Rows summed over trajectories per (encoder, z source, setting, warm-up)."""
    keys = ("encoder", "z_source", "setting", "warmup")
    out: dict[tuple, dict] = {}
    for r in rows:
        k = tuple(r[x] for x in keys)
        acc = out.setdefault(k, {**{x: r[x] for x in keys}, "trajectory": "all", "steps": 0, "eligible": 0,
                                 "fired": 0, "evaluator_calls": 0})
        acc["steps"] += r["steps"]
        acc["eligible"] += r["eligible"]
        acc["fired"] += r["fired"]
        acc["evaluator_calls"] += r["evaluator_calls"]
        for kind in KINDS + ("any",):
            for f in ("total", "caught", "in_warmup", "gated"):
                acc[f"{kind}_{f}"] = acc.get(f"{kind}_{f}", 0) + r[f"{kind}_{f}"]
    res = []
    for acc in out.values():
        acc["rate"] = acc["fired"] / acc["eligible"]
        res.append(acc)
    return res
