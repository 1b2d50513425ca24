"""The package's shape, read from the source with ``ast`` (nothing is imported): no import circle between
modules, packages import one way only (the layers below), no module over 600 lines, no package folder over 20
modules, at most 10 .py files loose at the top (__init__.py included), a docstring in every package saying what it
owns and may import, and every path docs/architecture.md's tree names exists."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "janus_memory"

# the one-way layering: a module may import from its own layer and the layers below, never from a layer above.
# "" is a module loose at the top (errors, values, did_you_mean, paths, registry, plugins, interrupts, killpoints,
# rows).
LAYERS = [
    {""},                                                   # foundation: plain data, errors, the registry
    {"controller", "llm", "encoders", "tasks", "updaters",   # the controller and the plugin packages
     "integrations"},                                       # the write guard for memory libraries
    {"plugins", "inject"},                                  # built-in plugin import; injected harmful candidates
    {"settings"},                                           # a run's settings (RunConfig, presets)
    {"store"},                                              # the run folder: write, read, lock, check
    {"run"},                                                # build, the stream loop, resume
    {"report"},                                             # tables, plots, paired statistics from run folders
    {"sweep", "bench", "view"},                             # many runs; decision benchmarks; the HTML view
    {"cli"},                                                # the `janus` command
    {"testing"},                                            # what tests/ and benchmarks/ share: nothing imports it
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}

MAX_LINES = 600
LINE_EXCEPTIONS: dict[str, str] = {}  # none: every module is under the limit
MAX_MODULES_PER_PACKAGE = 20
MAX_TOP_MODULES = 10  # .py files loose at the top, __init__.py included
DOCSTRING_PENDING: set[str] = set()  # none: every package's docstring says what it may import
# a private name (``_x``) imported from another package: none left (a shared helper is public where it is defined)
PRIVATE_IMPORTS_PENDING: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every janus_memory module ``name`` imports, at module level or inside functions (relative ones resolved)."""
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    wanted = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            wanted.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:  # ``from pkg import submodule`` imports the submodule
                wanted.add(f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod)
    found = set()
    for w in wanted:
        while w and w not in MODULES:
            w = w.rpartition(".")[0]
        if w and w != name:
            found.add(w)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as a circle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(_circle(graph, set(comp)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def _circle(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """One circle through a component: a -> b -> ... -> a (breadth-first back to the start)."""
    start = min(comp)
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & comp):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return [*reversed(path), start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return sorted(comp)


def _layer(module: str) -> str:
    """The layer name of a module: its package below janus_memory, "plugins", or "" (loose at the top)."""
    parts = module.split(".")
    if len(parts) > 1 and ((PKG / parts[1]).is_dir() or parts[1] == "plugins"):
        return parts[1]
    return ""


def _rel(module: str) -> str:
    return str(MODULES[module].relative_to(PKG))


def test_the_walk_sees_the_imports_it_must():
    """The walker resolves relative, absolute, in-function and ``from pkg import module`` imports."""
    assert "janus_memory.store.reader" in GRAPH["janus_memory.store.finder"]         # from .reader import DB
    assert "janus_memory.store.unfinished" in GRAPH["janus_memory.store.finder"]     # inside a function
    assert "janus_memory.store.events" in GRAPH["janus_memory.store.store"]          # from . import events as E
    assert "janus_memory.encoders" in GRAPH["janus_memory.plugins"]                  # import janus_memory.encoders
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_no_import_cycle():
    cycles = _cycles(GRAPH)
    assert not cycles, "import circles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_registry_imports_no_plugin():
    assert not {m for m in GRAPH["janus_memory.registry"] if _layer(m) in ("encoders", "tasks", "updaters")}


def test_layers_are_known_and_one_way():
    unknown = {_layer(m) for m in MODULES} - set(RANK)
    assert not unknown, f"packages without a layer in tests/project/test_architecture.py LAYERS: {sorted(unknown)}"
    upward = [f"{_rel(m)} imports {d} ({_layer(d) or 'top'} is above {_layer(m) or 'top'})"
              for m in sorted(GRAPH) for d in sorted(GRAPH[m]) if RANK[_layer(d)] > RANK[_layer(m)]]
    assert not upward, "\n".join(upward)


def _private_imports() -> set[tuple[str, str]]:
    """(module file, package.module.name) of every ``from janus_memory.X import _name`` across packages."""
    found = set()
    for name, path in MODULES.items():
        pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("janus_memory") or target not in MODULES:
                continue
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__") and _layer(target) != _layer(name):
                    found.add((_rel(name), f"{target.removeprefix('janus_memory.')}.{a.name}"))
    return found


def test_no_private_name_is_imported_across_packages():
    """A helper another package needs is public where it is defined (``first_error``, ``section_tables``, ...)."""
    found = _private_imports()
    assert PRIVATE_IMPORTS_PENDING <= found, "pending entries that are gone: drop them from PRIVATE_IMPORTS_PENDING"
    assert not found - PRIVATE_IMPORTS_PENDING, sorted(found - PRIVATE_IMPORTS_PENDING)


def test_no_module_over_600_lines():
    over = {}
    for name, path in MODULES.items():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES and _rel(name) not in LINE_EXCEPTIONS:
            over[_rel(name)] = n
    assert not over, f"modules over {MAX_LINES} lines: {over}"


def test_package_sizes_and_loose_modules():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top
    for d in sorted(p for p in PKG.rglob("*") if (p / "__init__.py").is_file()):
        mods = [p.name for p in d.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
        assert len(mods) <= MAX_MODULES_PER_PACKAGE, (str(d.relative_to(PKG)), len(mods))


def test_every_package_says_what_it_owns_and_may_import():
    for init in sorted(PKG.rglob("__init__.py")):
        name = str(init.parent.relative_to(PKG)) if init.parent != PKG else ""
        if name in DOCSTRING_PENDING or name == "":
            continue
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc, f"{name}/__init__.py has no docstring"
        assert "may import" in doc.lower(), f"{name}/__init__.py does not say what it may import"


def _tree_paths() -> list[str]:
    """The paths named in docs/architecture.md's package tree (the fenced block after '## The package tree'): each line
    indented two spaces per level names entries (comma-separated) before its description; a line indented deeper than
    its level continues the description above."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"## The package tree\n+```\n(.*?)```", text, re.S).group(1)
    paths: list[str] = []
    stack: list[str] = []
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        depth = indent // 2
        if not line.strip() or depth > len(stack):
            continue
        stack = stack[:depth]
        entries = [e.strip() for e in re.split(r"\s{2,}", line.strip())[0].split(",")]
        paths += ["/".join([*stack, e.rstrip("/")]) for e in entries if e]
        if len(entries) == 1 and entries[0].endswith("/"):
            stack.append(entries[0].rstrip("/"))
    return paths


def test_architecture_tree_names_only_what_exists():
    paths = _tree_paths()
    assert "src/janus_memory/store/reader.py" in paths and "src/janus_memory/cli/__main__.py" in paths
    missing = [p for p in paths if not (list(ROOT.glob(p)) if "*" in p else (ROOT / p).exists())]
    assert not missing, missing


def test_architecture_tree_lists_every_module_of_the_new_packages():
    """settings/, store/, run/, report/, sweep/, cli/, inject/ and the loose modules: every .py is in the tree."""
    paths = set(_tree_paths())
    actual = {str(p.relative_to(ROOT)) for d in ("settings", "store", "run", "report", "sweep", "cli", "inject", "testing")
              for p in (PKG / d).glob("*.py")} | {str(p.relative_to(ROOT)) for p in PKG.glob("*.py")}
    assert not actual - paths, sorted(actual - paths)


def _module_names(folder: Path) -> set[str]:
    return {p.stem for p in folder.rglob("*.py")}


def _reaches(path: Path, other: str, names: set[str]) -> list[str]:
    """Where ``path`` imports a module of the ``other`` folder: by name, or through sys.path or a file location."""
    text = path.read_text(encoding="utf-8")
    found = [f"{path.name}:{n.lineno}" for n in ast.walk(ast.parse(text))
             if isinstance(n, (ast.Import, ast.ImportFrom))
             and ({a.name.split(".")[0] for a in n.names} if isinstance(n, ast.Import)
                  else {(n.module or "").split(".")[0]}) & names]
    found += [f"{path.name}:{i}" for i, line in enumerate(text.splitlines(), 1)
              if ("sys.path" in line or "spec_from_file_location" in line)
              and re.search(rf"[\"']{other}[\"']", line)]
    return found


def test_tests_and_benchmarks_do_not_import_each_other():
    """What both need lives in the package (janus_memory.testing, report.token_caps, ...), so a benchmark can move
    or go without breaking a test, and the suite never runs benchmark code by accident."""
    tests, benchmarks = ROOT / "tests", ROOT / "benchmarks"
    bench_names = _module_names(benchmarks) - {"__init__"}
    test_names = {p.stem for p in tests.rglob("*.py")} - {"__init__", "conftest"}
    assert not [hit for p in tests.rglob("*.py") for hit in _reaches(p, "benchmarks", bench_names)]
    assert not [hit for p in benchmarks.rglob("*.py") for hit in _reaches(p, "tests", test_names)]
