"""The report's input: one MethodRun per (run folder, method), read through RunReader (store/reader.py).

A row label is the method name plus the cell's setting suffix, e.g. ``dc_rs+janus[trigger=random]``: the suffix comes
from ``cell.json`` (written by grid/sweep) or, failing that, from the folder name ``<cell>/seed<k>``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import RunFolderError
from ..store.finder import find_run_dirs  # noqa: F401  (find_run_dirs re-exported)
from ..store.reader import RunReader
from .variants import resolved_janus  # noqa: F401  (re-exported)


@dataclass
class MethodRun:
    """One method of one run folder, with everything the tables need."""

    run_dir: Path
    dataset: str
    updater: str
    method: str
    label: str
    suffix_keys: dict
    seed: int
    janus: bool
    janus_cfg: dict
    summary: dict
    extra: dict = field(default_factory=dict)
    stream_order: bool = False  # a stream-order study run (config stream_order_seed set): only in the Fig. 5 table
    setup: dict = field(default_factory=dict)  # backend, model, encoder, preset, requested sizes (run_setup)
    ident: dict = field(default_factory=dict)  # every setting that makes this run what it is, seed excepted (variants.py)
    cell_label: str = ""  # the label without the tag that tells apart rows sharing it (variants.assign_tags)
    tag: str = ""  # "tau=0.2", "a", "setup 1": what tells this row from others with its cell_label ("" if none)
    settings: str = ""  # a "setup N" tag's settings, spelled out

    def __post_init__(self):
        self.cell_label = self.cell_label or self.label

    @property
    def base_ident(self) -> str:
        """What this run shares with its base (or +Janus) partner: the identity without Janus-only settings."""
        from .variants import base_identity

        return base_identity(self.ident)

    @property
    def test_accuracy(self) -> float | None:
        return self.summary.get("test_accuracy")

    @property
    def checker(self) -> str:
        """The answer checker of the run: "paper" (its test_accuracy is the authors' checker's) or "strict"."""
        return self.summary.get("checker") or "strict"

    @property
    def test_accuracy_strict(self) -> float | None:
        """Our strict checker's test accuracy on the same answers (a paper-checker run records it beside)."""
        return self.summary.get("test_accuracy_strict") if self.checker == "paper" else self.test_accuracy

    @property
    def controller(self):
        """The stored controller, described (controller/describe.py): preset label, trigger, evaluation set, rule."""
        if "controller" not in self.extra:
            from ..controller.describe import describe

            try:
                self.extra["controller"] = describe(self.janus_cfg)
            except (ValueError, TypeError) as e:  # an edited config.json: say which folder, not a traceback
                raise RunFolderError(f"{self.run_dir}/config.json: the stored janus settings are not valid ({e})"
                                     ) from None
        return self.extra["controller"]

    @property
    def eval_set_size(self) -> int:
        """|E| as configured, as the run's evaluation-set strategy says it (controller/evalset): the paper's coverage +
        boundary + fresh sizes of the roles in use (docs/research-notes.md §8.6: K + K_F) capped by replay_limit, the
        panel's size, ..."""
        return self.controller.configured

    @property
    def eval_set(self):
        """The run's evaluation-set strategy (controller/evalset), built from the stored settings: it names the role
        of each task a logged comparison read."""
        if "eval_set" not in self.extra:
            from ..controller.describe import stored_config
            from ..controller.strategy import eval_set_for

            self.controller  # noqa: B018  (a stored config that is not valid: the folder's one-line error)
            self.extra["eval_set"] = eval_set_for(stored_config(self.janus_cfg))
        return self.extra["eval_set"]

    @property
    def paid(self) -> dict | None:
        """What the run paid for this method (its stored per-role usage): ``calls``/``tokens`` (backend calls made,
        prompt + completion tokens), ``cache_hits`` (replies the response cache served: not paid), ``retries`` (attempts
        repeated after a transient failure: a dropped connection, 429, 5xx, a timeout), and the same for
        the Janus evaluation role alone (``janus_calls``, ``janus_tokens``, ``janus_hits``). None when the run stored
        no usage."""
        usage = self.summary.get("usage")
        if not isinstance(usage, dict) or not usage:
            return None
        roles = {k: v for k, v in usage.items() if isinstance(v, dict)}
        j = roles.get("janus") or {}
        tok = lambda u: (u.get("prompt_tokens") or 0) + (u.get("completion_tokens") or 0)  # noqa: E731
        return {"calls": sum(u.get("calls") or 0 for u in roles.values()),
                "tokens": sum(tok(u) for u in roles.values()),
                "cache_hits": sum(u.get("cache_hits") or 0 for u in roles.values()),
                "retries": sum(u.get("retries") or 0 for u in roles.values()),
                "janus_calls": j.get("calls") or 0, "janus_tokens": tok(j), "janus_hits": j.get("cache_hits") or 0}


def parse_suffix(suffix: str) -> dict:
    """"[trigger=random,tau=0.2]" -> {"trigger": "random", "tau": "0.2"} (values stay strings)."""
    s = suffix.strip()
    if not s:
        return {}
    if not (s.startswith("[") and s.endswith("]")):
        return {"cell": s}
    out = {}
    for part in s[1:-1].split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
        elif part.strip():
            out[part.strip()] = ""
    return out


def _cell_suffix(run_dir: Path, methods: list[str]) -> str:
    cell = RunReader(run_dir).json_file("cell.json")
    if isinstance(cell, dict) and isinstance(cell.get("suffix"), str):
        return cell["suffix"]
    if re.fullmatch(r"seed\d+", run_dir.name):
        name = run_dir.parent.name
        if "[" in name and name.endswith("]"):
            return name[name.index("["):]
    return ""


def stored_janus(cfg: dict) -> dict | None:
    """config.json's ``janus`` section as the run ran it: a run stored before a switch existed ran with that switch
    off (settings/migrate.py spells it out, as a resume does); an edited config that cannot be migrated: as stored."""
    from ..settings.migrate import migrate_stored

    try:
        janus = migrate_stored(dict(cfg)).get("janus")
    except (ValueError, TypeError, AttributeError):
        janus = cfg.get("janus")
    return janus if isinstance(janus, dict) else None


def mixed_models(summary) -> str | None:
    """The warning for a run whose responses came from more than one model, by the run's ``answered_by`` (the model
    each response came from as the server reported it, with its count live and from the response cache), or None.
    A malformed record names no model (it is not guessed)."""
    from ..errors import printable

    by = summary.get("answered_by") if isinstance(summary, dict) else None
    if not isinstance(by, dict):
        return None
    counts = []
    for model, c in by.items():
        c = c if isinstance(c, dict) else {}
        live, cached = (v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0
                        for v in (c.get("live"), c.get("cached")))
        if live + cached:
            counts.append((str(model), live, cached))
    if len(counts) < 2:
        return None
    counts.sort(key=lambda x: (-(x[1] + x[2]), x[0]))
    parts = [f"{printable(m, one_line=True)!r} answered {live + cached} ({live} live, {cached} from the response "
             "cache)" for m, live, cached in counts]
    return (f"its responses came from {len(counts)} models: {', '.join(parts)}; its numbers mix models (for one "
            "model's results run it again with --no-cache or another --cache-dir)")


def run_setup(cfg: dict, summary: dict) -> dict:
    """What a run measured with: backend, model, encoder, preset and the requested split sizes (None = whole split)."""
    ident = str((summary.get("backend") or {}).get("identity") or "")
    llm = cfg["llm"] if isinstance(cfg.get("llm"), dict) else cfg  # runs written before the llm section: flat keys
    backend = llm.get("backend") or (ident.split(":", 1)[0] if ident else "?")
    model = llm.get("model") or (Path(llm["model_path"]).name if llm.get("model_path") else "")
    if not model and backend == "local" and ident.count(":") >= 1:
        model = ident.split(":")[1]  # local:<gguf file>:<size>:<fingerprint>
    return {"backend": backend, "model": model or ("scripted" if backend == "fake" else "?"),
            "encoder": cfg.get("encoder") or "?", "preset": cfg.get("preset") or "-",
            "stream_size": cfg.get("stream_size"), "test_size": cfg.get("test_size")}


def load_method_runs(run_dirs: list[str | Path]) -> list[MethodRun]:
    """One MethodRun per (run folder, method) of the finished run folders at or below ``run_dirs`` (unfinished ones are
    left out: reader.scan_run_dirs). Raises ValueError on unreadable folders."""
    return load_runs(find_run_dirs(run_dirs))


def load_runs(folders: list[Path]) -> list[MethodRun]:
    """One MethodRun per (run folder, method) of these finished run folders."""
    from .variants import identity

    rows = []
    for d in folders:
        reader = RunReader(d)
        summary, cfg = reader.summary(), reader.config()
        if not isinstance(summary, dict) or not isinstance(summary.get("methods"), dict):
            raise RunFolderError(f"{d}/summary.json has no 'methods' mapping; is it a janus run folder?")
        suffix = _cell_suffix(d, list(summary["methods"]))
        stream_order = cfg.get("stream_order_seed") is not None
        seed = cfg["stream_order_seed"] if stream_order else cfg.get("seed", 0)
        cell = reader.json_file("cell.json")
        matched = isinstance(cell, dict) and bool(cell.get("matched"))
        splits = reader.json_file("splits.json")
        dataset = summary.get("dataset") or cfg.get("dataset", "?")
        for method, ms in summary["methods"].items():
            is_janus = bool(ms.get("janus", method.endswith("+janus")))
            updater = summary.get("updater") or cfg.get("updater", method.split("+")[0])
            ident = identity(cfg, splits, janus=is_janus, stream_order=stream_order, matched=matched)
            rows.append(MethodRun(
                run_dir=d, dataset=dataset, updater=updater,
                method=method, label=method + suffix, suffix_keys=parse_suffix(suffix), seed=int(seed or 0),
                janus=is_janus, janus_cfg=resolved_janus(stored_janus(cfg)), summary=ms, stream_order=stream_order,
                setup=run_setup(cfg, summary),
                ident={**ident, "dataset": dataset, "updater": updater}))
    return rows


def _decision_totals(r: MethodRun) -> dict:
    """Read the method's decision log once: evaluator calls (when logged), the evaluation-set size at each trigger and
    the tasks each comparison read under both memories."""
    if "evaluated" not in r.extra:
        total, seen, sizes, reads = 0, False, [], []
        for line in RunReader(r.run_dir).jsonl(f"{r.method}/decisions.jsonl"):
            d = line.get("decision") or {}
            if d.get("evaluator_calls") is not None:
                seen = True
                total += d["evaluator_calls"]
            if d.get("triggered") and isinstance(d.get("n_evaluated"), int):
                reads.append(d["n_evaluated"])
            if d.get("triggered"):
                ids = d.get("eval_ids")
                roles = [d.get(k) for k in ("coverage", "boundary", "fresh")]
                if isinstance(ids, list) and ids:
                    sizes.append(len(ids))
                elif any(isinstance(x, list) and x for x in roles):
                    sizes.append(sum(len(x) for x in roles if isinstance(x, list)))
        r.extra["evaluated"] = total if seen else None
        r.extra["eval_used"] = (sum(sizes), len(sizes)) if sizes else None
        r.extra["reads"] = (sum(reads), len(reads)) if reads else None
    return r.extra


def evaluations(r: MethodRun) -> int | None:
    """The (memory, task) evaluations the controller's decisions used: the sum of the decision log's
    ``evaluator_calls`` (outcomes it reused, or that identical texts shared, are not counted). None when the decision
    log has no evaluator_calls (a run stored before they were logged)."""
    return _decision_totals(r)["evaluated"]


def tasks_read(r: MethodRun) -> tuple[int, int] | None:
    """(sum of the tasks each comparison read under both memories, number of comparisons that logged it); None when
    no comparison logged ``n_evaluated``."""
    return _decision_totals(r)["reads"]


def eval_set_used(r: MethodRun) -> tuple[int, int] | None:
    """(sum of the evaluation-set sizes actually built, number of triggers that logged one): the set at a trigger can
    be smaller than configured (few tasks seen yet, few flips for the boundary role, a short fresh window). None when
    no trigger logged its set."""
    return _decision_totals(r)["eval_used"]
