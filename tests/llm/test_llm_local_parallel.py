"""LocalBackend parallel slots, FIFO admission and prefix-grouped batches, with a fake in-process engine (no model).
A real-model check (SmolLM2, JANUS_TEST_GGUF) runs the same batch at 1 and 2 slots."""
import os
import sys
import threading
import types
from pathlib import Path

import pytest

from janus_memory.llm import LLMClient
from janus_memory.llm.base import ChatRequest
from janus_memory.llm.client import issue_order
from janus_memory.llm.local import LocalBackend, _FifoGate


class FakeEngine:
    """Stands in for xllamacpp.Server: records prompts in arrival order and the peak number of calls inside."""

    def __init__(self, barrier=None):
        self.seen, self.inside, self.peak = [], 0, 0
        self.lock = threading.Lock()
        self.barrier = barrier

    def handle_chat_completions(self, body, callback):
        assert body["stream"] is True  # the backend streams (llm/live.py counts the pieces)
        with self.lock:
            self.inside += 1
            self.peak = max(self.peak, self.inside)
            self.seen.append(body["messages"][-1]["content"])
        if self.barrier is not None:
            self.barrier.wait(timeout=30)  # passes only if barrier.parties calls are inside at once
        with self.lock:
            self.inside -= 1
        callback({"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}]})
        for piece in ("ok ", body["messages"][-1]["content"]):
            callback({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        callback({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                  "usage": {"prompt_tokens": 10, "completion_tokens": 2},
                  "timings": {"prompt_n": 3, "cache_n": 7, "predicted_n": 2, "prompt_ms": 1.0, "predicted_ms": 2.0}})


def backend(tmp_path, engine, **kw):
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF" + b"\0" * 4096)
    b = LocalBackend(f, n_ctx=512, **kw)
    b._srv = engine
    return b


def user(mem, q):
    return [{"role": "system", "content": mem}, {"role": "user", "content": q}]


def test_issue_order_groups_shared_prefixes_exactly():
    batch = [user("MEM B", "q1"), user("MEM A", "q1"), user("MEM B", "q0"), user("MEM A", "q2"), user("MEM A", "q1")]
    reqs = [ChatRequest(messages=m) for m in batch]
    assert issue_order(reqs) == [1, 4, 3, 2, 0]
    assert issue_order([]) == []


def test_chat_many_issues_grouped_by_memory_and_returns_input_order(tmp_path):
    eng = FakeEngine()
    client = LLMClient(backend(tmp_path, eng), concurrency=4)
    batch = [user("MEM B" if i % 2 else "MEM A", f"task {i}") for i in range(6)]
    out = client.chat_many(batch, role="janus")
    assert [r.text for r in out] == [f"ok task {i}" for i in range(6)]
    assert eng.seen == ["task 0", "task 2", "task 4", "task 1", "task 3", "task 5"]  # A-group, then B-group


def test_single_slot_admits_in_issue_order_and_one_at_a_time(tmp_path):
    eng = FakeEngine()
    b = backend(tmp_path, eng, n_parallel=1)
    client = LLMClient(b, concurrency=6)
    out = client.chat_many([user("M", f"t{i:02d}") for i in range(12)])
    assert eng.peak == 1 and eng.seen == [f"t{i:02d}" for i in range(12)]
    assert [r.text for r in out] == [f"ok t{i:02d}" for i in range(12)]
    assert (b.stats.calls, b.stats.cached_prompt_tokens, b.stats.gen_tokens) == (12, 84, 24)


def test_two_slots_run_two_calls_inside_the_engine_at_once(tmp_path):
    eng = FakeEngine(barrier=threading.Barrier(2))
    b = backend(tmp_path, eng, n_parallel=2)
    out = LLMClient(b, concurrency=4).chat_many([user("M", f"t{i}") for i in range(4)])
    assert eng.peak == 2 and len(out) == 4


def test_fifo_gate_admits_by_ticket_not_by_thread_start_order():
    gate = _FifoGate(1)
    tickets = [gate.ticket() for _ in range(6)]
    order, threads = [], []

    def run(t):
        gate.enter(t)
        order.append(t)
        gate.leave()

    for t in reversed(tickets):  # start the threads in the worst order
        threads.append(threading.Thread(target=run, args=(t,)))
        threads[-1].start()
    for th in threads:
        th.join(timeout=30)
    assert order == [0, 1, 2, 3, 4, 5]


def test_fifo_gate_skips_an_abandoned_ticket():
    gate = _FifoGate(1)
    t0, t1, t2 = gate.ticket(), gate.ticket(), gate.ticket()
    gate.abandon(t1)  # a cancelled call that never started
    order = []
    th = threading.Thread(target=lambda: (gate.enter(t2), order.append(t2), gate.leave()))
    th.start()
    gate.enter(t0)
    order.append(t0)
    gate.leave()
    th.join(timeout=30)
    assert order == [0, 2]
    late = gate.ticket()
    gate.abandon(t1)  # abandoning a ticket already passed is a no-op
    gate.enter(late)
    gate.leave()


def test_engine_gets_per_slot_context_times_slots(tmp_path, monkeypatch):
    made = {}

    class Params:
        def __init__(self):
            self.model = types.SimpleNamespace(path="")
            self.cpuparams = types.SimpleNamespace(n_threads=0)
            self.cpuparams_batch = types.SimpleNamespace(n_threads=0)

    def server(p):
        made["p"] = p
        return FakeEngine()

    monkeypatch.setitem(sys.modules, "xllamacpp", types.SimpleNamespace(CommonParams=Params, Server=server))
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF" + b"\0" * 64)
    b = LocalBackend(f, n_ctx=3000, n_threads=2, n_parallel=4)
    b.complete_sync(ChatRequest(messages=user("M", "x")))
    p = made["p"]
    assert (p.n_ctx, p.n_parallel, p.cont_batching, p.cache_prompt, p.cpuparams.n_threads) == (12000, 4, True, True, 2)
    with pytest.raises(ValueError):
        LocalBackend(f, n_parallel=0)


def test_seed_is_fixed_per_request_and_sample_whatever_the_order(tmp_path):
    b = backend(tmp_path, FakeEngine(), n_parallel=4)
    r = ChatRequest(messages=user("M", "x"), temperature=0.7)
    s0 = b.request_body(r)["seed"]
    assert b.request_body(ChatRequest(messages=user("M", "x"), temperature=0.7))["seed"] == s0
    assert b.request_body(ChatRequest(messages=user("M", "x"), temperature=0.7, sample=1))["seed"] != s0
    assert b.request_body(ChatRequest(messages=user("M", "x"), seed=5))["seed"] == 5
    assert 0 <= s0 < 2 ** 31


GGUF = os.environ.get("JANUS_TEST_GGUF")


@pytest.mark.model
@pytest.mark.skipif(not GGUF or not Path(GGUF).is_file(), reason="JANUS_TEST_GGUF not set / missing")
def test_real_engine_two_slots_answer_a_mixed_batch():
    from janus_memory.llm import LocalBackend

    b = LocalBackend(GGUF, n_ctx=1024, n_threads=2, n_parallel=2)
    client = LLMClient(b, concurrency=4)
    batch = [user("Memory A: add carefully.", f"What is {i} + 1?") for i in range(2)] + \
        [user("Memory B: check units.", f"What is {i} + 2?") for i in range(2)]
    out = client.chat_many(batch, max_tokens=6, temperature=0.0)
    assert len(out) == 4 and all(r.usage.completion_tokens >= 1 and not r.usage.estimated for r in out)
    assert b.stats.calls == 4 and b.stats.gen_tokens == sum(r.usage.completion_tokens for r in out)
    b.close()
