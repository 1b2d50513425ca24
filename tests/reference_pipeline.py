"""An independent reference of the authors' runner step for DC-RS and ExpeL, each wrapped by Janus, for the
pipeline-level differential test (tests/test_differential_pipeline.py).

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
"""
from __future__ import annotations

import math
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


# ------------------------------------------------------------------------------------------ DC-RS
class RefDCRS:
    """``methods/DC_RS.py`` with top_k 3 and the strict-cheatsheet curator (paper-spec §5.1)."""

    def __init__(self, ask, encode):
        self.ask, self.encode = ask, encode
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
        cur = raw_output(self.ask({"phase": "stream", "kind": "dc_curator", "memory": previous, "retrieved": pairs,
                                   "input": task_input(task)}))
        sheet = tag_content(cur, "cheatsheet") or previous  # no block: the previous sheet
        self.step_memories = (previous, sheet)
        out = raw_output(self.ask({"phase": "stream", "kind": "dc_solver", "memory": sheet, "retrieved": [],
                                   "input": task_input(task)}))
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

    def replay_call(self, task, memory: str) -> dict:
        """DCRSJanusAdapter.build_solver_prompt: the generator prompt with this sheet, no retrieval."""
        return {"phase": "replay", "kind": "dc_solver", "memory": memory, "retrieved": [], "input": task_input(task)}

    def test_call(self, task) -> dict:
        """``test_build_solver_prompt``: the frozen sheet with the top-3 retrieved pairs appended (none: the sheet)."""
        pairs = [(f"{r['score']:.2f}", marks(r["question"]) + marks(r["model_output"]))
                 for r in self.retrieve(task)[:3][::-1]]
        return {"phase": "test", "kind": "dc_solver", "memory": self.cheatsheet, "retrieved": pairs,
                "input": task_input(task)}

    def stored(self) -> dict:
        return {"pool": list(zip(self.questions, self.outputs, self.feedback))}


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

    def __init__(self, ask, encode):
        self.ask, self.encode = ask, encode
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
        note, attempts, reflections, answer, trajectory = "", [], [], "", ""
        for attempt in range(1, 4):
            raw = raw_output(self.ask({"phase": "stream", "kind": "expel_solver", "memory": before,
                                       "retrieved": shown, "reflections": marks(note), "attempt": attempt,
                                       "input": task_input(task)}))
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
            reply = raw_output(self.ask(call))
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
                self._curate({"phase": "stream", "kind": "expel_pair", "memory": self.insights(),
                              "success_question": marks(success["question"]),
                              "success_trajectory": marks(success["trajectory"]),
                              "fail_question": marks(fail["question"]),
                              "fail_trajectory": marks(fail["trajectory"])})
            if len(self.recent) >= 8:
                self._curate({"phase": "stream", "kind": "expel_batch", "memory": self.insights(),
                              "successes": [marks(c["question"]) + marks(c["trajectory"]) for c in self.recent]})
                self.recent = []
        self.step_memories = (self.rollout["before"], self.insights())

    def _curate(self, call: dict) -> None:
        self.rules = apply_ops(self.rules, parse_ops(raw_output(self.ask(call))))

    def snapshot(self):
        return (list(self.rules), list(self.recent))

    def restore(self, snap) -> None:
        self.rules, self.recent = list(snap[0]), list(snap[1])

    def replay_call(self, task, memory: str) -> dict:
        """ExpeLJanusAdapter.build_solver_prompt: these rules, no retrieved cases, no reflection, try 1."""
        return {"phase": "replay", "kind": "expel_solver", "memory": memory, "retrieved": [], "reflections": [],
                "attempt": 1, "input": task_input(task)}

    def test_call(self, task) -> dict:
        """``test_build_solver_prompt``: the frozen rules with the retrieved success cases, no reflection, try 1."""
        shown = [(f"{r['score']:.2f}", marks(r["question"]) + marks(r["trajectory"])) for r in self.retrieve(task)]
        return {"phase": "test", "kind": "expel_solver", "memory": self.insights(), "retrieved": shown,
                "reflections": [], "attempt": 1, "input": task_input(task)}

    def stored(self) -> dict:
        return {"rules": [list(r) for r in self.rules], "recent": [c["question"] for c in self.recent],
                "pool": [(c["question"], c["model_output"], c["trajectory"], list(c["reflections"]))
                         for c in self.pool],
                "docs": [(c, kind) for c, kind, _ in self.docs], "doc_texts": [t for _, _, t in self.docs]}


# ------------------------------------------------------------------------------------------ runner + Janus
class RefPipeline:
    """``Runner.run`` over the stream with ``JanusMethod`` around the base method: retrieve, generate, check,
    record, then Janus's ``update_memory`` (snapshot, the base update, step memories, one batched embedding, the
    controller, a restore when the old memory wins). ``with_janus=False``: the base method alone."""

    def __init__(self, method: str, ask, encode, *, with_janus=True, policy="mmt", k=8, k_prime=4, l_fresh=3):
        self.encode = encode
        self.base = (RefDCRS if method == "dc_rs" else RefExpeL)(ask, encode)
        self.ask = ask
        self.janus = ReferenceJanus(self._replay, k=k, k_prime=k_prime, l_fresh=l_fresh, policy=policy,
                                    kmeans=kmeans_pytorch_like) if with_janus else None
        self.replays: list[list[bool]] = []  # verdicts of each replay call of the controller, in order

    def _replay(self, memory: str, tasks: list) -> list[bool]:
        """``JanusMethod._replay_eval`` for one memory: one sample per entry, checked on the raw output."""
        out = [gpqa_score(raw_output(self.ask(self.base.replay_call(t, memory))), t) >= 1.0 for t in tasks]
        self.replays.append(out)
        return out

    def step(self, task) -> dict:
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

    def test(self, tasks: list) -> list[bool]:
        """``run_batched_test``: per task, retrieval and the frozen-memory solver prompt, one sample, the checker on
        the raw output (``task.evaluate_entry(out, entry)``)."""
        return [gpqa_score(raw_output(self.ask(self.base.test_call(t))), t) >= 1.0 for t in tasks]

    def _memory(self) -> str:
        return self.base.cheatsheet if isinstance(self.base, RefDCRS) else self.base.insights()
