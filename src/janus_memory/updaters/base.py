"""The updater seam: one interface over every memory-update method Janus wraps.

An updater owns a memory (a cheatsheet, a rule list, a bank of past records ...) and the method's own prompts.
Janus never changes how an updater proposes memory; it only decides whether the proposal is kept
(``M_t in {M_{t-1}, M̂_t}``, paper-spec §1.1). The runner therefore needs, from every updater:

* ``step(task)``: solve the task as the method does and leave the candidate ``M̂_t`` in the internal state;
* ``memory_text()``: the text the encoder embeds and the evaluator replays;
* ``snapshot()`` / ``load_snapshot()``: the full state (resume), JSON-serialisable and deterministic;
* ``rollback(snap)``: what a Janus rejection restores (paper-spec §3.2 "What the rollback restores");
* ``solve_with_memory(text, tasks)``: the method's solving prompt with this memory text only (Janus replay);
* ``solve_frozen(tasks)``: held-out test with the frozen memory (+ retrieval where the method uses it).

A new updater is one subclass in one file: implement ``step``, ``memory_text``, ``solving_messages``,
``get_state`` and ``set_state``; register it with :func:`register_updater`. See ``docs/updaters.md``.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from janus_memory.types import ChatResult, Score, Task

EMPTY_MEMORY = "(empty)"
SNAPSHOT_FORMAT = 1


# --------------------------------------------------------------------------------------------------
# collaborators (structural protocols; the real ones live in janus_memory.llm / .tasks / .encoders)
# --------------------------------------------------------------------------------------------------
class ChatLLM(Protocol):
    def chat(self, messages: list[dict], *, role: str, sample: int = 0, **params: Any) -> ChatResult: ...

    def chat_many(self, list_of_messages: list[list[dict]], *, role: str, **params: Any) -> list[ChatResult]: ...


class Family(Protocol):
    def prompt(self, task: Task) -> str: ...

    def score(self, task: Task, output: ChatResult | str) -> Score: ...


class Encoder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray: ...


# --------------------------------------------------------------------------------------------------
# records
# --------------------------------------------------------------------------------------------------
@dataclass
class LLMCall:
    """One LLM call made by an updater. ``role`` is "solver", "curator" or "reflection"."""

    role: str
    messages: list[dict]
    result: ChatResult
    params: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        r = self.result
        return {
            "role": self.role,
            "messages": self.messages,
            "params": self.params,
            "result": {
                "text": r.text,
                "reasoning": r.reasoning,
                "finish_reason": r.finish_reason,
                "cached": r.cached,
                "prompt_tokens": r.usage.prompt_tokens,
                "completion_tokens": r.usage.completion_tokens,
            },
        }


@dataclass
class StepOutcome:
    """What one ``Updater.step(task)`` produced.

    output: the answer that was scored (for multi-try methods, the last try).
    score: its Score against the ground truth (paper-spec §1.2: feedback = correctness).
    old_memory / candidate_memory: ``memory_text()`` before and after the step (M_{t-1}, M̂_t).
    candidate_rejected: None, or the reason the method's proposal was refused by our validation
        (e.g. "missing block"); the memory is then unchanged (candidate_memory == old_memory).
    calls: every LLM call made, in order.
    info: method-specific log (branches taken, dropped operations with reasons, retrieved ids ...).
    """

    output: ChatResult
    score: Score
    old_memory: str
    candidate_memory: str
    candidate_rejected: str | None
    calls: list[LLMCall]
    info: dict = field(default_factory=dict)

    @property
    def rejected_candidate(self) -> str | None:  # spelling used in docs/architecture.md
        return self.candidate_rejected

    @property
    def changed(self) -> bool:
        return self.candidate_memory != self.old_memory


# --------------------------------------------------------------------------------------------------
# prompt files
# --------------------------------------------------------------------------------------------------
_PLACEHOLDER = re.compile(r"\[\[([A-Z0-9_]+)\]\]")
_PROMPT_CACHE: dict[str, str] = {}


def load_prompt(name: str) -> str:
    """Text of ``updaters/prompts/<name>.txt`` (package data, read with importlib.resources).

    The final newline of the file is removed. Raises FileNotFoundError for an unknown name.
    """
    if name not in _PROMPT_CACHE:
        ref = resources.files("janus_memory.updaters").joinpath("prompts", f"{name}.txt")
        if not ref.is_file():
            raise FileNotFoundError(f"no updater prompt file {name!r}.txt")
        _PROMPT_CACHE[name] = ref.read_text(encoding="utf-8").rstrip("\n")
    return _PROMPT_CACHE[name]


def fill(template: str, **values: str) -> str:
    """Replace every ``[[NAME]]`` in ``template`` by ``values["NAME"]`` in one pass.

    Values are inserted verbatim (a value that itself contains ``[[X]]`` is not expanded again).
    Raises KeyError when a placeholder has no value and ValueError when a value is unused.
    """
    used: set[str] = set()

    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key not in values:
            raise KeyError(f"prompt placeholder [[{key}]] has no value")
        used.add(key)
        return str(values[key])

    out = _PLACEHOLDER.sub(sub, template)
    unused = set(values) - used
    if unused:
        raise ValueError(f"values given for placeholders not in the template: {sorted(unused)}")
    return out


def truncate(text: str, limit: int | None) -> str:
    """Cut ``text`` to ``limit`` characters (None = no limit), marking the cut."""
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + " [...truncated]"


# --------------------------------------------------------------------------------------------------
# retrieval bank (a second memory for DC-RS / ExpeL / ExpRAG)
# --------------------------------------------------------------------------------------------------
class RetrievalBank:
    """Append-only list of JSON records with one L2-normalised float32 embedding each.

    Retrieval is cosine similarity (= dot product of normalised rows), top-k, ties broken by insertion order.
    State is JSON-serialisable: embeddings are stored as base64 of little-endian float32 bytes (exact round trip).
    """

    def __init__(self) -> None:
        self.records: list[dict] = []
        self._buf: np.ndarray | None = None  # (capacity, d) float32, rows [0, len) are used; grows by doubling

    def __len__(self) -> int:
        return len(self.records)

    def add(self, record: dict, embedding: np.ndarray) -> None:
        e = np.asarray(embedding, dtype=np.float32).reshape(-1)
        n = len(self.records)
        if self._buf is None:
            self._buf = np.zeros((16, e.shape[0]), dtype=np.float32)
        elif e.shape[0] != self._buf.shape[1]:
            raise ValueError(f"embedding dim {e.shape[0]} differs from the bank's {self._buf.shape[1]}")
        if n == self._buf.shape[0]:
            self._buf = np.vstack([self._buf, np.zeros_like(self._buf)])
        self._buf[n] = e
        self.records.append(copy.deepcopy(record))

    def matrix(self) -> np.ndarray | None:
        """(n, d) float32 view of all embeddings (None when empty)."""
        if self._buf is None or not self.records:
            return None
        return self._buf[: len(self.records)]

    def top_k(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Indices and similarities of the ``k`` most similar records, best first."""
        emb = self.matrix()
        if k <= 0 or emb is None:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        sims = emb @ q
        order = np.argsort(-sims, kind="stable")[:k]
        return [(int(i), float(sims[i])) for i in order]

    def state(self) -> dict:
        emb = self.matrix()
        if emb is None:
            return {"records": [], "dim": 0, "emb_b64": ""}
        emb = np.ascontiguousarray(emb, dtype="<f4")
        return {
            "records": copy.deepcopy(self.records),
            "dim": int(emb.shape[1]),
            "emb_b64": base64.b64encode(emb.tobytes()).decode("ascii"),
        }

    def set_state(self, state: dict) -> None:
        self.records = copy.deepcopy(list(state.get("records", [])))
        self._buf = None
        if not self.records:
            return
        dim = int(state["dim"])
        raw = base64.b64decode(state["emb_b64"])
        self._buf = np.frombuffer(raw, dtype="<f4").astype(np.float32).reshape(len(self.records), dim).copy()


# --------------------------------------------------------------------------------------------------
# the seam
# --------------------------------------------------------------------------------------------------
def visible_text(result: ChatResult) -> str:
    """What the model visibly wrote: the answer text, or for a reply cut off by max_tokens (whose partial text the
    LLM layer moves to ``reasoning`` so it is never scored as an answer, C19) that partial text. Used where an
    updater shows an earlier output to the model again (retrieval banks, ExpeL reflection on a failed try); scoring
    always uses the ChatResult itself."""
    if result.text:
        return result.text
    return result.reasoning if result.truncated else ""


COMMON_DEFAULTS: dict[str, Any] = {
    "temperature": 0.0,  # lead's demo choice; the paper uses 0.7 (paper-spec §7)
    "solver_max_tokens": 1024,
    "curator_max_tokens": 1024,
    "top_k": 3,  # retrieval depth (paper-spec §5, §9)
    "retrieved_output_chars": None,  # truncate retrieved outputs in prompts (None = full)
    "solver_params": {},  # extra sampling params for solver calls (e.g. presence_penalty)
    "presence_penalty": 1.0,  # paper preset: on every solving call (authors' vLLM path); None = not sent
    "extra_body": None,  # backend-specific JSON sent with every call (e.g. Qwen3 thinking switch); None = not sent
    "faithful": False,  # reproduce the original method's parsing quirks (C24/C25), recording the branch taken
}


class Updater(ABC):
    """Base class of every memory updater (see module docstring for the contract).

    Subclasses set ``name`` and ``DEFAULTS`` (their extra config keys) and implement
    ``step``, ``memory_text``, ``solving_messages``, ``get_state`` and ``set_state``.
    ``rollback`` defaults to a full restore; override it where the paper restores less (DC-RS, ExpeL).
    """

    name: str = "base"
    DEFAULTS: dict[str, Any] = {}
    # registry facts (janus_memory.registry): read by validation, the grid, the report and the run's prompt provenance
    supports_janus: bool = True        # False: no rewritable text memory for Janus to judge (paper-spec §9)
    is_baseline: bool = False          # a paper baseline (Table 1 rows above the updaters; `janus grid` runs it)
    table_rank: int = 2                # report row order: baselines first (memory-free 0, ExpRAG 1), then by name
    display_name: str = ""             # shown in reports; "" = the registry name
    prompt_package: str = "janus_memory.updaters"  # package whose prompts/ folder holds this updater's prompt files
    prompt_prefixes: tuple[str, ...] = ()          # prompt files of this updater: prompts/<prefix>*.txt

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

    # ---- registry fact: LLM calls per stream step (the run's time estimate, runner/estimate.py) -------------
    @classmethod
    def llm_calls_per_step(cls, config: dict) -> tuple[float, float | None] | None:
        """(fewest, most) LLM calls one stream step makes, averaged over steps, with ``config`` (the updater's
        settings with every default filled in); ``most`` is None when the method has no fixed bound. None (this
        default): the updater does not declare it and the run prints no estimate. Janus replays and the held-out
        test are counted by the runner (one call per task and memory)."""
        return None

    # ---- provided --------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """Full state incl. banks and stats; ``json.dumps(snapshot(), sort_keys=True)`` is deterministic."""
        snap = {
            "format": SNAPSHOT_FORMAT,
            "updater": self.name,
            "state": self.get_state(),
            "stats": copy.deepcopy(self.stats),
        }
        json.dumps(snap, sort_keys=True)  # fail early if a subclass put a non-JSON value in its state
        return snap

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

        ``sample`` is the LLM client's sample index (0 = the stream solver's request; see runner/evaluator.py)."""
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
        score = self.replay_score if role == "janus" else self.score
        return [r if isinstance(r, BaseException) else (r, score(t, r))
                for r, (_, t, _) in zip(results, items, strict=True)]

    def solve_frozen(self, tasks: Sequence[Task], *, role: str = "test") -> list[tuple[ChatResult, Score]]:
        """Held-out test with the frozen memory (methods with a bank override this to add retrieval)."""
        return self.solve_with_memory(self.memory_text(), tasks, role=role)

    # ---- helpers for subclasses -----------------------------------------------------------------
    def _with_extra(self, params: dict) -> dict:
        if self.config["extra_body"] is not None:
            params["extra_body"] = self.config["extra_body"]
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
        score = self.replay_score if role == "janus" else self.score
        return [(r, score(t, r)) for r, t in zip(results, tasks, strict=True)]

    def replay_score(self, task: Task, result: ChatResult) -> Score:
        """How Janus replays are scored (default: as the stream scores; ExpeL's paper preset scores the raw output)."""
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


# --------------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------------
from janus_memory.registry import UPDATERS  # noqa: E402  (the one registry; a dict of name -> class)


def register_updater(name: str) -> Callable[[type[Updater]], type[Updater]]:
    """Class decorator: make ``make_updater(name, ...)`` build this class. Re-registering a name replaces it."""

    def deco(cls: type[Updater]) -> type[Updater]:
        if not (isinstance(cls, type) and issubclass(cls, Updater)):
            raise TypeError("register_updater expects an Updater subclass")
        cls.name = name
        UPDATERS[name] = cls
        return cls

    return deco


def make_updater(
    name: str, *, llm: ChatLLM, family: Family, encoder: Encoder | None, config: dict | None = None
) -> Updater:
    """Build the updater registered as ``name``.

    Raises ValueError listing the known names for an unknown ``name``, and ValueError naming the key for an
    unknown config key.
    """
    if name not in UPDATERS:
        raise ValueError(f"unknown updater {name!r}; known updaters: {', '.join(sorted(UPDATERS))}")
    return UPDATERS[name](llm=llm, family=family, encoder=encoder, config=config)
