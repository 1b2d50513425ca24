"""`janus replay`: loaders (JSONL, DC logs, run folders) incl. malformed input, the destructive-step rule, exact
replay numbers on the real Dynamic Cheatsheet trajectories with the hashing encoder, the CLI."""
import json
import re

import pytest

from janus_memory.bench import replay_cli
from janus_memory.bench.replay import (
    DEFAULT_PRESETS,
    PRESETS,
    ReplayInputError,
    Trajectory,
    embed_trajectory,
    load_trajectories,
    mark_destructive,
    pooled,
    replay_setting,
    run_grid,
    setting_config,
    summarise,
)
from janus_memory.cli import main
from janus_memory.encoders import get_encoder
from shipped_data import DATA, shipped_file

DC = DATA / "dc-trajectories"  # shipped in the package: xz files, checked against their SOURCE.md on reading
GPT = shipped_file("dc-trajectories/aime_2025_gpt-4o_dc-rs.jsonl")
SHEET = "\n".join(f"item {i}: a rule about topic {i} and its edge case {i}" for i in range(12))


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ----------------------------------------------------------------------------- destructive rule


def test_mark_destructive_rule():
    dump = "### PREVIOUS SOLUTIONS (START)\nInput #1 ...\nOutput #1 ..."
    assert mark_destructive(SHEET, dump) == "dump"
    assert mark_destructive(dump, dump + "\nmore") == "dump"  # dump -> dump is still a dump
    assert mark_destructive(dump, SHEET) == ""  # replacing a dump is not destroying a cheatsheet
    assert mark_destructive(SHEET, "\n".join(SHEET.splitlines()[:5])) == "wipe"  # 5 of 12 items left
    assert mark_destructive(SHEET, "\n".join(SHEET.splitlines()[:6])) == ""  # exactly half: not "fewer than half"
    short = "\n".join(SHEET.splitlines()[:9])
    assert mark_destructive(short, "x") == ""  # fewer than 10 items: too small to call a wipe
    rewritten = "\n".join(f"new rule {i}" for i in range(5))
    assert mark_destructive(SHEET, rewritten) == "wipe"
    assert mark_destructive(SHEET, SHEET + "\nitem 12: new") == ""
    assert mark_destructive("", "### previous solutions") == "dump"


# ----------------------------------------------------------------------------- loaders


def test_load_generic_jsonl_and_labels(tmp_path):
    p = write_jsonl(tmp_path / "t.jsonl", [
        {"step": 1, "memory_before": "", "memory_after": SHEET, "question": "q1", "task_id": "a"},
        {"step": 2, "memory_before": SHEET, "memory_after": "x", "destructive": False},
        {"step": 5, "memory_before": "x", "memory_after": "y", "destructive": "dump", "task": {"k": 1}},
    ])
    (t,) = load_trajectories(p)
    assert t.name == "t" and [s.step for s in t.steps] == [1, 2, 5]
    assert [s.destructive for s in t.steps] == ["", "", "dump"]  # labels override the rule (step 2 is a wipe by rule)
    assert (t.steps[0].task_id, t.steps[0].task_text, t.steps[1].task_text) == ("a", "q1", "step2")
    assert t.steps[2].task_text == '{"k": 1}'


@pytest.mark.parametrize("content,msg", [
    ('{"step": 1, "memory_before": "a", "memory_after": "b"}\n{"step": 2, "memory_bef', "invalid JSON"),
    ('{"step": 1, "memory_before": "a"}\n', "memory_before/memory_after"),
    ('{"step": 1, "memory_before": 3, "memory_after": "b"}\n', "memory_before/memory_after"),
    ('[1, 2]\n', "expected a JSON object"),
    ('{"step": "1", "memory_before": "a", "memory_after": "b"}\n', "'step' must be an integer"),
    ('{"step": 2, "memory_before": "a", "memory_after": "b"}\n{"step": 1, "memory_before": "a", "memory_after": "b"}\n',
     "strictly increasing"),
    ('{"step": 1, "memory_before": "a", "memory_after": "b", "destructive": "maybe"}\n', "'destructive'"),
    ("\n\n", "no steps"),
])
def test_malformed_jsonl(tmp_path, content, msg):
    p = tmp_path / "bad.jsonl"
    p.write_text(content)
    with pytest.raises(ReplayInputError, match=msg):
        load_trajectories(p)


def test_missing_and_empty_folders(tmp_path):
    with pytest.raises(ReplayInputError, match="no such file"):
        load_trajectories(tmp_path / "nope")
    with pytest.raises(ReplayInputError, match="no \\*.jsonl"):
        load_trajectories(tmp_path)
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ReplayInputError, match="cannot read"):
        load_trajectories(tmp_path)


def test_load_run_folder(tmp_path):
    from janus_memory.store.store import RunStore, text_hash

    store = RunStore.create(tmp_path / "run")
    mems = ["", SHEET, "### PREVIOUS SOLUTIONS\nq -> a", SHEET + "\nitem 12: x"]
    store.save_initial_memory("dc_rs", mems[0])
    deployed = mems[0]
    for i in range(1, 4):
        cand = mems[i]
        accept = i != 2  # the dump was rolled back: step 3's old memory is the sheet
        new_dep = cand if accept else deployed
        store.commit_step("dc_rs", i, {"step": i}, {"step": i, "task_id": f"t{i}"}, new_dep, {"s": i},
                          candidate=(cand, text_hash(deployed), None))
        deployed = new_dep
    store.close()
    (t,) = load_trajectories(tmp_path / "run")
    assert t.name == "run/dc_rs"
    assert [(s.step, s.task_id, s.before[:5], s.after[:5]) for s in t.steps] == [
        (1, "t1", "", "item "), (2, "t2", "item ", "### P"), (3, "t3", "item ", "item ")]
    assert [s.destructive for s in t.steps] == ["", "dump", ""]
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.sqlite").write_text("not a database")
    with pytest.raises(ReplayInputError, match="not a readable run database"):
        load_trajectories(tmp_path / "broken")


# ----------------------------------------------------------------------------- replay on the real trajectories


def test_real_dc_trajectories_hashing_reproduces_the_issue_numbers():
    trajs = load_trajectories(DC)
    assert [t.name for t in trajs] == ["aime_2025_claude-3-5-sonnet_dc-cu", "aime_2025_claude-3-5-sonnet_dc-rs",
                                       "aime_2025_gpt-4o_dc-rs"]
    gpt = trajs[2]
    marks = [(s.step, s.destructive) for s in gpt.steps if s.destructive]
    assert marks == [(3, "wipe"), (4, "dump"), (6, "dump"), (8, "dump"), (10, "dump"), (16, "wipe"), (17, "dump"),
                     (20, "dump"), (22, "dump"), (23, "dump"), (25, "dump"), (27, "dump"), (29, "dump")]
    assert not any(s.destructive for t in trajs[:2] for s in t.steps)
    settings = {k: PRESETS[k] for k in DEFAULT_PRESETS}
    rows, records = run_grid(trajs, {"hashing": get_encoder("hashing")}, settings, [0, 20])
    got = {(r["trajectory"].replace("aime_2025_", ""), r["setting"], r["warmup"]):
           (r["fired"], r["dump_caught"], r["wipe_caught"], r["any_in_warmup"]) for r in rows}
    # the issue's hand measurements: 97-100% firing, 11/11 dumps at warm-up 0; 6 of 11 dumps inside warm-up 20
    assert [got[(n, "mmt", 0)][0] for n in ("claude-3-5-sonnet_dc-cu", "claude-3-5-sonnet_dc-rs", "gpt-4o_dc-rs")] == [29, 28, 29]
    assert got[("gpt-4o_dc-rs", "mmt", 0)] == (29, 11, 2, 0)
    assert got[("gpt-4o_dc-rs", "mmt", 20)] == (5, 5, 0, 8)  # 6 dumps + 2 wipes fall in warm-up, unchecked
    assert sum(1 for s in gpt.steps if s.destructive == "dump" and s.step <= 20) == 6
    sel = {n: got[(n, "selective", 0)] for n in ("claude-3-5-sonnet_dc-cu", "claude-3-5-sonnet_dc-rs", "gpt-4o_dc-rs")}
    assert sel == {"claude-3-5-sonnet_dc-cu": (0, 0, 0, 0), "claude-3-5-sonnet_dc-rs": (3, 0, 0, 0),
                   "gpt-4o_dc-rs": (28, 11, 2, 0)}
    assert got[("gpt-4o_dc-rs", "selective", 20)] == (28, 11, 2, 8)  # armed in warm-up: nothing missed there
    pool = {(r["setting"], r["warmup"]): r for r in pooled(rows)}
    assert (pool[("mmt", 0)]["fired"], pool[("selective", 0)]["fired"]) == (86, 31)
    assert pool[("selective", 0)]["rate"] == 31 / 87
    # the recommended controller compares every dump and every wipe at both warm-ups, inside the warm-up
    # too: the text gate forces the comparison there (by the sequential rule, gate_compare)
    for wu in (0, 20):
        assert got[("gpt-4o_dc-rs", "recommended", wu)][1:3] == (11, 2)
        marked = [r for r in records[("aime_2025_gpt-4o_dc-rs", "hashing", "memory", "recommended", wu)]
                  if r["destructive"]]
        assert len(marked) == 13 and all(r["fired"] and r["gated"] for r in marked)
    assert (pool[("recommended", 0)]["fired"], pool[("recommended", 0)]["eligible"]) == (90, 90)
    assert (pool[("recommended", 20)]["any_gated"], pool[("recommended", 20)]["any_in_warmup"]) == (13, 8)
    rec = records[("aime_2025_gpt-4o_dc-rs", "hashing", "memory", "mmt", 0)]
    assert rec[0]["cosine"] is None and round(rec[1]["cosine"], 2) == -0.40


def test_replay_setting_small_sequence_exact():
    steps = [("", SHEET), (SHEET, SHEET + "\nitem 12: new"), (SHEET + "\nitem 12: new", "### PREVIOUS SOLUTIONS\nq")]
    traj = Trajectory("toy", [])
    from janus_memory.bench.replay import ReplayStep

    traj.steps = [ReplayStep(i + 1, f"t{i}", f"question {i}", b, a) for i, (b, a) in enumerate(steps)]
    emb = embed_trajectory(traj, get_encoder("hashing:256"))
    mmt = replay_setting(traj, emb, setting_config(PRESETS["mmt"], 0))
    sel = replay_setting(traj, emb, setting_config(PRESETS["selective"], 0))
    assert [r["fired"] for r in mmt] == [False, True, True]  # MMT also fires on the one-line addition
    assert [(r["fired"], r["fired_by"]) for r in sel] == [(False, ""), (False, ""), (True, "item")]
    assert summarise(sel) == {"steps": 3, "eligible": 2, "fired": 1, "rate": 0.5, "evaluator_calls": 8, "dump_total": 1,
                              "dump_caught": 1, "dump_in_warmup": 0, "wipe_total": 0, "wipe_caught": 0,
                              "wipe_in_warmup": 0, "any_total": 1, "any_caught": 1, "any_in_warmup": 0,
                              "dump_gated": 0, "wipe_gated": 0, "any_gated": 0}
    items = embed_trajectory(traj, get_encoder("hashing:256"), "items")
    assert items.before[0].tolist() == [0.0] * 256  # nothing removed at step 1
    with pytest.raises(ValueError):
        embed_trajectory(traj, get_encoder("hashing:256"), "lines")


# ----------------------------------------------------------------------------- CLI


def test_cli_replay_writes_tables_and_plot(tmp_path, capsys):
    src = write_jsonl(tmp_path / "traj.jsonl", [
        {"step": i, "memory_before": b, "memory_after": a}
        for i, (b, a) in enumerate([("", SHEET), (SHEET, SHEET + "\nitem 12"), (SHEET + "\nitem 12", "### PREVIOUS SOLUTIONS\nq"),
                                    ("### PREVIOUS SOLUTIONS\nq", SHEET)], 1)])
    out = tmp_path / "out"
    rc = main(["replay", str(src), "--encoder", "hashing:256", "--warmup", "0", "--settings", "mmt,selective",
               "--trigger", "selective", "--retention-min", "0.5", "--no-mmt", "--out", str(out)])
    assert rc == 0
    cap = capsys.readouterr()
    text = cap.out
    # on stderr, so the tables on stdout stay clean: the format each input was read as, then one line per
    # trajectory embedded (the slow part)
    assert [re.sub(r", [0-9.]+ s$", "", e) for e in cap.err.splitlines()] == [
        "replay: read traj as janus trajectory (memory_before/memory_after per step): 4 steps",
        "replay: embedded traj (1/1, encoder hashing:256, z memory)"]
    assert "| all | hashing:256 | memory | custom | 0 | 2/3 | 67% | 1/1 | 0/0 | 1/1 | 0 | 22 |" in text
    data = json.loads((out / "replay.json").read_text())
    assert {r["setting"] for r in data["rows"]} == {"mmt", "selective", "custom"}
    assert (out / "replay.md").is_file() and (out / "timeline_traj.png").stat().st_size > 1000


@pytest.mark.parametrize("argv,msg", [
    (["--settings", "nope"], "unknown setting"),
    (["--warmup", "a"], "comma-separated integers"),
    (["--z-source", "lines"], "--z-source"),
    (["--encoder", "bogus"], "unknown encoder"),
    (["--trigger", "selective", "--retention-min", "3"], "retention_min"),
])
def test_cli_replay_errors_exit_2(tmp_path, capsys, argv, msg):
    src = write_jsonl(tmp_path / "t.jsonl", [{"step": 1, "memory_before": "a", "memory_after": "b"}])
    assert main(["replay", str(src), *argv]) == 2
    assert msg in capsys.readouterr().err


def test_cli_default_settings_match_presets():
    assert replay_cli.DEFAULT_SETTINGS == ",".join(DEFAULT_PRESETS)


def test_a_line_separator_inside_a_json_string_is_not_a_line_break(tmp_path):
    """JSON lets U+2028/U+2029 stand raw inside a string (json.dumps(..., ensure_ascii=False) writes them so); the
    reader splits records on newlines only."""
    p = tmp_path / "t.jsonl"
    rows = [{"step": 1, "memory_before": "", "memory_after": "rule A\u2028rule B"},
            {"step": 2, "memory_before": "rule A\u2028rule B", "memory_after": "rule C\u2029"}]
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    (t,) = load_trajectories(p)
    assert [s.step for s in t.steps] == [1, 2] and t.steps[1].before == "rule A\u2028rule B"


def test_cli_errors_print_control_characters_escaped(tmp_path, capsys):
    assert main(["replay", str(tmp_path / "no\x1b[2Jsuch")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "no\\x1b[2Jsuch" in err


def test_a_lone_surrogate_is_an_input_error_and_a_bom_is_read(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"step": 1, "memory_before": "", "memory_after": "a\\ud800b"}\n', encoding="utf-8")
    with pytest.raises(ReplayInputError, match=r"s.jsonl:1: a string holds a lone surrogate"):
        load_trajectories(p)
    b = tmp_path / "b.jsonl"
    b.write_bytes(b"\xef\xbb\xbf" + json.dumps({"step": 1, "memory_before": "", "memory_after": "x"}).encode() + b"\n")
    (t,) = load_trajectories(b)
    assert [s.after for s in t.steps] == ["x"]
