"""``python -m janus_memory.integrations RECORD_DIR``: print a write guard's decision record (``guard.json`` +
``decisions.jsonl``): one block per update with the decision, why, the writes and each probe's two replies.
``--json`` prints the decisions as JSON lines instead; ``--html FILE`` also writes them as one self-contained page
(autoescaped: a reply's markup stays text). Exit 2 with one line on a folder that is not a record."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

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
{% if r.writes %}<table><tr><th>write</th><th>where</th><th>value</th></tr>{% for w in r.writes %}<tr>
<td>{{ w.op }}</td><td class="mono">{{ (w.namespace or [])|join('/') }} {{ w.key or w.id }}</td>
<td class="mono">{{ w.value|tojson if w.value is defined else (w.memory or '') }}</td></tr>{% endfor %}</table>{% endif %}
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
    return env.from_string(PAGE).render(head=head, rows=rows, kept=kept, mark=mark)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m janus_memory.integrations", description=__doc__.split("\n")[0])
    ap.add_argument("record", metavar="DIR", help="the guard's record folder")
    ap.add_argument("--json", action="store_true", help="print the decisions as JSON lines")
    ap.add_argument("--html", metavar="FILE", help="also write the record as one HTML page")
    a = ap.parse_args(argv)
    try:
        head, rows = read_record(a.record)
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
                print(json.dumps(r, sort_keys=True, ensure_ascii=False))
        else:
            print(render(head, rows))
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
