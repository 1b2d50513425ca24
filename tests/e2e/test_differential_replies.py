"""Differential test at the level of words and replies: our pipeline (the paper preset, run/loop.run_method, the real
LLM client and reply normalisation) against the authors' runner step as reference_pipeline.py re-states it in
text mode, with one scripted model that READS what it is sent.

What the pipeline differential (test_differential_pipeline.py) cannot see, this one can:

* the model answers from the messages: it reads the options as the prompt lists them (and writes the letter shown
  next to the option it picks, so the option ORDER changes what it writes), follows the answer format the prompt
  gives as an example (``(A)`` or a bare letter), restates the operation format lines it was given in its thinking,
  and draws its answer from a hash that includes the message SHAPE (system + user, or one user text with
  [SYSTEM] / [HUMAN] sections), as any prompt change moves a real model's sample;
* replies reach our pipeline as a server sends them (llm/fake.FakeBackend -> llm/reasoning.normalise_response ->
  the LLM client): thinking in ``<think>`` tags in the content, or in a ``reasoning`` / ``reasoning_content`` field,
  and cut off at ``max_tokens`` (counted in words) with finish_reason "length", inside the thinking or inside the
  answer. The reference gets the raw vLLM text the authors' client returns (thinking included, cut the same way);
* both sides' checker verdicts are compared on those replies: stream, replays (old and new memory), the held-out
  test and the Fig. 4 checkpoints (the authors' restore of the logged memory);
* the sampling parameters of every call are compared (temperature, max_tokens, presence_penalty, top_p, top_k,
  min_p; nothing else sent), the message shape of every call, and the reply the model wrote to it.

Asserted identical on every call and step, over GPQA-like rows loaded by each side's own loader (ours: the
dataset loader with the run's option order; theirs: options shuffled by the question alone): every call's
structured inputs, shape and parameters; stream and replay verdicts; stored records (exact texts); decisions;
deployed memory; test and checkpoint verdicts. Our structured inputs are read from the values our prompt templates
were filled with (as in the pipeline differential); the model's choice of content follows them, its form follows
the words.

The power check (``test_each_difference_is_seen``) re-introduces one known difference at a time (our own options,
or the behaviour before the fix) and asserts where the comparison first fails.
"""
from __future__ import annotations

import contextvars
import csv
import hashlib
import json
import re
from pathlib import Path

import pytest

from janus_memory.llm.client import LLMClient
from janus_memory.llm.fake import FakeBackend
from janus_memory.run.build import Context, load_splits
from janus_memory.settings.config import RunConfig
from janus_memory.tasks import get_family
from janus_memory.tasks import multiple_choice as mc_mod
from janus_memory.tasks.checker_paper import with_checker
from janus_memory.tasks.data import stable_shuffle
from janus_memory.updaters import dc as dc_mod
from janus_memory.updaters import expel as expel_mod
from reference_pipeline import MARK, RefPipeline, gpqa_entries
from test_differential_pipeline import (
    JANUS,
    TOPICS,
    WORDS,
    OurClient,
    ScriptedModel,
    _h,
    compare_steps,
    reference_steps,
    run_collected,
)
from updater_fakes import HashEncoder

N_STEPS = 36
N_TEST = 10
MAX_NEW_TOKENS = 60  # the authors' max_new_tokens; ours: solver_max_tokens 60, curator_max_tokens 512
CHECKPOINTS = [0.05, 0.5]  # steps 2 and 18 of 36
EMPTY_SEED = 3  # rows of this seed leave ExpeL without a rule after steps 1 and 2 (the reference's log says so)


# ------------------------------------------------------------------------------------------ data
def make_rows(seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(gpqa_main rows, gpqa_diamond rows) with the official columns; the diamond questions are in main too, as in
    the real files, so both loaders must take them out of the stream. Two rows in three have a space or a line
    break at both ends of the question (the authors seed the option order with the question as the file holds it)."""
    rows = []
    for i in range(N_STEPS + N_TEST):
        h = _h("row", seed, i)
        topic = TOPICS[h % 4]
        extra = " ".join(WORDS[(h >> (8 * j)) % len(WORDS)] for j in range(1, 3))
        answers = [f"OPT{i:03d}{col} {WORDS[(h >> (5 * k + 3)) % len(WORDS)]} value" for k, col in enumerate("ABCD")]
        ends = ("", " ", "\n")[i % 3]  # spaces or a line break at a question's ends, as some file rows have
        rows.append({"Question": f"{ends}QST{i:03d} {' '.join(topic)} {extra}?{ends}", "Correct Answer": answers[0],
                     "Incorrect Answer 1": answers[1], "Incorrect Answer 2": answers[2],
                     "Incorrect Answer 3": answers[3], "Record ID": f"rec{(h >> 50) % 10 ** 6:06d}{i:03d}"})
    return rows, rows[N_STEPS:]


def write_gpqa(folder: Path, main: list[dict], diamond: list[dict]) -> Path:
    (folder / "gpqa").mkdir(parents=True, exist_ok=True)
    for name, rows in (("gpqa_main.csv", main), ("gpqa_diamond.csv", diamond)):
        with open(folder / "gpqa" / name, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return folder


# ------------------------------------------------------------------------------------------ the reading model
_EXAMPLE_PAREN = re.compile(r"(?:e\.g\.,?|for example|such as)[^\n]{0,80}?\(([A-J])\)", re.IGNORECASE)
_OPTION_LINE = re.compile(r"^\s*\(?([A-J])[.):]\s+(\S.*?)\s*$", re.MULTILINE)
_FORMAT_LINE = re.compile(r"^\s*(?:ADD|EDIT|AGREE|REMOVE)\b.*$", re.MULTILINE)
_AUTHORS_OP = re.compile(r"((?:REMOVE|EDIT|ADD|AGREE)(?: \d+)?):\s*(.*)")  # ExpeL._parse_rules_ops' pattern


_SECTION_KINDS = (("examples", "EXAMPLE"), ("rules", "RULE"), ("notes", "REFLECTION|NOTES"), ("format", "FORMAT"),
                  ("attempt", "ATTEMPT"), ("problem", "PROBLEM"))
_PLACEHOLDER = re.compile(r"^\((?:none|empty)\)$", re.MULTILINE)


def layout_of(text: str) -> tuple:
    """A solver prompt's sections as a reader tells them apart: the kind of each top-level heading ("# ..."), in
    order, with its body when that is a placeholder ("(none)", "(empty)"), else "*"."""
    parts = re.split(r"^# (.*)$", text, flags=re.MULTILINE)
    out = []
    for heading, body in zip(parts[1::2], parts[2::2]):
        kind = next((k for k, words in _SECTION_KINDS if re.search(words, heading.upper())), "other")
        out.append((kind, body.strip() if _PLACEHOLDER.fullmatch(body.strip()) else "*"))
    return tuple(out)


def shape_of(messages: list[dict], kind: str = "") -> tuple:
    """The roles sent; for a single user text the [SYSTEM] / [HUMAN] section markers it holds; the placeholder
    lines it shows, in order; and for a solver prompt of ExpeL its sections (:func:`layout_of`)."""
    roles = tuple(m["role"] for m in messages)
    text = messages[-1]["content"]
    shape = roles
    if roles == ("user",):
        shape += tuple(re.findall(r"^\[(SYSTEM|HUMAN)\]$", text, re.MULTILINE))
    shape += tuple(_PLACEHOLDER.findall(text))
    return shape + (layout_of(text),) if kind == "expel_solver" else shape


def cut(raw: str, max_tokens: int | None) -> tuple[str, str]:
    """The reply cut after ``max_tokens`` words (this model's tokens): (text, finish_reason)."""
    words = list(re.finditer(r"\S+", raw))
    if max_tokens is None or len(words) <= max_tokens:
        return raw, "stop"
    return raw[:words[max_tokens - 1].end()], "length"


class ReadingModel(ScriptedModel):
    """The pipeline differential's scripted model, made to read its messages (module docstring). The content of a
    reply (right or wrong, which rule operations) follows the call's structured inputs and the message shape; its
    form (which letter, in which format, what the thinking restates, where it is cut) follows the words."""

    def __init__(self, rows: list[dict]):
        super().__init__([])
        self.gold_text = {r["Question"].strip()[:6]: r["Correct Answer"] for r in rows}
        self.log: list[dict] = []  # per call: the structured inputs, the shape, the sampling parameters, the reply
        self.stats = {"cut_in_thinking": 0, "cut_in_answer": 0, "cut_in_thinking_gold_a": 0, "paren": 0,
                      "restated_format": 0}

    def __call__(self, call: dict, messages: list[dict], params: dict) -> str:
        return self.complete(call, messages, params)[0]

    def complete(self, call: dict, messages: list[dict], params: dict) -> tuple[str, str]:
        shape = shape_of(messages, call["kind"])
        entry = {"call": call, "shape": shape, "params": params}
        self.log.append(entry)
        key = json.dumps({**{k: v for k, v in call.items() if k != "unused"}, "shape": shape}, sort_keys=True)
        n = self.seen[key] = self.seen.get(key, -1) + 1
        h = _h(key, n)
        text = "\n".join(m["content"] for m in messages)
        self.read = {"text": text, "paren": bool(_EXAMPLE_PAREN.search(text)),
                     "format_lines": _FORMAT_LINE.findall(text)}
        reasoning, answer = getattr(self, "_" + call["kind"])(call, h)
        raw = f"<think>\n{reasoning}\n</think>\n\n{answer}" if reasoning else answer
        out, finish = cut(raw, params.get("max_tokens"))
        entry["reply"] = self._restated_as_read(out)
        if finish == "length":
            inside = "</think>" not in out and out.startswith("<think>")
            self.stats["cut_in_thinking" if inside else "cut_in_answer"] += 1
            task_gold = self._shown_gold(call)
            if inside and task_gold == "A" and call["kind"] == "expel_solver" and call["phase"] == "stream":
                self.stats["cut_in_thinking_gold_a"] += 1
        return out, finish

    def _restated_as_read(self, reply: str) -> str:
        """The reply as compared: each restated format line (its wording is each side's own) replaced by what the
        authors' operation pattern reads in it."""
        lines = set(self.read["format_lines"])
        return "\n".join(f"[format line; read as {_AUTHORS_OP.findall(ln)}]" if ln in lines else ln
                         for ln in reply.split("\n"))

    # ---- reading the problem
    def _options(self, call) -> list[tuple[str, str]]:
        """The options of the current problem as the prompt lists them: the labelled lines after its question."""
        text = self.read["text"]
        at = text.rfind(call["input"][0])
        return [(m.group(1), m.group(2)) for m in _OPTION_LINE.finditer(text[at:])
                if MARK.match(m.group(2))][:4]

    def _shown_gold(self, call) -> str | None:
        if "input" not in call or not call["input"]:
            return None
        shown = self._options(call)
        gold = self.gold_text.get(call["input"][0])
        return next((label for label, text in shown if text == gold), None)

    def _pick(self, call, h) -> tuple[str, str]:
        """(the letter written, in the format the prompt shows; the gold option's text)."""
        shown = self._options(call)
        gold_text = self.gold_text[call["input"][0]]
        texts = [t for _, t in shown]
        assert gold_text in texts, f"the prompt does not list the options: {self.read['text'][-400:]}"
        quality = (int(hashlib.sha256(call["memory"].encode()).hexdigest()[:2], 16) % 40 + 35) / 100
        pos = texts.index(gold_text)
        if (h % 1000) / 1000 >= quality:
            pos = (pos + 1 + (h >> 20) % 3) % len(texts)
        letter = shown[pos][0]
        if self.read["paren"]:
            self.stats["paren"] += 1
            return f"({letter})", gold_text
        return letter, gold_text

    def _long(self, h, lead: str, n: int = 80) -> str:
        """A long passage (it is cut at max_tokens): it starts like a real model's thinking, "Alright, ..."."""
        return f"{lead} TH{self._id(h, 7)} " + " ".join(self._w(h + j, j % 5) for j in range(n))

    # ---- replies
    def _dc_solver(self, call, h):
        w, gold_text = self._pick(call, h)
        v = (h >> 12) % 8
        if v == 0:
            return "", f"Working it out.\nFINAL ANSWER: <answer>{w}</answer>"
        if v == 1:  # the gold text in the thinking only: the authors' checker credits it
            return f"TH{self._id(h)} maybe {gold_text}", f"FINAL ANSWER: <answer>{w}</answer>"
        if v == 2:  # the answer alone: the first-character rule reads it
            return "", w
        if v == 3:  # a draft answer tag in the thinking
            return f"TH{self._id(h)} first guess <answer>{'ABCD'[(h >> 30) % 4]}</answer>", f"<answer>{w}</answer>"
        if v == 4:  # cut off inside the thinking
            return self._long(h, "Alright,"), f"FINAL ANSWER: <answer>{w}</answer>"
        if v == 5:  # cut off inside the answer
            return f"TH{self._id(h)} short", self._long(h, "Alright, the answer:") + f" <answer>{w}</answer>"
        return f"TH{self._id(h)} reasoning {self._w(h, 2)}", f"FINAL ANSWER: <answer>{w}</answer>"

    def _expel_solver(self, call, h):
        w, gold_text = self._pick(call, h)
        tr = f"TR{self._id(h)}"
        v = (h >> 12) % 9
        if v == 0:
            return "", f"<trajectory>\n{tr} compare the options\n</trajectory>\n<final_answer>{w}</final_answer>"
        if v == 1:
            return (f"TH{self._id(h, 1)} maybe {gold_text}",
                    f"<trajectory>{tr} short</trajectory>\n<final_answer>{w}</final_answer>")
        if v == 2:  # no blocks: the answer alone
            return "", w
        if v == 3:  # draft blocks in the thinking: the first blocks (thinking included) are read
            draft = "ABCD"[(h >> 30) % 4]
            return (f"TH{self._id(h, 1)} <trajectory>DR{self._id(h, 2)} draft</trajectory>"
                    f"<final_answer>{draft}</final_answer>",
                    f"<trajectory>{tr}</trajectory>\n<final_answer>{w}</final_answer>")
        if v == 4:
            lines = [f"think: TH{self._id(h, 1)} the {self._w(h, 1)}", f"> look {tr}", "step a", "step b",
                     f"think: TH{self._id(h, 2)} then {self._w(h, 2)}", f"> check RF{self._id(h, 3)}", "step c"]
            body = "\n".join(lines)
            return f"TH{self._id(h, 4)} plan", f"<trajectory>\n{body}\n</trajectory>\n<final_answer>{w}</final_answer>"
        if v in (5, 6):  # cut off inside the thinking
            return self._long(h, "Alright,"), f"<trajectory>{tr}</trajectory>\n<final_answer>{w}</final_answer>"
        if v == 7:  # cut off inside the trajectory
            return f"TH{self._id(h, 1)} short", f"<trajectory>{tr} " + self._long(h, "Alright, so") + "</trajectory>"
        return (f"TH{self._id(h, 1)} reasoning {self._w(h, 3)}",
                f"<trajectory>\n{tr} {self._w(h, 1)}\n</trajectory>\n<final_answer>{w}</final_answer>")

    def _expel_reflection(self, call, h):
        if h % 5 == 4:  # cut off inside the thinking: the whole raw reply is the reflection
            return self._long(h, f"Alright, RF{self._id(h)}"), f"<reflection>RF{self._id(h, 1)} late</reflection>"
        return super()._expel_reflection(call, h)

    def _ops(self, call, h):
        reasoning, ops = super()._ops(call, h)
        if h % 3 == 0 and self.read["format_lines"]:  # the thinking restates the format it was given
            self.stats["restated_format"] += 1
            restated = "The forms I may use:\n" + "\n".join(self.read["format_lines"])
            reasoning = f"{restated}\n{reasoning}" if reasoning else restated
        return reasoning, ops

    _expel_pair = _ops
    _expel_batch = _ops


# ------------------------------------------------------------------------------------------ our side
ROLE: contextvars.ContextVar[str] = contextvars.ContextVar("role", default="solver")
_WIRE = ("content", "reasoning", "reasoning_content")


class RoleClient(LLMClient):
    """The real LLM client; it only notes each request's role (the backend uses it to tell the phase)."""

    async def achat(self, messages, *, role="solver", **kw):
        ROLE.set(role)
        return await super().achat(messages, role=role, **kw)

    async def achat_many(self, batch, *, role="solver", **kw):
        ROLE.set(role)
        return await super().achat_many(batch, role=role, **kw)


def sent_params(req) -> dict:
    """The sampling parameters a request sends (``None``: not sent), top_k / min_p from its extra body."""
    extra = dict(req.extra_body or {})
    out = {"temperature": req.temperature, "max_tokens": req.max_tokens, "presence_penalty": req.presence_penalty,
           "top_p": req.top_p, "top_k": extra.pop("top_k", None), "min_p": extra.pop("min_p", None),
           "frequency_penalty": req.frequency_penalty, "stop": req.stop, "seed": req.seed}
    assert not extra, f"unexpected extra_body keys {extra}"
    return out


def on_the_wire(raw: str, finish: str, h: int) -> dict:
    """The server's message for a raw reply: the thinking in the content, or in a reasoning field (a reasoning
    parser's split; a reply cut off inside its thinking has no content at all)."""
    wire = _WIRE[h % 3]
    if wire == "content" or not raw.startswith("<think>\n"):
        return {"content": raw, "finish_reason": finish}
    body = raw[len("<think>\n"):]
    if "\n</think>\n\n" not in body:
        return {"content": None, wire: body, "finish_reason": finish}
    thinking, answer = body.split("\n</think>\n\n", 1)
    return {"content": answer, wire: thinking, "finish_reason": finish}


class ReadingClient(OurClient):
    """Reads our calls' structured inputs from the filled templates, as the pipeline differential does, and answers
    through the reading model as a server would."""

    def respond(self, msgs, req, idx):
        role = ROLE.get()
        call = self.to_call(msgs, role)
        raw, finish = self.model.complete(call, msgs, sent_params(req))
        return on_the_wire(raw, finish, _h(raw, idx))


def run_ours(method, trigger, folder, monkeypatch, *, with_janus=True, updater_config=None, settings=None,
             rows=None, checkpoints=CHECKPOINTS):
    model = ReadingModel(rows)
    rec = ReadingClient(model)
    monkeypatch.setattr(dc_mod, "fill", rec.fill(dc_mod.fill))
    monkeypatch.setattr(expel_mod, "fill", rec.fill(expel_mod.fill))
    cfg = RunConfig.parse({"dataset": "gpqa", "data_dir": str(folder), "updater": method,
                           "controller": "janus" if with_janus else "none",
                           "janus": {**JANUS, "trigger": trigger}, "updater_config": updater_config or {},
                           "solver_max_tokens": MAX_NEW_TOKENS, "curator_max_tokens": 512,
                           "checkpoints": checkpoints, **(settings or {})})
    stream, test = load_splits(cfg)
    client = RoleClient(FakeBackend(default=rec.respond, name="reading"), cache=None, concurrency=1, max_retries=0)
    ctx = Context(settings=cfg, family=with_checker(get_family("gpqa"), cfg.checker_mode()), stream=stream,
                  test=test, client=client, encoder=HashEncoder())
    return run_collected(ctx, method, with_janus, monkeypatch, checkpoints=True), model


def run_reference(method, trigger, rows, diamond, *, with_janus=True, seed=0, checkpoints=CHECKPOINTS):
    model = ReadingModel(rows)
    enc = HashEncoder()
    stream, test = gpqa_entries(rows, diamond, sample_seed=seed)
    ref = RefPipeline(method, None, enc.encode, with_janus=with_janus, policy=trigger, k=JANUS["warmup"],
                      k_prime=JANUS["coverage_size"], l_fresh=JANUS["fresh_size"], model=model,
                      max_new_tokens=MAX_NEW_TOKENS)
    steps = reference_steps(ref, method, enc, stream)
    final = ref.test(test)
    steps.append({"test": final})
    steps.append({"checkpoints": ref.checkpoint_tests(test, checkpoints) + [ref.final_checkpoint(test, final)]})
    return steps, model, ref


def compare(ours, ref, label):
    """Assert identical calls (structured inputs, shape, parameters, reply) and steps; the first difference is
    named."""
    (osteps, omodel), (rsteps, rmodel) = ours, ref
    used = [c for c in rmodel.log if not c["call"].get("unused")]
    for i, (a, b) in enumerate(zip(omodel.log, used)):
        for part in ("call", "shape", "params", "reply"):
            assert a[part] == b[part], f"{label}: model call {i + 1} differs ({part})\nours {a[part]}\nref  {b[part]}"
    assert len(omodel.log) == len(used), f"{label}: {len(omodel.log)} calls (ours) vs {len(used)} (reference)"
    compare_steps(osteps, rsteps, label)


def both(method, trigger, tmp_path, monkeypatch, *, seed=0, with_janus=True, updater_config=None, settings=None,
         checkpoints=CHECKPOINTS):
    main, diamond = make_rows(seed)
    folder = write_gpqa(tmp_path / f"data{seed}", main, diamond)
    ours = run_ours(method, trigger, folder, monkeypatch, with_janus=with_janus, updater_config=updater_config,
                    settings={"seed": seed, **(settings or {})}, rows=main, checkpoints=checkpoints)
    rsteps, rmodel, ref = run_reference(method, trigger, main, diamond, with_janus=with_janus, seed=seed,
                                        checkpoints=checkpoints)
    return ours, (rsteps, rmodel), ref


@pytest.mark.parametrize("method", ["dc_rs", "expel"])
@pytest.mark.parametrize("trigger", ["mmt", "always"])
def test_replies_match_the_authors_runner(method, trigger, tmp_path, monkeypatch):
    stats = {"triggers": 0, "rollbacks": 0, "correct": 0, "test_correct": 0}
    reading = {}
    for seed in (0, 1):
        ours, ref, _ = both(method, trigger, tmp_path, monkeypatch, seed=seed)
        compare(ours, ref, f"{method}/{trigger}/seed {seed}")
        rsteps, rmodel = ref
        stream = rsteps[:N_STEPS]
        stats["triggers"] += sum(s["decision"]["triggered"] for s in stream)
        stats["rollbacks"] += sum(not s["decision"]["accept"] for s in stream)
        stats["correct"] += sum(s["correct"] for s in stream)
        stats["test_correct"] += sum(rsteps[N_STEPS]["test"])
        for k, v in rmodel.stats.items():
            reading[k] = reading.get(k, 0) + v
    # the streams exercise what the test is about: comparisons, rollbacks, both verdicts, cut-off replies
    assert stats["triggers"] >= 8 and stats["rollbacks"] >= 2, stats
    assert 0 < stats["correct"] < 2 * N_STEPS and 0 < stats["test_correct"] < 2 * N_TEST, stats
    assert reading["cut_in_thinking"] > 0 and reading["cut_in_answer"] > 0, reading
    if method == "dc_rs":
        assert reading["paren"] > 0, reading
    else:  # restated format lines, and stream tries cut off inside their thinking on a gold-A question
        assert reading["restated_format"] > 0 and reading["cut_in_thinking_gold_a"] > 0, reading


@pytest.mark.parametrize("method", ["dc_rs", "expel"])
def test_base_method_alone_matches(method, tmp_path, monkeypatch):
    ours, ref, _ = both(method, "mmt", tmp_path, monkeypatch, seed=2, with_janus=False)
    compare(ours, ref, f"{method} without Janus")


def test_a_checkpoint_without_rules_is_restored_as_the_authors_restore_it(tmp_path, monkeypatch):
    """Fig. 4 at a step where ExpeL has no rule: the authors' restore reads the logged "(empty)" as a rule, so the
    checkpoint's test prompts show "1. (empty).", and so must ours."""
    ours, ref, pipeline = both("expel", "mmt", tmp_path, monkeypatch, seed=EMPTY_SEED, checkpoints=[0.03, 0.5])
    assert pipeline.log[0][0] == "(empty)"
    compare(ours, ref, "expel checkpoints")
    memories = [c["call"]["memory"] for c in ref[1].log if c["call"]["phase"] == "test"]
    assert memories.count("1. (empty).") == N_TEST  # the step-1 checkpoint's test prompts


def _old_thinking_output(result):
    """The raw output as built before the fix: a reply cut off inside its thinking lost its "<think>" opener."""
    from janus_memory.updaters.prompt_text import visible_text

    shown = visible_text(result)
    if result.reasoning and shown is not result.reasoning:
        return f"<think>\n{result.reasoning}\n</think>\n\n{shown}"
    return shown


@pytest.mark.parametrize("method,option,where", [
    # the five differences, each re-introduced alone through our own option (or the code before the fix)
    ("dc_rs", {"settings": {"option_order": "seeded"}}, "model call 1 differs (call)"),
    ("dc_rs", {"question_key": "stripped"}, "model call 3 differs (call)"),  # the order seeded by the stripped text
    ("dc_rs", {"updater_config": {"letter_format": "bare"}}, "model call 2 differs (reply)"),  # D, not (D)
    ("dc_rs", {"cut_off": "old"}, "step 14 differs"),  # the stored pair output lost its <think> opener
    # the stream check read "Alright, ..." of a cut-off thinking as the gold A: no reflection followed
    ("expel", {"cut_off": "old"}, "model call 107 differs (call)"),
    ("expel", {"updater_config": {"ops_format": "short"}}, "model call 4 differs (reply)"),
    ("expel", {"updater_config": {"message_shape": "system_user"}}, "model call 1 differs (shape)"),
    # the solver's sections in our order (rules first, "(none)" for no note)
    ("expel", {"updater_config": {"solver_layout": "rules_first"}}, "model call 1 differs (shape)"),
    ("expel", {"settings": {"checkpoint_restore": "exact"}, "seed": EMPTY_SEED, "checkpoints": [0.03, 0.5]},
     "model call 307 differs (call)"),
    # and the sampling parameters
    ("expel", {"updater_config": {"sampling": "backend"}}, "model call 1 differs (params)"),
    ("dc_rs", {"updater_config": {"presence_penalty": None}}, "model call 2 differs (params)"),  # the solver
])
def test_each_difference_is_seen(method, option, where, tmp_path, monkeypatch):
    """Power check: the comparison fails where each difference first shows."""
    option = dict(option)
    if option.pop("question_key", None) == "stripped":
        monkeypatch.setattr(mc_mod, "stable_shuffle", lambda items, key: stable_shuffle(items, key.strip()))
    if option.pop("cut_off", None) == "old":
        monkeypatch.setattr(dc_mod, "thinking_output", _old_thinking_output)
        monkeypatch.setattr(expel_mod, "thinking_output", _old_thinking_output)
    ours, ref, _ = both(method, "mmt", tmp_path, monkeypatch, **option)
    with pytest.raises(AssertionError, match=re.escape(where)):
        compare(ours, ref, "power")
