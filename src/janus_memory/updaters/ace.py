"""ACE, Agentic Context Engineering (Zhang et al. 2025, arXiv 2510.04618; code ace-agent/ace), under Janus.

Memory: a playbook of bullets ``[id] helpful=H harmful=K :: content`` under ``##`` headings (the authors' seven
default headings). Step t (the authors' ``_train_single_sample``):
  1. the generator answers with the playbook and names the bullet ids it relied on; this first answer is the step's
     scored output (later answers have seen the reflection, which used the ground truth);
  2. correct: one reflector call tags the cited bullets helpful/harmful/neutral and the counters move;
     wrong: up to ``max_num_rounds`` (3) rounds of reflect -> update counters -> answer again with the reflection,
     stopping at the first correct answer;
  3. every ``curator_frequency`` stream steps the curator reads the latest reflection and the playbook and emits JSON
     delta operations, applied deterministically (ADD only, as coded); the optional refine step (``refine``
     "dedup" or "merge") then de-duplicates bullets whose content embeddings have cosine >= ``refine_threshold`` (0.9);
  4. with ``post_curate_answer`` the generator answers once more with the new playbook (the authors record whether
     the update helped but never act on it); the request equals Janus's replay of this task, so it costs nothing twice.
The candidate M̂_t is the playbook after steps 2-3 (new counters and new bullets).

Rollback (Janus rejects M̂_t): the playbook with its counters returns to M_{t-1}: the step's counter updates and
bullets are undone together. The id counter and the stream-step counter are kept (ids are never reused; the curator
schedule follows stream steps). Parsing: :mod:`ace_playbook` / :mod:`ace_ops` (strict by default, ``faithful=True``
reproduces the authors' code).
"""

from __future__ import annotations

import copy
import json

from janus_memory.updaters.ace_ops import apply_ops_original, apply_ops_strict, refine
from janus_memory.updaters.ace_playbook import (
    all_bullets,
    apply_tags,
    cited_ids,
    new_sections,
    parse_playbook,
    parse_tags,
    render,
    stats,
)
from janus_memory.updaters.base import (
    Harm,
    LLMCall,
    StepOutcome,
    Updater,
    fill,
    load_prompt,
    register_updater,
    state_built,
    truncate,
    visible_text,
)
from janus_memory.values import ChatResult, Task


def _reply_text(result: ChatResult) -> str:
    """Visible text; for a reply cut off by max_tokens, its partial text (C19 moves it to ``reasoning``)."""
    if result.text:
        return result.text
    if result.truncated and result.reasoning and "<think>" not in result.reasoning:
        return result.reasoning
    return ""


@register_updater("ace")
class ACE(Updater):
    """ACE (see module docstring). Extra config: max_num_rounds, curator_frequency, refine, refine_threshold,
    use_ground_truth, post_curate_answer, reflection_chars."""

    prompt_prefixes = ("ace_",)
    display_name = "ACE"

    RANGES = {"curator_frequency": (1, 1 << 20)}  # every n-th step; 0 would divide by zero
    NULLABLE = ("reflection_chars",)  # None: the whole reflection

    DEFAULTS = {
        "max_num_rounds": 3,
        "curator_frequency": 1,
        "refine": "off",  # "off" | "dedup" (keep the first of a group) | "merge" (LLM merges each group)
        "refine_threshold": 0.9,
        "use_ground_truth": True,
        "post_curate_answer": True,
        "reflection_chars": 4000,  # cut the reflection shown to the generator/curator (None = full)
    }

    @classmethod
    def llm_calls_per_step(cls, config: dict) -> tuple[float, float | None]:
        """Generator, reflector (a correct first answer is reflected on once; a wrong one gets up to
        ``max_num_rounds`` reflect + retry rounds), the curator every ``curator_frequency`` steps and the
        post-curation answer. ``refine: merge`` adds one call per merged group: no fixed bound."""
        rounds = int(config["max_num_rounds"])
        extra = 1 / int(config["curator_frequency"]) + (1 if config["post_curate_answer"] else 0)
        most = None if config["refine"] == "merge" else 1 + max(1, 2 * rounds) + extra
        return (1 if rounds == 0 else 2) + extra, most

    def __init__(self, **kw):
        super().__init__(**kw)
        for key in ("max_num_rounds", "curator_frequency"):
            if int(self.config[key]) < (0 if key == "max_num_rounds" else 1):
                raise ValueError(f"config {key!r} out of range: {self.config[key]!r}")
        if self.config["refine"] not in ("off", "dedup", "merge"):
            raise ValueError(f"config 'refine' must be off, dedup or merge, got {self.config['refine']!r}")
        self.sections: list[list] = new_sections()
        self.next_id = 1
        self.stream_step = 0

    # ---- seam --------------------------------------------------------------------------------
    def memory_text(self) -> str:
        return render(self.sections)

    def solving_messages(self, memory_text: str, task: Task, reflection: str = "(empty)") -> list[dict]:
        user = fill(load_prompt("ace_generator_user"), PLAYBOOK=memory_text, REFLECTION=reflection,
                    TASK=self.family.prompt(task))
        return [{"role": "system", "content": load_prompt("ace_generator_system")}, {"role": "user", "content": user}]

    def get_state(self) -> dict:
        return {"sections": copy.deepcopy(self.sections), "next_id": self.next_id, "stream_step": self.stream_step}

    def set_state(self, state: dict) -> None:
        self.sections = [[h, [[b[0], int(b[1]), int(b[2]), b[3]] for b in bs]] for h, bs in state["sections"]]
        self.next_id = int(state["next_id"])
        self.stream_step = int(state["stream_step"])

    def load_memory_text(self, text: str) -> list[str]:
        """Make ``text`` (a playbook in the rendered format) the current playbook, e.g. to inject a harmful candidate.
        Returns the lines that are neither headings nor bullets (dropped: the state holds bullets only). The id
        counter moves past every numeric id in ``text``."""
        sections, other = parse_playbook(text)
        self.sections = sections
        nums = [int(b[0].rsplit("-", 1)[1]) for b in all_bullets(sections) if b[0].rsplit("-", 1)[-1].isdigit()]
        self.next_id = max([self.next_id - 1, *nums]) + 1
        return other

    # ---- hook: an injected harmful candidate -------------------------------------------------
    supports_injection = True  # built as a playbook state: ids, counters and the id counter (inject_harm)

    @classmethod
    def harmful_text(cls, harm: Harm, memory: str, *, examples: str = "", answer: str = "") -> str:
        raise state_built(cls.name)

    def inject_harm(self, harm: Harm, outcome: StepOutcome, before: dict) -> None:
        """The harmful playbook built from the playbook of M_{t-1} with the current id counter (injected bullets get
        fresh ids); ``dump`` shows the step's first answer and its last reflection."""
        reflections = [_reply_text(c.result) for c in outcome.calls if c.role == "reflection"]
        self.sections, self.next_id = harm.playbook(
            before["state"]["sections"], next_id=self.next_id, faithful=bool(self.config["faithful"]),
            answer=visible_text(outcome.output), reflection=reflections[-1] if reflections else "")

    def rollback(self, snap: dict) -> None:
        """Restore the playbook with its counters; keep ``next_id`` and ``stream_step`` (module docstring)."""
        self._check_snapshot(snap)
        self.sections = copy.deepcopy(snap["state"]["sections"])
        self.stats["rollbacks"] = self.stats.get("rollbacks", 0) + 1

    # ---- step --------------------------------------------------------------------------------
    def step(self, task: Task) -> StepOutcome:
        calls: list[LLMCall] = []
        self.stream_step += 1
        old = self.memory_text()
        faithful = bool(self.config["faithful"])
        first = self._chat(self.solving_messages(old, task), role="solver", calls=calls, params=self.solver_params())
        score = self.score(task, first)
        info: dict = {"rounds": []}
        out, sc, reflection = first, score, "(empty)"
        rounds = 1 if score.correct else int(self.config["max_num_rounds"])
        for _ in range(rounds):
            ids, unknown = cited_ids(_reply_text(out), {b[0] for b in all_bullets(self.sections)}, faithful)
            reflection, tag_log = self._reflect(task, out, sc, ids, calls)
            rec = {"cited": ids, "unknown_cited": unknown, **tag_log, "correct": bool(sc.correct)}
            info["rounds"].append(rec)
            if score.correct:
                break
            out = self._chat(self.solving_messages(self.memory_text(), task, self._cut(reflection)), role="solver",
                             calls=calls, params=self.solver_params())
            sc = self.score(task, out)
            rec["retry_correct"] = bool(sc.correct)
            if sc.correct:
                break
        after_tags = self.memory_text()
        rejected = None
        if self.stream_step % int(self.config["curator_frequency"]) == 0:
            cur = self._curate(task, reflection, calls)
            info["curator"] = cur
            if cur["rejected"]:
                self._count("candidates_rejected", cur["rejected"])
                if after_tags == old:  # nothing changed this step: the method's proposal was refused outright
                    rejected = cur["rejected"]
        info["counters_changed"] = after_tags != old
        new = self.memory_text()
        if self.config["post_curate_answer"]:
            post = self._chat(self.solving_messages(new, task), role="solver", calls=calls, params=self.solver_params())
            info["post_curate_correct"] = bool(self.score(task, post).correct)
        self.stats["steps"] += 1
        return StepOutcome(first, score, old, new, rejected, calls, info)

    # ---- the three roles ---------------------------------------------------------------------
    def _cut(self, text: str) -> str:
        return truncate(text, self.config["reflection_chars"])

    def _reflect(self, task: Task, out: ChatResult, sc, ids: list[str], calls: list[LLMCall]) -> tuple[str, dict]:
        by_id = {b[0]: b for b in all_bullets(self.sections)}
        used = [f"[{i}] helpful={by_id[i][1]} harmful={by_id[i][2]} :: {by_id[i][3]}" for i in ids if i in by_id]
        gt = ""
        if self.config["use_ground_truth"]:
            gt = f"## CORRECT ANSWER\n{task.gold}\n\n"
        feedback = "The extracted answer matches the correct answer." if sc.correct else \
            "The extracted answer is wrong (it does not match the correct answer)."
        prompt = fill(load_prompt("ace_reflector"), QUESTION=self.family.prompt(task),
                      TRACE=truncate(visible_text(out), self.config["retrieved_output_chars"]),
                      PREDICTED=str(sc.extracted) if sc.extracted is not None else "(no answer found)",
                      GROUND_TRUTH_BLOCK=gt, FEEDBACK=feedback,
                      BULLETS="\n".join(used) or "(no playbook entries were cited)")
        res = self._chat([{"role": "user", "content": prompt}], role="reflection", calls=calls,
                         params=self.curator_params())
        text = _reply_text(res)
        known = set(by_id)
        tags, dropped = parse_tags(text, ids, known, bool(self.config["faithful"]))
        applied = apply_tags(self.sections, tags)
        for d in dropped:
            self._count("tags_dropped", d["reason"])
        return text or "(empty)", {"tags": tags, "tags_applied": applied, "tags_dropped": dropped}

    def _curate(self, task: Task, reflection: str, calls: list[LLMCall]) -> dict:
        prompt = fill(load_prompt("ace_curator"), STEP=str(self.stream_step),
                      STATS=json.dumps(stats(self.sections), indent=2), REFLECTION=self._cut(reflection),
                      PLAYBOOK=self.memory_text(), QUESTION=self.family.prompt(task))
        res = self._chat([{"role": "user", "content": prompt}], role="curator", calls=calls,
                         params=self.curator_params())
        text = _reply_text(res)
        apply = apply_ops_original if self.config["faithful"] else apply_ops_strict
        self.next_id, log = apply(self.sections, text, self.next_id)
        for _op in log["applied"]:
            self._count("ops_applied", "ADD")
        for d in log["dropped"]:
            self._count("ops_dropped", d["reason"])
        if log["rejected"]:
            log["raw"] = text
        elif self.config["refine"] != "off":
            log["refine"] = self._refine(calls)
        return log

    def _refine(self, calls: list[LLMCall]) -> dict:
        bullets = all_bullets(self.sections)
        if len(bullets) < 2:
            return {"groups": [], "merged": [], "unparseable": 0}
        emb = self.embed([b[3] for b in bullets])
        merge_fn = None
        if self.config["refine"] == "merge":
            def merge_fn(members: list[list]) -> str:
                listing = "\n".join(f"{n}. [{b[0]}] helpful={b[1]} harmful={b[2]} :: {b[3]}"
                                    for n, b in enumerate(members, start=1))
                prompt = fill(load_prompt("ace_merge"), BULLETS=listing, ID=members[0][0],
                              HELPFUL=str(sum(b[1] for b in members)), HARMFUL=str(sum(b[2] for b in members)))
                res = self._chat([{"role": "user", "content": prompt}], role="curator", calls=calls,
                                 params=self.curator_params())
                return _reply_text(res)
        log = refine(self.sections, emb, float(self.config["refine_threshold"]), bool(self.config["faithful"]),
                     merge_fn)
        removed = len(bullets) - len(all_bullets(self.sections))
        if removed:
            self._count("refine", "bullets_removed", removed)
        return log
