"""The memory world: a seeded simulation in which the true utility of every memory is known.

Model (every assumption is listed in docs/bench.md):
* Tasks belong to ``n_clusters`` topics x ``n_subtopics``; a task has a difficulty ``d ~ N(0, difficulty_sd)`` and each
  cluster a base offset ``b_c ~ N(0, cluster_sd)``. The stream order drifts: the stream is cut into ``n_clusters``
  segments, each favouring one topic (``drift`` = extra probability mass on it), so updates show recency bias.
* A memory is a tuple of items; item ``k`` has an effect grid ``e_k[c, s]`` (logits). True accuracy of memory ``M`` on a
  task ``(c, s, d)``: ``sigmoid(base_logit + b_c + d + sum_k e_k[c, s])``. The true accuracy of a memory is its mean over
  a fixed held-out test set drawn uniformly over (cluster, subtopic) cells: the whole task distribution.
* The solver is a Bernoulli draw with that probability (see :class:`WorldEvaluator` for the noise coupling).
"""
from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import asdict, dataclass, field

import numpy as np

KINDS = ("general", "specific", "overwrite", "dump", "reword", "late")
DEFAULT_MIX = {"general": 0.45, "specific": 0.15, "overwrite": 0.1, "dump": 0.03, "reword": 0.27}
# The named settings of `janus bench world --setting NAME` and benchmarks/controller/bench_recommended.py: WorldConfig
# fields over the defaults. S5 and S6 can see a guard that freezes the memory: 40% of the candidates drawn hold
# knowledge for topics the stream has not reached yet (kind "late"), so a comparison on seen tasks finds no difference.
LATE_MIX = {"general": 0.22, "specific": 0.1, "overwrite": 0.1, "dump": 0.03, "reword": 0.15, "late": 0.4}
SETTINGS: dict[str, dict] = {
    "default": {},
    "s1": {"coupling": 1.0},
    "s2": {"mix": {"general": 0.3, "specific": 0.25, "overwrite": 0.15, "dump": 0.05, "reword": 0.25}},
    "s3": {"eval_noise": "fresh"},
    "s4": {"mix": {"general": 0.6, "specific": 0.2, "overwrite": 0.15, "dump": 0.05}},
    "s5": {"mix": LATE_MIX, "drift": 0.9},
    "s6": {"mix": LATE_MIX, "drift": 0.9, "eval_noise": "fresh", "difficulty_sd": 0.5},
}
SETTING_TEXT = {
    "default": "the default world (keyed noise, coupling 0.5, drift 0.6)",
    "s1": "a low-noise evaluator (coupling 1.0: an edit never re-rolls an answer the memory's truth does not move)",
    "s2": "more harmful candidates (general .3, specific .25, overwrite .15, dump .05, reword .25)",
    "s3": "a stochastic evaluator (eval_noise fresh: every evaluation a new draw)",
    "s4": "no rewordings (general .6, specific .2, overwrite .15, dump .05)",
    "s5": "late knowledge: 40% of candidates drawn help only topics still to come (drift 0.9)",
    "s6": "late knowledge under more noise: S5 with fresh draws on tasks nearer 50/50 (difficulty sd 0.5)",
}


@dataclass(frozen=True)
class WorldConfig:
    """Parameters of one world (all documented in docs/bench.md). ``mix``: probability of each candidate kind."""

    n_steps: int = 300
    n_clusters: int = 8
    n_subtopics: int = 4
    drift: float = 0.6
    base_logit: float = 0.0
    cluster_sd: float = 0.5
    difficulty_sd: float = 1.0
    test_per_cell: int = 8
    max_items: int = 12
    general_gain: tuple[float, float] = (0.5, 1.2)
    neighbour_gain: tuple[float, float] = (0.1, 0.4)
    specific_gain: tuple[float, float] = (0.8, 1.5)
    specific_harm: tuple[float, float] = (0.4, 0.9)
    specific_cluster_harm: float = 0.2
    dump_gain: float = 0.15
    dump_examples: int = 3
    mix: dict = field(default_factory=lambda: dict(DEFAULT_MIX))
    eval_noise: str = "keyed"
    coupling: float = 0.5
    encoder: str = "hashing:1024"

    def __post_init__(self):
        for name in ("n_steps", "n_clusters", "n_subtopics", "test_per_cell", "max_items", "dump_examples"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ValueError(f"{name} must be a whole number, got {v!r}")
            if v < 1:
                raise ValueError(f"{name} must be >= 1")
        for name in ("drift", "base_logit", "cluster_sd", "difficulty_sd", "specific_cluster_harm", "dump_gain",
                     "coupling"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.number)) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
        for name in ("general_gain", "neighbour_gain", "specific_gain", "specific_harm"):
            v = getattr(self, name)
            if (not isinstance(v, (tuple, list)) or len(v) != 2
                    or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)):
                raise ValueError(f"{name} must be two finite numbers [low, high], got {v!r}")
        if not 0.0 <= self.drift <= 1.0 or not 0.0 <= self.coupling <= 1.0:
            raise ValueError("drift and coupling must be in [0, 1]")
        if self.eval_noise not in ("keyed", "fresh"):
            raise ValueError("eval_noise must be 'keyed' or 'fresh'")
        unknown = set(self.mix) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown candidate kinds in mix: {sorted(unknown)}; known: {KINDS}")
        if any(v < 0 or not math.isfinite(v) for v in self.mix.values()) or sum(self.mix.values()) <= 0:
            raise ValueError("mix weights must be finite, >= 0 and not all zero")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> WorldConfig:
        d = dict(d)
        for k in ("general_gain", "neighbour_gain", "specific_gain", "specific_harm"):
            if k in d:
                d[k] = tuple(d[k])
        return cls(**d)


def parse_mix(spec: str) -> dict:
    """``"general=0.4,specific=0.2"`` -> dict (kinds not named get weight 0). Raises ValueError on bad input."""
    out = {}
    for part in spec.split(","):
        if not part.strip():
            continue
        k, sep, v = part.partition("=")
        if not sep:
            raise ValueError(f"mix entry {part!r} is not kind=weight")
        try:
            out[k.strip()] = float(v)
        except ValueError:
            raise ValueError(f"mix weight {v!r} is not a number") from None
    return out


def json_value(text: str):
    """A ``KEY=VALUE`` option's value: JSON when it parses (``0.5``, ``true``, ``"fresh"``, ``[1, 2]``), else the text
    as given (``--set``, bench policies, ``benchmarks/controller/tune_recommended.py`` variants)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def seed_int(*parts) -> int:
    """A stable 63-bit integer from any printable parts (blake2b; independent of PYTHONHASHSEED)."""
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") >> 1


@dataclass(frozen=True, eq=False)
class WorldTask:
    """A stream or test task. ``idx`` is its position in the stream (or in the test set)."""

    id: str
    idx: int
    cluster: int
    subtopic: int
    difficulty: float
    text: str


@dataclass(frozen=True, eq=False)
class Item:
    """One memory item: its text lines and its true effect grid (n_clusters, n_subtopics) in logits."""

    uid: str
    kind: str
    cluster: int
    lines: tuple[str, ...]
    effect: np.ndarray


@dataclass(frozen=True, eq=False)
class Memory:
    """A memory state. ``dump`` is True for a retrieved-examples dump (items are then its example items)."""

    items: tuple[Item, ...]
    version: int
    text: str
    dump: bool = False

    @property
    def effect(self) -> np.ndarray:
        return self.__dict__["_effect"]


def make_memory(items: tuple[Item, ...], version: int, text: str, n_clusters: int, n_subtopics: int,
                dump: bool = False) -> Memory:
    m = Memory(items, version, text, dump)
    eff = np.zeros((n_clusters, n_subtopics))
    for it in items:
        eff += it.effect
    object.__setattr__(m, "_effect", eff)
    return m


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class World:
    """One seeded world: the stream, the test set, the latent solver draws, and memory bookkeeping."""

    def __init__(self, config: WorldConfig, seed: int):
        from .world_texts import task_text

        self.config = c = config
        self.seed = int(seed)
        rng = np.random.default_rng(seed_int("world", seed))
        trng = random.Random(seed_int("texts", seed))
        self.cluster_offset = rng.normal(0.0, c.cluster_sd, c.n_clusters)
        order = rng.permutation(c.n_clusters)
        seg = np.minimum((np.arange(c.n_steps) * c.n_clusters) // c.n_steps, c.n_clusters - 1)
        favoured = order[seg]
        uniform = rng.integers(0, c.n_clusters, c.n_steps)
        clusters = np.where(rng.random(c.n_steps) < c.drift, favoured, uniform)
        subs = rng.integers(0, c.n_subtopics, c.n_steps)
        diffs = rng.normal(0.0, c.difficulty_sd, c.n_steps)
        self.favoured = [int(x) for x in favoured]
        self.stream = [WorldTask(f"s{i}", i, int(clusters[i]), int(subs[i]), float(diffs[i]),
                                 task_text(int(clusters[i]), int(subs[i]), i, trng)) for i in range(c.n_steps)]
        cells = [(cl, s) for cl in range(c.n_clusters) for s in range(c.n_subtopics) for _ in range(c.test_per_cell)]
        tdiff = rng.normal(0.0, c.difficulty_sd, len(cells))
        self.test = [WorldTask(f"t{i}", i, cl, s, float(tdiff[i]), "") for i, (cl, s) in enumerate(cells)]
        # first_seen[c, s]: the first stream step whose task is in cell (c, s) (n_steps when none is)
        self.first_seen = np.full((c.n_clusters, c.n_subtopics), c.n_steps, dtype=int)
        for task in reversed(self.stream):
            self.first_seen[task.cluster, task.subtopic] = task.idx
        self._test_c = np.array([t.cluster for t in self.test])
        self._test_s = np.array([t.subtopic for t in self.test])
        self._test_base = np.array([c.base_logit + self.cluster_offset[t.cluster] + t.difficulty for t in self.test])
        self.task_u = rng.random(c.n_steps)  # latent per-task luck of the solver (shared across memories)
        self.empty = make_memory((), 0, "(empty)", c.n_clusters, c.n_subtopics)
        self._by_text: dict[str, Memory] = {self.empty.text: self.empty}

    # ------------------------------------------------------------------ registry and truth
    def episode(self) -> World:
        """This world for one policy's episode: the same stream, test set and solver luck, and a registry of memory
        texts of its own.

        Two policies can reach one text by different paths: a dump's text has no version line, and an overwrite's new
        item draws its effect after a number of drops that depends on the policy's memory, so one text can even carry
        two different truths. With one registry for all policies the evaluator answered for whichever policy got there
        first, and a policy's numbers depended on the policies run before it on the same world.
        """
        import copy

        ep = copy.copy(self)
        ep._by_text = {self.empty.text: self.empty}
        return ep

    def register(self, m: Memory) -> Memory:
        """Record a memory so the evaluator can look its text up (the latest memory with a text answers); returns
        ``m``. Policies share nothing through it: each episode registers in its own copy (:meth:`episode`)."""
        self._by_text[m.text] = m
        return m

    def memory(self, text: str) -> Memory:
        try:
            return self._by_text[text]
        except KeyError:
            raise KeyError("the evaluator was asked about a memory text this world never produced") from None

    def true_accuracy(self, m: Memory) -> float:
        """Mean solve probability over the held-out test set (exact, no sampling); cached on the memory object, not
        by text (one text can carry two truths, see :meth:`episode`)."""
        acc = m.__dict__.get("_acc")
        if acc is None:
            logits = self._test_base + m.effect[self._test_c, self._test_s]
            acc = float(np.mean(sigmoid(logits)))
            object.__setattr__(m, "_acc", acc)
        return acc

    def solve_prob(self, m: Memory, tasks: list[WorldTask]) -> np.ndarray:
        c = self.config
        idx_c = np.array([t.cluster for t in tasks], dtype=int)
        idx_s = np.array([t.subtopic for t in tasks], dtype=int)
        base = np.array([c.base_logit + self.cluster_offset[t.cluster] + t.difficulty for t in tasks])
        return sigmoid(base + m.effect[idx_c, idx_s])


class WorldEvaluator:
    """The controller's evaluator callback ``(memory_text, tasks) -> list[bool]``: Bernoulli draws of solve_prob.

    ``eval_noise="keyed"`` (default): a draw is a fixed function of (seed, memory text, task), like a temperature-0
    solver with a response cache; with probability ``coupling`` a (text, task) pair uses the task's latent luck
    ``u_task`` (so a memory that is better on that task never scores worse there), otherwise a luck value keyed by the
    text (any edit re-rolls that answer). ``"fresh"``: an independent draw on every call.

    What a run pays: under keyed noise the evaluator *is* a response cache keyed by (memory text, task): the first
    request for a pair is solved and paid, a repeat is answered from the cache, free, with the first answer. So
    ``calls`` counts the distinct (memory text, task) evaluations, what a cached temperature-0 run pays, and every
    policy gets that saving whatever it asks (always-compare re-asks the deployed memory on mostly the same tasks).
    Under fresh noise every request is a new draw and is paid. ``raw_calls`` counts every (memory, task) request.
    """

    def __init__(self, world: World, *, stream_key: str = ""):
        self.world = world
        self.calls = 0
        self.raw_calls = 0
        self._keyed: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._answers: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # text -> (known, answer) per stream task
        self._rng = np.random.default_rng(seed_int("fresh", world.seed, stream_key))

    def _luck(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        got = self._keyed.get(text)
        if got is None:
            r = np.random.default_rng(seed_int("keyed", self.world.seed, text))
            n = len(self.world.stream)
            got = self._keyed[text] = (r.random(n), r.random(n))
        return got

    def __call__(self, memory_text: str, tasks: list) -> list[bool]:
        w = self.world
        m = w.memory(memory_text)
        self.raw_calls += len(tasks)
        if w.config.eval_noise == "fresh":
            self.calls += len(tasks)
            return [bool(x) for x in (self._rng.random(len(tasks)) < w.solve_prob(m, tasks))]
        idx = np.array([t.idx for t in tasks], dtype=int)
        n = len(w.stream)
        known, answer = self._answers.setdefault(memory_text, (np.zeros(n, bool), np.zeros(n, bool)))
        todo, first = np.unique(idx, return_index=True)
        keep = ~known[todo]
        todo, first = todo[keep], first[keep]
        if todo.size:  # solved once, then served from the cache
            coin, u_text = self._luck(memory_text)
            u = np.where(coin[todo] < w.config.coupling, w.task_u[todo], u_text[todo])
            answer[todo] = u < w.solve_prob(m, [tasks[k] for k in first])
            known[todo] = True
            self.calls += int(todo.size)
        return [bool(x) for x in answer[idx]]
