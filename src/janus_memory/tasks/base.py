"""Task-family protocol, Split record, dataset registry and ``load_split``.

A task family = loader + prompt + answer extraction + scoring, kept separate (docs/research-notes.md §6):
loaders live in math_family.py / multiple_choice.py / humaneval.py / apibench.py, extraction in extract_*.py,
scoring in verify_math.py / sandbox.py / apibench.py.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import string
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

from janus_memory.did_you_mean import unknown_name
from janus_memory.errors import ConfigError
from janus_memory.registry import DATASETS as DATASET_REGISTRY
from janus_memory.registry import FAMILIES
from janus_memory.values import ChatResult, Score, Task

from .data import data_identity, sha256_text

SPLITS = ("stream", "test", "all")


@dataclass
class Split:
    """One materialised split.

    tasks: the tasks in stream/test order. dataset: registry name. split: "stream" | "test" | "all".
    sha256: sha256 of the source file (several files: sha256 of the "name sha256" lines, sorted).
    ids_sha256: sha256 of the task ids joined by newlines (in order). info: files, rule, seed, limit, n.
    """

    tasks: list[Task]
    dataset: str
    split: str
    sha256: str
    ids_sha256: str
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.tasks)

    @property
    def ids(self) -> list[str]:
        return [t.id for t in self.tasks]

    def record(self) -> dict:
        """JSON-serialisable record for the run folder (hashes + ids, never task text)."""
        return {"dataset": self.dataset, "split": self.split, "sha256": self.sha256,
                "ids_sha256": self.ids_sha256, "ids": self.ids, **self.info}


@dataclass(frozen=True)
class DatasetSpec:
    """Registry entry (janus_memory.registry.DATASETS): family name, loader, the documented split rules and the name
    reports print. ``loader`` is a callable ``(split, data_dir=, seed=) -> (tasks, files, rule)`` or a
    ``"module:function"`` string (a bare module name is under janus_memory.tasks)."""

    name: str
    family: str
    loader: Any
    stream_rule: str
    test_rule: str
    display_name: str = ""  # "" = the registry name
    table_rank: int | None = None  # column order of the paper's Table 1 (None: after those, alphabetically)
    needs_data: bool = True  # False: generated in the package (tasks/rules.py), no data folder is read
    options: tuple[str, ...] = ()  # keyword options the loader takes from the run settings (GPQA: option_order)
    fetch: str = ""  # data the package does not ship (tasks/shipped): what to fetch and where it goes, in one line
    test_only: bool = False  # no stream split: the test split of another dataset, not one `janus run` takes
    sized: bool = False  # the stream is laid out for the length asked for: load_split passes it as ``size``

    def load_raw(self, split: str, data_dir, seed: int, options: dict | None = None) -> tuple[list[Task], list[Path], str]:
        """``options``: run settings for loaders; only the ones this dataset declares are passed on."""
        fn = self.loader
        if isinstance(fn, str):
            mod, name = fn.split(":")
            fn = getattr(importlib.import_module(mod if "." in mod else f"janus_memory.tasks.{mod}"), name)
        kw = {k: v for k, v in (options or {}).items() if k in self.options or (k == "size" and self.sized)}
        return fn(split, data_dir=data_dir, seed=seed, **kw)


DATASETS = DATASET_REGISTRY
DATASETS.update({s.name: s for s in [
    DatasetSpec("gsm8k", "math", "math_family:load_gsm8k",
                "random.Random(seed).shuffle of the 1319 test records, [0:500)", "same shuffle, [500:1000)"),
    DatasetSpec("math500", "math", "math_family:load_math500", "(none: math500 is test-only; use 'math', 'gsm8k' or 'aime')",
                "all 500 of math500/test.jsonl in file order"),
    DatasetSpec("math", "math", "math_family:load_math",
                "user Hendrycks MATH train (JANUS_MATH_TRAIN_PATH / --data-dir), random.Random(seed).shuffle, [0:500)",
                "MATH-500 (500)"),
    DatasetSpec("aime", "math", "math_family:load_aime", "AIME 2024 I+II (30, file order)", "AIME 2025 I+II (30, file order)"),
    DatasetSpec("mmlu_pro_eng", "mc", "multiple_choice:load_mmlu_pro_eng",
                "category 'engineering', stable shuffle key 'TIGER-Lab/MMLU-Pro:engineering:<seed>', [0:250)", "[250:500)"),
    DatasetSpec("mmlu_pro_phy", "mc", "multiple_choice:load_mmlu_pro_phy",
                "category 'physics', stable shuffle key 'TIGER-Lab/MMLU-Pro:physics:<seed>', [0:250)", "[250:500)"),
    DatasetSpec("gpqa", "mc", "multiple_choice:load_gpqa",
                "user gpqa_main.csv minus gpqa_diamond.csv, <4 distinct options skipped, random.Random(seed).shuffle, cap 1000",
                "user gpqa_diamond.csv (198, file order)", options=("option_order",)),
    DatasetSpec("humaneval", "humaneval", "humaneval:load_humaneval",
                "stable shuffle key 'HumanEval:<seed>' of the 164 problems, [0:50)", "[50:164) (114)"),
    DatasetSpec("apibench_hf", "apibench", "apibench:load_apibench_hf",
                "huggingface_eval.jsonl (911), stable shuffle key 'APIBench:hf:<seed>' (apibench_split paper) or "
                "'apibench_hf:<seed>' (registry), [0:250)", "[250:500)", options=("apibench_split", "apibench_question")),
    DatasetSpec("rules", "rules", "rules:load_rules",
                "generated from the seed: 100 tickets, the first 15 state the 9 rules", "50 recall/combo tickets",
                needs_data=False),
    DatasetSpec("rules_small", "rules", "rules:load_rules_small",
                "generated from the seed: 30 tickets, the first 2 state the 2 rules", "20 recall/combo tickets",
                needs_data=False),
    DatasetSpec("rules_late", "rules", "rules:load_rules_late",
                "generated from the seed: 60 tickets (or --stream-size, laid out for it), the first 2 state 2 of the 4 "
                "rules, the other 2 are stated at 40% and 80% of the stream", "24 recall/combo tickets, each rule "
                "needed by every 4th", needs_data=False, sized=True),
]})
# display names and the paper's Table 1 column order (facts of the datasets, read by `janus report`)
for _name, _disp, _rank in (("math500", "MATH500", 0), ("gpqa", "GPQA", 1), ("mmlu_pro_eng", "MMLU-Pro Eng", 2),
                            ("mmlu_pro_phy", "MMLU-Pro Phy", 3), ("apibench_hf", "APIBench-HF", 4), ("humaneval", "HumanEval", 5),
                            ("gsm8k", "GSM8K", None), ("aime", "AIME", None), ("math", "MATH", None),
                            ("rules", "Rules (generated)", None), ("rules_small", "Rules-small (generated)", None),
                            ("rules_late", "Rules-late (generated)", None)):
    DATASETS[_name] = dataclasses.replace(DATASETS[_name], display_name=_disp, table_rank=_rank)
# what the package's shipped data lacks (the loaders' errors say the same when the file is missing)
MATH_TRAIN_FETCH = ("Hendrycks MATH train (the train/ folder of github.com/hendrycks/math, or a train jsonl/parquet), "
                    "then set JANUS_MATH_TRAIN_PATH to it")
DATASETS["math"] = dataclasses.replace(DATASETS["math"], fetch=MATH_TRAIN_FETCH)
DATASETS["gpqa"] = dataclasses.replace(DATASETS["gpqa"], fetch=(
    "gpqa_main.csv and gpqa_diamond.csv (the password-protected dataset.zip of github.com/idavidrein/gpqa), then set "
    "JANUS_GPQA_PATH to their folder"))
DATASETS["math500"] = dataclasses.replace(DATASETS["math500"], test_only=True,
                                          fetch="it is the test split of 'math': fetch " + MATH_TRAIN_FETCH)


def dataset_groups() -> dict[str, list[str]]:
    """Registered dataset names by what a run on them needs: ``shipped`` (runs on the data shipped in the package,
    tasks/shipped; a plugin's datasets too), ``generated`` (made in the package from the seed, no data read:
    ``DatasetSpec.needs_data`` False), ``fetch`` (a file to fetch first, ``DatasetSpec.fetch``) and ``test_only``
    (no stream split)."""
    out: dict[str, list[str]] = {"shipped": [], "generated": [], "fetch": [], "test_only": []}
    for name, spec in DATASETS.items():
        fetch, test_only = getattr(spec, "fetch", ""), getattr(spec, "test_only", False)
        generated = not getattr(spec, "needs_data", True)
        out["test_only" if test_only else "fetch" if fetch else "generated" if generated else "shipped"].append(name)
    return out


def _check_dataset(dataset: str) -> DatasetSpec:
    if dataset not in DATASETS:
        raise ConfigError(unknown_name("dataset", dataset, DATASETS))  # a ValueError; the closest name first
    return DATASETS[dataset]


def load_split(dataset: str, split: str = "stream", *, data_dir=None, seed: int = 0, limit: int | None = None,
               options: dict | None = None) -> Split:
    """Load one split of a registered dataset (rules in ``DATASETS`` and docs/tasks.md).

    split: "stream" (memory construction), "test" (frozen evaluation) or "all" (every record, stream then test).
    limit: keep the first ``limit`` tasks of the split (None = all).
    options: run settings some loaders take (``DatasetSpec.options``; GPQA: ``option_order``; APIBench-HF:
    ``apibench_split``, ``apibench_question``), recorded in ``info``;
    the others are ignored.
    Raises ValueError (unknown dataset/split, bad limit) and FileNotFoundError (missing file; the message names
    the path and the env var / --data-dir fix).
    """
    spec = _check_dataset(dataset)
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of: {', '.join(SPLITS)}")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise ValueError(f"limit must be a non-negative int or None, got {limit!r}")
    used = {k: v for k, v in (options or {}).items() if k in spec.options}
    if getattr(spec, "sized", False) and split == "stream" and limit is not None:
        used["size"] = limit  # a stream laid out for its length (rules_late), not cut from a longer one
    tasks, files, rule = spec.load_raw(split, data_dir, seed, used)
    if limit is not None:
        tasks = tasks[:limit]
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise _duplicate_id_error(dataset, split, tasks, files)
    file_info: list[dict[str, Any]] = [dict(zip(("path", "sha256", "bytes"), (str(p), *data_identity(p))))
                                       for p in files]  # sha256 and bytes of the content, uncompressed
    if not file_info:  # generated tasks (no source file): the hash of their content, so a changed generator shows
        digest = sha256_text(json.dumps([[t.id, t.question, t.gold] for t in tasks], ensure_ascii=False))
    elif len(file_info) == 1:
        digest = file_info[0]["sha256"]
    else:
        digest = sha256_text("\n".join(sorted(f"{Path(f['path']).name} {f['sha256']}" for f in file_info)))
    info = {"files": file_info, "rule": rule, "seed": seed, "limit": limit, "n": len(tasks), "family": spec.family,
            **used}
    return Split(tasks=tasks, dataset=dataset, split=split, sha256=digest,
                 ids_sha256=sha256_text("\n".join(ids)), info=info)


def _duplicate_id_error(dataset: str, split: str, tasks: list[Task], files: list[Path]) -> ConfigError:
    """One line naming the data file and the first task id two records share."""
    from .data import DataRecordError

    seen: set[str] = set()
    dup = next(t.id for t in tasks if t.id in seen or seen.add(t.id))  # type: ignore[func-returns-value]
    src = ", ".join(str(p) for p in files) or f"the generated {dataset} tasks"
    return DataRecordError(f"{src}: two records have the task id {dup!r} ({dataset}/{split}); each record needs its "
                           f"own id")


# ----------------------------------------------------------------------------------------------- families

def output_text(output: ChatResult | str) -> tuple[str, bool]:
    """(answer text, truncated?) of a model output. Only ``ChatResult.text`` is used, never the reasoning; reasoning
    still left in the text (``<think>...</think>`` and the other forms ``llm.reasoning.split_answer`` knows, in a
    string or a ChatResult) is removed, and a reasoning block left open makes the output truncated with no text."""
    from janus_memory.llm.reasoning import split_answer  # here, not at import: the llm package loads its backends

    if isinstance(output, ChatResult):
        text, open_block = split_answer(output.text or "")
        return text, output.truncated or open_block
    if isinstance(output, str):
        return split_answer(output)
    raise TypeError(f"output must be ChatResult or str, got {type(output).__name__}")


def load_prompt(name: str) -> string.Template:
    """The prompt template ``tasks/prompts/<name>.txt`` (``string.Template``: ``$question`` etc.)."""
    text = resources.files("janus_memory.tasks").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    return string.Template(text)


class TaskFamily(ABC):
    """Prompt + extraction + scoring of one task family. Instances are stateless and thread-safe."""

    name: str = ""
    prompt_name: str = ""

    def __init__(self, *, faithful: bool = False):
        self.faithful = faithful
        self._template = load_prompt(self.prompt_name or self.name)

    @abstractmethod
    def prompt(self, task: Task) -> str: ...

    def fake_answer(self, task: Task, right: bool) -> str:
        """The reply of the scripted ``--backend fake`` (run/fake_llm.py) to ``task``: right or wrong, in the answer
        format this family extracts. Default: a boxed answer (a wrong one appends "1" to the gold)."""
        if isinstance(task.gold, str):
            wrong = task.gold + "1" if task.gold else "0"
            return f"Working it out step by step.\nThe answer is \\boxed{{{task.gold if right else wrong}}}."
        return "I am not sure."

    @abstractmethod
    def score(self, task: Task, output: ChatResult | str) -> Score: ...

    def score_many(self, tasks: Sequence[Task], outputs: Sequence[ChatResult | str], workers: int = 2) -> list[Score]:
        """Score a batch in order (threads; subclasses use processes/sandboxes where it pays)."""
        if len(tasks) != len(outputs):
            raise ValueError(f"{len(tasks)} tasks but {len(outputs)} outputs")
        if workers <= 1 or len(tasks) <= 1:
            return [self.score(t, o) for t, o in zip(tasks, outputs)]
        with ThreadPoolExecutor(max_workers=workers) as ex:
            return list(ex.map(self.score, tasks, outputs))


def summarize(scores: Iterable[Score]) -> dict[str, Any]:
    """Accuracy plus the rates that must be reported next to it (C12): unparsed, fallback, truncated, timeout, error.

    Unparsed/truncated/timeout/error outputs count as incorrect; nothing gets random or partial credit. ``fallback``
    outputs (no final-answer marker; scored through the last number / last letter) are scored normally but counted,
    so a format regression shows up.
    """
    scores = list(scores)
    n = len(scores)
    out: dict[str, Any] = {"n": n, "correct": sum(s.correct for s in scores)}
    out["accuracy"] = out["correct"] / n if n else 0.0
    for st in ("unparsed", "fallback", "truncated", "timeout", "error"):
        out[f"{st}_rate"] = sum(s.status == st for s in scores) / n if n else 0.0
    return out


for _fam, _ref in (("math", "math_family:MathFamily"), ("mc", "multiple_choice:MultipleChoiceFamily"),
                   ("humaneval", "humaneval:HumanEvalFamily"), ("apibench", "apibench:APIBenchFamily"),
                   ("rules", "rules_scoring:RulesFamily")):
    FAMILIES.register(_fam, f"janus_memory.tasks.{_ref}")  # imported on first use
_FAMILY_CACHE: dict[tuple[str, bool], TaskFamily] = {}


def get_family(dataset: str, *, faithful: bool = False) -> TaskFamily:
    """The TaskFamily for a registered dataset name (or a family name: math, mc, humaneval, apibench).

    faithful=True selects the paper's own checker where it differs (math: normalised exact match of the last box).
    """
    fam = DATASETS[dataset].family if dataset in DATASETS else dataset
    if fam not in FAMILIES:
        raise ConfigError(unknown_name("dataset", dataset, DATASETS))
    key = (fam, bool(faithful))
    if key not in _FAMILY_CACHE or type(_FAMILY_CACHE[key]) is not FAMILIES[fam]:
        _FAMILY_CACHE[key] = FAMILIES[fam](faithful=faithful)
    return _FAMILY_CACHE[key]
