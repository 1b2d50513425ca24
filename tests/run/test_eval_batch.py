"""Janus's evaluation as one batch (runner/eval_batch.py): the exact batch the evaluator sends, the calls per
role with and without batching, identical decisions and logs, fresh-replay sample indices, failures, the controller's
hook, and a whole fake-backend run compared with batching switched off."""
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from janus_memory.controller import Janus, JanusConfig, StepInput  # noqa: E402
from janus_memory.llm import LLMClient  # noqa: E402
from janus_memory.llm.base import FatalLLMError  # noqa: E402
from janus_memory.llm.fake import FakeBackend  # noqa: E402
from janus_memory.run.eval_batch import PairedEvaluator  # noqa: E402
from janus_memory.run.evaluator import UpdaterEvaluator  # noqa: E402
from janus_memory.updaters.base import Updater  # noqa: E402
from updater_fakes import ExactFamily, HashEncoder, task  # noqa: E402

OLD, NEW = "MEMORY old: add the numbers", "MEMORY new: multiply the numbers"
TASKS = [task(i, f"what is {i} and {i}?", str(2 * i)) for i in range(1, 5)]  # |E| = 4


def answer(msgs, req, idx):
    """'old' memory adds (correct), 'new' multiplies (right only for 2 x 2); 'broken' fails."""
    mem, q = msgs[0]["content"], msgs[-1]["content"]
    if "broken" in mem:
        raise FatalLLMError("the server refused this memory")
    a = int(re.search(r"what is (\d+)", q).group(1))
    return f"ANSWER: {a + a if 'add' in mem else a * a}"


class MemUpdater(Updater):
    """Smallest real updater: memory-first solving prompt (system = memory, user = task)."""

    def step(self, task):  # pragma: no cover - not used here
        raise NotImplementedError

    def memory_text(self):
        return OLD

    def solving_messages(self, memory_text, task):
        return [{"role": "system", "content": memory_text}, {"role": "user", "content": self.family.prompt(task)}]

    def get_state(self):
        return {}

    def set_state(self, state):
        pass


class CountingClient(LLMClient):
    """LLMClient recording every chat_many: (role, [system message per request], samples)."""

    def __init__(self, backend):
        super().__init__(backend, cache=None, concurrency=8)
        self.batches = []

    def chat_many(self, batch, *, role="solver", sample=0, **kw):
        samples = list(sample) if isinstance(sample, list) else [sample] * len(batch)
        self.batches.append((role, [m[0]["content"] for m in batch], samples))
        return super().chat_many(batch, role=role, sample=sample, **kw)


def make(cls, replay="frozen", **kw):
    client = CountingClient(FakeBackend(rules=[(r".", answer)]))
    upd = MemUpdater(llm=client, family=ExactFamily(), encoder=None, config={"presence_penalty": None})
    return client, cls(upd, replay=replay, salt="s", **kw)


def compare_once(ev, old=OLD, new=NEW, tasks=TASKS):
    """What Janus._compare does for a full (paper) comparison."""
    ev.begin_comparison(step=5, trigger=1)
    ev.expect_pair(old, new) if hasattr(ev, "expect_pair") else None
    return ev(old, tasks), ev(new, tasks)


def test_one_batch_holds_entries_times_both_memories_grouped_by_memory():
    client, ev = make(PairedEvaluator)
    got = compare_once(ev)
    assert got == ([True] * 4, [False, True, False, False])
    assert client.batches == [("janus", [OLD] * 4 + [NEW] * 4, [0] * 8)]  # ONE batch, old memory first
    assert [re.search(r"what is \d+", r.messages[-1]["content"]).group() for r in client.backend.requests] == \
        ["what is 1", "what is 2", "what is 3", "what is 4"] * 2
    assert client.backend.calls == 8
    assert client.usage.snapshot()["janus"]["calls"] == 8
    assert ev.batch_stats == {"batches": 1, "requests": 8, "prefetched": 4, "served": 4, "unused": 0}


def test_same_results_records_and_usage_as_without_batching():
    c1, batched = make(PairedEvaluator)
    c2, plain = make(UpdaterEvaluator)
    assert compare_once(batched) == compare_once(plain)
    assert batched.drain() == plain.drain()  # the decision log's evaluation records, in order
    assert len(c2.batches) == 2 and len(c1.batches) == 1  # chat_many calls: 2 without batching, 1 with
    u1, u2 = c1.usage.snapshot()["janus"], c2.usage.snapshot()["janus"]
    assert (u1["calls"], u1["prompt_tokens"], u1["completion_tokens"]) == \
        (u2["calls"], u2["prompt_tokens"], u2["completion_tokens"]) == (8, u2["prompt_tokens"], u2["completion_tokens"])
    assert sorted(map(repr, c1.backend.requests)) == sorted(map(repr, c2.backend.requests))  # the very same requests


def test_fresh_replay_draws_are_the_unbatched_ones_in_one_batch():
    c1, batched = make(PairedEvaluator, replay="fresh")
    c2, plain = make(UpdaterEvaluator, replay="fresh")
    assert compare_once(batched) == compare_once(plain)
    assert batched.drain() == plain.drain()
    (role, mems, samples), = c1.batches
    # one draw per (trigger, call, occurrence): the old memory's call and the new memory's call differ
    assert mems == [OLD] * 4 + [NEW] * 4 and samples[:4] == [samples[0]] * 4 and samples[4:] == [samples[4]] * 4
    assert 0 not in samples and samples[0] != samples[4]
    assert [(b[1], b[2]) for b in c2.batches] == [([OLD] * 4, samples[:4]), ([NEW] * 4, samples[4:])]
    assert [r.sample for r in c1.backend.requests] == samples


def test_no_pair_no_prefetch_and_other_texts_pass_through():
    client, ev = make(PairedEvaluator)
    ev.begin_comparison(step=1, trigger=1)
    assert ev(OLD, TASKS[:2]) == [True, True]  # no expect_pair: the plain path
    ev.expect_pair(OLD, NEW)
    assert ev("some third memory", TASKS[:1]) == [False]
    assert [len(b[1]) for b in client.batches] == [2, 1] and ev.batch_stats["batches"] == 0


def test_identical_texts_frozen_send_each_request_once():
    client, ev = make(PairedEvaluator)
    assert compare_once(ev, OLD, OLD) == ([True] * 4, [True] * 4)
    assert client.batches == [("janus", [OLD] * 4, [0] * 4)] and client.backend.calls == 4


def test_early_stop_prefetch_unused_is_counted():
    client, ev = make(PairedEvaluator)
    ev.begin_comparison(step=5, trigger=1)
    ev.expect_pair(NEW, OLD)  # early stopping asks for the new memory first; here it would stop after it
    assert ev(OLD, TASKS) == [True] * 4
    ev.begin_comparison(step=6, trigger=2)  # the next comparison: the unused half is counted
    assert ev.batch_stats == {"batches": 1, "requests": 8, "prefetched": 4, "served": 0, "unused": 4}


def test_failed_prefetch_surfaces_at_the_call_that_needs_it():
    client, ev = make(PairedEvaluator)
    ev.begin_comparison(step=5, trigger=1)
    ev.expect_pair(OLD, "broken memory")
    assert ev(OLD, TASKS) == [True] * 4  # the other memory's failures do not fail this call
    with pytest.raises(FatalLLMError):
        ev("broken memory", TASKS)
    assert [len(b[1]) for b in client.batches] == [8, 4]  # the controller's own call re-sent the failed ones


def test_failure_of_the_asked_memory_raises_at_once():
    client, ev = make(PairedEvaluator)
    ev.begin_comparison(step=5, trigger=1)
    ev.expect_pair("broken memory", OLD)
    with pytest.raises(FatalLLMError):
        ev("broken memory", TASKS)


def test_updater_with_its_own_replay_is_not_batched():
    class OwnReplay(MemUpdater):
        def solve_with_memory(self, memory_text, tasks, *, role="janus", sample=0):
            return super().solve_with_memory(memory_text, tasks, role=role, sample=sample)

    client = CountingClient(FakeBackend(rules=[(r".", answer)]))
    ev = PairedEvaluator(OwnReplay(llm=client, family=ExactFamily(), encoder=None), replay="frozen")
    assert ev.batch is False
    compare_once(ev)
    assert [len(b[1]) for b in client.batches] == [4, 4]


def test_client_per_request_samples_are_validated():
    client = LLMClient(FakeBackend(rules=[(r".", "ANSWER: 1")]), cache=None)
    m = [[{"role": "user", "content": "q"}]] * 2
    with pytest.raises(ValueError, match="2 requests"):
        client.chat_many(m, role="janus", sample=[1])
    with pytest.raises(ValueError, match="sample must be an int >= 0"):
        client.chat_many(m, role="janus", sample=[1, -1])
    client.chat_many(m, role="janus", sample=[3, 7])
    assert [r.sample for r in client.backend.requests] == [3, 7]


# ----------------------------------------------------------------------------- through the controller
def _decide_all(evaluator, early_stop: bool):
    cfg = JanusConfig(warmup=2, coverage_size=2, boundary_size=1, fresh_size=1, trigger="always",
                      early_stop=early_stop)
    j = Janus(cfg, evaluator)
    enc = HashEncoder()
    out = []
    for i, t in enumerate(TASKS * 2):
        old, new = (OLD, NEW) if i % 2 else (NEW, OLD)
        q, mo, mn = enc.encode([t.question, old, new])
        d = j.decide(StepInput(task=t, task_embedding=q, old_memory=old, new_memory=new, old_embedding=mo,
                               new_embedding=mn))
        out.append((d.accept, d.reason, d.old_correct, d.new_correct, d.evaluator_calls))
    return out


# (early_stop) -> chat_many sizes with batching, without, janus requests with / without, batch_stats
EXPECTED = {
    # full comparisons: the plain path sends a task listed twice in E (coverage rep that is also fresh; dedup off)
    # twice, the batch sends each request once: 42 instead of 46 requests, 6 chat_many calls instead of 12
    False: ([6, 8, 6, 6, 8, 8], [3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4], 42, 46,
            {"batches": 6, "requests": 42, "prefetched": 21, "served": 23, "unused": 0}),
    # early stopping: three comparisons stop after the new memory, so their prefetched old half (10 requests) is
    # never used: 38 requests instead of 33, in 6 chat_many calls instead of 9
    True: ([6, 6, 6, 6, 8, 6], [3, 3, 3, 4, 4, 4, 4, 4, 4], 38, 33,
           {"batches": 6, "requests": 38, "prefetched": 19, "served": 11, "unused": 10}),
}


@pytest.mark.parametrize("early_stop", [False, True])
def test_controller_decisions_identical_and_one_batch_per_trigger(early_stop):
    c1, batched = make(PairedEvaluator)
    c2, plain = make(UpdaterEvaluator)
    d1, d2 = _decide_all(batched, early_stop), _decide_all(plain, early_stop)
    assert d1 == d2
    assert [d[1] for d in d1].count("old_better") == 3
    assert batched.drain() == plain.drain()
    batched.begin_comparison(step=99, trigger=99)  # closes the last comparison's accounting
    sizes, plain_sizes, n_batched, n_plain, stats = EXPECTED[early_stop]
    assert [len(b[1]) for b in c1.batches] == sizes  # one chat_many per trigger (6 triggers)
    assert [len(b[1]) for b in c2.batches] == plain_sizes
    assert (c1.usage.snapshot()["janus"]["calls"], c2.usage.snapshot()["janus"]["calls"]) == (n_batched, n_plain)
    assert batched.batch_stats == stats


def test_sequential_engine_with_early_stop_prefetches_nothing():
    """One embedded slot (parallel=False): an early-stopping comparison is left alone (an unused prefetch would cost
    its full solve time); a complete comparison is still one batch."""
    c1, seq = make(PairedEvaluator, parallel=False)
    c2, plain = make(UpdaterEvaluator)
    assert _decide_all(seq, True) == _decide_all(plain, True)
    assert [len(b[1]) for b in c1.batches] == EXPECTED[True][1]  # exactly the unbatched calls
    assert seq.batch_stats["prefetched"] == 0
    c3, seq_full = make(PairedEvaluator, parallel=False)
    _decide_all(seq_full, False)
    assert [len(b[1]) for b in c3.batches] == EXPECTED[False][0]


class HookRecorder:
    """An evaluator that records the controller's hooks and answers 'all correct'."""

    def __init__(self):
        self.log = []

    def begin_comparison(self, *, step, trigger):
        self.log.append(("begin", trigger))

    def expect_pair(self, old, new, *, complete):
        self.log.append(("pair", old[:10], new[:10], complete))

    def __call__(self, memory_text, tasks):
        self.log.append(("call", memory_text[:10], len(tasks)))
        return [True] * len(tasks)


@pytest.mark.parametrize("cfg,same,want_pair", [
    (dict(), False, [("pair", OLD[:10], NEW[:10], True)]),
    (dict(early_stop=True), False, [("pair", OLD[:10], NEW[:10], False)]),
    (dict(decision_rule="sign_test"), False, [("pair", OLD[:10], NEW[:10], True)]),
    (dict(same_memory_shortcut=True), True, []),  # identical texts evaluated once: nothing to pair
    (dict(), True, [("pair", OLD[:10], OLD[:10], True)]),  # paper: identical texts are still evaluated twice
])
def test_controller_announces_the_pair_before_its_calls(cfg, same, want_pair):
    rec = HookRecorder()
    j = Janus(JanusConfig(warmup=1, coverage_size=1, boundary_size=0, fresh_size=1, trigger="always", **cfg), rec)
    enc = HashEncoder()
    for t in TASKS[:2]:
        new = OLD if same else NEW
        q, mo, mn = enc.encode([t.question, OLD, new])
        j.decide(StepInput(task=t, task_embedding=q, old_memory=OLD, new_memory=new, old_embedding=mo,
                           new_embedding=mn))
    assert rec.log[0] == ("begin", 1)
    assert [e for e in rec.log if e[0] == "pair"] == want_pair
    assert rec.log.index(("begin", 1)) < min([rec.log.index(e) for e in want_pair] or [1]) <= \
        min(i for i, e in enumerate(rec.log) if e[0] == "call")
