"""Text generation for the memory world: task questions, memory items, memory sheets and retrieval dumps.

The texts exist so that the product's real encoder sees realistic changes between consecutive memories (lines added,
removed or reworded inside a Dynamic-Cheatsheet-like sheet; a sheet replaced by a block of retrieved previous solutions).
Every text is a deterministic function of its arguments (a seeded ``random.Random`` is passed in), so a fixed seed gives
fixed texts and therefore fixed embeddings.
"""
from __future__ import annotations

import random

# Topic vocabularies (our own word lists). A world with more clusters than topics reuses topics with a numbered suffix.
TOPICS: list[tuple[str, list[str]]] = [
    ("geometry", ["triangle", "circle", "radius", "chord", "tangent", "angle", "polygon", "area", "perimeter",
                  "inscribed", "similar", "altitude", "diagonal", "trapezoid", "arc", "hexagon"]),
    ("algebra", ["polynomial", "root", "coefficient", "quadratic", "factor", "equation", "variable", "vieta",
                 "discriminant", "identity", "substitution", "inequality", "expression", "monic", "degree", "system"]),
    ("number theory", ["prime", "divisor", "modulo", "remainder", "congruence", "gcd", "lcm", "digit", "parity",
                       "factorization", "integer", "residue", "base", "totient", "multiple", "coprime"]),
    ("combinatorics", ["permutation", "combination", "arrangement", "subset", "binomial", "pigeonhole", "bijection",
                       "choose", "ordering", "committee", "path", "grid", "coloring", "partition", "inclusion", "exclusion"]),
    ("probability", ["probability", "expected", "random", "dice", "coin", "independent", "conditional", "outcome",
                     "trial", "variance", "distribution", "event", "sample", "fair", "draw", "uniform"]),
    ("sequences", ["sequence", "recurrence", "series", "arithmetic", "geometric", "term", "sum", "telescoping",
                   "limit", "convergence", "fixed", "point", "recursive", "periodic", "index", "ratio"]),
    ("functions", ["function", "domain", "range", "inverse", "composition", "graph", "logarithm", "exponential",
                   "maximum", "minimum", "derivative", "monotone", "symmetric", "periodicity", "zero", "asymptote"]),
    ("complex numbers", ["complex", "imaginary", "modulus", "argument", "conjugate", "unity", "polar", "rotation",
                         "euler", "plane", "magnitude", "real", "part", "cyclotomic", "de", "moivre"]),
    ("vectors", ["vector", "dot", "cross", "product", "projection", "orthogonal", "basis", "span", "matrix",
                 "determinant", "linear", "transformation", "coordinate", "norm", "component", "parallel"]),
    ("logic puzzles", ["truth", "liar", "statement", "knight", "knave", "implication", "contradiction", "case",
                       "assumption", "deduce", "table", "clue", "constraint", "consistent", "scenario", "claim"]),
]

GENERIC = ["check", "verify", "simplify", "compute", "list", "count", "write", "rewrite", "bound", "estimate",
           "reduce", "isolate", "express", "substitute", "test", "guess"]
SYNONYMS = {"check": "verify", "verify": "confirm", "simplify": "reduce", "compute": "evaluate", "list": "enumerate",
            "count": "tally", "write": "record", "bound": "limit", "first": "initially", "always": "consistently",
            "carefully": "methodically", "then": "afterwards", "use": "apply", "when": "whenever"}
SUBTOPIC_WORDS = ["small cases", "extreme values", "symmetric configurations", "boundary cases", "large inputs",
                  "degenerate cases", "integer solutions", "nested structure"]
DUMP_NOTE = ("Note: the pairs below come from earlier test cases and may help with strategy or tool use. They can "
             "contain errors and may not fit the present problem; read them critically before borrowing anything.")


def topic(cluster: int) -> tuple[str, list[str]]:
    name, words = TOPICS[cluster % len(TOPICS)]
    if cluster >= len(TOPICS):
        name = f"{name} {cluster // len(TOPICS) + 1}"
    return name, words


def task_text(cluster: int, subtopic: int, idx: int, rng: random.Random) -> str:
    """A question from a cluster's vocabulary (6 topic words, 2 generic words, numbers)."""
    name, words = topic(cluster)
    w = rng.sample(words, 6)
    g = rng.sample(GENERIC, 2)
    a, b = rng.randint(2, 99), rng.randint(2, 99)
    return (f"Problem {idx} ({name}, {SUBTOPIC_WORDS[subtopic % len(SUBTOPIC_WORDS)]}): given a {w[0]} with {w[1]} "
            f"{a} and {w[2]} {b}, {g[0]} the {w[3]} of the {w[4]} and {g[1]} the {w[5]}. Give the final answer.")


def item_lines(kind: str, cluster: int, subtopic: int, serial: int, rng: random.Random) -> list[str]:
    """Lines of one memory item (a strategy rule). Over-specific items quote concrete numbers of one task."""
    name, words = topic(cluster)
    w = rng.sample(words, 5)
    g = rng.sample(GENERIC, 3)
    if kind == "specific":
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        title = f"Exact recipe for {name} problems with {w[0]} {a} and {w[1]} {b}"
        body = (f"When the {w[0]} equals {a} and the {w[1]} equals {b}, always {g[0]} the {w[2]} first, "
                f"then answer {a * b % 97}; reuse this answer for {SUBTOPIC_WORDS[subtopic % len(SUBTOPIC_WORDS)]}.")
        example = f"Worked case #{serial}: {w[3]} {a}, {w[4]} {b} -> {a * b % 97}."
    else:
        title = f"{name.capitalize()} strategy: {w[0]} and {w[1]}"
        body = (f"When a problem mentions a {w[0]} or a {w[1]}, first {g[0]} the {w[2]}, then {g[1]} the "
                f"{w[3]} carefully and {g[2]} the result against the {w[4]}.")
        example = f"Example #{serial}: use the {w[2]} to {g[1]} the {w[3]} before expanding anything."
    return ["<memory_item>", "<description>", title, body, "</description>", "<example>", example, "</example>",
            "** Count: 1", "</memory_item>"]


def reword_lines(lines: list[str], rng: random.Random) -> list[str]:
    """A small rewording: synonym swaps in the body and example lines and a bumped usage count."""
    out = []
    for line in lines:
        if line.startswith("** Count:"):
            try:
                n = int(line.split(":", 1)[1]) + 1
            except ValueError:
                n = 2
            out.append(f"** Count: {n}")
        elif line.startswith("<") or len(line.split()) < 4:
            out.append(line)
        else:
            words = line.split(" ")
            for i, wd in enumerate(words):
                key = wd.strip(",.;:").lower()
                if key in SYNONYMS and rng.random() < 0.6:
                    words[i] = wd.replace(key, SYNONYMS[key])
            out.append(" ".join(words))
    if out == lines:  # guarantee a visible edit
        out = out[:-1] + ["** Count: 2", out[-1]] if out else ["(reworded)"]
    return out


def sheet_text(version: int, items: list[list[str]]) -> str:
    """A Dynamic-Cheatsheet-like sheet; the empty memory is ``"(empty)"`` as in the product's updaters."""
    if not items:
        return "(empty)"
    body = "\n\n".join("\n".join(lines) for lines in items)
    return f"Version: {version}\n\n## Reusable Strategies and Solution Sketches\n\n{body}\n"


def dump_text(examples: list[str], rng: random.Random) -> str:
    """The DC-RS "retrieved examples dump": previous inputs and model solutions instead of a cheatsheet."""
    parts = ["### PREVIOUS SOLUTIONS (START)", "", DUMP_NOTE, ""]
    for k, ex in enumerate(examples, 1):
        sim = rng.uniform(0.1, 0.6)
        parts += [f"#### Previous Input #{k} (Similarity: {sim:.2f}):", "", ex, "",
                  f"#### Model Solution to Previous Input #{k}:", "",
                  f"Step 1: restate the problem. Step 2: {rng.choice(GENERIC)} each quantity. "
                  f"Step 3: combine and {rng.choice(GENERIC)}. Final answer: {rng.randint(0, 999)}.", ""]
    parts.append("### PREVIOUS SOLUTIONS (END)")
    return "\n".join(parts)
