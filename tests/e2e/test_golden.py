"""Golden fake-backend runs: the exported run files are byte-identical to the ones recorded before the runner
redesign. Re-record deliberately with ``PYTHONPATH=src python tests/golden/cases.py``."""
import difflib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
import cases  # noqa: E402


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_golden_run_is_byte_identical(name, tmp_path):
    got = cases.outputs(cases.run_case(name, tmp_path))
    want_dir = cases.HERE / name
    want = {str(p.relative_to(want_dir)): p.read_bytes() for p in sorted(want_dir.rglob("*")) if p.is_file()}
    assert sorted(got) == sorted(want)
    for rel in sorted(want):
        if got[rel] != want[rel]:
            diff = difflib.unified_diff(want[rel].decode().splitlines(), got[rel].decode().splitlines(), "golden", "now",
                                        n=0, lineterm="")
            pytest.fail(f"{name}/{rel} differs:\n" + "\n".join(list(diff)[:12])[:3000])
