"""Test-wide settings."""
import os

# The run store checks after every commit that the checkpoint it keeps equals the one it was given, so a wrong
# "only grew" hint from a controller or updater (runner/ckpt_log.py) fails the test that caused it.
os.environ.setdefault("JANUS_STORE_VERIFY", "1")


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def view_fake_run(tmp_path_factory):
    """One fake-backend run folder shared by the `janus view` tests (tests/view_fakes.py); read-only for them."""
    from view_fakes import make_fake_run

    root = tmp_path_factory.mktemp("view")
    return make_fake_run(root / "run", root / "cache")
