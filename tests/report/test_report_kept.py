"""What the memory kept (report/kept.py): genuine candidates rolled back counted from decision-log lines (injected,
unchanged and malformed lines left out), the cells, and the report's table over several runs. No run needed."""
from __future__ import annotations

from types import SimpleNamespace

from janus_memory.report.kept import cells, genuine_rollbacks, kept_markdown, kept_table


def _line(step, deployed="candidate", old="a", cand="b", **kw):
    return {"step": step, "deployed": deployed, "old_memory_sha256": old, "candidate_memory_sha256": cand, **kw}


def test_genuine_rollbacks_count_the_updaters_own_changed_candidates():
    lines = [
        _line(1),                                   # deployed
        _line(2, "previous"),                        # rolled back: counted
        _line(3, "previous", injected="falsify"),    # injected harm blocked: not a genuine candidate
        _line(4, "candidate", injected="wipe"),      # injected harm deployed: not genuine either
        _line(5, "previous", old="s", cand="s"),     # an unchanged candidate: nothing was lost
        _line(6, "previous", cand=None),             # no candidate hash: not counted
        "not a line",                                # a malformed line is skipped
        _line(7, "previous"),
    ]
    assert genuine_rollbacks(lines) == (2, 3)  # type: ignore[arg-type]
    assert genuine_rollbacks([]) == (0, 0)


def test_cells():
    base = {"rolled_back": None, "genuine": None, "stated": None, "held": None}
    assert cells(base) == ["—", "—", "—"]
    assert cells({**base, "rolled_back": 0, "genuine": 10}) == ["0 of 10", "—", "—"]
    assert cells({**base, "stated": ["handling", "crate"], "held": ["crate"]}) == ["—", "1 of 2", "handling"]
    assert cells({**base, "stated": ["handling"], "held": ["handling"]}) == ["—", "1 of 1", "—"]
    assert cells({**base, "stated": [], "held": []}) == ["—", "0 of 0", "—"]


def _run(label, kept, dataset="rules_late", stream_order=False):
    return SimpleNamespace(label=label, dataset=dataset, stream_order=stream_order, extra={"kept": kept},
                           run_dir=None, method=label, janus=label.endswith("+janus"))


def test_the_report_table_sums_a_labels_runs():
    j1 = {"rolled_back": 1, "genuine": 10, "stated": ["a", "b"], "held": ["a", "b"]}
    j2 = {"rolled_back": 3, "genuine": 9, "stated": ["a", "b"], "held": ["a"]}
    b1 = {"rolled_back": None, "genuine": None, "stated": ["a", "b"], "held": ["b"]}
    t = kept_table([_run("exprag+janus", j1), _run("exprag+janus", j2), _run("exprag", b1),
                    _run("exprag+janus", j1, stream_order=True)])  # a stream-order run: its own table
    assert t["body"] == [["exprag+janus", "Rules-late (generated)", "2", "4 of 19", "3 of 4", "—"],
                         ["exprag", "Rules-late (generated)", "1", "—", "1 of 2", "a"]]
    assert "| exprag+janus | Rules-late (generated) | 2 | 4 of 19 | 3 of 4 | — |" in t["markdown"]
    assert kept_markdown(t, "*cap*")[0] == "## What the memory kept"


def test_nothing_to_show_is_no_table():
    none = {"rolled_back": None, "genuine": None, "stated": None, "held": None}
    t = kept_table([_run("dc_rs", none, dataset="gsm8k")])
    assert t["body"] == [] and t["markdown"] == "" and kept_markdown(t, "*cap*") == []
