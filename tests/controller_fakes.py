"""Shared helpers of the controller tests: toy tasks and a deterministic fake evaluator."""
from janus_memory.values import Task


def mk_task(i):
    return Task(id=f"t{i}", dataset="toy", question=f"q{i}", gold="0")


class Ev:
    """Deterministic fake evaluator: correct iff fn(memory, task_id); records every call."""

    def __init__(self, fn=lambda m, tid: True):
        self.fn = fn
        self.calls = []

    def __call__(self, mem, tasks):
        self.calls.append((mem, [t.id for t in tasks]))
        return [bool(self.fn(mem, t.id)) for t in tasks]


def boundary_first(**kw):
    """RECOMMENDED_HYBRID_BOUNDARY_FIRST (the paper's hybrid set read boundary first, the full gate) with ``kw``
    over it: the machinery the recommended-controller tests pin; ``recommended()`` itself reads a stable panel
    (tests/controller/test_recommended_panel.py)."""
    from janus_memory.controller import JanusConfig
    from janus_memory.controller.config import RECOMMENDED_HYBRID_BOUNDARY_FIRST

    return JanusConfig(**{**RECOMMENDED_HYBRID_BOUNDARY_FIRST, **kw})


def fixed(results: dict[str, list]):
    """An evaluator answering results[memory][task index] and recording its calls (``ev.calls``)."""
    calls = []

    def ev(text, tasks):
        calls.append((text, [t["i"] for t in tasks]))
        return [results[text][t["i"]] for t in tasks]

    ev.calls = calls
    return ev


def tasks(n):
    """n plain task dicts t0..t(n-1), each with its index ``i``."""
    return [{"id": f"t{i}", "i": i} for i in range(n)]


class LateRules:
    """A scripted late-rules stream and a scripted model, for the recommended controller's "keeps learning" tests.

    Six rules (a fee for a region); rules 0 and 1 are stated in the first two tickets, the other four only after
    the warm-up (``warmup`` steps), each followed by recall tickets (need that rule) and combo tickets (need it and
    an earlier one). The memory is a sheet of rule lines and harmless tip lines; the scripted updater proposes, from
    the deployed memory, the memory plus the ticket's rule (a statement ticket) or plus a new tip (any other ticket).
    ``harm`` maps a step to ``"falsify"`` (rule 0 with a wrong amount) or ``"wipe"`` (every rule line dropped, a tip
    added) instead.

    The model (``evaluate``) answers a ticket right exactly when the memory holds every rule line the ticket needs (a
    statement ticket needs none: it states its rule); with ``noise`` > 0 an answer is flipped with that probability,
    a fixed function of (seed, memory text, ticket) like a cached temperature-0 model.
    """

    REGIONS = ("Norway", "Chile", "Kenya", "Japan", "Peru", "Canada")
    FEES = ("handling fee", "customs surcharge", "pallet deposit", "insurance levy", "fuel supplement",
            "storage charge")
    AMOUNTS = (7, 12, 31, 4, 18, 25)

    def __init__(self, warmup: int = 20, follow: int = 6, harm: dict | None = None, noise: float = 0.0,
                 seed: int = 0):
        import random

        self.warmup, self.noise, self.seed = warmup, noise, seed
        self.harm = dict(harm or {})
        r = random.Random(f"late-rules|{seed}")
        plan: list[tuple[str, int, tuple[int, ...]]] = [("state", 0, ()), ("state", 1, ())]
        while len(plan) < warmup:
            k = len(plan) % 2
            plan.append(("recall", k, (k,)))
        for k in range(2, 6):
            plan.append(("state", k, ()))
            for j in range(follow):
                if j % 3 == 2:
                    plan.append(("combo", k, (k, r.randrange(k))))
                else:
                    plan.append(("recall", k, (k,)))
        self.plan = plan
        self.tasks = [self._task(i, kind, k, needs) for i, (kind, k, needs) in enumerate(plan)]
        self.stated_after_warmup = [i for i, (kind, k, _) in enumerate(plan) if kind == "state" and i >= warmup]

    def rule_line(self, k: int, amount: int | None = None) -> str:
        return f"Rule {k}: the {self.FEES[k]} for orders to {self.REGIONS[k]} is {amount or self.AMOUNTS[k]} dollars."

    def _task(self, i: int, kind: str, k: int, needs: tuple[int, ...]) -> dict:
        if kind == "state":
            q = f"Ticket {i}: note that {self.rule_line(k)} What is the {self.FEES[k]} for {self.REGIONS[k]}?"
        else:
            asked = " and ".join(f"the {self.FEES[j]} for {self.REGIONS[j]}" for j in needs)
            q = f"Ticket {i}: a customer ships to {self.REGIONS[needs[-1]]}. What is {asked} in total?"
        return {"id": f"ticket{i}", "i": i, "question": q, "needs": list(needs)}

    def propose(self, memory: str, t: int) -> str:
        """The scripted updater's candidate at step ``t`` from the deployed ``memory``."""
        lines = [ln for ln in memory.splitlines() if ln.strip()]
        harm = self.harm.get(t)
        if harm == "falsify":
            return "\n".join(self.rule_line(0, 9) if ln == self.rule_line(0) else ln for ln in lines)
        if harm == "wipe":
            return "\n".join([ln for ln in lines if not ln.startswith("Rule ")] + [f"Tip {t}: keep answers short."])
        kind, k, _ = self.plan[t]
        if kind == "state" and self.rule_line(k) not in lines:
            return "\n".join(lines + [self.rule_line(k)])
        return "\n".join(lines + [f"Tip {t}: check the destination country before quoting a charge."])

    def correct(self, memory: str, task: dict) -> bool:
        lines = set(memory.splitlines())
        right = all(self.rule_line(k) in lines for k in task["needs"])
        if self.noise:
            import hashlib

            h = hashlib.blake2b(f"{self.seed}|{memory}|{task['id']}".encode(), digest_size=8).digest()
            if int.from_bytes(h, "little") / 2 ** 64 < self.noise:
                right = not right
        return right

    def evaluate(self, memory: str, tasks: list) -> list[bool]:
        return [self.correct(memory, t) for t in tasks]

    def holds(self, memory: str) -> list[int]:
        """The rules whose true line the memory holds."""
        lines = set(memory.splitlines())
        return [k for k in range(6) if self.rule_line(k) in lines]

    def run(self, config) -> list[tuple[int, str, str, bool, str]]:
        """The stream under ``config``: per step (step, what the candidate did, reason, deployed, deployed memory); a
        re-offer the controller deploys (``decision.reoffer``) is applied as a caller would."""
        from janus_memory.controller import Janus, StepInput
        from janus_memory.encoders.hashing import HashingEncoder

        enc = HashingEncoder(n_features=1024)
        janus = Janus(config, evaluator=self.evaluate)
        memory, out = "", []
        for t, task in enumerate(self.tasks):
            cand = self.propose(memory, t)
            q, old_e, new_e = enc.encode([task["question"], memory, cand])
            d = janus.decide(StepInput(task, q, memory, cand, old_e, new_e))
            what = self.harm.get(t) or ("adds_rule" if len(self.holds(cand)) > len(self.holds(memory)) else "tip")
            if d.accept:
                memory = cand
            if d.reoffer.get("accept"):  # seq_reoffer: a rolled-back addition offered again and deployed
                memory = d.reoffer["memory"]
            out.append((t, what, d.reason, d.accept, memory))
        return out
