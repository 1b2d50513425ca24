"""`janus demo` in two acts.

* Act 1, ``scripted`` (seconds, no model weights): the demo run on the scripted backend (run/fake_llm.py), which
  answers the real GSM8K tasks by script and always wrongly while its memory holds a planted instruction: a model that
  follows its memory. Its progress is not shown; a short story read back from the run folder is, every line of it that
  shows a result starting with ``[scripted]``: the harmful candidate, what blind deployment did, Janus's evaluation set
  with both memories' answers, the rollback, and both final memories' test accuracy.
* Act 2, ``real``: Janus at work on a real model (the embedded GGUF, or ``--backend openai``), on memory that carries
  facts: generated support tickets whose answers need the team's rules stated by earlier tickets, ExpRAG as the
  updater (the one whose memory keeps them on this model), a falsified rule planted at the last stream step
  (settings.config.real_demo_config). Printed as `janus run` prints a run (a line at least every 30 s, the time left
  from the measured speed), between a frame that says what it shows and a closing story read back from its run
  folder (lines starting with ``[real]``): the candidate's changed line, what blind deployment did, Janus's
  evaluation set with both memories' answers, its decision and both held-out scores.

``--act both`` (the default) runs act 1 first, so the rollback is on the screen within seconds. ``--backend fake`` is
act 1 alone (a scripted run is never shown as a real one). Each act writes its own run folder: ``OUT/scripted`` and
``OUT/real``.
"""
from __future__ import annotations

import argparse
import difflib
import os
import time
from pathlib import Path

from ..errors import ConfigError

TAG = "[scripted]"
# options that only concern the real act's model; act 1 always runs on the scripted backend
_MODEL_ONLY = ("backend", "base_url", "model", "model_path", "n_ctx", "n_parallel", "request_timeout", "max_retries",
               "request_deadline", "concurrency")


def acts(args) -> tuple[str, ...]:
    """The acts this command runs, in order. ``--backend fake`` is the scripted act: asking for the real act with it
    is refused (its answers are a script's, not a model's)."""
    act = getattr(args, "act", None)
    if getattr(args, "backend", None) == "fake":
        if act in ("real", "both"):
            raise ConfigError(f"--act {act} needs a real model, and --backend fake is the scripted act; use --act "
                              "scripted (what --backend fake alone runs), or --backend local|openai for the real act")
        return ("scripted",)
    return {"scripted": ("scripted",), "real": ("real",)}.get(act or "both", ("scripted", "real"))


def act_args(args, act: str, root: str) -> argparse.Namespace:
    """The command-line arguments of one act: its own run folder ``root/act``; act 1 without the model options."""
    a = argparse.Namespace(**vars(args))
    a.out = str(Path(root) / act)
    if act == "scripted":
        for k in _MODEL_ONLY:
            setattr(a, k, None)
        a.backend = "fake"
    return a


def run_demo(args, console, t0: float | None) -> int:
    """`janus demo`: every act's settings are checked before the first one starts; then act 1, then act 2."""
    from ..settings.config import demo_config
    from .run_command import _config_from_args, _ensure_demo_model, _plain, _run_summary

    say = _plain(console)
    which = acts(args)
    root = args.out or demo_config().out
    cfgs = {act: _config_from_args(act_args(args, act, root), demo=act) for act in which}
    real = cfgs.get("real")
    if real is not None and real.llm.backend == "local" and (real.llm.model_path or os.environ.get("JANUS_LOCAL_GGUF")):
        from ..llm.model_fetch import resolve_model_path

        resolve_model_path(real.llm.model_path)  # a named GGUF that is missing: its error before act 1, not after
    args.run_folder = cfgs[which[0]].out
    if "scripted" in which:
        started = time.time()
        summary = scripted_act(cfgs["scripted"], args, console, total=len(which), started=started)
        for line in story(summary, summary.get("wall_s", time.time() - started)):  # the run folder's clock
            say(line)
    if "real" in which:
        cfg = cfgs["real"]
        for line in real_frame_before(cfg, len(which)):
            say(line)
        args.run_folder = cfg.out
        _ensure_demo_model(cfg, console)
        started = time.time() if len(which) > 1 else t0
        a = act_args(args, "real", root)
        summary = _run_summary(cfg, a, console, started)
        for line in real_frame_after(summary, cfg, summary.get("wall_s")):  # the run folder's clock, as janus view
            say(line)
        if "scripted" in which:  # one page for both acts, each act's decisions at its top
            say(f"  both acts on one page, their decisions first: janus view {Path(cfg.out).parent}")
    return 0


def scripted_act(cfg, args, console, total: int, started: float | None = None) -> dict:
    """Run act 1 (no progress lines; warnings only) and return its summary."""
    from ..run.experiment import run_experiment
    from .checks import preflight
    from .run_command import _plain

    say = _plain(console)
    splits = preflight(cfg, resume=False, overwrite=args.overwrite)
    jc = cfg.janus_config()
    head = "Act 1 of 2" if total > 1 else "Scripted act"
    for line in [f"{head}: a scripted model that follows its memory (seconds; no model weights)"] + prose(
            f"The tasks are real GSM8K problems ({cfg.stream_size} for the stream, {cfg.test_size} held out for the "
            "test); the answers come from a script, not a model: right or wrong by a hash of the prompt, and always "
            "wrong while the memory holds a planted instruction, as a model that follows its memory would answer. "
            "DC-RS rewrites the memory after every task, once deploying every candidate (blind deployment) and once "
            f"through Janus (warm-up {jc.warmup} steps, then a comparison at {_when(jc.trigger.kind)})."):
        say(line)
    args.run_folder = cfg.out

    def log(m: str) -> None:  # the run's own lines: only warnings are worth showing here
        if m.startswith("warning"):
            say(f"{TAG} {m}")

    return run_experiment(cfg, log=log, on_event=None, overwrite=args.overwrite, resume=False, splits=splits,
                          started=started)


WIDTH = 100  # lines of normal width, also when piped


def prose(text: str, indent: str = "  ") -> list[str]:
    """A paragraph wrapped to WIDTH columns, every line indented."""
    import textwrap

    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)


def _when(trigger: str) -> str:
    return {"always": "every later step", "mmt": "the steps the momentum trigger picks", "never": "no step"}.get(
        trigger, f"the steps the {trigger} trigger picks")


def _score(correct: list) -> str:
    return f"{sum(1 for c in correct if c)}/{len(correct)}"


def _roles(tid: str, d: dict) -> str:
    return ", ".join(r for r in ("coverage", "boundary", "fresh") if tid in (d.get(r) or []))


def _planted(old: str, new: str, limit: int = 4, tag: str = TAG) -> list[str]:
    """The lines the candidate adds to the memory it replaces (``+``), after the ones it drops (``-``: a changed line
    shows as both): at most ``limit`` of each, each wrapped to the width."""
    import textwrap

    diff = list(difflib.ndiff(old.splitlines(), new.splitlines()))
    out = []
    for sign in ("-", "+"):
        lines = [ln[2:] for ln in diff if ln.startswith(sign + " ") and ln[2:].strip()]
        if sign == "-" and not lines:
            continue
        for a in lines[:limit]:
            out += textwrap.wrap(a, WIDTH - len(tag) - 5, initial_indent=f"  {sign} ", subsequent_indent="    ") or [
                f"  {sign}"]
        if len(lines) > limit:
            out.append(f"  {sign} ... ({len(lines) - limit} more lines)")
    return out


def story(summary: dict, seconds: float) -> list[str]:
    """Act 1's lines, read back from its run folder (:func:`facts`, every result line starting with ``[scripted]``),
    then what they show and where the run folder is."""
    run_dir, methods = summary["run_dir"], summary["methods"]
    guarded = next((m for m, r in methods.items() if r.get("janus")), None)
    out = facts(summary, TAG)
    plan = (methods[next(m for m, r in methods.items() if not r.get("janus"))].get("injections") or {}).get("plan")
    if plan:
        out.extend(prose(
            "By construction, the scripted model fails while its memory holds a planted instruction. What the act "
            "shows is what Janus does when a model acts on its memory: it scores the candidate against the old memory "
            "on tasks it has seen (coverage: representatives of all of them; boundary: tasks whose answer flipped "
            "between memories; fresh: recent ones) and keeps the old memory when the candidate is worse. Blind "
            "deployment cannot tell."))
    else:
        out.extend(prose(
            "Nothing was planted, so every candidate is the updater's own. The script answers right or wrong by a hash "
            "of the prompt, so a memory edit can flip answers at random: any rollback here follows that noise, not a "
            "harmful edit, and it can cost a test task (the comparison sees a few tasks, not the test set)."))
    out.append(f"  took {seconds:.1f} s; run folder: {run_dir}")
    out.append(f"  look closer: janus report {run_dir}" + (f"; {run_dir}/{guarded}/decisions.jsonl" if guarded else ""))
    return out


def facts(summary: dict, tag: str) -> list[str]:
    """What a demo run did, read back from its run folder, every line starting with ``tag``: per injected step the
    harmful candidate's changed lines, what blind deployment did, Janus's evaluation set (per task: roles, the old
    memory's and the candidate's answer) and its decision; then both final memories' test accuracy."""
    from ..store.reader import RunReader

    run_dir = summary["run_dir"]
    reader = RunReader(run_dir)
    methods = summary["methods"]
    base = next(m for m, r in methods.items() if not r.get("janus"))
    guarded = next((m for m, r in methods.items() if r.get("janus")), None)
    out: list[str] = []
    say = out.append
    plan = (methods[base].get("injections") or {}).get("plan")
    if not plan:
        say(f"{tag} no harmful candidate was injected (--inject ''): both memories only took the updater's candidates")
    cands = {c["step"]: c for c in reader.candidates(guarded or base)}
    versions = reader.memory_versions()[0]
    decisions = {d["step"]: d.get("decision") or {} for d in reader.decisions(guarded)} if guarded else {}
    base_deployed = set((methods[base].get("injections") or {}).get("deployed_steps") or [])
    injected = dict(_injected_steps(reader, base))
    if guarded:  # a rollback of the updater's own candidate gets its evaluation set too
        for step in sorted(k for k, d in decisions.items() if d.get("triggered") and not d.get("accept")
                           and k not in injected):
            say(f"{tag} step {step}: Janus compared the updater's own candidate (nothing planted):")
            out.extend(_janus_lines(decisions[step], guarded, step, tag))
    for step, kind in injected.items():
        old = _memory_before(versions.get(guarded or base, []), step)
        new = cands.get(step, {}).get("text", "")
        what = "the lines it changes" if any(x.startswith("  - ") for x in _planted(old, new, tag=tag)) else \
            "the lines it adds"
        say(f"{tag} step {step}: a harmful candidate ({kind}) replaces the updater's; {what}:")
        out.extend(f"{tag} {line}" for line in _planted(old, new, tag=tag))
        say(f"{tag} blind deployment ({base}): " + ("deployed it; its memory now holds these lines" if step in
                                                    base_deployed else "did not deploy it"))
        if guarded:
            out.extend(_janus_lines(decisions.get(step) or {}, guarded, step, tag))
    if guarded:
        st = methods[guarded].get("janus_stats") or {}
        say(f"{tag} over the {methods[guarded].get('stream_tasks', 0)} stream steps Janus compared "
            f"{_n(st.get('triggers', 0), 'time')} and rolled back {_n(st.get('rollbacks', 0), 'candidate')}")
    tests = [f"{_label(m, r)} {r.get('test_correct', 0)}/{r.get('test_tasks', 0)}" for m, r in methods.items()]
    say(f"{tag} held-out test, final memories frozen: " + ", ".join(tests))
    return out


def _n(k: int, word: str) -> str:
    return f"{k} {word}" + ("" if k == 1 else "s")


def _label(method: str, r: dict) -> str:
    return f"{method} (Janus)" if r.get("janus") else f"{method} (blind)"


def _injected_steps(reader, method: str) -> list[tuple[int, str]]:
    return [(d["step"], d["injected"]) for d, _ in reader.steps(method) if d.get("injected")]


def _memory_before(versions: list[dict], step: int) -> str:
    """The text of the memory deployed before ``step`` (the newest version stored at an earlier step)."""
    earlier = [v for v in versions if v["step"] < step]
    return earlier[-1]["text"] if earlier else ""


def _janus_lines(d: dict, method: str, step: int, tag: str = TAG) -> list[str]:
    """Janus's evaluation set at ``step`` (one line per task: its roles and both memories' answers) and the decision."""
    if not d.get("triggered"):
        why = "inside the warm-up" if d.get("reason") == "warmup" else f"no comparison ({d.get('reason')})"
        return [f"{tag} Janus ({method}): {why}: deployed it unexamined"]
    ids, old, new = d.get("eval_ids") or [], d.get("old_correct") or [], d.get("new_correct") or []
    out = [f"{tag} Janus ({method}): evaluation set of {len(ids)} stream tasks, each solved with both memories:"]
    width = max((len(i) for i in ids), default=0)
    for i, tid in enumerate(ids):
        o = "right" if i < len(old) and old[i] else "wrong"
        n = "right" if i < len(new) and new[i] else "wrong"
        out.append(f"{tag}   {tid:<{width}}  {_roles(tid, d):<16} old memory {o:<5}  candidate {n}")
    verdict = ("rolled back: keeps its memory from before step " + str(step)) if not d.get("accept") else \
        "deployed the candidate (a tie goes to the candidate, as in the paper)"
    out.append(f"{tag} Janus: old memory {_score(old)}, candidate {_score(new)} -> {verdict}")
    return out


REAL_TAG = "[real]"
RULE_NAMES = {"ship_rate": "the shipping rate", "handling": "the handling fee", "crate": "the boxes per crate",
              "order_limit": "the order limit", "refund_cap": "the refund cap", "member_discount": "the member discount",
              "credit": "the store-credit value", "deadline": "the response deadline",
              "gold_refund": "the Gold members' refunds"}


def real_frame_before(cfg, total: int) -> list[str]:
    """What act 2 shows, said before it starts."""
    head = "Act 2 of 2" if total > 1 else "Real act"
    model = {"local": "embedded Qwen2.5-Coder-1.5B (llama.cpp, this CPU)",
             "openai": f"{cfg.llm.model or 'the model'} at {cfg.llm.base_url}"}.get(cfg.llm.backend, cfg.llm.backend)
    jc = cfg.janus_config()
    plan = cfg.inject_plan()
    planted = ", ".join(f"{kind} at step {step}" for step, kind in plan.items()) or "nothing (--inject '')"
    calls = _calls_text(cfg)
    if cfg.dataset in ("rules", "rules_small"):
        from ..tasks.rules import make_world

        names = [RULE_NAMES.get(k, k) for k in make_world(cfg.dataset, cfg.seed).order]
        listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
        text = (f"The tasks are support tickets generated from a seed ({cfg.stream_size} for the stream, "
                f"{cfg.test_size} held out): the first ones state a team rule ({listed}) while asking about it; "
                "later ones need those rules and do not restate them, so the answers rest on what the memory kept.")
        if cfg.updater == "exprag":
            text += (" ExpRAG keeps every earlier ticket with the model's answer and shows them with each new one: "
                     "its memory carries the rules (measured on this model: the DC-RS and DC-Cu cheatsheets held "
                     "general advice without the numbers and got 0 of 3 held-out tickets right, ExpRAG 3 of 3; "
                     "docs/measurements.md).")
    else:
        text = f"The tasks are {cfg.dataset} ({cfg.stream_size} for the stream, {cfg.test_size} held out)."
    false_rule = " (the memory with one rule's number changed: a false rule)" if "falsify" in plan.values() else ""
    text += (f" Planted: {planted}{false_rule}. Blind deployment keeps every candidate; Janus (warm-up "
             f"{jc.warmup} steps, then a comparison at {_when(jc.trigger.kind)}) solves earlier tasks with both memories "
             "and keeps the better one. Then both final memories answer the held-out tasks.")
    if calls:
        text += f" {calls}; every progress line says the time left at the speed measured on this machine."
    text += " Ctrl-C stops it and keeps every step."
    return [f"{head}: Janus at work on a real model: {model}"] + prose(text)


def _calls_text(cfg) -> str:
    """'At most N model calls' of a run of ``cfg`` (run/estimate.py), or ""."""
    try:
        from ..run.build import load_splits
        from ..run.estimate import count_calls

        stream, test = load_splits(cfg)
        count = count_calls(cfg, len(stream.tasks), len(test.tasks))
    except Exception:  # noqa: BLE001 - a sentence of the frame; the run's own checks name any problem
        return ""
    if count is None or count.most is None:
        return ""
    return (f"At most {count.most} model calls (fewer: the Janus method's stream answers come from the response cache "
            "until it first rolls back)")


def real_frame_after(summary: dict, cfg=None, seconds: float | None = None) -> list[str]:
    """What act 2 showed: its story read back from the run folder (:func:`facts`, lines starting with ``[real]``),
    what it means, and how to run it on your own endpoint."""
    methods = summary["methods"]
    lines = ["What act 2 showed:"]
    if summary.get("run_dir"):
        try:
            lines += facts(summary, REAL_TAG)
        except Exception:  # noqa: BLE001 - a folder that cannot be read back: the summary below still stands
            pass
    tests = ", ".join(f"{_label(m, r)} {r.get('test_correct', 0)}/{r.get('test_tasks', 0)}" for m, r in methods.items())
    text = ""
    for m, r in methods.items():
        inj = r.get("injections") or {}
        if not r.get("janus") or not inj.get("injected"):
            continue
        blocked = inj.get("blocked_steps") or []
        if blocked:
            b = blocked[0]
            text += (f"Janus rolled the harmful candidate back: on its evaluation set the old memory scored "
                     f"{b.get('old_score', 0):.2f}, the candidate {b.get('new_score', 0):.2f}, so this model's answers "
                     f"got worse with it. Held-out test: {tests}. ")
        else:
            scores = _deployed_scores(summary.get("run_dir"), m, inj.get("deployed_steps") or [])
            text += ("Janus deployed the harmful candidate: on its evaluation set the candidate scored as well as the "
                     f"old memory{scores} (a tie goes to the candidate, as in the paper), so on those tasks this "
                     f"model's answers did not get worse with it. Held-out test: {tests}. ")
    if not text:
        text = f"Held-out test: {tests}. "
    text += "To run this act against your own model, start an OpenAI-compatible server and run:"
    out = lines + prose(text) + ["  janus demo --act real --backend openai --base-url http://HOST:PORT/v1 --model NAME"]
    if summary.get("run_dir"):
        took = f"took {seconds:.0f} s; " if seconds is not None else ""
        out.append(f"  {took}run folder: {summary['run_dir']}; look closer: janus view {summary['run_dir']}")
        use = [u for u in (summary.get("usage_total") or {}).values() if isinstance(u, dict)]
        if use and not sum(u.get("calls") or 0 for u in use) and sum(u.get("cache_hits") or 0 for u in use):
            out.append("  every answer above was replayed from the response cache of an earlier run (no model call): "
                       "add --no-cache to ask the model again (minutes)")
    return out


def _deployed_scores(run_dir, method: str, steps: list[int]) -> str:
    """`` (old 0.33 vs candidate 0.33)``: Janus's scores at the first deployed injected step, or "" (not compared)."""
    if not run_dir or not steps:
        return ""
    from ..store.reader import RunReader

    try:
        d = next((x.get("decision") or {} for x in RunReader(run_dir).decisions(method) if x.get("step") == steps[0]),
                 {})
    except Exception:  # noqa: BLE001 - the summary above is what matters; no scores rather than a second error
        return ""
    if not d.get("triggered") or d.get("old_score") is None:
        return ""
    return f" ({d['old_score']:.2f} vs {d['new_score']:.2f})"
