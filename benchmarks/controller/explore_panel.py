"""Issue 24, round 4: the exploration harness that found the stable panel (tuning seeds only).

These deciders are *not* the product's controller: they are small stand-alone gating rules run as ``custom`` policies
in the memory world (``janus_memory.bench.policies``), written to ask one question each, fast (no k-means, no
sequential test). What they found was then built into ``Janus`` as named options (``eval_set="panel"``,
``panel_rotate``, ``panel_min_evals``, ``near_copy_inherit``, ``gate_compare``) and re-measured with the real
controller by ``benchmarks/controller/tune_recommended.py`` (docs/measurements.md, "Round 4").

Every decider accepts during the first ``warm`` steps, accepts identical texts, deploys ties, and caches each
(memory text, task) outcome it has measured (as ``reuse_old_results`` does), so ``evaluator_calls`` counts what a
caching controller would pay. Kinds (``"cls"`` in a variant):

* ``sample``: each comparison draws ``n`` tasks afresh: ``sampler`` = ``uniform`` (seen tasks), ``recent`` (the last
  ``n``), ``directed`` (among the 3n seen tasks whose embedding is most aligned, in absolute cosine, with
  phi(new) - phi(old)), ``dirmix`` (a ``frac`` share directed, the rest uniform), ``panel`` (the first panel: n kept
  tasks, one replaced with probability 0.1 per comparison).
* ``panel``: a fixed random panel of ``n`` seen tasks, one member replaced with probability ``rotate`` per comparison;
  ``nc`` > 0: a near copy (word 3-gram Jaccard >= nc) is accepted unevaluated and inherits the old memory's outcomes;
  ``ext``: a tied comparison (``|w - l| <= margin``) reads random extra tasks up to ``ext`` in all.
* ``opanel``: an ordered panel of ``N``: the first ``n`` members are read, the rest while tied; ``stop`` > 0: roll
  back as soon as the old memory leads by ``stop``; ``need_disc``: no extension on a 0-0 tie.
* ``spanel``: ``opanel`` whose fill and rotation pick the candidate farthest (cosine) from the other members among
  ``pool`` random seen tasks (a spread-out panel).
* ``ppanel``: ``opanel`` whose rotation drops the member with the lowest discordance rate among those read at least
  ``min_ev`` times (``panel_min_evals`` in the product); ``sort``: read the members most discordant first.

Usage (one process per line; blind and always are read from ``--baselines`` when there, else run)::

    PYTHONPATH=src python benchmarks/controller/explore_panel.py --settings s1,default --first-seed 100 --seeds 60 \\
        --variants '{"P10-18r5": {"cls": "ppanel", "n": 10, "N": 18, "nc": 0.93, "rotate": 0.5}}' --out rows.jsonl

Each output line: ``{"setting", "seed", <policy>: [final true accuracy, evaluator calls], ...}``.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_recommended import SETTINGS, SHORT  # noqa: E402

from janus_memory.bench.grid import run_seed  # noqa: E402
from janus_memory.bench.policies import PolicySpec  # noqa: E402
from janus_memory.bench.world import World, WorldConfig  # noqa: E402
from janus_memory.controller import JanusConfig  # noqa: E402
from janus_memory.controller.changes import shingle_similarity  # noqa: E402

JUDGED = range(0, 80)


class Outcomes:
    """The evaluator behind a cache of (memory text, stream index) -> outcome."""

    def __init__(self, evaluator, stream):
        self.ev, self.stream, self.cache = evaluator, stream, {}

    def get(self, text: str, idx: list[int]) -> list[bool]:
        miss = [i for i in idx if (text, i) not in self.cache]
        if miss:
            for i, r in zip(miss, self.ev(text, [self.stream[i] for i in miss])):
                self.cache[(text, i)] = r
        return [self.cache[(text, i)] for i in idx]

    def inherit(self, old: str, new: str) -> None:
        for (text, i), v in list(self.cache.items()):
            if text == old:
                self.cache[(new, i)] = v


def _abs_cos(rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(rows, axis=1) * (np.linalg.norm(q) or 1.0)
    return np.abs(rows @ q / np.where(n > 0, n, 1.0))


class Base:
    def __init__(self, world, evaluator, task_emb, warm=20, seed=0, salt=0):
        self.world, self.E, self.warm = world, task_emb, warm
        self.out = Outcomes(evaluator, world.stream)
        self.rng = random.Random(seed * 7919 + world.seed + salt)

    def trivial(self, step):
        return step.t < self.warm or step.new.text == step.old.text


class Sample(Base):
    def __init__(self, world, evaluator, task_emb, n=8, sampler="uniform", frac=0.5, **kw):
        super().__init__(world, evaluator, task_emb, **kw)
        self.n, self.sampler, self.frac = n, sampler, frac
        self.panel: list[int] = []

    def pick(self, step) -> list[int]:
        t, n = step.t, min(self.n, step.t)
        if self.sampler == "uniform":
            return self.rng.sample(range(t), n)
        if self.sampler == "recent":
            return list(range(t - n, t))
        if self.sampler == "panel":  # the first harness's panel: n kept tasks, one replaced with probability 0.1
            while len(self.panel) < n:
                x = self.rng.randrange(t)
                if x not in self.panel:
                    self.panel.append(x)
            if self.rng.random() < 0.1:
                j, x = self.rng.randrange(len(self.panel)), self.rng.randrange(t)
                if x not in self.panel:
                    self.panel[j] = x
            return list(self.panel)
        k = n if self.sampler == "directed" else int(round(n * self.frac))
        s = _abs_cos(self.E[:t], step.new_embedding - step.old_embedding)
        top = [int(i) for i in np.argsort(-s)[:3 * k]]
        chosen = self.rng.sample(top, min(k, len(top)))
        rest = [i for i in range(t) if i not in chosen]
        return chosen + self.rng.sample(rest, min(n - len(chosen), len(rest)))

    def decide(self, step):
        if self.trivial(step):
            return True, False
        idx = self.pick(step)
        return sum(self.out.get(step.new.text, idx)) >= sum(self.out.get(step.old.text, idx)), True


class Panel(Base):
    def __init__(self, world, evaluator, task_emb, n=10, rotate=0.1, nc=0.0, ext=0, margin=0, **kw):
        super().__init__(world, evaluator, task_emb, salt=1, **kw)
        self.n, self.rotate, self.nc, self.ext, self.margin = n, rotate, nc, ext, margin
        self.panel: list[int] = []

    def fill(self, t, size):
        while len(self.panel) < min(size, t):
            x = self.rng.randrange(t)
            if x not in self.panel:
                self.panel.append(x)

    def near_copy(self, step) -> bool:
        if self.nc and shingle_similarity(step.old.text, step.new.text) >= self.nc:
            self.out.inherit(step.old.text, step.new.text)
            return True
        return False

    def rotate_random(self, t):
        if self.rng.random() < self.rotate and t > len(self.panel):
            j, x = self.rng.randrange(len(self.panel)), self.rng.randrange(t)
            if x not in self.panel:
                self.panel[j] = x

    def pair(self, step, i) -> tuple[int, int]:
        o = self.out.get(step.old.text, [i])[0]
        nw = self.out.get(step.new.text, [i])[0]
        return int(nw and not o), int(o and not nw)

    def decide(self, step):
        if self.trivial(step):
            return True, False
        if self.near_copy(step):
            return True, False
        t = step.t
        self.fill(t, self.n)
        self.rotate_random(t)
        w = ll = 0
        for i in self.panel:
            a, b = self.pair(step, i)
            w, ll = w + a, ll + b
        if self.ext and abs(w - ll) <= self.margin:
            extra: list[int] = []
            while len(extra) < self.ext - self.n and len(extra) + len(self.panel) < t:
                x = self.rng.randrange(t)
                if x not in self.panel and x not in extra:
                    extra.append(x)
            for i in extra:
                a, b = self.pair(step, i)
                w, ll = w + a, ll + b
        return w >= ll, True


class OPanel(Panel):
    def __init__(self, world, evaluator, task_emb, N=18, stop=0, need_disc=False, **kw):
        super().__init__(world, evaluator, task_emb, **kw)
        self.N, self.stop, self.need_disc = N, stop, need_disc

    def read(self, step) -> bool:
        w = ll = 0
        for k, i in enumerate(self.panel):
            if k >= self.n and (abs(w - ll) > self.margin or (self.need_disc and w + ll == 0)):
                break
            a, b = self.pair(step, i)
            self.seen(i, a or b)
            w, ll = w + a, ll + b
            if self.stop and ll - w >= self.stop:
                break
        return w >= ll

    def seen(self, i, discordant):
        pass

    def decide(self, step):
        if self.trivial(step):
            return True, False
        if self.near_copy(step):
            return True, False
        self.fill(step.t, self.N)
        self.rotate_random(step.t)
        return self.read(step), True


class SPanel(OPanel):
    def __init__(self, world, evaluator, task_emb, pool=30, **kw):
        super().__init__(world, evaluator, task_emb, **kw)
        nrm = np.linalg.norm(task_emb, axis=1, keepdims=True)
        self.U, self.pool = task_emb / np.where(nrm > 0, nrm, 1), pool

    def far(self, t, members):
        cand = [x for x in self.rng.sample(range(t), min(t, self.pool)) if x not in members]
        if not cand:
            return None
        if not members:
            return cand[0]
        return cand[int(np.argmin((self.U[cand] @ self.U[members].T).max(axis=1)))]

    def fill(self, t, size):
        while len(self.panel) < min(size, t):
            x = self.far(t, self.panel)
            if x is None:
                break
            self.panel.append(x)

    def decide(self, step):
        t = step.t  # the measured runs drew the rotation first, then one ignored number after the fill
        if (t >= self.warm and self.rotate and self.rng.random() < self.rotate and len(self.panel) >= min(self.N, t)
                and t > len(self.panel)):
            j = self.rng.randrange(len(self.panel))
            x = self.far(t, self.panel[:j] + self.panel[j + 1:])
            if x is not None:
                self.panel[j] = x
        if self.trivial(step) or self.near_copy(step):
            return True, False
        self.fill(t, self.N)
        self.rng.random()
        return self.read(step), True


class PPanel(OPanel):
    def __init__(self, world, evaluator, task_emb, min_ev=5, sort=False, **kw):
        super().__init__(world, evaluator, task_emb, **kw)
        self.min_ev, self.sort, self.reads, self.disc = min_ev, sort, {}, {}

    def read(self, step) -> bool:
        if self.sort:  # most discordant first (a prior of 1 in 2 for members never read)
            self.panel.sort(key=lambda i: -(self.disc.get(i, 0) + 1) / (self.reads.get(i, 0) + 2))
        return super().read(step)

    def seen(self, i, discordant):
        self.reads[i] = self.reads.get(i, 0) + 1
        self.disc[i] = self.disc.get(i, 0) + int(bool(discordant))

    def rotate_random(self, t):
        if self.rotate and self.rng.random() < self.rotate and t > len(self.panel):
            ranked = [(self.disc.get(i, 0) / self.reads[i], self.rng.random(), j) for j, i in enumerate(self.panel)
                      if self.reads.get(i, 0) >= self.min_ev]
            j = min(ranked)[2] if ranked else self.rng.randrange(len(self.panel))
            x = self.rng.randrange(t)
            if x not in self.panel:
                self.panel[j] = x


KINDS = {"sample": Sample, "panel": Panel, "opanel": OPanel, "spanel": SPanel, "ppanel": PPanel}
_EMB: dict[int, np.ndarray] = {}


def factory(kw: dict):
    kw = dict(kw)
    cls = KINDS[kw.pop("cls", "sample")]

    def make(world, evaluator):
        return cls(world, evaluator, _EMB[world.seed], **kw)

    return make


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="explore_round4")
    p.add_argument("--settings", default="default")
    p.add_argument("--first-seed", type=int, default=100)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--variants", required=True, help="JSON object: name -> decider options")
    p.add_argument("--out", required=True)
    p.add_argument("--baselines", help="tune_recommended.py's baseline cache (blind and always per setting and seed)")
    a = p.parse_args(argv)
    seeds = list(range(a.first_seed, a.first_seed + a.seeds))
    if any(s in JUDGED for s in seeds):
        print("error: seeds 0-79 are judged seeds (docs/bench.md §3); explore on 100 and above", file=sys.stderr)
        return 2
    from janus_memory.encoders import get_encoder

    enc = get_encoder("hashing:1024")
    base = json.loads(Path(a.baselines).read_text()) if a.baselines and Path(a.baselines).exists() else {}
    variants = json.loads(a.variants)
    for st in a.settings.split(","):
        wc = WorldConfig(**SETTINGS[SHORT[st]])
        for seed in seeds:
            _EMB[seed] = enc.encode([t.text for t in World(wc, seed).stream])
            key = f"{SHORT[st]}|{seed}|{wc.n_steps}"
            specs = [] if key in base else [
                PolicySpec("blind", "blind"),
                PolicySpec("always", "janus", JanusConfig().replace(trigger="always"))]
            specs += [PolicySpec(n, "custom", factory=factory(kw)) for n, kw in variants.items()]
            t0 = time.time()
            m = run_seed(wc, seed, specs, keep_arrays=False)["metrics"]
            row = {"setting": st, "seed": seed, **{k: [v["final"], v["evaluator_calls"]] for k, v in m.items()}}
            if key in base:
                row.update({n: [base[key][n]["final"], base[key][n]["calls"]] for n in ("blind", "always")})
            with open(a.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(st, seed, f"{time.time() - t0:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
