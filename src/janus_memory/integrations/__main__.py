"""``python -m janus_memory.integrations RECORD_DIR``: print a write guard's decision record (``guard.json`` +
``decisions.jsonl``): one block per update with the decision, why, the writes and each probe's two replies.
``--json`` prints the decisions as JSON lines instead. Exit 2 with one line on a folder that is not a record."""
from __future__ import annotations

import argparse
import json
import sys

from .core import read_record


def _line(s: object, n: int = 100) -> str:
    t = " ".join(str(s).split())
    t = "".join(ch if ch.isprintable() else "?" for ch in t)  # a reply's control characters stay on their line
    return t if len(t) <= n else t[:n - 3] + "..."


def render(head: dict, rows: list[dict]) -> str:
    out = [f"guard record: {head.get('library')} memory, preset {head.get('preset')}, "
           f"{len(head.get('probes') or [])} probe(s), budget {head.get('budget') or 'none'}"]
    kept = sum(1 for r in rows if r.get("accepted"))
    out.append(f"{len(rows)} update(s): {kept} committed, {len(rows) - kept} dropped")
    for r in rows:
        verdict = "committed" if r.get("accepted") else "DROPPED"
        out.append("")
        out.append(f"update {r.get('update')}: {verdict} [{r.get('reason')}]")
        out.append(f"  why: {_line(r.get('why'), 400)}")
        for w in r.get("writes") or []:
            what = w.get("value", w.get("memory", ""))
            where = "/".join(w.get("namespace", [])) + ("/" if w.get("namespace") else "") + str(w.get("key",
                                                                                                   w.get("id", "")))
            out.append(f"  write {w.get('op')} {where}: {_line(json.dumps(what, ensure_ascii=False), 90)}"
                       if what != "" else f"  write {w.get('op')} {where}")
        for p in r.get("probes") or []:
            mark = {True: "right", False: "wrong", None: "-"}
            out.append(f"  probe {p.get('id')}: deployed {mark.get(p.get('old_ok'), '?')}, "
                       f"candidate {mark.get(p.get('new_ok'), '?')}"
                       + (f"  ({_line(p.get('note'), 80)})" if p.get("note") else ""))
            if p.get("old_ok") != p.get("new_ok"):
                out.append(f"    expected {_line(p.get('expected'), 60)!r}; deployed replied "
                           f"{_line(p.get('old_answer'), 60)!r}; candidate replied {_line(p.get('new_answer'), 60)!r}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m janus_memory.integrations", description=__doc__.split("\n")[0])
    ap.add_argument("record", metavar="DIR", help="the guard's record folder")
    ap.add_argument("--json", action="store_true", help="print the decisions as JSON lines")
    a = ap.parse_args(argv)
    try:
        head, rows = read_record(a.record)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        if a.json:
            for r in rows:
                print(json.dumps(r, sort_keys=True, ensure_ascii=False))
        else:
            print(render(head, rows))
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
