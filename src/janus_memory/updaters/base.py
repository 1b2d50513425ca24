"""The updater seam: one interface over every memory-update method Janus wraps.

An updater owns a memory (a cheatsheet, a rule list, a bank of past records ...) and the method's own prompts.
Janus never changes how an updater proposes memory; it only decides whether the proposal is kept
(``M_t in {M_{t-1}, M̂_t}``, docs/research-notes.md §1.1). The runner therefore needs, from every updater:

* ``step(task)``: solve the task as the method does and leave the candidate ``M̂_t`` in the internal state;
* ``memory_text()``: the text the encoder embeds and the evaluator replays;
* ``snapshot()`` / ``load_snapshot()``: the full state (resume), JSON-serialisable and deterministic;
* ``rollback(snap)``: what a Janus rejection restores (docs/research-notes.md §3.2 "What the rollback restores");
* ``solve_with_memory(text, tasks)``: the method's solving prompt with this memory text only (Janus replay);
* ``solve_frozen(tasks)``: held-out test with the frozen memory (+ retrieval where the method uses it).

Optional: ``supports_injection = True`` and the hook ``inject_harm`` let ``--inject KIND@STEP`` put a harmful
candidate into the updater's state (janus_memory.inject builds it); the default hook serves a text memory.

A new updater is one subclass in one file: implement ``step``, ``memory_text``, ``solving_messages``,
``get_state`` and ``set_state``; register it with :func:`register_updater`. See ``docs/updaters.md``.
Its parts live next to it and are re-exported here: the collaborator protocols and the records LLMCall /
StepOutcome in ``records.py``, prompt-file and text helpers in ``prompt_text.py``, RetrievalBank in ``bank.py``.
"""

from __future__ import annotations

import copy
import json
from abc import ABC, abstractmethod
from typing import Any, Callable, Sequence

import numpy as np

from janus_memory import rows
from janus_memory.values import ChatResult, Score, Task

from .bank import RetrievalBank
from .prompt_text import fill, load_prompt, thinking_output, truncate, visible_text
from .records import ChatLLM, Encoder, Family, Harm, LLMCall, StepOutcome

__all__ = [
    "COMMON_DEFAULTS", "EMPTY_MEMORY", "SNAPSHOT_FORMAT", "ChatLLM", "Encoder", "Family", "Harm", "LLMCall",
    "RetrievalBank", "StepOutcome", "UPDATERS", "Updater", "fill", "load_prompt", "make_updater", "register_updater",
    "thinking_output", "truncate", "visible_text",
]

EMPTY_MEMORY = "(empty)"
SNAPSHOT_FORMAT = 1


COMMON_DEFAULTS: dict[str, Any] = {
    "temperature": 0.0,  # lead's demo choice; the paper uses 0.7 (docs/research-notes.md §7)
    "solver_max_tokens": 1024,
    "curator_max_tokens": 1024,
    "top_k": 3,  # retrieval depth (docs/research-notes.md §5, §9)
    "retrieved_output_chars": None,  # truncate retrieved outputs in prompts (None = full)
    "solver_params": {},  # extra sampling params for solver calls (e.g. presence_penalty)
    "presence_penalty": 1.0,  # paper preset: on every solving call (authors' vLLM path); None = not sent
    "extra_body": None,  # backend-specific JSON sent with every call (e.g. Qwen3 thinking switch); None = not sent
    "faithful": False,  # reproduce the original method's parsing quirks (C24/C25), recording the branch taken
    # truncation samplers: "paper" sends PAPER_SAMPLING with every call (the authors' vLLM calls leave
    # top_p / top_k / min_p unrestricted; llama.cpp would otherwise apply 0.95 / 40 / 0.05); "backend" sends none
    "sampling": "paper",
}
COMMON_CHOICES: dict[str, tuple] = {"sampling": ("paper", "backend")}
# settings that may be None although their default is not (None = not sent), and the value kind of settings whose
# default is None (settings/updater_settings.py checks both); an updater adds its own as NULLABLE / NONE_DEFAULT_KINDS
COMMON_NULLABLE: tuple[str, ...] = ("presence_penalty",)
COMMON_NONE_DEFAULT_KINDS: dict[str, Any] = {"retrieved_output_chars": 0, "extra_body": {}}
# unrestricted: top_p 1 (all the mass), top_k -1 (every token: vLLM and llama.cpp both read <= 0 so), min_p 0
PAPER_SAMPLING = {"top_p": 1.0, "top_k": -1, "min_p": 0.0}


class Updater(ABC):
    """Base class of every memory updater (see module docstring for the contract).

    Subclasses set ``name`` and ``DEFAULTS`` (their extra config keys) and implement
    ``step``, ``memory_text``, ``solving_messages``, ``get_state`` and ``set_state``.
    ``rollback`` defaults to a full restore; override it where the paper restores less (DC-RS, ExpeL).
    """

    name: str = "base"
    DEFAULTS: dict[str, Any] = {}
    # registry facts (janus_memory.registry): read by validation, the grid, the report and the run's prompt provenance
    supports_janus: bool = True        # False: no rewritable text memory for Janus to judge (docs/research-notes.md §9)
    is_baseline: bool = False          # a paper baseline (Table 1 rows above the updaters; `janus grid` runs it)
    table_rank: int = 2                # report row order: baselines first (memory-free 0, ExpRAG 1), then by name
    display_name: str = ""             # shown in reports; "" = the registry name
    prompt_package: str = "janus_memory.updaters"  # package whose prompts/ folder holds this updater's prompt files
    prompt_prefixes: tuple[str, ...] = ()          # prompt files of this updater: prompts/<prefix>*.txt
    supports_injection: bool = False   # `--inject` can write a harmful candidate into its state (inject_harm)

    def __init__(self, *, llm: ChatLLM, family: Family, encoder: Encoder | None, config: dict | None = None):
        self.llm = llm
        self.family = family
        self.encoder = encoder
        allowed = {**COMMON_DEFAULTS, **self.DEFAULTS}
        config = dict(config or {})
        for key in config:
            if key not in allowed:
                raise ValueError(f"unknown config key {key!r} for updater {self.name!r}; allowed: {sorted(allowed)}")
        self.config: dict[str, Any] = {**copy.deepcopy(allowed), **config}
        for key, least in (("top_k", 0), ("solver_max_tokens", 1), ("curator_max_tokens", 1)):
            value = self.config[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"config {key!r} for updater {self.name!r} must be a whole number >= {least}, "
                                 f"got {value!r}")
        self.stats: dict[str, Any] = {"steps": 0, "rollbacks": 0, "candidates_rejected": {}}

    # ---- to implement -------------------------------------------------------------------------
    @abstractmethod
    def step(self, task: Task) -> StepOutcome:
        """Solve ``task`` as the method does; afterwards the internal memory is the candidate M̂_t."""

    @abstractmethod
    def memory_text(self) -> str:
        """Current memory as text (what the encoder embeds and Janus replays)."""

    @abstractmethod
    def solving_messages(self, memory_text: str, task: Task) -> list[dict]:
        """Chat messages of the method's solving prompt with this memory text only (no retrieval)."""

    @abstractmethod
    def get_state(self) -> dict:
        """Full JSON-serialisable state (memory, banks, buffers)."""

    @abstractmethod
    def set_state(self, state: dict) -> None:
        """Exact inverse of ``get_state``."""

    # ---- registry fact: whether Janus can wrap this updater with these settings -------------------------
    @classmethod
    def janus_supported(cls, config: dict) -> bool:
        """Whether Janus may wrap this updater with ``config`` (its settings with the defaults filled in); default:
        the class fact ``supports_janus``. An updater whose memory Janus can judge only under an option of its own
        (ExpRAG's ``janus_replay``) says so here."""
        return cls.supports_janus

    # ---- registry fact: LLM calls per stream step (the run's time estimate, run/estimate.py) -------------
    @classmethod
    def llm_calls_per_step(cls, config: dict) -> tuple[float, float | None] | None:
        """(fewest, most) LLM calls one stream step makes, averaged over steps, with ``config`` (the updater's
        settings with every default filled in); ``most`` is None when the method has no fixed bound. None (this
        default): the updater does not declare it and the run prints no estimate. Janus replays and the held-out
        test are counted by the runner (one call per task and memory)."""
        return None

    # ---- hook: an injected harmful candidate (`--inject KIND@STEP`, janus_memory.inject) ------------
    @classmethod
    def harmful_text(cls, harm: Harm, memory: str, *, examples: str = "", answer: str = "") -> str:
        """The harmful candidate's memory text built from the memory text ``memory`` (M_{t-1}) alone. Default: the
        memory is a cheatsheet (``harm.sheet``). An updater whose candidate needs more than its text (ids, counters,
        embeddings) raises ValueError (:func:`state_built`) and builds it in :meth:`inject_harm`."""
        return harm.sheet(memory, examples=examples, answer=answer)

    def inject_harm(self, harm: Harm, outcome: StepOutcome, before: dict) -> None:
        """Replace the candidate M̂_t the step just left in the state by ``harm`` built from M_{t-1}, so that
        ``memory_text()``, ``snapshot()`` and ``rollback(before)`` see it as they would see a genuine candidate.
        ``outcome``: the step's outcome; ``before``: the snapshot taken before the step (what a rollback restores).
        Default (a text memory): :meth:`harmful_text` of ``outcome.old_memory`` with the step's retrieved examples
        (dump only) and visible answer, made the memory by :meth:`load_memory_text`."""
        examples = self.retrieved_examples(outcome) if harm.kind == "dump" else ""
        text = self.harmful_text(harm, outcome.old_memory, examples=examples, answer=visible_text(outcome.output))
        self.load_memory_text(text)

    def retrieved_examples(self, outcome: StepOutcome) -> str:
        """The retrieved-examples block the step showed, rebuilt from ``outcome.info["retrieved"]`` (what ``dump``
        deploys). Default: "" (the method retrieves nothing)."""
        return ""

    def memory_units(self) -> Any:
        """What the controller offers again (``JanusConfig.seq_reoffer``, controller/reoffer.py) when this memory is
        not made of lines: an object with ``split(text) -> list[str]`` and ``join(text, units) -> str`` (ExpRAG: its
        records). Default None: lines."""
        return None

    def load_memory_text(self, text: str) -> object:
        """Make ``text`` (in the ``memory_text()`` format) the current memory. Updaters with a text memory that
        support injection implement it; default: NotImplementedError."""
        raise NotImplementedError(f"updater {self.name!r} cannot load a memory text")

    # ---- provided --------------------------------------------------------------------------------
    def restore_as_logged(self) -> None:  # noqa: B027 (a hook with a default: nothing to change)
        """Fig. 4 checkpoints (``checkpoint_restore: paper``): turn an exact snapshot into the state the authors'
        ``make_memory_checkpoints.py`` rebuilds from their per-step memory log. Default: nothing to change."""

    def snapshot(self, *, by_reference: bool = False) -> dict:
        """Full state incl. banks and stats; ``json.dumps(snapshot(), sort_keys=True)`` is deterministic.

        ``by_reference=True``: the run store's form, whose cost does not grow with the banks (run/loop.py): bank
        matrices are :class:`~janus_memory.rows.RowsRef` handles and bank records are shared (read-only); the JSON
        check skips what :meth:`state_hints` declares append-only (RetrievalBank.add checks each record). It
        restores (``load_snapshot``, ``rollback``) like the plain form."""
        with rows.by_reference(by_reference):
            state = self.get_state()
        snap = {"format": SNAPSHOT_FORMAT, "updater": self.name, "state": state, "stats": copy.deepcopy(self.stats)}
        # fail early if a subclass put a non-JSON value in its state
        json.dumps(_without(snap, self.snapshot_hints()) if by_reference else snap, sort_keys=True,
                   default=_rows_only)
        return snap

    def state_hints(self) -> dict:
        """What of :meth:`get_state` only grows, ``{key path: (token, stable)}`` (see RetrievalBank.state_hints);
        the run store writes those parts as appends without comparing them. Default: nothing declared."""
        return {}

    def snapshot_hints(self) -> dict:
        """:meth:`state_hints` as paths in :meth:`snapshot`."""
        return {("state",) + path: h for path, h in self.state_hints().items()}

    def load_snapshot(self, snap: dict) -> None:
        """Restore exactly the state of ``snapshot()``. Raises ValueError for another updater's snapshot."""
        self._check_snapshot(snap)
        self.set_state(copy.deepcopy(snap["state"]))
        self.stats = copy.deepcopy(snap.get("stats", {}))

    def rollback(self, snap: dict) -> None:
        """Restore what a Janus rollback restores (default: the full state; stats are kept and counted)."""
        self._check_snapshot(snap)
        self.set_state(copy.deepcopy(snap["state"]))
        self.stats["rollbacks"] = self.stats.get("rollbacks", 0) + 1

    def solve_with_memory(
        self, memory_text: str, tasks: Sequence[Task], *, role: str = "janus", sample: int = 0
    ) -> list[tuple[ChatResult, Score]]:
        """Janus replay: the solving prompt with this memory text only; 1 try, no retrieval, no code execution.

        ``sample`` is the LLM client's sample index (0 = the stream solver's request; see run/evaluator.py)."""
        msgs = [self.solving_messages(memory_text, t) for t in tasks]
        return self._solve_batch(msgs, tasks, role, sample=sample)

    def solve_replays(self, items: Sequence[tuple[str, Task, int]], *,
                      role: str = "janus") -> list[tuple[ChatResult, Score] | BaseException]:
        """Janus replay of several memories in ONE batch: ``items`` are ``(memory_text, task, sample)``; the result
        of each item (its ChatResult and Score) is returned in input order, or the exception it raised (an LLM
        error), so one failed request does not hide the others. Same prompts and parameters as
        :meth:`solve_with_memory`, i.e. the same requests (and response-cache entries) as solving each memory alone.
        """
        items = list(items)
        if not items:
            return []
        msgs = [self.solving_messages(mem, t) for mem, t, _ in items]
        samples = [int(s) for _, _, s in items]
        extra = {"sample": samples} if any(samples) else {}
        results = self.llm.chat_many(msgs, role=role, return_exceptions=True, **extra, **self.solver_params())
        score = {"janus": self.replay_score, "test": self.test_score}.get(role, self.score)
        ok = [(t, r) for r, (_, t, _) in zip(results, items, strict=True) if not isinstance(r, BaseException)]
        scores = iter(_score_all(score, ok))
        return [r if isinstance(r, BaseException) else (r, next(scores)) for r in results]

    def solve_frozen(self, tasks: Sequence[Task], *, role: str = "test") -> list[tuple[ChatResult, Score]]:
        """Held-out test with the frozen memory (methods with a bank override this to add retrieval)."""
        return self.solve_with_memory(self.memory_text(), tasks, role=role)

    # ---- helpers for subclasses -----------------------------------------------------------------
    def _with_extra(self, params: dict) -> dict:
        sampling = self.config.get("sampling", "paper")
        if sampling not in COMMON_CHOICES["sampling"]:
            raise ValueError(f"sampling must be one of {', '.join(COMMON_CHOICES['sampling'])}, got {sampling!r}")
        extra = dict(self.config["extra_body"] or {})
        if sampling == "paper":  # explicit unrestricted truncation samplers; the user's extra_body wins
            params.setdefault("top_p", PAPER_SAMPLING["top_p"])
            extra = {"top_k": PAPER_SAMPLING["top_k"], "min_p": PAPER_SAMPLING["min_p"], **extra}
        if extra:
            params["extra_body"] = extra
        return params

    def solver_params(self) -> dict:
        """Sampling parameters of every solving call (stream, replay, test): identical so replays hit the cache."""
        params = {
            "temperature": self.config["temperature"],
            "max_tokens": self.config["solver_max_tokens"],
            **self.config["solver_params"],
        }
        if self.config["presence_penalty"] is not None:
            params.setdefault("presence_penalty", self.config["presence_penalty"])
        return self._with_extra(params)

    def curator_params(self) -> dict:
        return self._with_extra({"temperature": self.config["temperature"], "max_tokens": self.config["curator_max_tokens"]})

    def _chat(self, messages: list[dict], *, role: str, calls: list[LLMCall], params: dict) -> ChatResult:
        result = self.llm.chat(messages, role=role, **params)
        calls.append(LLMCall(role=role, messages=messages, result=result, params=dict(params)))
        return result

    def _solve_batch(self, msgs: list[list[dict]], tasks: Sequence[Task], role: str,
                     sample: int = 0) -> list[tuple[ChatResult, Score]]:
        if not msgs:
            return []
        extra = {"sample": sample} if sample else {}
        results = self.llm.chat_many(msgs, role=role, **extra, **self.solver_params())
        score = {"janus": self.replay_score, "test": self.test_score}.get(role, self.score)
        return list(zip(results, _score_all(score, list(zip(tasks, results, strict=True)))))

    def replay_score(self, task: Task, result: ChatResult) -> Score:
        """How Janus replays are scored (default: as the stream scores; ExpeL's paper preset scores the raw output)."""
        return self.score(task, result)

    def test_score(self, task: Task, result: ChatResult) -> Score:
        """How held-out test answers are scored (default: as the stream scores; ExpeL's paper preset: the raw
        output, as the authors' batched test checks it)."""
        return self.score(task, result)

    def score(self, task: Task, result: ChatResult) -> Score:
        return self.family.score(task, result)

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.encoder is None:
            raise ValueError(f"updater {self.name!r} needs an encoder for retrieval")
        return np.asarray(self.encoder.encode(list(texts)), dtype=np.float32)

    def _count(self, bucket: str, key: str, n: int = 1) -> None:
        d = self.stats.setdefault(bucket, {})
        d[key] = d.get(key, 0) + n

    def _check_snapshot(self, snap: dict) -> None:
        if not isinstance(snap, dict) or snap.get("updater") != self.name or "state" not in snap:
            got = snap.get("updater") if isinstance(snap, dict) else type(snap).__name__
            raise ValueError(f"snapshot is not a {self.name!r} updater snapshot (got {got!r})")
        if snap.get("format") != SNAPSHOT_FORMAT:
            raise ValueError(f"unsupported snapshot format {snap.get('format')!r} (expected {SNAPSHOT_FORMAT})")


def state_built(name: str) -> ValueError:
    """The error of :meth:`Updater.harmful_text` for an updater whose harmful candidate is built as a state."""
    return ValueError(f"updater {name!r}: its candidate depends on its state (ids, counters, embeddings); "
                      "build it with inject_candidate")


def _score_all(score: Callable[[Task, ChatResult], Score], pairs: list[tuple[Task, ChatResult]]) -> list[Score]:
    """``score(task, result)`` of every pair, in order, two at a time: a math check is a round trip to one of the two
    verifier processes (tasks/verify_math.py) and a code check runs in a sandbox process, so a batch's answers are
    scored in about half the time of one after another."""
    if len(pairs) < 2:
        return [score(t, r) for t, r in pairs]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="janus-score") as pool:
        return list(pool.map(lambda p: score(*p), pairs))


def _rows_only(o: Any) -> None:
    """json.dumps default of the snapshot check: a RowsRef is fine (the store encodes it), anything else is not."""
    if isinstance(o, rows.RowsRef):
        return None
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _without(snap: dict, paths: dict) -> dict:
    """``snap`` with the value at each key path of ``paths`` replaced by None (dicts on the way shallow-copied)."""
    out = dict(snap)
    for path in paths:
        node = out
        for k in path[:-1]:
            if not isinstance(node.get(k), dict):
                break
            node[k] = node = dict(node[k])
        else:
            if path and path[-1] in node:
                node[path[-1]] = None
    return out


# --------------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------------
from janus_memory.registry import UPDATERS  # noqa: E402  (the one registry; a dict of name -> class)


def register_updater(name: str) -> Callable[[type[Updater]], type[Updater]]:
    """Class decorator: make ``make_updater(name, ...)`` build this class. Re-registering a name replaces it."""
    return UPDATERS.class_decorator(name, Updater, "register_updater")


def make_updater(
    name: str, *, llm: ChatLLM, family: Family, encoder: Encoder | None, config: dict | None = None
) -> Updater:
    """Build the updater registered as ``name``.

    Raises ValueError listing the known names for an unknown ``name``, and ValueError naming the key for an
    unknown config key.
    """
    UPDATERS.check(name)  # ConfigError (a ValueError) with the closest name and the choices
    return UPDATERS[name](llm=llm, family=family, encoder=encoder, config=config)
