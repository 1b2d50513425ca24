"""How the report names and orders things: a dataset's display name and column order, a row label's order (facts of
the datasets and updaters themselves, janus_memory.registry), and the Markdown table writer. Below every other report
module; imports only the registry.
"""
from __future__ import annotations


def display_name(dataset: str) -> str:
    """The dataset's display name (its registry fact), else the name itself."""
    from ..plugins import ensure_builtins
    from ..registry import DATASETS

    ensure_builtins()
    spec = DATASETS.get(dataset)
    return (getattr(spec, "display_name", "") or dataset) if spec is not None else dataset


def dataset_key(d: str):
    """Paper column order (the datasets' ``table_rank``), then anything else alphabetically."""
    from ..plugins import ensure_builtins
    from ..registry import DATASETS

    ensure_builtins()
    rank = getattr(DATASETS.get(d), "table_rank", None)
    return (0, rank, d) if rank is not None else (1, 0, d)


def label_key(label: str):
    """Paper row order: memory-free, ExpRAG, then each updater followed by its Janus variant, ablations last."""
    from ..plugins import ensure_builtins
    from ..registry import UPDATERS

    ensure_builtins()
    base = label.split("[", 1)[0].split(" (", 1)[0]  # without a cell suffix and a tag ("dc_rs (a)", variants.py)
    upd = base.split("+", 1)[0]
    rank = getattr(UPDATERS.get(upd), "table_rank", 2)
    return (rank, upd, "[" in label, "+janus" in base, label)


def _cell(text) -> str:
    """A Markdown table cell: a literal '|' (as in |E|) must be escaped or it splits the cell; a newline (a run
    folder's name may hold one) would end the row, and a control or bidi character would hide or reorder the text:
    both are written as visible escapes (errors.printable, one line)."""
    from ..errors import printable

    return printable(str(text), one_line=True).replace("|", "\\|")


def markdown_table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in body]
    return "\n".join(lines)
