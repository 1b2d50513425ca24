"""The world's memory updater: proposes one candidate memory per stream step.

The candidate kind at step ``t`` and every random choice it makes come from a generator keyed by (seed, t), so all
policies see the same proposal stream; only the memory the proposal is applied to differs between policies.

Kinds (docs/bench.md):
* ``general``: add a generalising item for the task's cluster (helps the cluster, a little its ring neighbours).
* ``specific``: add an over-specific rule (helps the task's subtopic, hurts the rest of its cluster and its neighbours).
* ``overwrite``: drop 1-2 items, preferring items of other clusters (recency bias), and add a new item for the
  current cluster (general or specific, even odds).
* ``dump``: replace the sheet by the DC-RS "retrieved examples" block: the last ``dump_examples`` stream tasks and
  their solutions; its only value is a small gain on the examples' clusters. Destructive.
* ``reword``: reword one item (same effect, different text).
* ``late``: knowledge for a topic the stream has not reached yet: a general item for the first cluster favoured later
  in the stream that still has cells no stream task up to ``t`` was in, helping only those unseen cells (and its
  ring neighbours' unseen cells a little). Every task seen so far scores the same with or without it: its value lies
  only in tasks still to come (and the held-out test set). Falls back to ``general`` when every cell has been seen.
Adding beyond ``max_items`` drops the oldest item (a bounded sheet). A curator working from a dump rebuilds from scratch:
the dump's example items are not carried into the next sheet. When a kind cannot apply (overwrite/reword on a memory
without items) the proposal falls back to ``general``; the returned kind is the one applied.
"""
from __future__ import annotations

import random

import numpy as np

from .world import KINDS, Item, Memory, World, make_memory, seed_int
from .world_texts import dump_text, item_lines, reword_lines, sheet_text


class WorldUpdater:
    def __init__(self, world: World):
        self.world = world
        c = world.config
        weights = np.array([float(c.mix.get(k, 0.0)) for k in KINDS])
        self._cum = np.cumsum(weights / weights.sum())

    def _kind(self, r: random.Random) -> str:
        """Draw a kind from the mix (a kind of weight 0 is never drawn)."""
        u = r.random()
        prev = 0.0
        last = KINDS[0]
        for k, edge in zip(KINDS, self._cum):
            if edge > prev:
                last = k
                if u < edge:
                    return k
            prev = edge
        return last  # u above a cumulative sum rounded below 1

    def _neighbours(self, cl: int) -> list[int]:
        n = self.world.config.n_clusters
        return sorted({(cl - 1) % n, (cl + 1) % n} - {cl})

    def late_item(self, t: int, r: random.Random) -> Item | None:
        """The ``late`` kind's item at step ``t``, or None when every (cluster, subtopic) cell has been seen."""
        w = self.world
        c = w.config
        unseen = w.first_seen > t
        if not unseen.any():
            return None
        later = [cl for cl in w.favoured[t + 1:] if unseen[cl].any()]
        cl = later[0] if later else int(np.flatnonzero(unseen.any(axis=1))[0])
        s = int(np.flatnonzero(unseen[cl])[0])
        eff = np.zeros((c.n_clusters, c.n_subtopics))
        eff[cl, :] += r.uniform(*c.general_gain)
        for nb in self._neighbours(cl):
            eff[nb, :] += r.uniform(*c.neighbour_gain)
        eff *= unseen
        return Item(f"i{t}", "late", cl, tuple(item_lines("general", cl, s, t, r)), eff)

    def new_item(self, kind: str, t: int, task, r: random.Random) -> Item:
        c = self.world.config
        eff = np.zeros((c.n_clusters, c.n_subtopics))
        cl, s = task.cluster, task.subtopic
        if kind == "general":
            eff[cl, :] += r.uniform(*c.general_gain)
            for nb in self._neighbours(cl):
                eff[nb, :] += r.uniform(*c.neighbour_gain)
        else:  # specific
            eff[cl, :] -= c.specific_cluster_harm
            eff[cl, s] += c.specific_cluster_harm + r.uniform(*c.specific_gain)
            for nb in self._neighbours(cl):
                eff[nb, :] -= r.uniform(*c.specific_harm)
        lines = tuple(item_lines(kind, cl, s, t, r))
        return Item(f"i{t}", kind, cl, lines, eff)

    def _sheet(self, items: list[Item], version: int) -> Memory:
        w = self.world
        text = sheet_text(version, [list(it.lines) for it in items])
        return w.register(make_memory(tuple(items), version, text, w.config.n_clusters, w.config.n_subtopics))

    def _add(self, items: list[Item], new: Item) -> list[Item]:
        items = items + [new]
        while len(items) > self.world.config.max_items:
            items.pop(0)
        return items

    def propose(self, mem: Memory, t: int) -> tuple[Memory, str]:
        """The candidate for stream step ``t`` (0-based) given the deployed memory ``mem``: (candidate, kind)."""
        w = self.world
        task = w.stream[t]
        r = random.Random(seed_int("propose", w.seed, t))
        kind = self._kind(r)
        base = [] if mem.dump else list(mem.items)
        if kind in ("overwrite", "reword") and not base:
            kind = "general"
        version = mem.version + 1
        if kind == "late":
            item = self.late_item(t, r)
            if item is not None:
                return self._sheet(self._add(base, item), version), kind
            kind = "general"
        if kind in ("general", "specific"):
            return self._sheet(self._add(base, self.new_item(kind, t, task, r)), version), kind
        if kind == "overwrite":
            others = [i for i, it in enumerate(base) if it.cluster != task.cluster]
            pool = others if others else list(range(len(base)))
            drop = set(r.sample(pool, min(len(pool), r.choice((1, 2)))))
            kept = [it for i, it in enumerate(base) if i not in drop]
            new = self.new_item(r.choice(("general", "specific")), t, task, r)
            return self._sheet(self._add(kept, new), version), kind
        if kind == "reword":
            j = r.randrange(len(base))
            old = base[j]
            base[j] = Item(f"{old.uid}r{t}", old.kind, old.cluster, tuple(reword_lines(list(old.lines), r)), old.effect)
            return self._sheet(base, version), kind
        return self._dump(t, version, r), "dump"

    def _dump(self, t: int, version: int, r: random.Random) -> Memory:
        w = self.world
        c = w.config
        examples = w.stream[max(0, t - c.dump_examples):t] or [w.stream[t]]
        items = []
        for ex in examples:
            eff = np.zeros((c.n_clusters, c.n_subtopics))
            eff[ex.cluster, :] += c.dump_gain
            items.append(Item(f"x{t}-{ex.idx}", "example", ex.cluster, (ex.text,), eff))
        text = dump_text([ex.text for ex in examples], r)
        return w.register(make_memory(tuple(items), version, text, c.n_clusters, c.n_subtopics, dump=True))
