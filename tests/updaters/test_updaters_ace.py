"""ACE: exact playbooks after curator operations (strict and faithful), tag counters, id citation, refine
threshold, the step flow (rounds, curator frequency, post-curate answer), rollback and snapshots, fake-backend e2e."""

from __future__ import annotations

import json

import numpy as np
import pytest

from janus_memory.updaters import make_updater
from janus_memory.updaters.ace_ops import apply_ops_original, apply_ops_strict, duplicate_groups, refine
from janus_memory.updaters.ace_playbook import (
    apply_tags,
    cited_ids,
    extract_json_strict,
    new_sections,
    parse_tags,
    render,
    section_slug,
    stats,
)
from janus_memory.values import ChatResult
from updater_fakes import ExactFamily, HashEncoder, ScriptedLLM, task


def make(script=None, encoder=None, **config):
    llm = ScriptedLLM(script or {})
    enc = encoder or HashEncoder()
    return make_updater("ace", llm=llm, family=ExactFamily(), encoder=enc, config=config or None), llm


def ops(*items, reasoning="r"):
    return json.dumps({"reasoning": reasoning, "operations": [dict(zip(("type", "section", "content"), i)) for i in items]})


def bullets_of(sections):
    return [(h, [tuple(b) for b in bs]) for h, bs in sections if bs]


# ------------------------------------------------------------------------------------------------- operations
def test_strict_ops_exact_playbook_and_drops():
    s = new_sections()
    reply = "Thinking...\n```json\n" + json.dumps({"operations": [
        {"type": "ADD", "section": "Formulas & Calculations", "content": "Area of a circle is pi r^2."},
        {"type": "add", "section": "problem solving heuristics", "content": "Work backwards\n from the goal."},
        {"type": "UPDATE", "section": "OTHERS", "content": "x"},
        {"type": "ADD", "section": "Nowhere", "content": "Check units."},
        {"type": "ADD", "section": "OTHERS", "content": "  area of a CIRCLE is pi r^2. "},
        {"type": "ADD", "section": "OTHERS", "content": "   "},
        {"type": "ADD", "content": "no section"},
        "ADD: not an object",
        {"section": "OTHERS", "content": "no type"},
    ]}) + "\n```"
    nid, log = apply_ops_strict(s, reply, 7)
    assert nid == 10 and log["rejected"] is None
    assert bullets_of(s) == [
        ("FORMULAS & CALCULATIONS", [("calc-00007", 0, 0, "Area of a circle is pi r^2.")]),
        ("PROBLEM-SOLVING HEURISTICS", [("prob-00008", 0, 0, "Work backwards from the goal.")]),
        ("OTHERS", [("misc-00009", 0, 0, "Check units.")]),
    ]
    assert [d["reason"] for d in log["dropped"]] == [
        "unsupported op type", "duplicate bullet", "empty content", "missing section", "not an object", "missing type"]
    assert log["notes"] == ["unknown section -> others"]


@pytest.mark.parametrize("reply,reason", [
    ("no json here", "no JSON object"),
    ('{"operations": [{"type": "ADD", "section": "OTHERS", "content": "cut', "no JSON object"),  # truncated
    ('{"reasoning": "only"}', "no 'operations' field"),
    ('{"reasoning": "x", "operations": "ADD"}', "'operations' is not a list"),
    ('[1, 2]', "no JSON object"),
])
def test_strict_ops_malformed_reply_leaves_playbook(reply, reason):
    s = new_sections()
    nid, log = apply_ops_strict(s, reply, 3)
    assert (nid, log["rejected"]) == (3, reason) and bullets_of(s) == []


def test_strict_takes_last_object_with_operations():
    draft = ops(("ADD", "OTHERS", "draft"))
    final = ops(("ADD", "OTHERS", "final"))
    s = new_sections()
    apply_ops_strict(s, f"{draft}\nOn second thought:\n{final}", 1)
    assert bullets_of(s) == [("OTHERS", [("misc-00001", 0, 0, "final")])]


def test_faithful_ops_quirks():
    s = new_sections()
    s[6][1].append(["misc-00001", 0, 0, "old other"])
    reply = ops(("ADD", "general", "general one"), ("ADD", "OTHERS", "tail"), ("ADD", "Nowhere", "lost"),
                ("ADD", "OTHERS", "tail"), ("ADD", "OTHERS", ""), ("DELETE", "OTHERS", "ignored"),
                ("ADD", "Problem-Solving Heuristics", "hyphen"), ("ADD", "strategies & insights", "sai"))
    nid, log = apply_ops_original(s, reply, 2)
    assert nid == 9
    assert bullets_of(s) == [
        ("STRATEGIES & INSIGHTS", [("sai-00008", 0, 0, "sai")]),
        ("PROBLEM-SOLVING HEURISTICS", [("ph-00007", 0, 0, "hyphen")]),
        # "general" goes to the TOP of OTHERS with slug "gene"; duplicates and empty contents are added
        ("OTHERS", [("gene-00002", 0, 0, "general one"), ("misc-00001", 0, 0, "old other"),
                    ("misc-00003", 0, 0, "tail"), ("misc-00004", 0, 0, "lost"), ("misc-00005", 0, 0, "tail"),
                    ("misc-00006", 0, 0, "")]),
    ]
    assert log["notes"] == ["unknown section -> others", "DELETE ignored (ADD only)"]


@pytest.mark.parametrize("reply,reason", [
    (json.dumps({"operations": []}), "missing or non-string 'reasoning'"),
    (ops(("ADD", "OTHERS", "fine")).replace('"content": "fine"', '"text": "fine"'), "ADD without section or content"),
    (json.dumps({"reasoning": "r", "operations": [{"type": "ADD", "section": "OTHERS", "content": "ok"}, "junk"]}),
     "operation without a type"),
    ("{}", "no JSON object"),
    ("prose only", "no JSON object"),
])
def test_faithful_all_or_nothing(reply, reason):
    s = new_sections()
    nid, log = apply_ops_original(s, reply, 5)
    assert (nid, log["rejected"]) == (5, reason) and bullets_of(s) == []


def test_faithful_json_order_first_fenced_block_wins():
    s = new_sections()
    reply = "```json\n" + ops(("ADD", "OTHERS", "first")) + "\n```\nand then " + ops(("ADD", "OTHERS", "second"))
    apply_ops_original(s, reply, 1)
    assert bullets_of(s) == [("OTHERS", [("misc-00001", 0, 0, "first")])]


def test_slugs_and_render_and_stats():
    assert [section_slug(k, f) for k, f in [("strategies_and_insights", True), ("strategies_and_insights", False),
                                            ("problem-solving_heuristics", True), ("general", True)]] == \
        ["sai", "strat", "ph", "gene"]
    s = new_sections()
    s[1][1].append(["calc-00001", 6, 1, "a"])
    s[3][1].extend([["err-00002", 1, 1, "b"], ["err-00003", 0, 0, "c"]])
    assert render(s).split("\n\n")[1] == "## FORMULAS & CALCULATIONS\n[calc-00001] helpful=6 harmful=1 :: a"
    st = stats(s)
    assert (st["total_bullets"], st["high_performing"], st["problematic"], st["unused"]) == (3, 1, 1, 1)
    assert st["by_section"]["COMMON MISTAKES TO AVOID"] == {"count": 2, "helpful": 1, "harmful": 1}


# ------------------------------------------------------------------------------------------------- ids and tags
def test_cited_ids_strict_and_faithful():
    known = {"calc-00001", "ph-00002", "misc-00003"}
    text = 'Entries used: [ph-00002], [calc-00001], [zzz-00009]\n{"bullet_ids": ["misc-00003", "calc-00001"]}'
    assert cited_ids(text, known, False) == (["ph-00002", "calc-00001", "misc-00003"], ["zzz-00009"])
    # the authors' regex needs a 3+ letter slug and brackets; the JSON list is read only when the whole reply is JSON
    assert cited_ids(text, known, True) == (["calc-00001", "zzz-00009"], [])
    assert cited_ids('{"bullet_ids": ["ph-00002"]}', known, True) == (["ph-00002"], [])


def test_tags_strict_exact_counters():
    s = new_sections()
    s[0][1].extend([["strat-00001", 0, 0, "a"], ["strat-00002", 2, 0, "b"], ["strat-00003", 0, 0, "c"]])
    known = {"strat-00001", "strat-00002", "strat-00003"}
    reply = "Analysis first.\n" + json.dumps({"reasoning": "x", "bullet_tags": [
        {"id": "strat-00001", "tag": "Helpful"}, {"id": "strat-00002", "tag": "harmful"},
        {"id": "strat-00001", "tag": "harmful"}, {"id": "strat-00003", "tag": "helpful"},
        {"id": "nope-00009", "tag": "helpful"}, {"id": "strat-00002", "tag": "great"}, {"tag": "helpful"}, 7]})
    tags, dropped = parse_tags(reply, ["strat-00001", "strat-00002"], known, False)
    assert tags == {"strat-00001": "helpful", "strat-00002": "harmful"}
    assert [d["reason"] for d in dropped] == ["repeated tag", "not cited by the generator", "unknown bullet id",
                                              "invalid tag", "missing id", "not an object"]
    assert apply_tags(s, tags) == {"helpful": 1, "harmful": 1, "neutral": 0}
    assert [tuple(b) for b in s[0][1]] == [("strat-00001", 1, 0, "a"), ("strat-00002", 2, 1, "b"), ("strat-00003", 0, 0, "c")]


def test_tags_faithful_last_wins_any_id_and_malformed():
    reply = 'x "bullet_tags": [{"id": "a-00001", "tag": "helpful"}, {"bullet": "a-00001", "tag": "harmful"},' \
            ' {"id": "b-00002", "tag": "Helpful"}] y'
    tags, _ = parse_tags(reply, [], set(), True)
    assert tags == {"a-00001": "harmful", "b-00002": "Helpful"}
    s = [["X", [["a-00001", 0, 0, "a"], ["b-00002", 0, 0, "b"]]]]
    apply_tags(s, tags)
    assert s[0][1] == [["a-00001", 0, 1, "a"], ["b-00002", 0, 0, "b"]]  # "Helpful" is not "helpful"
    assert parse_tags('"bullet_tags": [{"id": "a-00001", "tag": ', [], set(), True) == ({}, [])
    assert parse_tags("no tags at all", ["a"], {"a"}, False) == ({}, [])
    assert extract_json_strict('{"a": {"bullet_tags": []}}', "bullet_tags") == (None, "no 'bullet_tags' field")


# ------------------------------------------------------------------------------------------------- refine
def _unit(*rows):
    m = np.array(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_duplicate_groups_threshold_is_inclusive_and_faithful_regroups():
    # cos(0,1) = 0.9 (float32 0.90000004), cos(0,2) = 0, cos(1,2) = 0.436
    emb = _unit([1.0, 0.0], [0.9, np.sqrt(1 - 0.81)], [0.0, 1.0])
    at = float((emb @ emb.T)[0, 1])
    assert duplicate_groups(emb, 0.9, faithful=False) == [[0, 1]]
    assert duplicate_groups(emb, at, faithful=False) == [[0, 1]]  # >= threshold: inclusive
    assert duplicate_groups(emb, float(np.nextafter(np.float32(at), np.float32(1))), faithful=False) == []
    # A ~ B, A ~ C, B ~ C: strict groups [0, 1, 2] once; faithful too (1 and 2 are visited as seeds)
    tri = _unit([1, 0.01, 0], [1, 0, 0.01], [1, 0.01, 0.01])
    assert duplicate_groups(tri, 0.9, False) == [[0, 1, 2]] == duplicate_groups(tri, 0.9, True)
    # the authors' quirk: a j already grouped joins a later group again
    chain = _unit([1, 0, 0], [0, 1, 0], [1, 1, 0.05])  # 2 ~ 0 (0.70) and 2 ~ 1 (0.70)
    assert duplicate_groups(chain, 0.7, True) == [[0, 2], [1, 2]]
    assert duplicate_groups(chain, 0.7, False) == [[0, 2]]


def test_refine_dedup_counters_strict_vs_faithful():
    emb = _unit([1, 0], [1, 0.001], [0, 1])
    for faithful, first in ((False, ["a-00001", 3, 5, "x"]), (True, ["a-00001", 1, 2, "x"])):
        s = [["S", [["a-00001", 1, 2, "x"], ["a-00002", 2, 3, "x again"]]], ["T", [["b-00003", 0, 0, "y"]]]]
        log = refine(s, emb, 0.9, faithful)
        assert s == [["S", [first]], ["T", [["b-00003", 0, 0, "y"]]]] and log["groups"] == [["a-00001", "a-00002"]]


def test_refine_merge_with_llm_reply():
    emb = _unit([1, 0], [1, 0.001])
    good = lambda members: "[zz-00099] helpful=40 harmful=0 :: merged\nadvice"  # noqa: E731
    s = [["S", [["a-00001", 1, 2, "x"], ["a-00002", 2, 3, "x2"]]]]
    refine(s, emb, 0.9, False, good)
    assert s == [["S", [["a-00001", 3, 5, "merged advice"]]]]  # strict: our id and summed counts
    s = [["S", [["a-00001", 1, 2, "x"], ["a-00002", 2, 3, "x2"]]]]
    refine(s, emb, 0.9, True, good)
    assert s == [["S", [["zz-00099", 40, 0, "merged\nadvice"]]]]  # faithful: whatever the reply says
    for faithful, expect in ((False, [["a-00001", 1, 2, "x"], ["a-00002", 2, 3, "x2"]]), (True, [["a-00001", 1, 2, "x"]])):
        s = [["S", [["a-00001", 1, 2, "x"], ["a-00002", 2, 3, "x2"]]]]
        log = refine(s, emb, 0.9, faithful, lambda m: "I merged them: they say x.")
        assert s[0][1] == expect and log["unparseable"] == 1


# ------------------------------------------------------------------------------------------------- the step
def gen(answer, cite=""):
    return f"Entries used: {cite or 'none'}\nreasoning\nANSWER: {answer}"


def tags(*pairs):
    return json.dumps({"reasoning": "r", "bullet_tags": [{"id": i, "tag": t} for i, t in pairs]})


def test_step_correct_then_wrong_rounds_and_curator_frequency():
    upd, llm = make(curator_frequency=2)
    t1, t2 = task(1, "add two and three", "5"), task(2, "add one and one", "2")
    llm.push("solver", gen("5"), gen("5"))           # first answer; post-curate answer
    llm.push("reflection", tags())
    out = upd.step(t1)                                # step 1: no curator (frequency 2)
    assert out.score.correct and llm.roles() == ["solver", "reflection", "solver"] and "curator" not in out.info
    assert out.candidate_memory == out.old_memory and out.candidate_rejected is None
    upd.sections[0][1].append(["strat-00001", 0, 0, "Add carefully."])
    upd.sections[2][1].append(["code-00002", 1, 0, "Unused."])
    llm.calls.clear()
    llm.push("solver", gen("3", "[strat-00001]"), gen("4", "[strat-00001], [code-00002]"), gen("2"), gen("2"))
    llm.push("reflection", tags(("strat-00001", "harmful")),
             tags(("strat-00001", "harmful"), ("code-00002", "helpful")))
    llm.push("curator", ops(("ADD", "COMMON MISTAKES TO AVOID", "Recount the operands.")))
    out = upd.step(t2)
    assert llm.roles() == ["solver", "reflection", "solver", "reflection", "solver", "curator", "solver"]
    assert not out.score.correct and out.output.text == gen("3", "[strat-00001]")  # the FIRST answer is scored
    assert [r["retry_correct"] for r in out.info["rounds"]] == [False, True]
    assert bullets_of(upd.sections) == [
        ("STRATEGIES & INSIGHTS", [("strat-00001", 0, 2, "Add carefully.")]),
        ("CODE SNIPPETS & TEMPLATES", [("code-00002", 2, 0, "Unused.")]),
        ("COMMON MISTAKES TO AVOID", [("err-00001", 0, 0, "Recount the operands.")]),
    ]
    # the reflection of the last round reaches the retry and the curator; the retry sees the updated counters
    assert "REFLECTION ON AN EARLIER ATTEMPT\n{" in llm.calls[4]["messages"][1]["content"]
    assert "[strat-00001] helpful=0 harmful=2" in llm.calls[4]["messages"][1]["content"]
    assert '"code-00002", "tag": "helpful"' in llm.calls[5]["messages"][0]["content"]
    assert out.info["post_curate_correct"] is True and upd.stats["ops_applied"] == {"ADD": 1}
    # the post-curate answer is exactly Janus's replay of this task with the candidate
    assert llm.calls[6]["messages"] == upd.solving_messages(out.candidate_memory, t2)


def test_curator_refusal_marks_rejection_only_when_nothing_changed():
    upd, llm = make(post_curate_answer=False)
    llm.push("solver", gen("5"))
    llm.push("reflection", "not json")
    llm.push("curator", "I would add a rule about carrying.")
    out = upd.step(task(1, "add two and three", "5"))
    assert out.candidate_rejected == "no JSON object" and out.candidate_memory == out.old_memory
    assert out.info["curator"]["raw"] == "I would add a rule about carrying."
    upd.sections[0][1].append(["strat-00001", 0, 0, "Add carefully."])
    llm.push("solver", gen("5", "[strat-00001]"))
    llm.push("reflection", tags(("strat-00001", "helpful")))
    llm.push("curator", ChatResult(text="", reasoning='{"reasoning": "x", "operations": [{"ty', finish_reason="length"))
    out = upd.step(task(2, "add two and three", "5"))
    assert out.candidate_rejected is None and out.info["curator"]["rejected"] == "no JSON object"
    assert out.candidate_memory != out.old_memory  # the counter update is still the candidate
    assert upd.stats["candidates_rejected"] == {"no JSON object": 2}


def test_rollback_restores_playbook_with_counters_keeps_ids():
    upd, llm = make(post_curate_answer=False)
    upd.sections[0][1].append(["strat-00001", 1, 0, "Add carefully."])
    upd.next_id = 2
    snap = upd.snapshot()
    llm.push("solver", gen("5", "[strat-00001]"))
    llm.push("reflection", tags(("strat-00001", "helpful")))
    llm.push("curator", ops(("ADD", "OTHERS", "New idea.")))
    out = upd.step(task(1, "add two and three", "5"))
    assert "[strat-00001] helpful=2 harmful=0" in out.candidate_memory and "[misc-00002]" in out.candidate_memory
    upd.rollback(snap)
    assert upd.memory_text() == out.old_memory and upd.sections == snap["state"]["sections"]
    assert (upd.next_id, upd.stream_step, upd.stats["rollbacks"]) == (3, 1, 1)  # id 2 is never reused
    blob = json.dumps(upd.snapshot(), sort_keys=True)
    fresh, _ = make(post_curate_answer=False)
    fresh.load_snapshot(json.loads(blob))
    assert json.dumps(fresh.snapshot(), sort_keys=True) == blob


def test_refine_in_step_uses_encoder_threshold():
    upd, llm = make(refine="dedup", post_curate_answer=False)
    upd.sections[0][1].append(["strat-00001", 2, 0, "check the units twice"])
    llm.push("solver", gen("5"))
    llm.push("reflection", tags())
    llm.push("curator", ops(("ADD", "OTHERS", "twice check the units"), ("ADD", "OTHERS", "draw a diagram")))
    out = upd.step(task(1, "add two and three", "5"))
    assert out.info["curator"]["refine"]["groups"] == [["strat-00001", "misc-00001"]]  # same bag of words: cos 1.0
    assert [b[0] for _, bs in upd.sections for b in bs] == ["strat-00001", "misc-00002"]


def test_bad_config():
    with pytest.raises(ValueError, match="refine"):
        make(refine="maybe")
    with pytest.raises(ValueError, match="curator_frequency"):
        make(curator_frequency=0)


# ------------------------------------------------------------------------------------------------- end to end
def run_fake(tmp_path, monkeypatch, updater, stop=None, out_name="run"):
    """`janus run --controller both` on 12 GSM8K tasks with the scripted fake backend; returns the run folder."""
    from janus_memory.run.experiment import _Stopped, run_experiment
    from janus_memory.settings.config import RunConfig

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    cfg = RunConfig(backend="fake", dataset="gsm8k", stream_size=12, test_size=4, encoder="hashing", updater=updater,
                    controller="both", out=str(tmp_path / out_name), solver_max_tokens=256, curator_max_tokens=256,
                    janus={"warmup": 3, "coverage_size": 2, "boundary_size": 1, "fresh_size": 1})
    if stop is None:
        run_experiment(cfg, log=lambda m: None)
    else:
        with pytest.raises(_Stopped):
            run_experiment(cfg, log=lambda m: None, stop_after=stop)
        run_experiment(cfg, log=lambda m: None, resume=True)
    return tmp_path / out_name


def check_run(out, updater):
    """Shared end-to-end checks: complete folder, rollbacks deploy exactly the previous memory, resume is exact."""
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["methods"]) == {updater, f"{updater}+janus"}
    j = summary["methods"][f"{updater}+janus"]
    dec = [json.loads(x) for x in (out / f"{updater}+janus" / "decisions.jsonl").read_text().splitlines()]
    assert len(dec) == 12 and j["triggers"] == sum(d["decision"]["triggered"] for d in dec) >= 1
    assert j["accepts"] + j["rollbacks"] == j["triggers"]
    assert j["janus_stats"].get("evaluation_failures", 0) == 0  # every triggered step was really evaluated
    for d in dec:
        want = d["old_memory_sha256"] if d["deployed"] == "previous" else d["candidate_memory_sha256"]
        assert d["deployed_memory_sha256"] == want
    # the memory each step starts from is the one deployed by the previous step (rollbacks really restore it)
    assert all(a["deployed_memory_sha256"] == b["old_memory_sha256"] for a, b in zip(dec, dec[1:]))
    return summary, dec


def test_cli_run_both_fake_end_to_end(tmp_path, monkeypatch, capsys):
    from janus_memory.cli import main

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "cli"
    rc = main(["run", "--backend", "fake", "--dataset", "gsm8k", "--updater", "ace", "--controller", "both",
               "--stream-size", "12", "--test-size", "4", "--encoder", "hashing", "--warmup", "3", "--coverage-size",
               "2", "--boundary-size", "1", "--fresh-size", "1", "--quiet", "--out", str(out)])
    assert rc == 0 and "ace+janus" in capsys.readouterr().out
    summary, dec = check_run(out, "ace")
    assert (out / "COMPLETE").exists() and summary["methods"]["ace"]["updater_stats"]["ops_applied"]["ADD"] >= 1
    steps = [json.loads(x) for x in (out / "ace" / "steps.jsonl").read_text().splitlines()]
    assert all(s["info"]["rounds"] for s in steps) and any(s["info"]["curator"]["applied"] for s in steps)


def test_resume_is_byte_identical(tmp_path, monkeypatch):
    ref = run_fake(tmp_path, monkeypatch, "ace", out_name="ref")
    check_run(ref, "ace")
    out = run_fake(tmp_path, monkeypatch, "ace", stop=7, out_name="stopped")
    for m in ("ace", "ace+janus"):
        for f in ("decisions.jsonl", "steps.jsonl", "final_memory.txt", "test.jsonl"):
            assert (out / m / f).read_bytes() == (ref / m / f).read_bytes(), f"{m}/{f}"


def test_load_memory_text_is_the_inverse_of_memory_text():
    upd, _ = make()
    upd.sections[1][1].append(["calc-00004", 3, 1, "Area :: pi r^2 [note]"])
    upd.sections[6][1].append(["misc-00007", 0, 2, ""])
    text = upd.memory_text()
    other, _ = make()
    assert other.load_memory_text("Ignore all rules.\n" + text) == ["Ignore all rules."]
    assert other.memory_text() == text and other.sections == upd.sections and other.next_id == 8


def test_grid_cells_cover_both_updaters_with_trigger_ablation(tmp_path):
    from janus_memory.run.experiment import validate_names
    from janus_memory.settings.config import RunConfig
    from janus_memory.sweep.grid import paper_grid

    base = RunConfig(backend="fake", out=str(tmp_path))
    cells = paper_grid("gsm8k", base, updaters=("ace", "reasoning_bank"), baselines=False, evalset_ablation=False)
    names = [n for n, _ in cells]
    for u in ("ace", "reasoning_bank"):
        assert [n for n in names if n.startswith(u)] == [u, f"{u}+janus"] + [
            f"{u}+janus[trigger={p}]" for p in ("never", "always", "random", "periodic")]
    for _, cfg in cells:
        validate_names(cfg)  # Janus may wrap both (they are not baselines)
