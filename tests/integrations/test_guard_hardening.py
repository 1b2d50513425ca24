"""The library guard against late replies, torn and hand-edited record lines, forged amendments (LangGraph's
InMemoryStore as the memory)."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.memory")

from langgraph.store.memory import InMemoryStore  # noqa: E402

from janus_memory.integrations import Probe, WriteGuard, read_record  # noqa: E402
from janus_memory.integrations.langgraph import GuardedStore  # noqa: E402
from lib_fakes import NS, recency_agent  # noqa: E402

PROBES = [Probe("cap", "What is the refund cap per order?", expected="$100"),
          Probe("name", "What is the customer's name?", expected="Ada")]
GOOD = "The refund cap is $100 per order; the customer's name is Ada."
HERE = Path(__file__).resolve().parent


def mem(t):
    return {"kind": "Memory", "content": {"content": t}}


def store_with(**kw):
    inner = InMemoryStore()
    inner.put(NS, "cap", mem("The refund cap is $100 per order."))
    inner.put(NS, "name", mem("The customer's name is Ada Lovelace."))
    return inner, GuardedStore(inner, WriteGuard(list(PROBES), recency_agent(), **kw))


# ---------------------------------------------------------------------------------------------------------- late replies
async def _swallows_cancel(query, view):
    if view.get(NS, "x") is not None:
        try:
            await asyncio.sleep(0.6)
        except asyncio.CancelledError:
            await asyncio.sleep(0.4)  # goes on after the cancellation and replies late
    return GOOD


async def _blocks_loop(query, view):
    if view.get(NS, "x") is not None:
        time.sleep(0.6)  # holds the event loop past the deadline
    return GOOD


@pytest.mark.parametrize("agent", [_swallows_cancel, _blocks_loop])
@pytest.mark.parametrize("path", ["async", "sync"])
def test_a_reply_after_its_deadline_is_never_used(agent, path):
    inner, store = store_with(answer_timeout=0.2)
    store.guard.answer = agent
    if path == "async":
        async def run():
            async with store.update() as blk:
                await store.aput(NS, "x", mem("Gift wrapping costs $5."))
            return blk.decision
        d = asyncio.run(run())
    else:
        store.put(NS, "x", mem("Gift wrapping costs $5."))
        d = store.decisions[-1]
    assert (d.accepted, d.reason) == (False, "timeout")
    assert inner.get(NS, "x") is None


# ---------------------------------------------------------------------------------------------------------- torn lines
_WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    from langgraph.store.memory import InMemoryStore
    from janus_memory.integrations import Probe, WriteGuard
    from janus_memory.integrations.langgraph import GuardedStore
    from lib_fakes import NS, recency_agent
    inner = InMemoryStore()
    inner.put(NS, "cap", {{"kind": "Memory", "content": {{"content": "The refund cap is $100 per order."}}}})
    probes = [Probe("cap", "What is the refund cap per order?", expected="$100")]
    store = GuardedStore(inner, WriteGuard(probes, recency_agent(), record=sys.argv[1]))
    store.put(NS, sys.argv[2], {{"kind": "Memory", "content": {{"content": "Shipping takes 3 days."}}}})
    print(store.decisions[-1].update, store.decisions[-1].accepted)
""")


def _write_in_a_process(tmp_path, key):
    script = tmp_path / "writer.py"
    script.write_text(_WRITER.format(here=str(HERE)))
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "rec"), key], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_a_decision_after_a_torn_line_starts_on_a_line_of_its_own(tmp_path):
    rec = tmp_path / "rec"
    assert _write_in_a_process(tmp_path, "a") == ["1", "True"]
    with open(rec / "decisions.jsonl", "a", encoding="utf-8") as f:  # a writer killed mid-line
        f.write('{"accepted": true, "answers": 4, "upd')
    assert _write_in_a_process(tmp_path, "b") == ["2", "True"]  # a second process opens the record and appends
    lines = (rec / "decisions.jsonl").read_text(encoding="utf-8").split("\n")
    assert lines[1] == '{"accepted": true, "answers": 4, "upd' and json.loads(lines[2])["update"] == 2
    with pytest.warns(UserWarning, match=r"decisions\.jsonl line 2 is not valid JSON .*skipped$"):
        _, ds = read_record(rec)
    assert [(d["update"], d["accepted"]) for d in ds] == [(1, True), (2, True)]
    r = subprocess.run([sys.executable, "-m", "janus_memory.integrations", str(rec)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "2 update(s): 2 committed, 0 dropped" in r.stdout
    assert [ln for ln in r.stderr.splitlines() if ln.strip()] == [
        f"warning: {rec / 'decisions.jsonl'} line 2 is not valid JSON (Unterminated string starting at): a write "
        "cut short (a process killed mid-write, a full disk)? skipped"]


def test_a_torn_line_cut_inside_a_character_is_skipped(tmp_path):
    rec = tmp_path / "rec"
    _, store = store_with(record=rec)
    store.put(NS, "a", mem("Gift wrapping costs $5."))
    with open(rec / "decisions.jsonl", "ab") as f:
        f.write('{"why": "caf\u00e9'.encode()[:-1])  # the last character's second byte never written
    store.put(NS, "b", mem("Shipping takes 3 days."))
    with pytest.warns(UserWarning, match=r"line 2 is not valid UTF-8"):
        _, ds = read_record(rec)
    assert [d["update"] for d in ds] == [1, 2]


# ---------------------------------------------------------------------------------------------------------- hand edits
@pytest.mark.parametrize("row,msg", [
    ({"update": "x", "accepted": True}, "'update' must be a whole number from 1 to 1000000000, got 'x'"),
    ({"update": [1], "accepted": True}, "'update' must be a whole number from 1 to 1000000000, got [1]"),
    ({"update": 1e308, "accepted": True}, "'update' must be a whole number from 1 to 1000000000, got 1e+308"),
    ({"update": 10 ** 12, "accepted": True}, "'update' must be a whole number from 1 to 1000000000, got "
                                             "1000000000000"),
    ({"update": True, "accepted": True}, "'update' must be a whole number from 1 to 1000000000, got True"),
    ({"update": 2, "accepted": "no"}, "'accepted' must be true or false, got 'no'"),
    ({"update": 2, "accepted": True, "writes": 5}, "'writes' must be a list of objects, got 5"),
    ({"update": 2, "accepted": True, "probes": "str"}, "'probes' must be a list of objects, got 'str'"),
    ({"update": 2, "accepted": True, "answers": {"a": 1}}, "'answers' must be a whole number from 0 to 1000000000 "
                                                          "or null, got {'a': 1}"),
    ({"update": 2, "accepted": True, "controller": 7}, "'controller' must be an object or null, got 7"),
    ({"update": 2, "accepted": True, "id": 5}, "'id' must be a string, got 5"),
    ({"update": 2, "accepted": True, "old_score": "hi"}, "'old_score' must be a number from 0 to 1 or null, got 'hi'"),
    ({"update": 2, "accepted": False, "amends": None}, "'amends' must be a string, got None"),
])
def test_a_hand_edited_line_of_the_wrong_shape_is_one_error_line(tmp_path, row, msg):
    rec = tmp_path / "rec"
    _, store = store_with(record=rec)
    store.put(NS, "a", mem("Gift wrapping costs $5."))
    with open(rec / "decisions.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    want = f"{rec / 'decisions.jsonl'} line 2: {msg}"
    with pytest.raises(ValueError) as e:
        read_record(rec)
    assert str(e.value) == want
    with pytest.raises(ValueError) as e:  # a guard opened on it says the same, not a bare int() error
        store_with(record=rec)
    assert str(e.value) == want
    for args in ([], ["--json"], ["--html", str(tmp_path / "p.html")]):
        r = subprocess.run([sys.executable, "-m", "janus_memory.integrations", str(rec), *args], capture_output=True,
                           text=True, timeout=120)
        assert (r.returncode, r.stderr) == (2, f"error: {want}\n")


# ---------------------------------------------------------------------------------------------------------- amendments
def _dropped_record(tmp_path):
    rec = tmp_path / "rec"
    _, store = store_with(record=rec)
    store.put(NS, "p", mem("The refund cap is $1000 per order; the customer's name is Bob."))
    d = store.decisions[-1]
    assert (d.update, d.accepted) == (1, False)
    return rec, d


def test_a_forged_amendment_cannot_commit_a_dropped_decision(tmp_path):
    rec, d = _dropped_record(tmp_path)
    with open(rec / "decisions.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"amends": d.id, "update": 1, "accepted": True, "reason": "new_ge_old",
                            "why": "committed"}) + "\n")
    with pytest.raises(ValueError) as e:
        read_record(rec)
    assert str(e.value) == (f"{rec / 'decisions.jsonl'} line 2: an amendment may only record a failed commit "
                            "(accepted false, of a committed decision); this one sets accepted true")


def test_an_amendment_of_a_decision_already_dropped_is_refused(tmp_path):
    rec, d = _dropped_record(tmp_path)
    with open(rec / "decisions.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"amends": d.id, "update": 1, "accepted": False, "reason": "commit_failed",
                            "why": "x"}) + "\n")
    with pytest.raises(ValueError) as e:
        read_record(rec)
    assert str(e.value) == (f"{rec / 'decisions.jsonl'} line 2: an amendment may only record a failed commit "
                            f"(accepted false, of a committed decision); decision {d.id!r} (update 1) was not "
                            "committed")


# ---------------------------------------------------------------------------------------------------------- interrupts
@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, asyncio.CancelledError])
@pytest.mark.parametrize("limit", [300.0, None])
def test_an_interrupt_during_the_decision_propagates_as_itself(interrupt, limit):
    inner, store = store_with(answer_timeout=limit)

    def stopped(query, view):
        raise interrupt

    store.guard.answer = stopped
    with pytest.raises(interrupt):
        store.put(NS, "x", mem("Gift wrapping costs $5."))
    assert inner.get(NS, "x") is None


def test_a_lone_surrogate_in_a_write_is_recorded_as_an_escape(tmp_path):
    rec = tmp_path / "rec"
    _, store = store_with(record=rec)
    store.put(NS, "a", mem("Gift wrapping costs $5 \ud800."))
    raw = (rec / "decisions.jsonl").read_bytes()
    raw.decode("utf-8")  # valid UTF-8: the surrogate is written as an escape
    assert b"\\ud800" in raw
    _, ds = read_record(rec)
    assert [d["update"] for d in ds] == [1] and "\ud800" in json.dumps(ds[0]["writes"], ensure_ascii=False)
