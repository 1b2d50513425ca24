"""`janus replay` on Dynamic Cheatsheet's published result files as they are (one record per task, the memory after
it in ``final_cheatsheet``): the format is detected per file and said; a file built back from the converted
trajectories shipped in the package (dc-trajectories) replays exactly as the converted form; malformed and truncated files
are refused in one line naming the file and the line."""
import json
import re

import pytest

from janus_memory.bench.replay import (
    PRESETS,
    ReplayInputError,
    load_trajectories,
    run_grid,
)
from janus_memory.cli import main
from janus_memory.encoders import get_encoder
from janus_memory.tasks.data import read_data_bytes
from shipped_data import shipped_text
from test_replay import GPT, SHEET, write_jsonl


def dc_record(row: dict) -> dict:
    """One converted step (SOURCE.md: step, question, target, model_answer, model_output, previous_cheatsheet,
    new_cheatsheet) as Dynamic Cheatsheet's results/<TASK>/<model>_<approach>.jsonl holds it: the inverse of the
    conversion (the prompt texts, not kept by the conversion, are empty here)."""
    return {"input": f"Question: {row['question']}", "target": row["target"], "raw_input": row["question"],
            "input_txt": row["question"],
            "steps": [{"round": 0, "generator_prompt": "", "generator_output": row["model_output"],
                       "generator_answer": row["model_answer"], "current_cheatsheet": row["previous_cheatsheet"],
                       "new_cheatsheet": row["new_cheatsheet"]}],
            "top_k_original_inputs": [], "top_k_original_outputs": [], "final_answer": row["model_answer"],
            "final_output": row["model_output"], "final_cheatsheet": row["new_cheatsheet"]}


def to_dc_results(src, dst):
    rows = [json.loads(x) for x in read_data_bytes(src).decode("utf-8").splitlines() if x.strip()]
    return write_jsonl(dst, [dc_record(r) for r in rows])


def _rec(i: int, sheet, **over) -> dict:
    return {"input": f"q{i}", "raw_input": f"raw q{i}", "target": "1", "steps": [], "final_answer": "1",
            "final_output": "1", "final_cheatsheet": sheet, **over}


def test_result_records_chain_their_final_cheatsheets(tmp_path):
    p = write_jsonl(tmp_path / "gpt-4o_DynamicCheatsheet_Cumulative.jsonl",
                    [_rec(1, SHEET), _rec(2, SHEET + "\nitem 12: x"), _rec(3, "### PREVIOUS SOLUTIONS\nq -> a",
                                                                          raw_input=None)])
    (t,) = load_trajectories(p)
    assert (t.name, t.format) == ("gpt-4o_DynamicCheatsheet_Cumulative", "dc-results")
    assert [(s.step, s.task_id, s.task_text) for s in t.steps] == [(1, "step1", "raw q1"), (2, "step2", "raw q2"),
                                                                  (3, "step3", "q3")]  # no raw_input: the input
    assert t.steps[0].before == "(empty)" and t.steps[0].after == SHEET
    assert [s.before for s in t.steps[1:]] == [s.after for s in t.steps[:-1]]
    assert [s.destructive for s in t.steps] == ["", "", "dump"]


@pytest.mark.parametrize("lines, msg", [
    # truncated: the last record cut mid-way
    ([json.dumps(_rec(1, SHEET)), json.dumps(_rec(2, SHEET))[:40]], r"r\.jsonl:2: invalid JSON .*truncated file\?"),
    ([json.dumps(_rec(1, SHEET)), json.dumps(_rec(2, None))], r"r\.jsonl:2: final_cheatsheet is null: this approach "
                                                             r"keeps no cheatsheet"),
    ([json.dumps(_rec(1, SHEET)), json.dumps({"input": "q2", "final_answer": "1"})],
     r"r\.jsonl:2: no final_cheatsheet; the file's first record is a Dynamic Cheatsheet result file"),
    ([json.dumps(_rec(1, SHEET)), json.dumps(_rec(2, ["a", "b"]))], r"r\.jsonl:2: final_cheatsheet must be a string, "
                                                                    r"got list"),
    ([json.dumps(_rec(1, SHEET, steps="round 0"))], r"r\.jsonl:1: 'steps' must be a list of rounds, got str"),
    (["", json.dumps(["not", "a", "record"])], r"r\.jsonl:2: expected a JSON object"),
    ([json.dumps({"input": "q", "final_answer": "1"})], r"r\.jsonl:1: not a trajectory record: needs memory_before/"
                                                       r"memory_after, previous_cheatsheet/new_cheatsheet, or Dynamic "
                                                       r"Cheatsheet's final_cheatsheet \(keys: final_answer, input\)"),
    # a converted-log file with a result record in it: refused at that line, not silently read another way
    ([json.dumps({"step": 1, "previous_cheatsheet": "(empty)", "new_cheatsheet": SHEET}), json.dumps(_rec(2, SHEET))],
     r"r\.jsonl:2: a Dynamic Cheatsheet per-step log .* record needs string fields previous_cheatsheet and "
     r"new_cheatsheet"),
])
def test_malformed_result_files_are_refused_naming_file_and_line(tmp_path, capsys, lines, msg):
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReplayInputError, match=msg):
        load_trajectories(p)
    assert main(["replay", str(p), "--encoder", "hashing:64", "--warmup", "0", "--settings", "mmt"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {p}:") and re.search(msg, err[0])


def test_the_converted_gpt4o_dc_rs_file_in_dc_format_replays_as_the_converted_form(tmp_path):
    dc_file = to_dc_results(GPT, tmp_path / "gpt-4o_DynamicCheatsheet_RetrievalSynthesis.jsonl")
    (conv,) = load_trajectories(GPT)
    (raw,) = load_trajectories(dc_file)
    assert (conv.format, raw.format, len(raw.steps)) == ("dc-steps", "dc-results", 30)
    assert [(s.step, s.task_text, s.before, s.after) for s in raw.steps] == [
        (s.step, s.task_text, s.before, s.after) for s in conv.steps]
    assert sum(s.destructive == "dump" for s in raw.steps) == 11 and sum(s.destructive == "wipe" for s in raw.steps) == 2
    settings = {k: PRESETS[k] for k in ("mmt", "recommended")}
    enc = {"hashing": get_encoder("hashing")}
    rows_conv, _ = run_grid([conv], enc, settings, [0, 20])
    rows_raw, _ = run_grid([raw], enc, settings, [0, 20])
    strip = lambda rows: [{k: v for k, v in r.items() if k != "trajectory"} for r in rows]  # noqa: E731
    assert strip(rows_raw) == strip(rows_conv)
    got = {(r["setting"], r["warmup"]): (r["fired"], r["dump_caught"], r["wipe_caught"], r["any_in_warmup"])
           for r in rows_raw}
    assert got[("mmt", 0)] == (29, 11, 2, 0) and got[("mmt", 20)] == (5, 5, 0, 8)
    assert got[("recommended", 0)][1:3] == got[("recommended", 20)][1:3] == (11, 2)


def test_cli_says_which_format_it_read_for_each_file(tmp_path, capsys):
    folder = tmp_path / "mixed"
    folder.mkdir()
    to_dc_results(GPT, folder / "gpt-4o_DynamicCheatsheet_RetrievalSynthesis.jsonl")
    (folder / "converted.jsonl").write_text(shipped_text("dc-trajectories/aime_2025_claude-3-5-sonnet_dc-cu.jsonl"))
    out = tmp_path / "out"
    assert main(["replay", str(folder), "--encoder", "hashing:256", "--warmup", "0", "--settings", "mmt",
                 "--out", str(out)]) == 0
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("replay: read ")]
    assert err == [
        "replay: read converted as Dynamic Cheatsheet per-step log (previous_cheatsheet/new_cheatsheet per step): 30 "
        "steps",
        "replay: read gpt-4o_DynamicCheatsheet_RetrievalSynthesis as Dynamic Cheatsheet result file (final_cheatsheet "
        "per task; the memory before a task is the previous task's): 30 steps"]
    data = json.loads((out / "replay.json").read_text())
    assert data["inputs"] == [{"trajectory": "converted", "format": "dc-steps", "steps": 30},
                              {"trajectory": "gpt-4o_DynamicCheatsheet_RetrievalSynthesis", "format": "dc-results",
                               "steps": 30}]
    assert "- gpt-4o_DynamicCheatsheet_RetrievalSynthesis: Dynamic Cheatsheet result file" in (
        out / "replay.md").read_text()
