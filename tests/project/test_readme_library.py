"""The README's library examples: the blocks marked runnable run on their own in a fresh interpreter (a toy stream, the
hashing encoder and a toy scorer), and an updater whose ``step`` returns the wrong thing gets one clear TypeError
(it was an AttributeError deep in controller/adapter.py)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from janus_memory import GuardedUpdate, Janus, JanusConfig
from janus_memory.values import Task

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def _runnable_blocks() -> list[str]:
    """The README's python blocks marked to run as they stand (first line ``# runnable``)."""
    return [b for b in _python_blocks() if b.startswith("# runnable")]


def _run_alone(block: str, tmp_path: Path):
    """``block`` saved as loop.py and run by a fresh interpreter from an empty folder, with only src/ on the path."""
    import os
    import subprocess
    import sys

    (tmp_path / "loop.py").write_text(block, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(README.parent / "src")
    return subprocess.run([sys.executable, "loop.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)


def test_every_python_block_is_either_runnable_or_called_a_sketch():
    firsts = [b.splitlines()[0] for b in _python_blocks()]
    assert firsts == ["# runnable: the whole loop, nothing else needed"]


@pytest.mark.parametrize("i", range(len(_runnable_blocks())))
def test_readme_runnable_blocks_run_on_their_own(tmp_path, i):
    r = _run_alone(_runnable_blocks()[i], tmp_path)
    assert (r.returncode, r.stderr) == (0, "")


def test_readme_guarded_update_example_prints_its_decisions(tmp_path):
    """The toy scorer fails every memory with more than 20 notes: the 20 warm-up steps deploy unexamined, each later
    candidate (a 21st note) is compared and rolled back."""
    block = next(b for b in _runnable_blocks() if "class MyUpdater" in b)
    r = _run_alone(block, tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:20] == [f"{k} False True warmup" for k in range(1, 21)]
    assert lines[20:] == ["21 True False old_better", "22 True False old_better", "23 True False old_better",
                          "24 True False old_better", "25 True False old_better", "20 notes kept"]


def test_the_task_the_readme_names_takes_the_fields_it_lists():
    """The loop builds janus_memory.values.Task(id, dataset, question=, gold=); meta is optional, and a Task without
    gold is refused. The per-step call the README names is the one docs/controller.md shows."""
    t = Task("gsm8k/test/1", "gsm8k", "What is 2 + 3?", "5")
    assert (t.id, t.dataset, t.question, t.gold, t.meta) == ("gsm8k/test/1", "gsm8k", "What is 2 + 3?", "5", {})
    assert 'Task(f"t{i}", "toy", question=f"question {i}", gold=f"{i}")' in _python_blocks()[0]
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert "`janus.decide(StepInput(task, e_q, old, new, e_old, e_new))`" in readme
    controller = (README.parent / "docs" / "controller.md").read_text(encoding="utf-8")
    assert "d = janus.decide(StepInput(task, e_q, outcome.old_memory, outcome.candidate_memory, e_old, e_new))" in (
        controller)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'gold'"):
        Task(id="t1", dataset="toy", question="q")


def test_an_updater_returning_a_bare_string_gets_one_clear_type_error():
    class Bad:
        memory = ""

        def snapshot(self):
            return self.memory

        def rollback(self, snap):
            self.memory = snap

        def step(self, task):
            self.memory += "x"
            return self.memory

    g = GuardedUpdate(Janus(JanusConfig(), evaluator=lambda m, ts: [True] * len(ts)), Bad(),
                      lambda texts: np.ones((len(texts), 4)))
    with pytest.raises(TypeError) as e:
        g.step(Task("t1", "toy", "q", "a"))
    assert str(e.value) == ("Bad.step(task) must return an object whose .old_memory and .candidate_memory are the "
                            "memory texts before and after the update (str); got str without str .old_memory, "
                            ".candidate_memory (janus_memory.updaters.base.StepOutcome is one such type)")


def test_readme_run_folder_section_names_everything_a_run_folder_holds(tmp_path, monkeypatch):
    """A finished fake run plus `janus report`: every file and folder in it (the method folders by example) is named in
    the run-folder section of docs/running.md (the README points there), in backticks."""
    from janus_memory.cli import main

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    assert main(["run", "--backend", "fake", "--dataset", "gsm8k", "--stream-size", "4", "--test-size", "1",
                 "--encoder", "hashing:64", "--warmup", "2", "--quiet", "--out", str(out)]) == 0
    assert main(["report", str(out)]) == 0
    text = (README.parent / "docs" / "running.md").read_text(encoding="utf-8")
    section = text[text.index("## The run folder"):text.index("## Reports, memory diffs")]
    named = set(re.findall(r"`([^`\s]+)`", section))
    top = {p.name + ("/" if p.is_dir() else "") for p in out.iterdir() if not p.name.endswith(("-wal", "-shm"))}
    assert top == {".janus.lock", "COMPLETE", "config.json", "config.yaml", "environment.json", "prompts/",
                   "run.sqlite", "splits.json", "summary.json", "report/", "dc_rs/", "dc_rs+janus/"}
    assert top <= named, sorted(top - named)
    inside = {p.name + ("/" if p.is_dir() else "") for p in (out / "dc_rs+janus").iterdir()}
    assert inside == {"decisions.jsonl", "steps.jsonl", "test.jsonl", "final_memory.txt", "memories/"}
    assert inside <= named and "report.md" in named


def test_ci_runs_the_readme_commands_as_written_in_a_clean_copy_then_lint_and_types():
    """CI is a new user: a clone of the committed tree in a fresh temporary folder with no `shared` beside any folder
    above it, the wheel checked for the shipped data, then the README's two commands as the README writes them (read
    from it: the demo, then the test command with its test-model fetch), then ruff and mypy, which fail CI too."""
    first_block = re.search(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S).group(1)
    commands = [x.split("  #")[0].strip() for x in first_block.splitlines() if x.startswith("pip install -e ")]
    assert commands == ["pip install -e '.[local]' && janus demo",
                        "pip install -e '.[test]' && janus model fetch --test-models && python -m pytest"]
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert "set -euo pipefail" in ci
    steps = [line.strip() for line in ci if line.strip() and not line.lstrip().startswith("#")]
    reader = next(s for s in steps if s.startswith("mapfile -t COMMANDS < <("))
    pipeline = reader.removeprefix("mapfile -t COMMANDS < <(").removesuffix(")")
    read = subprocess.run(["bash", "-c", pipeline], cwd=README.parent, capture_output=True, text=True, check=True)
    assert read.stdout.splitlines() == commands  # what CI runs is what the README says, word for word
    order = ['WORK="$(mktemp -d "${TMPDIR:-/tmp}/janus-ci.XXXXXX")"', 'if [ -e "$d/shared" ]; then',
             'git clone -q "$SRC" "$CLONE"  # HEAD\'s committed tree, as a user\'s clone has it', 'cd "$CLONE"',
             'pip wheel -q --no-deps . -w "$WORK/wheel"', reader, 'bash -euo pipefail -c "$c"',
             "ruff check src tests benchmarks", "mypy"]
    assert [s for s in steps if s in order] == order and steps[-2:] == order[-2:]
    assert "unset JANUS_DATA_DIR  # the shipped data, as a new user has it" in steps


def test_ci_refuses_a_copy_with_a_shared_folder_beside_any_parent(tmp_path):
    """The guard of .ci/run, run on its own: a `shared` beside any folder above the copy stops CI with one line."""
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    guard = ci[ci.index('d="$CLONE"\n'):ci.index("git clone")]
    clone = tmp_path / "a" / "b" / "janus-memory"
    clone.mkdir(parents=True)
    run = lambda: subprocess.run(["bash", "-c", f"set -euo pipefail\nCLONE={clone}\n{guard}echo clear"],  # noqa: E731
                                 capture_output=True, text=True)
    assert run().stdout == "clear\n"
    (tmp_path / "a" / "shared").mkdir()
    res = run()
    assert res.returncode == 1 and res.stdout == "" and res.stderr == (
        f"error: {tmp_path / 'a'}/shared exists above the CI copy at {clone}; set TMPDIR to a folder with no 'shared' "
        "beside any parent\n")


def test_the_readme_is_a_guide_of_at_most_150_lines_that_starts_with_the_two_set_up_commands():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 150
    first_block = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1).splitlines()
    assert [x.split("  #")[0].strip() for x in first_block] == [
        "pip install -e '.[local]' && janus demo",
        "pip install -e '.[test]' && janus model fetch --test-models && python -m pytest"]
    assert text.index(first_block[0]) < text.index("\n## ")  # above every section
