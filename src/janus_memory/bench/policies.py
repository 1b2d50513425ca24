"""Deployment policies compared in the memory world, and the episode loop that runs one policy on one world.

A policy is a :class:`PolicySpec`. Kinds:
* ``blind``: deploy every candidate (the base updater). ``never``: deploy nothing (the initial memory stays).
* ``oracle``: deploy iff the candidate's true accuracy (held-out test set, exact) is not lower than the deployed one's.
* ``janus``: the product's controller, unchanged (``janus_memory.controller.Janus``) with any :class:`JanusConfig`,
  fed the real encoder's embeddings and the world's Bernoulli evaluator. ``match="random"|"periodic"`` replaces the
  trigger by a random/periodic one whose trigger count matches the ``reference`` policy's on the same seed (paper
  Table 2: rate = triggers / post-warm-up steps; period = round(post-warm-up steps / triggers)).
* ``custom``: ``factory(world, evaluator) -> Decider`` for a new gating rule (anything with
  ``decide(step: StepContext) -> (accept, triggered)``). With ``workers > 1`` the factory must be picklable (a
  module-level class or function, not a lambda).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from janus_memory.controller import Janus, JanusConfig, StepInput

from .updater import WorldUpdater
from .world import Memory, World, WorldEvaluator, json_value

POLICY_KINDS = ("blind", "never", "oracle", "janus", "custom")


@dataclass(frozen=True)
class PolicySpec:
    name: str
    kind: str
    config: JanusConfig | None = None
    match: str | None = None
    reference: str = "janus"
    factory: Callable[[World, WorldEvaluator], Any] | None = None

    def __post_init__(self):
        if self.kind not in POLICY_KINDS:
            raise ValueError(f"policy kind must be one of {POLICY_KINDS}, got {self.kind!r}")
        if self.kind == "janus" and not isinstance(self.config, JanusConfig):
            raise ValueError(f"policy {self.name!r}: a janus policy needs a JanusConfig")
        if self.match not in (None, "random", "periodic"):
            raise ValueError(f"policy {self.name!r}: match must be 'random' or 'periodic'")
        if self.match and self.kind != "janus":
            raise ValueError(f"policy {self.name!r}: only janus policies can match a trigger count")
        if self.kind == "custom" and self.factory is None:
            raise ValueError(f"policy {self.name!r}: a custom policy needs a factory")


def default_policies() -> list[PolicySpec]:
    """The default grid's policies (13): baselines, the paper preset, its trigger and eval-set ablations, our options
    (``recommended`` = ``JanusConfig.recommended()``)."""
    paper = JanusConfig()
    return [
        PolicySpec("blind", "blind"),
        PolicySpec("never", "never"),
        PolicySpec("oracle", "oracle"),
        PolicySpec("janus", "janus", paper),
        PolicySpec("always", "janus", paper.replace(trigger="always")),
        PolicySpec("random", "janus", paper, match="random"),
        PolicySpec("periodic", "janus", paper, match="periodic"),
        PolicySpec("no-coverage", "janus", paper.replace(use_coverage=False)),
        PolicySpec("no-boundary", "janus", paper.replace(use_boundary=False)),
        PolicySpec("no-fresh", "janus", paper.replace(use_fresh=False)),
        PolicySpec("janus-fast", "janus", JanusConfig.fast()),
        PolicySpec("janus-sign", "janus", JanusConfig(decision_rule="sign_test", dedup=True)),
        PolicySpec("recommended", "janus", JanusConfig.recommended()),
    ]


def parse_policy(text: str) -> PolicySpec:
    """``NAME=janus[:key=value;key=value]`` (JanusConfig overrides on the paper preset, or on
    ``JanusConfig.recommended()`` with ``preset="recommended"``; values parsed as JSON scalars; ``match`` and
    ``reference`` set a matched random/periodic trigger), or the name of a default policy."""
    defaults = {p.name: p for p in default_policies()}
    if "=" not in text.split(":", 1)[0]:
        if text in defaults:
            return defaults[text]
        raise ValueError(f"unknown policy {text!r}; defaults: {sorted(defaults)}")
    name, _, rest = text.partition("=")
    kind, _, opts = rest.partition(":")
    if kind != "janus":
        raise ValueError(f"policy {text!r}: only janus policies take options (NAME=janus:key=value;...)")
    over: dict = {}
    match = None
    reference = "janus"
    for part in filter(None, (p.strip() for p in opts.split(";"))):
        k, sep, v = part.partition("=")
        if not sep:
            raise ValueError(f"policy option {part!r} is not key=value")
        val = json_value(v)
        if k == "match":
            match = val
        elif k == "reference":
            reference = str(val)
        else:
            over[k.strip()] = val
    base = JanusConfig.recommended() if over.pop("preset", None) == "recommended" else JanusConfig()
    return PolicySpec(name.strip(), "janus", JanusConfig.from_dict({**base.to_dict(), **over}), match=match,
                      reference=reference)


class StepContext:
    """One step as a decider sees it. Memory embeddings are computed on first access (baselines never pay for them)."""

    def __init__(self, t: int, task: Any, old: Memory, new: Memory, task_embedding: np.ndarray,
                 embed: Callable[[str], np.ndarray]):
        self.t, self.task, self.old, self.new, self.task_embedding = t, task, old, new, task_embedding
        self._embed = embed

    @property
    def old_embedding(self) -> np.ndarray:
        return self._embed(self.old.text)

    @property
    def new_embedding(self) -> np.ndarray:
        return self._embed(self.new.text)


class Decider(Protocol):
    def decide(self, step: StepContext) -> tuple[bool, bool]: ...


class _Fixed:
    def __init__(self, accept: bool):
        self.accept = accept

    def decide(self, step):
        return self.accept, False


class _Oracle:
    def __init__(self, world: World):
        self.world = world

    def decide(self, step):
        w = self.world
        return w.true_accuracy(step.new) >= w.true_accuracy(step.old), False


class _JanusDecider:
    def __init__(self, config: JanusConfig, evaluator: WorldEvaluator):
        self.janus = Janus(config, evaluator=evaluator)

    def decide(self, step):
        d = self.janus.decide(StepInput(step.task, step.task_embedding, step.old.text, step.new.text,
                                        step.old_embedding, step.new_embedding))
        return d.accept, d.triggered


def matched_config(spec: PolicySpec, seed: int, n_steps: int, ref_triggers: int | None) -> JanusConfig:
    """The spec's JanusConfig with seed = world seed, and for matched policies the matched random/periodic trigger."""
    cfg = spec.config.replace(seed=int(seed))
    if spec.match is None:
        return cfg
    if ref_triggers is None:
        raise ValueError(f"policy {spec.name!r} matches {spec.reference!r}, which must run first on the same seed")
    post = max(0, n_steps - cfg.warmup)
    if ref_triggers <= 0 or post == 0:
        return cfg.replace(trigger="never")
    if spec.match == "random":
        return cfg.replace(trigger="random", trigger_rate=min(1.0, ref_triggers / post))
    return cfg.replace(trigger="periodic", trigger_period=max(1, round(post / ref_triggers)))


def make_decider(spec: PolicySpec, world: World, evaluator: WorldEvaluator, ref_triggers: int | None) -> Decider:
    if spec.kind == "blind":
        return _Fixed(True)
    if spec.kind == "never":
        return _Fixed(False)
    if spec.kind == "oracle":
        return _Oracle(world)
    if spec.kind == "custom":
        return spec.factory(world, evaluator)
    return _JanusDecider(matched_config(spec, world.seed, world.config.n_steps, ref_triggers), evaluator)


def run_episode(world: World, spec: PolicySpec, embed: Callable[[str], np.ndarray], task_emb: np.ndarray,
                ref_triggers: int | None = None) -> dict:
    """Run one policy over the world's stream. Returns per-step arrays and totals (see metrics.episode_metrics)."""
    world = world.episode()  # its own registry of memory texts: nothing leaks between policies on one world
    evaluator = WorldEvaluator(world, stream_key=spec.name)
    decider = make_decider(spec, world, evaluator, ref_triggers)
    updater = WorldUpdater(world)
    mem = world.empty
    n = world.config.n_steps
    acc = np.empty(n)
    cand_gain = np.empty(n)
    accepted = np.zeros(n, bool)
    triggered = np.zeros(n, bool)
    kinds = []
    for t in range(n):
        cand, kind = updater.propose(mem, t)
        old_acc = world.true_accuracy(mem)
        cand_gain[t] = world.true_accuracy(cand) - old_acc
        ctx = StepContext(t, world.stream[t], mem, cand, None if task_emb is None else task_emb[t], embed)
        ok, fired = decider.decide(ctx)
        accepted[t], triggered[t] = bool(ok), bool(fired)
        if ok:
            mem = cand
        acc[t] = world.true_accuracy(mem)
        kinds.append(kind)
    return {"policy": spec.name, "seed": world.seed, "acc": acc, "cand_gain": cand_gain, "accepted": accepted,
            "triggered": triggered, "kinds": kinds, "evaluator_calls": evaluator.calls,
            "raw_calls": evaluator.raw_calls,
            "initial_acc": world.true_accuracy(world.empty)}
