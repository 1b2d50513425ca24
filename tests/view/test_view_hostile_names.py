"""What a hostile run folder, model or web page could do to the page and the report: a DNS-rebinding site asking the
page server with its own Host name, a right-to-left override showing "evil" as "live", a newline in a run folder's
name breaking a report.md table row."""
from __future__ import annotations

import http.client
import json
import re
import threading

import pytest

from janus_memory.report.labels import markdown_table
from janus_memory.view import data as V
from janus_memory.view.page import render
from janus_memory.view.serve import make_server

RLO = "\u202e"


def _get(port: int, host: str | None, extra: list[tuple[str, str]] = ()) -> tuple[int, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        c.putrequest("GET", "/", skip_host=True)
        if host is not None:
            c.putheader("Host", host)
        for k, v in extra:
            c.putheader(k, v)
        c.endheaders()
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def test_server_answers_only_to_its_loopback_names_with_its_port(tmp_path):
    page = tmp_path / "view.html"
    page.write_text("<!doctype html><p>secret</p>")
    server = make_server(page, 0)
    port = server.server_address[1]
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):
            assert _get(port, host) == (200, page.read_bytes()), host
        for host in (f"evil.example:{port}", "evil.example", "127.0.0.1", "localhost", f"127.0.0.1:{port + 1}",
                     f"localhost.:{port}", f"x@127.0.0.1:{port}", f"127.0.0.1.evil.example:{port}", "", None):
            status, body = _get(port, host)
            assert status == 421 and b"secret" not in body, host
        status, body = _get(port, f"127.0.0.1:{port}", [("Host", f"evil.example:{port}")])  # two Host headers
        assert status == 421 and b"secret" not in body
    finally:
        server.shutdown()
        server.server_close()
        t.join(5)
    assert not t.is_alive()


def test_host_ok_exact():
    from janus_memory.view.serve import host_ok

    assert host_ok("127.0.0.1:8000", 8000) and host_ok("[::1]:8000", 8000) and host_ok("localhost:8000", 8000)
    assert not host_ok("127.0.0.1:80", 8000) and not host_ok("::1:8000", 8000) and not host_ok(None, 8000)


def test_bidi_and_control_characters_are_visible_escapes_in_the_page(view_fake_run):
    data = V.view_data([view_fake_run])
    run = data["runs"][0]
    run["methods"][1]["d"][7]["a"] = f"the rule is {RLO}live\u202c; ok\r\n\tnext\x1b[2J"
    run["tasks"][0][1] = f"task \u2066{RLO}evil\u2069"
    run["name"] = f"run{RLO}name"
    html = render(data)
    assert RLO not in html and "\u2066" not in html and "\x1b" not in html and "\r" not in html
    block = re.search(r'<script type="application/json" id="janus-data">(.*?)</script>', html, re.S).group(1)
    back = json.loads(block)["runs"][0]
    assert back["methods"][1]["d"][7]["a"] == "the rule is \\u202elive\\u202c; ok\\r\n\tnext\\x1b[2J"
    assert back["tasks"][0][1] == "task \\u2066\\u202eevil\\u2069"
    assert back["name"] == "run\\u202ename"
    assert "<title>janus view: run\\u202ename" in html


def test_visible_keeps_everything_else():
    from janus_memory.view.page import visible

    obj = {"k\u202e": ["a\nb\tc", 1, 2.5, None, True, ("x",)], "plain": "ünïcode → ok"}
    assert visible(obj) == {"k\\u202e": ["a\nb\tc", 1, 2.5, None, True, ["x"]], "plain": "ünïcode → ok"}


def test_report_table_cells_escape_newlines_and_bidi():
    table = markdown_table(["run", "acc"], [["runs/a\nb | c", "0.5"], [f"x{RLO}y\r", "1"]])
    assert table.splitlines() == ["| run | acc |", "|---|---|", "| runs/a\\nb \\| c | 0.5 |", "| x\\u202ey\\r | 1 |"]


@pytest.mark.filterwarnings("ignore:Glyph")
@pytest.mark.parametrize("name", ["run\nnext", "run\r| x"])
def test_report_md_of_a_run_folder_with_a_newline_in_its_name(view_fake_run, tmp_path, name):
    import shutil

    from janus_memory.report.report import build_report

    run = tmp_path / name
    shutil.copytree(view_fake_run, run)
    out = tmp_path / "rep"
    build_report([str(run)], str(out), max_timelines=0)
    text = (out / "report.md").read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("|")]
    assert rows and all(ln.endswith("|") for ln in rows)
    assert not any(ln.startswith("next") or ln.startswith("| x") for ln in text.splitlines())
