"""The two run presets (issue 13) and the small pieces the CLI/runner print with them.

* ``paper`` (the default of ``janus run``): the authors' code rule for rule. Controller ``JanusConfig.paper()``
  (identical-memory shortcut off), fresh replay samples per (trigger, entry, memory), updater defaults (paper
  prompts, first-block extraction, ExpeL paper rule operations, presence_penalty 1.0 on every call ...).
* ``small`` (``janus demo``): our capped prompts and strict parsers for a 1.5B model, frozen (cached) replays and
  ``JanusConfig.fast()``.

Every rule and the option that switches it: docs/fidelity.md.
"""
from __future__ import annotations

from janus_memory.controller import JanusConfig
from janus_memory.controller.config import SEED_MAX
from janus_memory.updaters.dc import SMALL_MODEL_CONFIG as _DC_SMALL
from janus_memory.updaters.expel import SMALL_MODEL_CONFIG as _EXPEL_SMALL

PRESETS = ("paper", "small")
PAPER_ENCODER = "st:Qwen/Qwen3-Embedding-0.6B"  # the paper's phi (sentence-transformers, whole memory, 32k tokens)
DEFAULT_ENCODER = "minilm"  # offline default: all-MiniLM-L6-v2 int8 ONNX, 384-d, 254-token windows averaged

SEED_HELP = ("dataset split/shuffle seed (which tasks form the stream and the test split, and their order); "
             "it does not change Janus's own seed (JanusConfig.seed, 0 as in the paper: fresh-set, boundary and "
             f"random-trigger sampling) nor the LLM's sampling; in [0, {SEED_MAX}]")

_ENCODER_NOTES = {
    "minilm": "all-MiniLM-L6-v2 int8 ONNX, 384-d, texts cut into 254-token windows and averaged (offline default; "
              f"the paper's encoder is {PAPER_ENCODER})",
    PAPER_ENCODER: "Qwen3-Embedding-0.6B via sentence-transformers, the whole memory as one text (the paper's)",
}


def updater_overrides(preset: str, updater: str) -> dict:
    """Updater config of a preset (merged under the user's own updater settings). Raises ValueError."""
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}")
    if preset == "paper":
        return {}
    backend = {"sampling": "backend"}  # top_p / top_k / min_p left to the backend (llama.cpp: 0.95 / 40 / 0.05)
    if updater in ("dc_rs", "dc_cu", "expel"):
        backend["parse_reasoning"] = False  # parsers see the answer text only (ours)
    if updater == "dc_rs":
        return {**_DC_SMALL, "curator_input": "question", **backend}  # the bare question instead of the task prompt
    if updater == "dc_cu":
        return {**_DC_SMALL, **backend}
    if updater == "expel":
        return {**_EXPEL_SMALL, **backend, "curator_input": "task_prompt"}
    return {"presence_penalty": None, **backend}


def janus_config(preset: str, **overrides) -> JanusConfig:
    """The controller configuration of a preset."""
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}")
    return JanusConfig.paper(**overrides) if preset == "paper" else JanusConfig.fast(**overrides)


def replay_mode(preset: str) -> str:
    """``fresh`` (paper: a new sample per (trigger, entry, memory)) or ``frozen`` (small: cached replays)."""
    return "fresh" if preset == "paper" else "frozen"


def checkpoint_restore(preset: str) -> str:
    """``paper`` (Fig. 4 memories restored as the authors' script does) or ``exact`` (small: exact snapshots)."""
    return "paper" if preset == "paper" else "exact"


def option_order(preset: str) -> str:
    """``question`` (paper: GPQA options shuffled by the question alone) or ``seeded`` (small: by record and seed)."""
    return "question" if preset == "paper" else "seeded"


def apibench_split(preset: str) -> str:
    """``paper`` (APIBench split keyed "APIBench:hf:<seed>", the authors') or ``registry`` (small: "apibench_hf:<seed>")."""
    return "paper" if preset == "paper" else "registry"


def apibench_question(preset: str) -> str:
    """``code`` (paper: APIBench's whole code field, the reference output included) or ``instruction`` (small)."""
    return "code" if preset == "paper" else "instruction"


def twin_cache(preset: str) -> str:
    """``separate`` (paper: the base method and its +Janus twin are independent samples) or ``shared`` (small)."""
    return "separate" if preset == "paper" else "shared"


def replay_failures(preset: str) -> str:
    """``zero`` (paper: a failed replay request scores that entry 0) or ``abort`` (small: the comparison ends)."""
    return "zero" if preset == "paper" else "abort"


def checker(preset: str) -> str:
    """``paper`` (the authors' checkers; our strict verdict recorded beside) or ``strict`` (small: ours only)."""
    return "paper" if preset == "paper" else "strict"


def encoder_line(encoder_name: str) -> str:
    """Which encoder decided the triggers, for the run summary and the report header."""
    note = _ENCODER_NOTES.get(encoder_name)
    if note is None and encoder_name.startswith("hashing"):
        note = "scikit-learn HashingVectorizer (no weights; a plumbing fallback, not the paper's encoder)"
    if note is None:
        note = f"user-chosen encoder; the paper's is {PAPER_ENCODER}"
    return f"triggers decided by encoder {encoder_name}: {note}"


_RUN_PRESET_NOTES = {
    "paper": "the authors' prompts, parsers, checker and sampling",
    "small": "our capped prompts and strict parsers for small models",
}
_REPLAY_NOTES = {"fresh": "Janus replays a fresh sample per task, memory and comparison",
                 "frozen": "Janus's replays are the stream's own requests, answered by the response cache"}


def run_preset_line(preset: str | None, replay: str | None) -> str:
    """The run preset in one line: what it sets for the updater and the replays. It is not the controller's preset
    (``janus_preset``: paper, fast, recommended), which controller/describe.py describes."""
    if not preset:
        return "run preset: not recorded (a run made before the presets)"
    notes = [n for n in (_RUN_PRESET_NOTES.get(preset), _REPLAY_NOTES.get(str(replay))) if n]
    return f"run preset: {preset} ({'; '.join(notes)})" if notes else f"run preset: {preset}"


_LOADER_OPTION_NOTES = {
    ("option_order", "question"): "GPQA option order: question (shuffled by the question alone, the same for every "
                                  "seed: the authors')",
    ("option_order", "seeded"): "GPQA option order: seeded (by record id and --seed; the authors': question)",
    ("apibench_split", "paper"): "APIBench split: paper (stable shuffle key 'APIBench:hf:<seed>': the authors')",
    ("apibench_split", "registry"): "APIBench split: registry (stable shuffle key 'apibench_hf:<seed>'; the "
                                    "authors': paper, another test set)",
    ("apibench_question", "code"): "APIBench question: code (the row's whole code field, as the authors' prompt "
                                   "shows it: it holds the reference output; --apibench-question instruction for "
                                   "the instruction alone)",
    ("apibench_question", "instruction"): "APIBench question: instruction (the instruction alone; the authors' "
                                          "prompt shows the whole code field, reference output included)",
}


def loader_option_lines(options: dict) -> list[str]:
    """The run header's lines for the settings the dataset's loader takes (``DatasetSpec.options``), in order."""
    return [_LOADER_OPTION_NOTES.get((k, v), f"{k}: {v}") for k, v in options.items()]


def preset_summary(preset: str, jcfg: JanusConfig, encoder_name: str, replay: str) -> dict:
    """What ``janus run`` prints and writes to config.json (key ``preset``), and ``janus report`` shows."""
    return {"name": preset, "janus_preset": jcfg.preset, "janus": jcfg.preset_line(), "replay": replay,
            "encoder": encoder_line(encoder_name)}


def check_context(n_ctx: int, max_tokens: int, prompt_budget: int = 2048) -> int:
    """Context window for the local backend: at least ``max_tokens`` + a prompt budget (the paper's thinking runs
    use 8192 new tokens; a 4096 window truncates them). Returns the window to use; raises ValueError with the fix
    when ``n_ctx`` was set explicitly (> 0) below what the request needs; ``n_ctx <= 0`` means "size it"."""
    need = int(max_tokens) + int(prompt_budget)
    if n_ctx <= 0:
        return need
    if n_ctx < need:
        raise ValueError(f"n_ctx {n_ctx} is below max_tokens {max_tokens} + a {prompt_budget}-token prompt budget "
                         f"({need}); raise n_ctx (or leave it 0 to size it) or lower the max tokens")
    return n_ctx
