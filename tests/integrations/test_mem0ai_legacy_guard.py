"""The guarded Mem0 Memory on mem0ai 1.0.x (ADD/UPDATE/DELETE chosen by the LLM), in a subprocess whose path starts
with a 1.0.x install, since one environment holds one mem0ai: ``pip install --no-deps --target DIR mem0ai==1.0.11``
and ``JANUS_MEM0_V1=DIR`` (default /tmp/mem0v1 when it exists). Skipped without such an install."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

V1 = os.environ.get("JANUS_MEM0_V1", "/tmp/mem0v1")
HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"

pytestmark = pytest.mark.skipif(not (Path(V1) / "mem0" / "memory" / "main.py").is_file(),
                                reason=f"no mem0ai 1.0.x install at {V1} (pip install --no-deps --target {V1} "
                                       "mem0ai==1.0.11)")


@pytest.fixture(scope="module")
def obs(tmp_path_factory):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([V1, str(SRC), str(HERE)]),
           "MEM0_DIR": str(tmp_path_factory.mktemp("mem0dir")), "MEM0_TELEMETRY": "false"}
    r = subprocess.run([sys.executable, str(HERE / "mem0_v1_script.py")], capture_output=True, text=True,
                       timeout=240, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_it_ran_on_mem0_1x(obs):
    assert obs["major"] == 1


def test_a_wrong_update_is_never_applied(obs):
    u = obs["update"]
    assert (u["guard"]["accepted"], u["guard"]["reason"]) == (False, "old_better")
    assert [w["op"] for w in u["writes"]] == ["update"]
    assert "The refund cap is $100 per order." in u["memories"]
    assert obs["cap_history"] == ["ADD"]  # no UPDATE ever reached the store


def test_a_delete_of_a_true_fact_is_never_applied(obs):
    d = obs["delete"]
    assert d["guard"]["accepted"] is False and [w["op"] for w in d["writes"]] == ["delete"]
    assert "The customer's name is Ada Lovelace." in d["memories"]
    assert obs["name_history"] == ["ADD"]


def test_a_useful_add_is_applied_with_its_real_id(obs):
    a = obs["add"]
    assert a["guard"]["accepted"] is True and "Invoices go to ada@example.org." in a["memories"]
    assert not a["results"][0]["id"].startswith("staged-")
    assert obs["methods_restored"] is True
