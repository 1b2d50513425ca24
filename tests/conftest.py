"""Test-wide settings."""
import os
from pathlib import Path

# The run store checks after every commit that the checkpoint it keeps equals the one it was given, so a wrong
# "only grew" hint from a controller or updater (runner/ckpt_log.py) fails the test that caused it.
os.environ.setdefault("JANUS_STORE_VERIFY", "1")

TESTS = Path(__file__).resolve().parent


def _use_the_fetched_test_model() -> None:
    """The SmolLM2 GGUF that `janus model fetch --test-models` (in the README's test command) put into the cache is
    the model of the llama.cpp-server and embedded-engine tests, unless a variable names another one. Without it
    those tests skip with the reason."""
    from janus_memory.llm.model_fetch import test_model_path

    path = test_model_path()
    if path.is_file():
        os.environ.setdefault("JANUS_TEST_SMOLLM2_GGUF", str(path))
        os.environ.setdefault("JANUS_TEST_GGUF", os.environ["JANUS_TEST_SMOLLM2_GGUF"])


_use_the_fetched_test_model()


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def view_fake_run(tmp_path_factory):
    """One fake-backend run folder shared by the `janus view` tests (tests/view_fakes.py); read-only for them."""
    from view_fakes import make_fake_run

    root = tmp_path_factory.mktemp("view")
    return make_fake_run(root / "run", root / "cache")


# The slowest test files (paths under tests/; seconds each, serial, benchmarks/performance/suite_time.md), sent to the
# pytest-xdist workers first: with `--dist loadfile` a file runs whole on one worker, so a slow file dispatched last
# would run alone at the end while the other worker idles. Only the order changes (no test is added or dropped);
# tests/project/test_tests_tree.py checks that every path names a test file.
SLOW_FILES_FIRST = (
    "cli/test_cli_e2e.py", "store/test_run_concurrency.py", "cli/test_cli_interrupt_grid.py",
    "cli/test_cli_interrupt.py", "run/test_kill_points.py", "inject/test_inject_run.py", "sweep/test_grid_sweep.py",
    "llm/test_llamacpp_server.py", "e2e/test_differential_paper.py", "encoders/test_encoders.py",
    "llm/test_llm_local.py", "report/test_poison_follow.py", "report/test_damaged_rows.py",
    "report/test_report_runs.py", "cli/test_cli_stdout_faults.py", "tasks/test_sandbox.py",
    "integrations/test_langmem_real_model.py", "integrations/test_mem0ai_legacy_guard.py",
)


def pytest_collection_modifyitems(config, items):
    if not hasattr(config, "workerinput"):  # not an xdist worker: keep the collection order
        return
    rank = {name: i for i, name in enumerate(SLOW_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(_under_tests(item.path), len(rank)))  # stable: a file's own order is kept


def _under_tests(path: Path) -> str:
    """A test file's path under tests/ with '/' separators ('cli/test_cli_e2e.py'); the name alone outside it."""
    try:
        return path.resolve().relative_to(TESTS).as_posix()
    except ValueError:
        return path.name
