"""Test-wide settings."""
import os

# The run store checks after every commit that the checkpoint it keeps equals the one it was given, so a wrong
# "only grew" hint from a controller or updater (runner/ckpt_log.py) fails the test that caused it.
os.environ.setdefault("JANUS_STORE_VERIFY", "1")
