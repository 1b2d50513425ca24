"""Tokens of calls still running: the embedded backend streams its replies, counts each generated piece in
llm/live.py while the call runs, and assembles the pieces back into the one-piece reply; the `still running` line adds
them. Driven by a scripted engine that speaks llama.cpp's stream format; the real-engine check needs JANUS_TEST_GGUF."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from janus_memory.cli.progress import ConsoleProgress
from janus_memory.llm.base import ChatRequest, FatalLLMError, TransientLLMError
from janus_memory.llm.live import LIVE, LiveTokens
from janus_memory.llm.local import LocalBackend, assemble_stream
from janus_memory.store.events import MethodStarted

GGUF = os.environ.get("JANUS_TEST_GGUF")


def piece(text=None, reasoning=None, finish=None, **extra):
    d = {}
    if text is not None:
        d["content"] = text
    if reasoning is not None:
        d["reasoning_content"] = reasoning
    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}], **extra}


FINAL = piece(finish="stop", usage={"prompt_tokens": 41, "completion_tokens": 4},
              timings={"prompt_n": 41, "cache_n": 0, "predicted_n": 4, "prompt_ms": 2.0, "predicted_ms": 3.0},
              model="/m/q.gguf")


def test_assemble_joins_pieces_and_keeps_usage_timings_model_and_finish():
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}]},
              piece("17"), piece(" * 23"), piece(" = 391"), FINAL]
    assert assemble_stream(chunks) == {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "17 * 23 = 391"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 41, "completion_tokens": 4},
        "timings": {"prompt_n": 41, "cache_n": 0, "predicted_n": 4, "prompt_ms": 2.0, "predicted_ms": 3.0},
        "model": "/m/q.gguf"}


def test_assemble_keeps_reasoning_apart_and_a_length_finish():
    out = assemble_stream([piece(reasoning="think "), piece(reasoning="more"), piece("42"), piece(finish="length")])
    assert out["choices"][0] == {"index": 0, "message": {"role": "assistant", "content": "42",
                                                         "reasoning_content": "think more"}, "finish_reason": "length"}
    assert "usage" not in out  # a stream cut before its usage chunk: normalise_response estimates and says so


def test_assemble_an_error_chunk_is_the_reply_and_junk_or_nothing_is_malformed():
    err = {"error": {"code": 400, "message": "request (404 tokens) exceeds the available context size (256 tokens)"}}
    assert assemble_stream([err]) == err
    assert assemble_stream([piece("a"), err]) == err
    assert assemble_stream([]) == {}
    assert assemble_stream(["data: x", None, 3, {"choices": "no"}]) == {}


class StreamEngine:
    """llama.cpp's streaming call: one chunk per generated token through the callback. ``gate`` pauses after
    ``pause_after`` pieces until the test has looked at the live count."""

    def __init__(self, pieces, final=FINAL, pause_after=None, error=None, raise_exc=None, role_chunk=True):
        self.pieces, self.final, self.pause_after, self.role_chunk = pieces, final, pause_after, role_chunk
        self.error, self.raise_exc = error, raise_exc
        self.paused, self.go = threading.Event(), threading.Event()
        self.bodies = []

    def handle_chat_completions(self, body, callback):
        self.bodies.append(body)
        if self.raise_exc is not None:
            raise self.raise_exc
        if self.error is not None:
            callback(self.error)
            return None
        if self.role_chunk:
            callback({"choices": [{"index": 0, "delta": {"role": "assistant", "content": None},
                                   "finish_reason": None}]})
        for i, p in enumerate(self.pieces):
            if i == self.pause_after:
                self.paused.set()
                assert self.go.wait(30)
            callback(piece(p))
        callback(self.final)
        return None


def backend(tmp_path, engine):
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF" + b"\0" * 4096)
    b = LocalBackend(f, n_ctx=512)
    b._srv = engine
    return b


def test_tokens_of_a_running_call_are_live_and_leave_when_it_ends(tmp_path):
    eng = StreamEngine(["a", "b", "c", "d"], pause_after=3)
    b = backend(tmp_path, eng)
    before = LIVE.total()
    out = {}
    t = threading.Thread(target=lambda: out.update(r=b.complete_sync(ChatRequest(messages=[{"role": "user",
                                                                                             "content": "q"}]))))
    t.start()
    assert eng.paused.wait(30)
    assert LIVE.total() - before == 3  # three pieces generated, the call not finished
    eng.go.set()
    t.join(30)
    assert LIVE.total() == before  # finished: its tokens are in the reply's usage now, not counted twice
    r = out["r"]
    assert (r.text, r.finish_reason, r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.estimated) == \
        ("abcd", "stop", 41, 4, False)
    assert eng.bodies[0]["stream"] is True and eng.bodies[0]["stream_options"] == {"include_usage": True}
    assert b.stats.calls == 1


def test_a_refused_request_or_a_crash_still_leaves_the_live_count(tmp_path):
    before = LIVE.total(), LIVE.running()
    bad = {"error": {"code": 400, "message": "Field 'n_probs': type must be number, but is string"}}
    req = ChatRequest(messages=[{"role": "user", "content": "q"}])
    with pytest.raises(FatalLLMError, match="n_probs"):
        backend(tmp_path, StreamEngine([], error=bad)).complete_sync(req)
    with pytest.raises(TransientLLMError, match="llama.cpp error 503: busy"):
        backend(tmp_path, StreamEngine([], error={"error": {"code": 503, "message": "busy"}})).complete_sync(req)
    with pytest.raises(TransientLLMError, match="runtime error: boom"):
        backend(tmp_path, StreamEngine([], raise_exc=RuntimeError("boom"))).complete_sync(req)
    with pytest.raises(TransientLLMError, match="malformed"):  # a stream that never sent a choice
        backend(tmp_path, StreamEngine([], final={"usage": {}}, role_chunk=False)).complete_sync(
            ChatRequest(messages=[{"role": "user", "content": "q"}]))
    assert (LIVE.total(), LIVE.running()) == before


def test_live_tokens_counts_only_open_calls():
    live = LiveTokens()
    a, b = live.open(), live.open()
    live.add(a, 5)
    live.add(b)
    assert (live.total(), live.running()) == (6, 2)
    live.close(a)
    live.add(a, 100)  # a late piece of a closed call is ignored
    assert (live.total(), live.running()) == (1, 1)
    live.close(b)
    live.close(b)
    assert (live.total(), live.running()) == (0, 0)


def test_the_still_running_line_adds_tokens_being_generated():
    lines, now, live = [], [1000.0], [0]
    prog = ConsoleProgress(lines.append, None, clock=lambda: 0.0, beat_clock=lambda: now[0],
                           live_tokens=lambda: live[0])
    prog(MethodStarted("dc_rs+janus", 5, 0, ""))
    now[0] += 30
    prog.tick()
    assert lines[-1] == ("[dc_rs+janus] step 1 of 5 still running: no line for 30s (a long model call); tokens paid so "
                         "far 0, elapsed 30s")
    live[0] = 1412
    now[0] += 30
    prog.tick()
    assert lines[-1] == ("[dc_rs+janus] step 1 of 5 still running: no line for 30s (a long model call); tokens paid so "
                         "far 0 (+1,412 being generated by calls still running), elapsed 1m00s")


@pytest.mark.skipif(not GGUF or not Path(GGUF).is_file(), reason="JANUS_TEST_GGUF not set / missing")
def test_real_engine_streamed_reply_equals_the_one_piece_reply():
    """Two fresh engines, the same requests in the same order (so the same KV-cache history): the streamed,
    assembled replies equal the one-piece replies, and usage counts the same tokens."""
    import xllamacpp as xlc

    def engine():
        p = xlc.CommonParams()
        p.model.path, p.n_ctx, p.verbosity, p.cache_prompt = GGUF, 1024, -1, True
        p.cpuparams.n_threads = p.cpuparams_batch.n_threads = 2
        return xlc.Server(p)

    qs = ["What is 17*23? Answer briefly.", "Write a haiku about memory.", "Name three prime numbers above 50."]
    bodies = [{"messages": [{"role": "user", "content": q}], "max_tokens": 24, "seed": 7, "temperature": 0.0,
               "cache_prompt": True} for q in qs]
    plain_srv, stream_srv = engine(), engine()
    for body in bodies:
        plain = plain_srv.handle_chat_completions(dict(body))
        chunks = []
        stream_srv.handle_chat_completions(dict(body, stream=True, stream_options={"include_usage": True}),
                                           chunks.append)
        got = assemble_stream(chunks)
        assert got["choices"][0]["message"]["content"] == plain["choices"][0]["message"]["content"]
        assert got["choices"][0]["finish_reason"] == plain["choices"][0]["finish_reason"]
        assert got["usage"]["completion_tokens"] == plain["usage"]["completion_tokens"]
        assert got["usage"]["prompt_tokens"] == plain["usage"]["prompt_tokens"]


def test_generation_rate_is_not_measured_from_one_token_calls():
    """The adversary's max-tokens-1 run printed 'generation 1000000.0 tok/s' (each call's one token came with the
    prompt pass, 0.001 ms of generation)."""
    from janus_memory.llm.base import BackendStats

    st = BackendStats()
    st.add({"prompt_n": 40, "prompt_ms": 400.0, "predicted_n": 1, "predicted_ms": 0.001, "cache_n": 0})
    assert (st.gen_tok_s, round(st.prompt_tok_s, 1)) == (0.0, 100.0)
    st.add({"prompt_n": 40, "prompt_ms": 400.0, "predicted_n": 21, "predicted_ms": 2000.0, "cache_n": 0})
    assert round(st.gen_tok_s, 3) == round(1000 * 22 / 2000.001, 3)
