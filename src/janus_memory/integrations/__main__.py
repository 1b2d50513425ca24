"""``python -m janus_memory.integrations RECORD_DIR``: print a write guard's decision record (``guard.json`` +
``decisions.jsonl``): one block per update with the decision, why, the writes and each probe's two replies.
``--json`` prints the decisions as JSON lines instead; ``--html FILE`` also writes them as one self-contained page
(autoescaped: a reply's markup stays text). Exit 2 with one line on a folder that is not a record or a line of the
wrong shape; a torn line (a write cut short) is skipped with one ``warning:`` line on stderr.

Keys, values and replies come from the store and the agent: every string is printed through the project's escape
(``errors.printable``): a newline, a carriage return, another control character or a bidirectional control
(U+202E ...) is shown as a visible escape (``\\n``, ``\\u202e``), so no text can fake a line of the record or
reorder what is read. The page does the same (newlines kept only inside a reply's or a value's own cell); ``--json``
writes those characters as ``\\uXXXX`` JSON escapes (the same string once parsed)."""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

from ..errors import json_escaped, printable
from .record import read_record


def _line(s: object, n: int = 100) -> str:
    """``s`` on one line with its controls escaped visibly, cut to ``n`` characters (never inside an escape)."""
    t = printable(str(s), one_line=True)
    if len(t) <= n:
        return t
    cut = t[:n - 3]
    i = cut.rfind("\\", max(0, len(cut) - 9))
    if i >= 0 and i + {"U": 10, "u": 6, "x": 4}.get(cut[i + 1:i + 2], 2) > len(cut):  # an escape cut in two: drop it
        cut = cut[:i]
    return cut + "..."


def _json_line(row: Any) -> str:
    text = json.dumps(row, sort_keys=True, ensure_ascii=False)
    return json_escaped(text)  # what errors.printable escapes, newline included, as JSON \uXXXX escapes


def _visible(obj: Any, one_line: bool = True) -> Any:
    """``obj`` with every string (keys too) escaped as :func:`printable` does (``one_line``: newlines too)."""
    if isinstance(obj, str):
        return printable(obj, one_line=one_line)
    if isinstance(obj, dict):
        keep = {"old_answer", "new_answer", "value", "memory"}  # their own cells: a newline stays a newline
        return {printable(str(k), one_line=True): _visible(v, one_line and k not in keep) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_visible(v, one_line) for v in obj]
    return obj


def render(head: dict, rows: list[dict]) -> str:
    out = [f"guard record: {_line(head.get('library'))} memory, preset {_line(head.get('preset'))}, "
           f"{len(head.get('probes') or [])} probe(s), budget {_line(head.get('budget') or 'none')}"]
    kept = sum(1 for r in rows if r.get("accepted"))
    out.append(f"{len(rows)} update(s): {kept} committed, {len(rows) - kept} dropped")
    for r in rows:
        verdict = "committed" if r.get("accepted") else "DROPPED"
        out.append("")
        out.append(f"update {_line(r.get('update'))}: {verdict} [{_line(r.get('reason'))}]"
                   + (f"  ({_line(r.get('pairs'))} probe(s) read on both memories, budget {_line(r.get('budget'))})"
                      if r.get("budget") else ""))
        out.append(f"  why: {_line(r.get('why'), 400)}")
        for w in r.get("writes") or []:
            what = w.get("value", w.get("memory", ""))
            where = "/".join(map(str, w.get("namespace") or [])) + ("/" if w.get("namespace") else "") + str(
                w.get("key", w.get("id", "")))
            op, where = _line(w.get("op"), 20), _line(where, 120)
            out.append(f"  write {op} {where}: {_line(json.dumps(what, ensure_ascii=False), 90)}"
                       if what != "" else f"  write {op} {where}")
        for p in r.get("probes") or []:
            mark = {True: "right", False: "wrong", None: "-"}
            out.append(f"  probe {_line(p.get('id'))}: deployed {mark.get(p.get('old_ok'), '?')}, "
                       f"candidate {mark.get(p.get('new_ok'), '?')}"
                       + (f"  ({_line(p.get('note'), 80)})" if p.get("note") else ""))
            if p.get("old_ok") != p.get("new_ok"):
                out.append(f"    expected {_line(p.get('expected'), 60)!r}; deployed replied "
                           f"{_line(p.get('old_answer'), 60)!r}; candidate replied {_line(p.get('new_answer'), 60)!r}")
    return "\n".join(out)


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>guard record: {{ head.library }}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222}
table{border-collapse:collapse;margin:.4em 0 1em}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;
vertical-align:top}.drop{color:#a00;font-weight:600}.keep{color:#070;font-weight:600}.why{margin:.3em 0}
.mono{font-family:ui-monospace,monospace;white-space:pre-wrap;word-break:break-word}section{border-top:2px solid #ddd;
margin-top:1.2em}</style></head><body>
<h1>Write guard: {{ head.library }} memory</h1>
<p>preset {{ head.preset }}, {{ (head.probes or [])|length }} probe(s), budget {{ head.budget or "none" }};
{{ rows|length }} update(s): {{ kept }} committed, {{ rows|length - kept }} dropped.</p>
<table><tr><th>update</th><th>verdict</th><th>reason</th><th>probes right (deployed / candidate)</th></tr>
{% for r in rows %}<tr><td><a href="#u{{ r['update'] }}">{{ r['update'] }}</a></td>
<td class="{{ 'keep' if r.accepted else 'drop' }}">{{ 'committed' if r.accepted else 'dropped' }}</td>
<td>{{ r.reason }}</td><td>{% if r.compared %}{{ (r.old_score * r.compared)|round|int }} / {{
(r.new_score * r.compared)|round|int }} of {{ r.compared }}{% endif %}
</td></tr>{% endfor %}</table>
{% for r in rows %}<section id="u{{ r['update'] }}"><h2>update {{ r['update'] }}:
<span class="{{ 'keep' if r.accepted else 'drop' }}">{{ 'committed' if r.accepted else 'dropped' }}</span></h2>
<p class="why">{{ r.why }}</p>
{% if r.budget %}<p>{{ r.pairs }} probe(s) read on both memories (budget {{ r.budget }} replies)</p>{% endif %}
{% if r.writes %}<table><tr><th>write</th><th>where</th><th>value</th></tr>{% for w in r.writes %}<tr>
<td>{{ w.op }}</td><td class="mono">{{ (w.namespace or [])|join('/') }} {{ w.key or w.id }}</td>
<td class="mono">{{ w.value_json if w.value_json is defined else (w.memory or '') }}</td></tr>{% endfor %}</table>
{% endif %}
{% if r.probes %}<table><tr><th>probe</th><th>expected</th><th>deployed memory replied</th><th>candidate replied</th>
<th>note</th></tr>{% for p in r.probes %}<tr><td>{{ p.id }}: {{ p.query }}</td><td class="mono">{{ p.expected }}</td>
<td class="mono">{{ mark[p.old_ok] }} {{ p.old_answer or '' }}</td><td class="mono">{{ mark[p.new_ok] }}
{{ p.new_answer or '' }}</td><td>{{ p.note }}</td></tr>{% endfor %}</table>{% endif %}</section>{% endfor %}
</body></html>
"""


def page(head: dict, rows: list[dict]) -> str:
    """The record as one HTML page (jinja2, autoescaped; no script)."""
    from jinja2 import Environment

    env = Environment(autoescape=True)
    kept = sum(1 for r in rows if r.get("accepted"))
    mark = {True: "[right]", False: "[wrong]", None: "[-]"}
    shown = [{**r, "writes": [{**w, "value_json": json.dumps(w["value"], sort_keys=True, ensure_ascii=False)}
                              if "value" in w else w for w in r.get("writes") or []]} for r in rows]
    return env.from_string(PAGE).render(head=_visible(head), rows=_visible(shown), kept=kept, mark=mark)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m janus_memory.integrations", description=(
        "Print a write guard's decision record (guard.json + decisions.jsonl in DIR): one block per update "
        "with the decision, why, the writes and each probe's two replies; --json for JSON lines, --html FILE for "
        "a page."))
    ap.add_argument("record", metavar="DIR", help="the guard's record folder")
    ap.add_argument("--json", action="store_true", help="print the decisions as JSON lines")
    ap.add_argument("--html", metavar="FILE", help="also write the record as one HTML page")
    a = ap.parse_args(argv)
    try:
        with warnings.catch_warnings(record=True) as seen:  # a skipped torn line: one "warning:" line each
            warnings.simplefilter("always")
            head, rows = read_record(a.record)
        for w in seen:
            print(f"warning: {w.message}", file=sys.stderr)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.html:
        try:
            Path(a.html).write_text(page(head, rows), encoding="utf-8")
        except OSError as e:
            print(f"error: cannot write {a.html} ({e.strerror or e})", file=sys.stderr)
            return 2
    try:
        if a.json:
            for r in rows:
                print(_json_line(r))
        else:
            print(render(head, rows))
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
