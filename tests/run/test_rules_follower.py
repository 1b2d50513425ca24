"""The scripted model that follows the rules its memory states (``--backend fake --model rules[:NOISE]``), and a
``rules_late`` run with it end to end: blind vs Janus with a falsified rule and a wipe planted, the closing summary's
and the report's "what the memory kept" columns with exact values. No model weights; the hashing encoder."""
from __future__ import annotations

import json
import re

import pytest

from janus_memory.errors import ConfigError
from janus_memory.run.fake_llm import parse_model, rules_follower, scripted_backend
from janus_memory.tasks.rules import generate
from janus_memory.values import Task

STREAM, TEST, WORLD = generate("rules_late", 0, 12)  # handling $2, order limit 15, crate 6 boxes, shipping $4 per kg


def _ask(model, task, memory: str = "") -> str:
    return model.reply([{"role": "system", "content": "You answer support tickets."},
                        {"role": "user", "content": f"{memory}\n\n# CURRENT PROBLEM\n{task.question}"}])


def _answer(text: str) -> int:
    return int(re.search(r"Answer: (-?\d+)", text).group(1))


def test_right_exactly_when_the_memory_states_every_needed_rule():
    model = rules_follower(STREAM + TEST)
    combo = next(t for t in TEST if t.meta["rules"] == ["crate", "order_limit"])
    crate, limit = (WORLD.statement(k) for k in ("crate", "order_limit"))
    assert _answer(_ask(model, combo, f"Q: {crate}\nQ: {limit}")) == int(combo.gold)
    assert _answer(_ask(model, combo, f"Q: {crate}")) == int(combo.gold) + 1  # a rule missing: wrong
    assert _answer(_ask(model, combo, "")) == int(combo.gold) + 1
    # a falsified statement: the answer under the false value, as a model that follows its memory
    false = crate.replace("6 boxes", "9 boxes")
    n = combo.meta["params"]["n"]
    assert _answer(_ask(model, combo, f"Q: {false}\nQ: {limit}")) == -(-n * 9 // 15)
    # two statements of one rule: the one stated last before the question counts
    assert _answer(_ask(model, combo, f"Q: {false}\nQ: {crate}\nQ: {limit}")) == int(combo.gold)
    # an intro ticket states its own rule
    intro = STREAM[4]
    assert intro.meta["kind"] == "intro" and _answer(_ask(model, intro)) == int(intro.gold)
    # words that are not the generator's statement are no rule to this model
    assert _answer(_ask(model, combo, "crates hold 6 boxes; orders hold 15 boxes")) == int(combo.gold) + 1


def test_other_families_are_answered_as_the_default_scripted_backend():
    other = Task("gsm8k:1", "gsm8k", "A farmer has 12 cows and buys 3 more. How many cows?", "15")
    msgs = [{"role": "user", "content": other.question}]
    assert rules_follower([other]).reply(msgs) == scripted_backend([other]).reply(msgs)


def test_noise_flips_a_frozen_share_of_the_answers():
    quiet, noisy = rules_follower(STREAM + TEST), rules_follower(STREAM + TEST, 0.1)
    sheet = WORLD.sheet()
    flips = 0
    for i, t in enumerate(TEST * 10):
        memory = f"{sheet}\nnote {i}"
        a, b = _answer(_ask(quiet, t, memory)), _answer(_ask(noisy, t, memory))
        assert a == int(t.gold) and b in (int(t.gold), int(t.gold) + 1)
        flips += a != b
        assert _ask(noisy, t, memory) == _ask(noisy, t, memory)  # the same prompt, the same answer
    assert flips == 26  # 240 prompts at 10%: pinned (a sha256 draw per prompt)
    assert rules_follower([], 0.1).identity.startswith("fake:rules-follower-v1:noise=0.1:")
    assert quiet.identity != noisy.identity != scripted_backend([]).identity


@pytest.mark.parametrize("name,noise", [(None, None), ("rules", 0.0), ("rules:0.1", 0.1), ("rules:0", 0.0),
                                        ("rules:1", 1.0)])
def test_model_names(name, noise):
    assert parse_model(name) == noise


@pytest.mark.parametrize("name,message", [
    ("rules:2", "--model rules:2: the noise after 'rules:' must be a number in [0, 1], e.g. rules:0.1"),
    ("rules:x", "--model rules:x: the noise after 'rules:' must be a number in [0, 1], e.g. rules:0.1"),
    ("rules:-0.1", "--model rules:-0.1: the noise after 'rules:' must be a number in [0, 1], e.g. rules:0.1"),
    ("gpt-4", "--backend fake takes no --model but 'rules' or 'rules:NOISE' (a scripted model that follows the rules "
              "its memory states); got 'gpt-4'"),
])
def test_bad_model_names_are_one_line(name, message):
    with pytest.raises(ConfigError) as e:
        parse_model(name)
    assert str(e.value) == message


# ------------------------------------------------------------------------------------------------ end to end
@pytest.fixture
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))


def _rows(text: str, title: str) -> dict[str, list[str]]:
    """The rows of the console table titled ``title``: {first cell: the other cells}."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip() == title)
    out = {}
    for ln in lines[start + 1:]:
        if not ln.strip() or ln.lstrip()[0] not in "┃│┏┡└━┗":
            break
        cells = [c.strip() for c in ln.strip().strip("│").split("│")]
        if ln.lstrip().startswith("│"):
            out[cells[0]] = cells[1:]
    return out


def test_a_rules_late_run_shows_what_the_memory_kept(tmp_path, capsys, _cache):
    """Warm-up 3 on a 12-ticket stream (the late rules are stated at steps 5 and 10), a falsified rule at step 7 and
    a wipe at step 11; ExpRAG shows its whole bank. Blind deploys both and ends holding 1 of the 4 stated rules;
    the paper's controller blocks both, rolls back none of the 10 genuine candidates and holds all 4."""
    from janus_memory.cli import main

    out = tmp_path / "r"
    (tmp_path / "x.yaml").write_text("updater: exprag\nupdater_config: {janus_replay: whole_bank, top_k: 16}\n")
    rc = main(["run", "--config", str(tmp_path / "x.yaml"), "--backend", "fake", "--model", "rules",
               "--dataset", "rules_late", "--stream-size", "12", "--test-size", "8", "--encoder", "hashing:64",
               "--warmup", "3", "--trigger", "always", "--janus-preset", "paper", "--inject", "falsify@7,wipe@11",
               "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    kept = _rows(text, "what the memory kept")
    assert kept == {"exprag": ["—", "1 of 4", "handling, order_limit, crate"],
                    "exprag+janus": ["0 of 10", "4 of 4", "—"]}
    summary = json.loads((out / "summary.json").read_text())
    m = summary["methods"]
    assert (m["exprag"]["test_correct"], m["exprag+janus"]["test_correct"]) == (1, 8)
    assert m["exprag"]["injections"]["deployed"] == 2 and m["exprag+janus"]["injections"]["blocked"] == 2
    assert "[exprag+janus] step 7: injected falsify candidate -> blocked" in text
    assert "[exprag+janus] step 11: injected wipe candidate -> blocked" in text
    # the falsified ticket in blind's memory states the false rule (the order limit: 15 -> 18)
    final = (out / "exprag" / "final_memory.txt").read_text()
    assert "One order holds at most 15 boxes" not in final

    rc = main(["report", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert _rows(text, "what the memory kept") == {
        "exprag": ["Rules-late (generated)", "1", "—", "1 of 4", "handling, order_limit, crate"],
        "exprag+janus": ["Rules-late (generated)", "1", "0 of 10", "4 of 4", "—"]}
    md = (out / "report" / "report.md").read_text()
    assert "| exprag+janus | Rules-late (generated) | 1 | 0 of 10 | 4 of 4 | — |" in md
    assert "| exprag | Rules-late (generated) | 1 | — | 1 of 4 | handling, order_limit, crate |" in md


@pytest.mark.parametrize("updater", ["dc_rs", "expel", "ace", "reasoning_bank", "exprag"])
def test_falsify_and_wipe_take_effect_on_rules_late_with_every_injectable_updater(tmp_path, capsys, _cache, updater):
    """No controller (the injections alone): each planted candidate is built and deployed, and the falsified one is
    not a no-op (a memory without the rule's number gets the ticket's rule with a wrong number planted)."""
    from janus_memory.cli import main

    out = tmp_path / updater
    extra = []
    if updater == "exprag":
        (tmp_path / "x.yaml").write_text("updater_config: {top_k: 16}\n")
        extra = ["--config", str(tmp_path / "x.yaml")]
    rc = main(["run", "--backend", "fake", "--model", "rules", "--dataset", "rules_late", "--stream-size", "10",
               "--test-size", "4", "--updater", updater, "--controller", "none", "--encoder", "hashing:64",
               "--inject", "falsify@6,wipe@9", "--out", str(out), "-q", *extra])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert f"[{updater}] step 6: injected falsify candidate -> deployed (no controller)" in text
    assert f"[{updater}] step 9: injected wipe candidate -> deployed (no controller)" in text
    recs = [json.loads(x) for x in (out / updater / "steps.jsonl").read_text().splitlines()]
    assert recs[5]["info"]["injected"]["kind"] == "falsify" and recs[5]["info"]["injected"]["noop"] is False
    assert recs[8]["info"]["injected"]["kind"] == "wipe"
