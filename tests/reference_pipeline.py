"""An independent reference of the authors' runner step for DC-RS and ExpeL, each wrapped by Janus, for the
pipeline-level differential test (tests/e2e/test_differential_pipeline.py).

Written from the authors' code as read at GitHub Chen-1031/Janus @ a42b1e6 (``runner.py`` ``Runner.run``,
``methods/DC_RS.py``, ``methods/ExpeL.py`` (``generate`` / ``update_memory`` / ``retrieve_memory`` /
``_build_case_retrieval_docs`` / ``_parse_rules_ops`` / ``_apply_rule_operations`` / ``_normalize_rule_text``),
``methods/janus.py`` (``update_memory``, the adapters, ``_replay_eval``) and ``tasks/task_gpqa.py``
(``evaluate_entry``, ``build_memory_record``), with ../shared/research/paper-spec.md §1.2, §3, §5 and
fidelity-audit-2.md), NOT from ``janus_memory``: nothing from it is imported, and the controller is
``reference_janus.ReferenceJanus`` with its ``kmeans_pytorch_like``.

What is reproduced is the behaviour, never the prompt wording: each model call is described by a *call dict*
(which memory, which retrieved items, which fields), the view both sides of the test can build:

* ``memory``: the exact memory text (DC-RS: the cheatsheet; ExpeL: "1. rule\\n2. rule" or "(empty)");
* every other field: the markers (:data:`MARK`) found in what that field shows, in order; a list of retrieved items
  is a list of ``(similarity with 2 decimals, markers)``, in the order shown.

The scripted model (the test's) answers a call dict with ``(reasoning, text)``; the reference turns that into the
authors' raw vLLM output (Qwen3 keeps its thinking: ``<think>\\nR\\n</think>\\n\\nT``), which is what their code parses,
stores and checks.

Text mode (``RefPipeline(..., model=...)``, tests/e2e/test_differential_replies.py): every call is also sent as the
messages the authors send, with their sampling parameters, and the model answers with the raw vLLM text (thinking
in ``<think>`` tags, cut off at ``max_tokens``). The messages have the authors' SHAPE and FORMAT INSTRUCTIONS, in
this file's own words (their wording is not copied): the DC-RS generator asks for ``FINAL ANSWER: <answer>..``
with an option letter in parentheses as its example; ExpeL's solver is ONE user message with ``[SYSTEM]`` and
``[HUMAN]`` sections; ExpeL's operation format lines put a placeholder, never a number, between the operation and
its colon, so their own operation pattern cannot match them; the GPQA options are shuffled by the question alone
(:func:`gpqa_entries`). Sampling (:func:`authors_params`): temperature 0.7, presence_penalty 1.0 and vLLM's
unrestricted top_p / top_k / min_p on every call; max_tokens M for solving calls (stream, replay, test),
max(M, 512) for the DC-RS curator, min(256, M) for the ExpeL reflection and (assumed, not in the notes) max(M, 512)
for the ExpeL rule curator.

Fig. 4 checkpoints (``checkpoint_tests``): ``make_memory_checkpoints.py`` truncates the per-step memory log and
restores from its last row: DC-RS keeps that sheet and rebuilds its pool from the successful records; ExpeL re-reads
each logged rule line (number dropped, normalised as a rule) with the count 2, so the logged "(empty)" becomes the
rule "(empty)."; the ExpeL success pool is taken as it was at that step (assumed: not in the notes).
"""
from __future__ import annotations

import copy
import hashlib
import math
import random
import re

from reference_janus import ReferenceJanus, kmeans_pytorch_like

# question ids, option ids, and the ids the scripted model writes: sheet items, rules, reflections, trajectories,
# thinking, drafts
MARK = re.compile(r"QST\d{3}|OPT\d{3}[A-D]|(?:SH|RL|RF|TR|TH|DR)[0-9a-f]{6}")
EMPTY = "(empty)"


def marks(text) -> list[str]:
    return MARK.findall(str(text or ""))


def raw_output(reply) -> str:
    """The authors' model output: vLLM's text, thinking included (stripped, as their client strips it)."""
    reasoning, text = reply
    return (f"<think>\n{reasoning}\n</think>\n\n{text}" if reasoning else text).strip()


def tag_content(text: str, name: str) -> str:
    """The authors' ``_extract_tag_content``: both tags present, text between the first pair, stripped."""
    start, end = f"<{name}>", f"</{name}>"
    if not text or start not in text or end not in text:
        return ""
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def cosine(a, b) -> float:
    if not len(a) or not len(b):
        return 0.0
    dot = sum(float(x) * float(y) for x, y in zip(a, b))
    na, nb = math.sqrt(sum(float(x) ** 2 for x in a)), math.sqrt(sum(float(y) ** 2 for y in b))
    return 0.0 if na == 0 or nb == 0 else dot / (na * nb)


# ------------------------------------------------------------------------------------------ the GPQA checker
def _norm(text) -> str:
    return re.sub(r"\s+", " ", ("" if text is None else str(text)).strip().lower())


def _label(text) -> str:
    t = _norm(text)
    return t[0].upper() if t and t[0] in "abcd" else ""


def _answer_tag(text: str) -> str:
    for name in ("answer", "final_answer"):
        found = re.findall(rf"<{name}>(.*?)</{name}>", text, re.IGNORECASE | re.DOTALL)
        if found:
            return found[-1].strip()
    return ""


def gpqa_score(output: str, task) -> float:
    """``GPQATask.evaluate_entry``: the tag's letter or the gold text in the tag, else the output's first
    character, else the gold text anywhere in the output."""
    gold = str(task.gold)
    gold_text = _norm(task.meta["options"]["ABCD".index(gold)])
    out = str(output)
    tag = _answer_tag(out)
    if tag:
        if _label(tag) and _label(tag) == gold:
            return 1.0
        if _norm(tag) and gold_text and gold_text in _norm(tag):
            return 1.0
    if _label(out) and _label(out) == gold:
        return 1.0
    return 1.0 if _norm(out) and gold_text and gold_text in _norm(out) else 0.0


def task_input(task) -> list[str]:
    """What ``task.build_prompt(entry)`` shows: the question and the options."""
    return marks(task.question) + [m for o in task.meta["options"] for m in marks(o)]


# ------------------------------------------------------------------------------------------ GPQA entries
def _gpqa_norm(text) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip().lower()


def gpqa_entries(main_rows: list[dict], diamond_rows: list[dict], sample_seed: int = 0, cap: int = 1000):
    """Their GPQA task: the stream is gpqa_main without the diamond questions (matched on normalised question and
    correct answer), rows with fewer than 4 distinct options skipped, ``random.Random(sample_seed).shuffle``, capped;
    the test is gpqa_diamond in file order. The options of a question are shuffled by the question ALONE: the
    first 16 hex digits of sha256 of the ``Question`` field as the row holds it (not stripped) seed
    ``random.Random``, which shuffles [correct, incorrect 1, 2, 3] (their ``task_gpqa.py``), so neither the record
    id nor the sample seed changes them. Entries are plain objects with ``id``, ``question`` (stripped: the records
    and the retrieval query the authors strip), ``gold`` (the letter), ``meta["options"]``."""
    from types import SimpleNamespace

    def entry(row):
        raw_question = row.get("Question") or ""
        correct = (row.get("Correct Answer") or "").strip()
        options = [correct] + [(row.get(f"Incorrect Answer {i}") or "").strip() for i in (1, 2, 3)]
        if len({_gpqa_norm(o) for o in options if o}) < 4:
            return None
        random.Random(int(hashlib.sha256(raw_question.encode("utf-8")).hexdigest()[:16], 16)).shuffle(options)
        return SimpleNamespace(id=(row.get("Record ID") or "").strip(), question=raw_question.strip(),
                               gold="ABCD"[options.index(correct)], meta={"options": options, "labels": "ABCD"})

    held_out = {(_gpqa_norm(r["Question"]), _gpqa_norm(r["Correct Answer"])) for r in diamond_rows}
    stream = [e for r in main_rows
              if (_gpqa_norm(r["Question"]), _gpqa_norm(r["Correct Answer"])) not in held_out
              and (e := entry(r)) is not None]
    random.Random(sample_seed).shuffle(stream)
    return stream[:cap], [e for e in map(entry, diamond_rows) if e is not None]


# ------------------------------------------------------------------------------------------ their messages
# The authors' message shapes and format instructions, in this file's own words (module docstring).
def gpqa_prompt(task) -> str:
    """``build_prompt``: the question, the labelled choices, the letter alone."""
    choices = "\n".join(f"{label}) {text}" for label, text in zip("ABCD", task.meta["options"]))
    return (f"{task.question}\n\nChoices:\n{choices}\n\n"
            "Think step by step, then give only the letter of the correct choice (A, B, C or D).")


def _user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def dc_pairs_text(items: list[tuple[float, str, str]]) -> str:
    """The retrieved (similarity, question, output) pairs, least similar first, numbered from 1; "(empty)" if none."""
    if not items:
        return EMPTY
    body = "\n".join(f"#### Previous Input #{i} (Similarity: {sim:.2f}):\n{q}\n\n"
                     f"#### Model Solution to Previous Input #{i}:\n{out}\n---" for i, (sim, q, out) in
                     enumerate(items, start=1))
    return ("### PREVIOUS SOLUTIONS (START)\nEarlier attempts, unchecked: borrow ideas, not answers.\n\n"
            f"{body}\n#### PREVIOUS SOLUTIONS (END)")


def dc_curator_messages(sheet: str, pairs: str, next_input: str) -> list[dict]:
    return _user("Rewrite the strategy sheet below for the coming problem: keep what still helps, add what the "
                 "earlier solutions teach, one <memory_item> with <strategy> and <when_to_use> per lesson, after a "
                 "line 'Version: N' and a heading '## General Problem-Solving Heuristics'. Put the sheet inside "
                 "<cheatsheet>...</cheatsheet>.\n\n"
                 f"## SHEET SO FAR\n{sheet}\n\n## SIMILAR EARLIER PROBLEMS\n{pairs}\n\n## COMING PROBLEM\n"
                 f"{next_input}")


def dc_generator_messages(sheet: str, question: str) -> list[dict]:
    """The generator: one user message; the final answer in ``FINAL ANSWER: <answer>..</answer>`` whose example for
    a choice is the letter in parentheses."""
    return _user("Solve the problem below; the strategy sheet may help. If running Python would help, write one "
                 "```python block and end with EXECUTE CODE! on its own line.\n"
                 "Finish with FINAL ANSWER: <answer>your answer</answer>, e.g., (A) for a choice question.\n\n"
                 f"## SHEET\n{sheet}\n\n## QUESTION\n{question}")


EXPEL_SYSTEM = "You are a reasoning agent: solve the problem, reusing the rules and solved examples that apply."


def expel_solver_messages(examples: str, rules: str, reflections: str, attempt: int, problem: str) -> list[dict]:
    """ONE user message with a [SYSTEM] and a [HUMAN] section; their section order: the retrieved examples ("(none)"
    without one), the rules ("(empty)" without one), the reflections on failed tries ("(empty)" without one), the
    attempt number, the output format, the problem."""
    human = (f"# EXAMPLES FROM THE POOL OF SOLVED CASES\n{examples}\n\n# RULES IN FORCE\n{rules}\n\n"
             f"# REFLECTIONS AFTER FAILED TRIES AT THIS TASK\n{reflections}\n\n# CURRENT ATTEMPT: {attempt}\n\n"
             "# OUTPUT FORMAT TO USE\n<trajectory>your steps</trajectory>\n<final_answer>your answer</final_answer>\n\n"
             f"# THE PROBLEM NOW\n{problem}")
    return _user(f"[SYSTEM]\n{EXPEL_SYSTEM}\n\n[HUMAN]\n{human}")


def expel_examples_text(cases: list[dict]) -> str:
    if not cases:
        return "(none)"
    return "\n\n".join(f"Task: {c['question']}\nTrajectory: {c['trajectory']}" for c in cases)


def expel_reflection_messages(reflections: str, problem: str, failed: str) -> list[dict]:
    return _user("This attempt failed. Say briefly why and what to do differently, inside <reflection>..."
                 f"</reflection>.\n\nEarlier notes:\n{reflections or EMPTY}\n\nProblem:\n{problem}\n\n"
                 f"Attempt:\n{failed}")


# their operation forms: a placeholder (never digits) between the operation and its colon
EXPEL_OPS_LINES = ("AGREE <number of a rule>: <that rule>", "REMOVE <number of a rule>: <that rule>",
                   "EDIT <number of a rule>: <the rule rewritten>", "ADD <number for a new rule>: <the new rule>")


def expel_curator_messages(rules: str, body: str) -> list[dict]:
    return _user(f"Maintain the rule list below from these attempts.\n\nRules now:\n{rules}\n\n{body}\n\n"
                 "At most 4 operations, one per line, each as one of:\n" + "\n".join(EXPEL_OPS_LINES))


def authors_params(kind: str, max_new_tokens: int) -> dict:
    """The sampling parameters of a call as their vLLM path sets them (module docstring). ``None``: not set."""
    m = int(max_new_tokens)
    max_tokens = {"dc_curator": max(m, 512), "expel_reflection": min(256, m), "expel_pair": max(m, 512),
                  "expel_batch": max(m, 512)}.get(kind, m)
    return {"temperature": 0.7, "max_tokens": max_tokens, "presence_penalty": 1.0, "top_p": 1.0, "top_k": -1,
            "min_p": 0.0, "frequency_penalty": None, "stop": None, "seed": None}


# ------------------------------------------------------------------------------------------ DC-RS
class RefDCRS:
    """``methods/DC_RS.py`` with top_k 3 and the strict-cheatsheet curator (paper-spec §5.1)."""

    def __init__(self, gen, encode):
        self.gen, self.encode = gen, encode  # gen(call, messages) -> the raw output
        self.cheatsheet = EMPTY
        self.questions: list[str] = []
        self.outputs: list[str] = []
        self.feedback: list[str] = []  # what their checkpoint restore filters the pool by (successes only)
        self.vectors: list = []
        self.pending = None
        self.step_memories = (EMPTY, EMPTY)

    def retrieve(self, task) -> list[dict]:
        if not self.questions:
            return []
        q = self.encode([task.question])[0]
        sims = [cosine(q, v) for v in self.vectors]
        top = sorted(range(len(sims)), key=lambda i: sims[i], reverse=True)[:3]
        return [{"question": self.questions[i], "model_output": self.outputs[i], "score": sims[i]} for i in top]

    def generate(self, task, retrieved) -> str:
        previous = self.cheatsheet
        pairs = [(f"{r['score']:.2f}", marks(r["question"]) + marks(r["model_output"])) for r in retrieved[::-1]]
        text = dc_pairs_text([(r["score"], r["question"], r["model_output"]) for r in retrieved[::-1]])
        cur = self.gen({"phase": "stream", "kind": "dc_curator", "memory": previous, "retrieved": pairs,
                        "input": task_input(task)}, dc_curator_messages(previous, text, gpqa_prompt(task)))
        sheet = tag_content(cur, "cheatsheet") or previous  # no block: the previous sheet
        self.step_memories = (previous, sheet)
        out = self.gen({"phase": "stream", "kind": "dc_solver", "memory": sheet, "retrieved": [],
                        "input": task_input(task)}, dc_generator_messages(sheet, gpqa_prompt(task)))
        self.pending = sheet
        return out

    def update_memory(self, task, record: dict) -> None:
        self.cheatsheet = self.pending
        self.questions.append(record["question"])
        self.outputs.append(record["model_output"])
        self.feedback.append(record["feedback"])
        self.vectors.append(self.encode([record["question"]])[0])

    def snapshot(self):
        return self.cheatsheet

    def restore(self, snap) -> None:
        self.cheatsheet = snap

    def replay_call(self, task, memory: str) -> tuple[dict, list[dict]]:
        """DCRSJanusAdapter.build_solver_prompt: the generator prompt with this sheet, no retrieval."""
        return ({"phase": "replay", "kind": "dc_solver", "memory": memory, "retrieved": [], "input": task_input(task)},
                dc_generator_messages(memory, gpqa_prompt(task)))

    def test_call(self, task) -> tuple[dict, list[dict]]:
        """``test_build_solver_prompt``: the frozen sheet with the top-3 retrieved pairs appended (none: the sheet)."""
        hits = self.retrieve(task)[:3][::-1]
        pairs = [(f"{r['score']:.2f}", marks(r["question"]) + marks(r["model_output"])) for r in hits]
        sheet = self.cheatsheet
        if hits:
            text = dc_pairs_text([(r["score"], r["question"], r["model_output"]) for r in hits])
            sheet = f"{sheet}\n\n## Retrieved Nearest Examples\n{text}"
        return ({"phase": "test", "kind": "dc_solver", "memory": self.cheatsheet, "retrieved": pairs,
                 "input": task_input(task)}, dc_generator_messages(sheet, gpqa_prompt(task)))

    def stored(self) -> dict:
        return {"pool": list(zip(self.questions, self.outputs, self.feedback))}

    def log_row(self) -> tuple:
        """What their per-step memory log lets the checkpoint script restore: the sheet, the records so far."""
        return self.cheatsheet, len(self.questions)

    def restored(self, row: tuple) -> RefDCRS:
        """``restore_state_from_memory`` for a Fig. 4 checkpoint: that sheet, the pool rebuilt from the successful
        records up to that step."""
        sheet, n = row
        keep = [i for i in range(n) if self.feedback[i] == "success"]
        out = copy.copy(self)
        out.cheatsheet = sheet
        out.questions = [self.questions[i] for i in keep]
        out.outputs = [self.outputs[i] for i in keep]
        out.feedback = [self.feedback[i] for i in keep]
        out.vectors = [self.vectors[i] for i in keep]
        return out


# ------------------------------------------------------------------------------------------ ExpeL
_PLACEHOLDERS = {"rule", "<rule>", "strategy", "<strategy>", "insight", "<insight>", "placeholder"}


def normalize_rule(text) -> str:
    """``ExpeL._normalize_rule_text``."""
    clean = str(text or "").strip().strip("- ").strip()
    if not clean:
        return ""
    clean = re.sub(r"\s+", " ", clean)
    low = re.sub(r"[`\"'\u201c\u201d\u2018\u2019]", "", clean.lower().strip())
    low = re.sub(r"\.$", "", low).strip()
    low = re.sub(r"\s*>$", "", re.sub(r"^<\s*", "", low))
    if low in _PLACEHOLDERS or re.fullmatch(r"<?\s*(rule|strategy|insight)\s*\d*\s*>?", low):
        return ""
    return clean if clean.endswith(".") else clean + "."


def parse_ops(text) -> list[tuple[str, str]]:
    out = []
    for head, raw in re.findall(r"((?:REMOVE|EDIT|ADD|AGREE)(?: \d+)?):\s*(.*)", str(text or "")):
        rule = normalize_rule(raw)
        if rule:
            out.append((head.strip(), rule))
    return out


def _rule_index(rules, text):
    for i, (rule, _) in enumerate(rules):
        if rule in text or text in rule:
            return i
    return None


def apply_ops(rules: list, ops: list, max_rules: int = 20) -> list:
    """``ExpeL._apply_rule_operations`` (returns the new list of (rule, count))."""
    if not ops:
        return rules
    rules = list(rules)
    kept = []
    for op, text in ops:
        kind = op.split(" ")[0]
        num = int(op.split(" ")[1]) if " " in op else None
        hit = _rule_index(rules, text)
        if kind == "ADD":
            if hit is None:
                kept.append((op, text))
        elif kind == "EDIT":
            if hit is not None:
                kept.append((f"AGREE {hit + 1}", rules[hit][0]))
            elif num is not None and 1 <= num <= len(rules):
                kept.append((op, text))
        elif hit is not None:
            kept.append((op, text))
    for wanted in ("REMOVE", "AGREE", "EDIT", "ADD"):
        for op, text in kept:
            kind = op.split(" ")[0]
            if kind != wanted:
                continue
            if kind in ("REMOVE", "AGREE"):
                i = _rule_index(rules, text)
                if i is None:
                    continue
                delta = -(3 if len(rules) >= max_rules else 1) if kind == "REMOVE" else 1
                rules[i] = (rules[i][0], rules[i][1] + delta)
            elif kind == "EDIT":
                i = int(op.split(" ")[1]) - 1
                if 0 <= i < len(rules):
                    rules[i] = (text, rules[i][1] + 1)
            else:
                rules.append((text, 2))
    rules = [r for r in rules if r[1] > 0]
    rules.sort(key=lambda r: r[1], reverse=True)
    return rules[:max_rules]


def case_docs(case: dict) -> list[tuple[str, str]]:
    """``ExpeL._build_case_retrieval_docs`` with ``_extract_structured_fields``: (type, text)."""
    question = str(case["question"]).strip()
    trajectory = str(case["trajectory"]).strip()
    reflection = "\n".join(str(r).strip() for r in case["reflections"] if str(r).strip())
    lines = [ln.strip() for ln in trajectory.splitlines() if ln.strip()]
    thoughts, actions, steps = [], [], []
    for ln in lines:
        low = ln.lower()
        if low.startswith("> think") or low.startswith("think:"):
            t = re.sub(r"^>?\s*think:\s*", "", ln, flags=re.IGNORECASE).strip()
            if t:
                thoughts.append(t)
        elif ln.startswith(">"):
            a = re.sub(r"^>\s*", "", ln).strip()
            if a:
                actions.append(a)
        steps.append(ln)
    if not thoughts and trajectory:
        thoughts = [trajectory[:300]]
    if not steps and trajectory:
        steps = [trajectory]
    docs = []
    if question:
        docs.append(("task", question))
    if thoughts:
        docs.append(("thought", "\n".join(thoughts[-3:])))
    if steps:
        docs.append(("step", "\n".join(steps[-5:])))
    if actions:
        docs.append(("action", "\n".join(actions[-5:])))
    if reflection:
        docs.append(("reflection", reflection))
    return [(t, x.strip()) for t, x in docs if x.strip()]


class RefExpeL:
    """``methods/ExpeL.py`` (ExpeL-Online-MT, the non-interactive ``generate`` path): top_k 3, max_tries 3,
    batch_update_size 8, max_num_rules 20, buffer_retrieve_ratio 5 (paper-spec §5.2)."""

    def __init__(self, gen, encode):
        self.gen, self.encode = gen, encode  # gen(call, messages) -> the raw output
        self.rules: list[tuple[str, int]] = []
        self.recent: list[dict] = []
        self.pool: list[dict] = []
        self.docs: list[tuple[int, str, str]] = []  # (case index, type, text)
        self.vectors: list = []
        self.rollout: dict = {}
        self.step_memories = (EMPTY, EMPTY)
        self.unused_calls = 0  # reflections after the last failed try (their output is never read)

    def insights(self) -> str:
        return "\n".join(f"{i}. {r}" for i, (r, _) in enumerate(self.rules, start=1)) if self.rules else EMPTY

    def retrieve(self, task) -> list[dict]:
        if not self.pool or not self.vectors:
            return []
        q = self.encode([task.question])[0]
        sims = [cosine(q, v) for v in self.vectors]
        top = sorted(range(len(sims)), key=lambda i: sims[i], reverse=True)[:15]
        by_case: dict[int, float] = {}
        for d in top:
            case = self.docs[d][0]
            by_case[case] = max(by_case.get(case, sims[d]), sims[d])
        ranked = sorted(by_case.items(), key=lambda kv: kv[1], reverse=True)[:3]
        return [{"question": self.pool[c]["question"], "trajectory": self.pool[c]["trajectory"], "score": s}
                for c, s in ranked]

    def generate(self, task, retrieved) -> str:
        before = self.insights()
        shown = [(f"{r['score']:.2f}", marks(r["question"]) + marks(r["trajectory"])) for r in retrieved]
        examples = expel_examples_text(retrieved)
        note, attempts, reflections, answer, trajectory = "", [], [], "", ""
        for attempt in range(1, 4):
            raw = self.gen({"phase": "stream", "kind": "expel_solver", "memory": before, "retrieved": shown,
                            "reflections": marks(note), "attempt": attempt, "input": task_input(task)},
                           expel_solver_messages(examples, before, note or EMPTY, attempt, gpqa_prompt(task)))
            trajectory = tag_content(raw, "trajectory") or raw
            answer = tag_content(raw, "final_answer") or raw
            ok = gpqa_score(answer, task) >= 1.0
            attempts.append({"attempt": attempt, "raw": raw, "trajectory": trajectory, "answer": answer, "ok": ok})
            if ok:
                break
            call = {"phase": "stream", "kind": "expel_reflection", "reflections": marks(note),
                    "input": task_input(task), "failed_output": marks(raw)}
            if attempt == 3:  # the authors reflect after the last failed try too; nothing reads that reflection
                call["unused"] = True
                self.unused_calls += 1
            reply = self.gen(call, expel_reflection_messages(note, gpqa_prompt(task), raw))
            text = tag_content(reply, "reflection") or reply.strip()
            if text:
                reflections.append(text)
                note = f"{note}\n- {text}".strip() if note else f"- {text}"
        self.rollout = {"before": before, "attempts": attempts, "reflections": reflections, "trajectory": trajectory}
        return answer

    def _append_case(self, case: dict) -> None:
        idx = len(self.pool)
        self.pool.append(case)
        docs = case_docs(case)
        for kind, text in docs:
            self.docs.append((idx, kind, text))
        if docs:
            self.vectors.extend(self.encode([t for _, t in docs]))

    def update_memory(self, task, record: dict) -> None:
        attempts, reflections = self.rollout["attempts"], self.rollout["reflections"]
        question = record["question"]
        success, failed = None, []
        for a in attempts:
            if a["ok"]:
                success = {"question": question, "model_output": a["answer"], "trajectory": a["trajectory"],
                           "reflections": list(reflections)}
            else:
                failed.append({"question": question, "model_output": a["answer"], "trajectory": a["trajectory"]})
        if record["feedback"] == "success":
            if success is None:
                success = {"question": question, "model_output": record["model_output"],
                           "trajectory": self.rollout["trajectory"], "reflections": list(reflections)}
            self._append_case(success)
            self.recent.append(success)
            for fail in failed:
                body = (f"A success:\nQuestion: {success['question']}\nTrajectory: {success['trajectory']}\n\n"
                        f"A failure:\nQuestion: {fail['question']}\nTrajectory: {fail['trajectory']}")
                self._curate({"phase": "stream", "kind": "expel_pair", "memory": self.insights(),
                              "success_question": marks(success["question"]),
                              "success_trajectory": marks(success["trajectory"]),
                              "fail_question": marks(fail["question"]),
                              "fail_trajectory": marks(fail["trajectory"])}, body)
            if len(self.recent) >= 8:
                body = "\n\n".join(f"Success {i}:\nQuestion: {c['question']}\nTrajectory: {c['trajectory']}"
                                    for i, c in enumerate(self.recent, start=1))
                self._curate({"phase": "stream", "kind": "expel_batch", "memory": self.insights(),
                              "successes": [marks(c["question"]) + marks(c["trajectory"]) for c in self.recent]},
                             body)
                self.recent = []
        self.step_memories = (self.rollout["before"], self.insights())

    def _curate(self, call: dict, body: str) -> None:
        reply = self.gen(call, expel_curator_messages(self.insights(), body))
        self.rules = apply_ops(self.rules, parse_ops(reply))

    def snapshot(self):
        return (list(self.rules), list(self.recent))

    def restore(self, snap) -> None:
        self.rules, self.recent = list(snap[0]), list(snap[1])

    def replay_call(self, task, memory: str) -> tuple[dict, list[dict]]:
        """ExpeLJanusAdapter.build_solver_prompt: these rules, no retrieved cases, no reflection, try 1."""
        return ({"phase": "replay", "kind": "expel_solver", "memory": memory, "retrieved": [], "reflections": [],
                 "attempt": 1, "input": task_input(task)},
                expel_solver_messages("(none)", memory, EMPTY, 1, gpqa_prompt(task)))

    def test_call(self, task) -> tuple[dict, list[dict]]:
        """``test_build_solver_prompt``: the frozen rules with the retrieved success cases, no reflection, try 1."""
        hits = self.retrieve(task)
        shown = [(f"{r['score']:.2f}", marks(r["question"]) + marks(r["trajectory"])) for r in hits]
        return ({"phase": "test", "kind": "expel_solver", "memory": self.insights(), "retrieved": shown,
                 "reflections": [], "attempt": 1, "input": task_input(task)},
                expel_solver_messages(expel_examples_text(hits), self.insights(), EMPTY, 1, gpqa_prompt(task)))

    def log_row(self) -> tuple:
        """What their per-step memory log lets the checkpoint script restore: the rules text, the pool size."""
        return self.insights(), len(self.pool)

    def restored(self, row: tuple) -> RefExpeL:
        """``restore_state_from_memory`` for a Fig. 4 checkpoint: every logged rule line, its number dropped and
        normalised as a rule, with the count 2 (the logged "(empty)" is such a line); the pool as at that step."""
        text, n = row
        out = copy.copy(self)
        rules = [normalize_rule(re.sub(r"^\d+\.\s*", "", ln)) for ln in text.splitlines()]
        out.rules = [(r, 2) for r in rules if r]
        out.pool = self.pool[:n]
        keep = [i for i, d in enumerate(self.docs) if d[0] < n]
        out.docs = [self.docs[i] for i in keep]
        out.vectors = [self.vectors[i] for i in keep]
        return out

    def stored(self) -> dict:
        return {"rules": [list(r) for r in self.rules], "recent": [c["question"] for c in self.recent],
                "pool": [(c["question"], c["model_output"], c["trajectory"], list(c["reflections"]))
                         for c in self.pool],
                "docs": [(c, kind) for c, kind, _ in self.docs], "doc_texts": [t for _, _, t in self.docs]}


# ------------------------------------------------------------------------------------------ runner + Janus
class RefPipeline:
    """``Runner.run`` over the stream with ``JanusMethod`` around the base method: retrieve, generate, check,
    record, then Janus's ``update_memory`` (snapshot, the base update, step memories, one batched embedding, the
    controller, a restore when the old memory wins). ``with_janus=False``: the base method alone.

    The model is reached through ``ask(call) -> (reasoning, text)`` (structured mode) or, in text mode,
    ``model(call, messages, params) -> raw vLLM text`` (their client strips it) with :func:`authors_params` for
    ``max_new_tokens``."""

    def __init__(self, method: str, ask, encode, *, with_janus=True, policy="mmt", k=8, k_prime=4, l_fresh=3,
                 model=None, max_new_tokens: int = 8192):
        self.encode = encode
        self.ask, self.model, self.max_new_tokens = ask, model, int(max_new_tokens)
        self.base = (RefDCRS if method == "dc_rs" else RefExpeL)(self._gen, encode)
        self.janus = ReferenceJanus(self._replay, k=k, k_prime=k_prime, l_fresh=l_fresh, policy=policy,
                                    kmeans=kmeans_pytorch_like) if with_janus else None
        self.replays: list[list[bool]] = []  # verdicts of each replay call of the controller, in order
        self.log: list[tuple] = []  # the per-step memory log (the deployed state after each step)

    def _gen(self, call: dict, messages: list[dict]) -> str:
        if self.model is None:
            return raw_output(self.ask(call))
        return str(self.model(call, messages, authors_params(call["kind"], self.max_new_tokens))).strip()

    def _replay(self, memory: str, tasks: list) -> list[bool]:
        """``JanusMethod._replay_eval`` for one memory: one sample per entry, checked on the raw output."""
        out = [gpqa_score(self._gen(*self.base.replay_call(t, memory)), t) >= 1.0 for t in tasks]
        self.replays.append(out)
        return out

    def step(self, task) -> dict:
        out = self._step(task)
        self.log.append(self.base.log_row())
        return out

    def _step(self, task) -> dict:
        retrieved = self.base.retrieve(task)
        output = self.base.generate(task, retrieved)
        score = gpqa_score(output, task)
        feedback = "success" if score >= 1.0 else "failure"
        record = {"question": task.question, "model_output": str(output), "feedback": feedback, "score": score}
        log = {"correct": score >= 1.0}
        if self.janus is None:
            self.base.update_memory(task, record)
            return {**log, "memory": self._memory(), **self.base.stored()}
        snap = self.base.snapshot()
        self.base.update_memory(task, record)
        old, new = self.base.step_memories
        q, vo, vn = self.encode([task.question, old, new])
        self.replays = []
        d = self.janus.update(task, q, old, new, vo, vn)
        if d["chosen"] == "old":
            self.base.restore(snap)
        decision = {"triggered": d["triggered"], "accept": d["chosen"] == "new", "eval_ids": d["eval"],
                    "fresh": d["fresh"]}
        if d["triggered"]:
            decision["old_correct"], decision["new_correct"] = self.replays
        return {**log, "decision": decision, "memory": self._memory(), **self.base.stored()}

    def test(self, tasks: list, base=None) -> list[bool]:
        """``run_batched_test``: per task, retrieval and the frozen-memory solver prompt, one sample, the checker on
        the raw output (``task.evaluate_entry(out, entry)``)."""
        base = base or self.base
        return [gpqa_score(self._gen(*base.test_call(t)), t) >= 1.0 for t in tasks]

    def checkpoint_tests(self, tasks: list, fractions: list[float]) -> list[dict]:
        """Fig. 4: the test on the memory restored from the log truncated at each fraction (rows round(n * f), at
        least 1), in fraction order; the 100% point is tested again only when the restore changes the final state
        (otherwise the final test's verdicts stand: the same memory, the same prompts)."""
        n = len(self.log)
        out = []
        for f in sorted(set(fractions)):
            if f >= 1.0:
                continue
            step = max(1, round(n * f))
            verdicts = self.test(tasks, self.base.restored(self.log[step - 1]))
            out.append({"fraction": f, "step": step, "test_accuracy": sum(verdicts) / len(verdicts)})
        return out

    def final_checkpoint(self, tasks: list, final_verdicts: list[bool]) -> dict:
        """The 100% point of Fig. 4 (see :meth:`checkpoint_tests`)."""
        restored = self.base.restored(self.log[-1])
        changed = restored.stored() != self.base.stored() or restored.log_row() != self.base.log_row()
        verdicts = self.test(tasks, restored) if changed else final_verdicts
        return {"fraction": 1.0, "step": len(self.log), "test_accuracy": sum(verdicts) / len(verdicts)}

    def _memory(self) -> str:
        return self.base.cheatsheet if isinstance(self.base, RefDCRS) else self.base.insights()
