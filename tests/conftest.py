"""Test-wide settings; the slow files first on the xdist workers; progress lines while the suite is otherwise quiet."""
import os
import threading
import time
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


# ------------------------------------------------------------------ progress while the terminal would stay quiet
# With the default `-q -n 2`, pytest prints "bringing up nodes..." and then nothing until the first test ends: each
# worker first imports every test module (numpy, scipy, sklearn, sympy via math-verify, matplotlib, openai, ray: about
# 15 s of CPU per worker on a quiet machine, measured 77 s of wall time at load 9), and the first files sent are the
# slowest ones. The xdist controller (it runs no test, so nothing it prints lands in a test's captured output) says
# when each worker is up and has collected, and after QUIET_S seconds without a finished test which tests are running
# and for how long. With -n 0 pytest runs the tests in its own process and prints a mark as each one ends.
QUIET_S = 30.0


class SuiteProgress:
    """The progress lines; one instance in the xdist controller, registered by :func:`pytest_configure`."""

    def __init__(self, config):
        self.config = config
        self.t0 = self.last = time.monotonic()
        self.running: dict[str, float] = {}  # node id -> when it started
        self.collected = 0
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="suite-progress", daemon=True)

    def say(self, text: str) -> None:
        with self.lock:
            self.last = time.monotonic()
            tr = self.config.pluginmanager.get_plugin("terminalreporter")
            if tr is not None:  # none with -p no:terminal
                tr.ensure_newline()
                tr.write_line(f"[{self.last - self.t0:.0f} s] {text}")

    def _watch(self) -> None:
        while not self.done.wait(1.0):
            now = time.monotonic()
            if now - self.last < QUIET_S:
                continue
            with self.lock:
                running = sorted(self.running.items(), key=lambda kv: kv[1])
            if running:
                self.say("still running: " + ", ".join(f"{nodeid} ({now - t:.0f} s)" for nodeid, t in running[:2]))
            else:
                self.say("still collecting the test files" if not self.collected else "waiting for the workers")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session):
        if session.config.pluginmanager.has_plugin("dsession"):  # the xdist controller: it runs no test itself
            self.thread.start()

    def pytest_sessionfinish(self, session):
        self.done.set()

    @pytest.hookimpl(optionalhook=True)  # pytest-xdist's hooks: absent without it
    def pytest_testnodeready(self, node):
        self.say(f"{node.gateway.id} up, collecting")

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self.collected += 1
        self.say(f"{node.gateway.id} collected {len(ids)} tests")

    def pytest_runtest_logstart(self, nodeid, location):
        with self.lock:
            self.running[nodeid] = time.monotonic()

    def pytest_runtest_logfinish(self, nodeid, location):
        with self.lock:
            self.running.pop(nodeid, None)

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":  # the terminal printed a mark for it
            self.last = time.monotonic()


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        return  # an xdist worker: its output is not shown
    config.pluginmanager.register(SuiteProgress(config), "janus-suite-progress")
