"""Test-wide settings."""
import os

# The run store checks after every commit that the checkpoint it keeps equals the one it was given, so a wrong
# "only grew" hint from a controller or updater (runner/ckpt_log.py) fails the test that caused it.
os.environ.setdefault("JANUS_STORE_VERIFY", "1")


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
