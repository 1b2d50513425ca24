"""Benchmark task families: loaders, prompts, answer extraction, scoring and the code sandbox. May import the registry,
the foundation modules and ``llm.reasoning`` (the one splitter of reasoning from answer text) only.

Contract (docs/architecture.md, docs/tasks.md)::

    from janus_memory.tasks import load_split, get_family, DATASETS, Split
    split = load_split("gsm8k", "stream", data_dir=None, seed=0, limit=None)
    fam = get_family("gsm8k"); fam.prompt(task); fam.score(task, output); fam.score_many(tasks, outputs, workers=2)
"""
from .base import DATASETS, DatasetSpec, Split, TaskFamily, get_family, load_split, summarize

__all__ = ["DATASETS", "DatasetSpec", "Split", "TaskFamily", "get_family", "load_split", "summarize"]
