"""Code extraction: model text -> Python source (no execution here). Failure case C14.

1. Remove reasoning that leaked into the text (``llm.reasoning.split_answer``: ``<think>...</think>`` and its kin, or
   everything before a lone closing tag; a block never closed leaves nothing).
2. Fenced blocks with 3 or more backticks (or tildes); the closing fence must be at least as long as the opening one. A
   fence indented under a list item has that indentation removed from its lines (as CommonMark does).
   Only blocks tagged python/py/python3 or untagged are considered; an untagged block that holds no statement but bare
   expressions (``[1, 2, 3]``, ``True``: output shown to the reader) or does not parse (``>>> f(1)``) is not code.
   Among complete blocks, the LAST one that defines the entry point (a top-level ``def <entry_point>``; without an
   entry point: any top-level function or class) wins, so a trailing "example usage" block or a block of the model's
   own asserts is never taken instead of the solution. When no block defines one, the last complete block
   wins if it compiles (a completion-style body - indented lines continuing the prompt's signature - counts as
   compiling), else the longest block that compiles, else the last block. The chosen block is preceded by the
   top-level definitions (functions, classes, imports, constants) that it uses from earlier blocks of the same reply
   ("first a helper, then the function"), never by their other statements.
3. No fence: the longest run of lines starting at a top-level ``def``/``class``/``import``/``from``/``@`` line
   (continuing through indented or blank lines) that compiles, with trailing prose dropped; else a completion-style
   bare function body (the reply's first code line is indented and the lines compile as a function body).
4. A block that does not parse because an interactive session was pasted into it (``>>>`` lines, their ``...``
   continuations and output) is read without the transcript; definitions typed at the prompt are kept
   (``without_transcript``).
5. The result, when it is indented as a whole (a Markdown code block indented by four spaces) and, dedented, defines
   the entry point at top level, is dedented: a whole function, not a bare body continuing the prompt's.
Returns None when nothing code-like is found.
"""
from __future__ import annotations

import ast
import re
import textwrap

_FENCE_OPEN = re.compile(r"^([ \t]*)(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n]*$", re.M)
_PY_TAGS = {"", "python", "py", "python3", "py3"}
_START = re.compile(r"^(def |async def |class |import |from |@)")


def strip_reasoning(text: str) -> str:
    """The text after the model's reasoning (``llm.reasoning.split_answer``; "" when a reasoning block never closed)."""
    from janus_memory.llm.reasoning import split_answer  # here, not at import: the llm package loads its backends

    return split_answer(text)[0]


def compiles(src: str) -> bool:
    try:
        ast.parse(src)
        return True
    except (SyntaxError, ValueError):
        return False


def fenced_blocks(text: str) -> list[tuple[str, str, bool]]:
    """All fenced blocks as (language tag, body, closed?). An unclosed final fence yields its body with closed=False."""
    out = []
    pos = 0
    while True:
        m = _FENCE_OPEN.search(text, pos)
        if not m:
            break
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        c = close.search(text, m.end())
        if c:
            out.append((lang, _dedent(text[m.end() + 1:c.start()], len(indent)), True))
            pos = c.end()
        else:
            out.append((lang, _dedent(text[m.end() + 1:], len(indent)), False))
            break
    return out


def _dedent(body: str, n: int) -> str:
    """Remove up to ``n`` leading spaces/tabs from every line (the indentation of the opening fence)."""
    if not n:
        return body
    return "".join(re.sub(rf"^[ \t]{{0,{n}}}", "", ln) for ln in body.splitlines(keepends=True))


def _unfenced(text: str) -> str | None:
    lines = text.splitlines()
    best: str | None = None
    i = 0
    while i < len(lines):
        if not _START.match(lines[i]):
            i += 1
            continue
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or lines[j][:1] in " \t" or _START.match(lines[j])):
            j += 1
        chunk = lines[i:j]
        while chunk and not chunk[-1].strip():
            chunk.pop()
        # extend by adjacent top-level code blocks separated by the loop above; drop trailing prose if needed
        for k in range(len(chunk), 0, -1):
            src = "\n".join(chunk[:k])
            if compiles(src):
                if best is None or len(src) > len(best):
                    best = src
                break
        i = j
    return best


def is_body(src: str) -> bool:
    """A completion-style function body: its first code line is indented and it compiles inside a function."""
    first = next((ln for ln in src.splitlines() if ln.strip()), "")
    return first[:1] in (" ", "\t") and compiles("def _janus_body():\n" + src.rstrip() + "\n")


def _parses(src: str) -> bool:
    return compiles(src) or is_body(src)


def _is_code(lang: str, body: str) -> bool:
    """Tagged python is code; an untagged block is code only if it parses and is more than bare expressions."""
    if lang:
        return True
    if is_body(body):
        return True
    try:
        tree = ast.parse(body)
    except (SyntaxError, ValueError):
        return False
    return any(not isinstance(n, ast.Expr) for n in tree.body)


def defines(src: str, entry_point: str | None = None) -> bool:
    """True when ``src`` defines ``entry_point`` at top level (without one: any top-level function or class)."""
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return False
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef) if entry_point else (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                         ast.ClassDef)
    return any(isinstance(n, kinds) and (entry_point is None or n.name == entry_point) for n in tree.body)


def _bare_body(text: str) -> str | None:
    """Unfenced completion-style body: the first run of indented (or blank) lines, after any prose, that compiles as a
    function body once trailing lines that do not are dropped."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not (lines[i].strip() and lines[i][:1] in (" ", "\t")):
            i += 1
            continue
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or lines[j][:1] in (" ", "\t")):
            j += 1
        for k in range(j, i, -1):
            src = "\n".join(lines[i:k]).rstrip()
            if src and is_body(src):
                return src + "\n"
        i = j
    return None


def extract_python(text: str, entry_point: str | None = None) -> str | None:
    """The Python program the model wrote (see module docstring), or None. ``entry_point``: the function the task
    asks for (HumanEval), used to prefer the block that defines it."""
    code = _extract(text, entry_point)
    return None if code is None else _unindent_block(code, entry_point)


def _extract(text: str, entry_point: str | None) -> str | None:
    t = strip_reasoning(text)
    blocks = [(lang, body, closed) for lang, body, closed in
              ((lang, without_transcript(body), closed) for lang, body, closed in fenced_blocks(t))
              if lang in _PY_TAGS and body.strip() and _is_code(lang, body)]
    complete = [b for _, b, closed in blocks if closed]
    if complete:
        defining = [b for b in complete if defines(b, entry_point)]
        if not defining and entry_point:
            defining = [b for b in complete if defines(b)]
        if defining:
            chosen = defining[-1]
            return with_helpers(chosen, complete[:max(i for i, b in enumerate(complete) if b is chosen)])
        if _parses(complete[-1]):
            return complete[-1]
        good = [b for b in complete if _parses(b)]
        return max(good, key=len) if good else complete[-1]
    partial = [b for _, b, _ in blocks]
    if partial and _parses(partial[-1]):
        return partial[-1]
    return _unfenced(t) or _bare_body(t)


_PROMPT = re.compile(r"^>>>(?: |$)(.*)$")
_MORE = re.compile(r"^\.\.\.(?: |$)(.*)$")
_KEEP = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)


def without_transcript(body: str) -> str:
    """``body`` without the interactive-session transcript pasted into it: ``>>>`` lines (at the block's left edge),
    their ``...`` continuation lines and the output lines that follow them up to a blank line. Definitions typed at
    the prompt (functions, classes, imports, assignments) are kept as code after the rest; the calls and their
    output are dropped. Only a block that does not parse as it stands is changed: a doctest inside a docstring is
    part of a string and stays."""
    if not any(_PROMPT.match(ln) for ln in body.splitlines()) or _parses(body):
        return body
    code: list[str] = []
    typed: list[str] = []
    state = "code"
    for ln in body.splitlines():
        m = _PROMPT.match(ln)
        if m:
            typed.append(m.group(1))
            state = "typed"
            continue
        m = _MORE.match(ln)
        if m and state == "typed":
            typed.append(m.group(1))
            continue
        if state != "code":
            if ln.strip():
                state = "output"  # what the session printed
                continue
            state = "code"
        code.append(ln)
    kept = ""
    try:
        tree = ast.parse("\n".join(typed))
        lines = "\n".join(typed).splitlines()
        kept = "\n\n".join("\n".join(lines[min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])]) - 1:
                                             n.end_lineno]) for n in tree.body if isinstance(n, _KEEP))
    except (SyntaxError, ValueError):
        pass
    out = "\n".join(code).strip("\n")
    return (out + "\n\n\n" + kept if out and kept else out or kept) + "\n"


def _unindent_block(code: str, entry_point: str | None) -> str:
    """A Markdown code block indented by four spaces (or a fenced block whose lines all carry the same indentation)
    holding a whole function is that function, not a bare body continuing the prompt's: dedented when, dedented, it
    parses as a module and defines the entry point (without one: a function or class)."""
    if not is_body(code):
        return code
    flat = textwrap.dedent(code)
    if flat == code or not compiles(flat) or not defines(flat, entry_point):
        return code
    return flat


_BUILTINS = frozenset(dir(__import__("builtins")))


def _defines(node) -> set[str]:
    """Names a top-level statement defines, for the kinds a helper block may hold (else the empty set)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is not None and all(isinstance(t, ast.Name) for t in targets):
            return {t.id for t in targets if isinstance(t, ast.Name)}
    return set()


def _uses(tree) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def with_helpers(chosen: str, earlier: list[str]) -> str:
    """``chosen`` preceded by the top-level definitions of ``earlier`` blocks that it uses (directly or through other
    such definitions) and does not define itself; the last earlier definition of a name wins."""
    try:
        tree = ast.parse(chosen)
    except (SyntaxError, ValueError):
        return chosen
    own = set().union(*(_defines(n) for n in tree.body)) if tree.body else set()
    pool: dict[str, tuple[int, str, set[str]]] = {}
    order = 0
    for block in earlier:
        try:
            btree = ast.parse(block)
        except (SyntaxError, ValueError):
            continue
        lines = block.splitlines()
        for node in btree.body:
            names = _defines(node)
            if not names:
                continue
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            seg = "\n".join(lines[first - 1:node.end_lineno])
            order += 1
            for name in names:
                pool[name] = (order, seg, _uses(node))
    taken: dict[str, tuple[int, str]] = {}
    todo = sorted(_uses(tree) - own - _BUILTINS)
    while todo:
        name = todo.pop()
        if name in pool and name not in taken and name not in own:
            o, seg, uses = pool[name]
            taken[name] = (o, seg)
            todo += sorted(uses - own - _BUILTINS - set(taken))
    if not taken:
        return chosen
    segs = [seg for _, seg in sorted(set(taken.values()))]
    return "\n\n".join(segs) + "\n\n\n" + chosen
