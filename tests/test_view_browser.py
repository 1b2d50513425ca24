"""`janus view` pages opened in headless Chromium as a person would (tests/headless.py: DevTools protocol over a pipe,
no port): no console errors, one timeline mark per step and method, a real mouse click on a rolled-back step opens its
memory diff and both memories' scores, model text shows as text. Skipped with the reason when Chromium is absent
(.ci/run installs the Debian package). Screenshots go to $JANUS_VIEW_SHOTS when it is set."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from headless import Browser, find_chromium

pytestmark = pytest.mark.skipif(find_chromium() is None,
                                reason="chromium not installed (Debian package 'chromium'; .ci/run installs it)")


@pytest.fixture(scope="module")
def browser():
    b = Browser()
    try:
        yield b
    finally:
        b.close()
    with pytest.raises(ProcessLookupError):  # the browser's whole process group is gone
        os.killpg(b.proc.pid, 0)


def _shot(b: Browser, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    b.screenshot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
    keep = os.environ.get("JANUS_VIEW_SHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / name)
    return path


def _open(b: Browser, path: Path, hash_: str = "") -> None:
    b.events.clear()
    b.open(str(path), hash_=hash_)
    b.wait_for("document.body.dataset.ready")  # view.js ran to its end


def test_fake_run_page_timeline_and_a_rolled_back_step(view_fake_run, tmp_path, browser):
    from janus_memory.view.page import write_view
    from janus_memory.view.data import ROLLED_BACK

    path, data = write_view([view_fake_run], tmp_path / "view.html")
    _open(browser, path)
    assert browser.errors() == []
    lanes = browser.eval("Array.from(document.querySelectorAll('#timeline .lane')).map(function (l) {"
                         "return [l.querySelector('.lanel').textContent, l.querySelectorAll('i[data-s]').length]; })")
    assert lanes == [["dc_rs", 12], ["dc_rs+janus", 12]]
    assert browser.eval("document.querySelectorAll('#timeline i[data-s]').length") == 24
    rolled = [i + 1 for i, f in enumerate(data["runs"][0]["methods"][1]["f"]) if f & ROLLED_BACK]
    assert rolled == [4, 8, 9]
    assert browser.eval("Array.from(document.querySelectorAll('#timeline .lane[data-m=\"1\"] i.rb'))"
                        ".map(function (x) { return Number(x.dataset.s); })") == rolled
    assert browser.eval("document.querySelectorAll('.uplot canvas').length") == 3  # accuracy, cosine, tokens
    assert browser.eval("document.getElementById('detail').classList.contains('hidden')") is True
    _shot(browser, tmp_path, "view_fake_page.png")

    browser.click('#timeline .lane[data-m="1"] i[data-s="8"]')  # a real mouse click on the rolled-back step 8
    assert browser.eval("location.hash") == "#run=0&method=dc_rs%2Bjanus&step=8"
    assert browser.eval("document.querySelector('#detail h2').textContent") == "dc_rs+janus · step 8 of 12"
    added = browser.eval("Array.from(document.querySelectorAll('#diff .add'))"
                         ".map(function (x) { return x.textContent; })")
    assert added[0] == "+## Grading note (confirmed on earlier problems)\n" and len(added) == 3
    assert browser.eval("document.querySelectorAll('#diff .del').length") == 0
    decision = browser.eval("document.getElementById('decision').textContent")
    assert "rolled back: the previous memory is kept" in decision
    assert "old memory 1.000 vs candidate 0.000" in decision and "Injected candidatepoison" in decision
    rows = browser.eval("Array.from(document.querySelectorAll('#evalset tbody tr')).map(function (r) {"
                        "return Array.from(r.cells).slice(1, 7).map(function (c) { return c.textContent; }); })")
    assert rows == [["gsm8k:120", "coverage", "✓", "✗", "240", "2401"], ["gsm8k:350", "coverage", "✓", "✗", "8", "81"],
                    ["gsm8k:350", "boundary", "✓", "✗", "8", "81"], ["gsm8k:480", "fresh", "✓", "✗", "11", "111"]]
    assert browser.eval("document.getElementById('task-text').textContent").startswith("Ben has 4 tubes of blue paint")
    assert browser.errors() == []
    _shot(browser, tmp_path, "view_fake_step8.png")


def test_model_text_shows_as_text(view_fake_run, tmp_path, browser):
    from janus_memory.view.data import view_data
    from janus_memory.view.page import render

    data = view_data([view_fake_run])
    evil = "<script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\"></pre><b>bold</b>"
    data["runs"][0]["methods"][1]["d"][7]["a"] = evil
    data["runs"][0]["tasks"][data["runs"][0]["methods"][1]["t"][7]][1] = evil
    data["runs"][0]["methods"][1]["d"][7]["df"][1] = ["+", evil]
    path = tmp_path / "evil.html"
    path.write_text(render(data), encoding="utf-8")
    _open(browser, path, "#run=0&method=dc_rs%2Bjanus&step=8")  # the step opens from the address
    assert browser.eval("document.getElementById('answer-text').textContent") == evil
    assert browser.eval("document.getElementById('task-text').textContent") == evil
    assert browser.eval("document.querySelector('#diff .add').textContent") == "+" + evil + "\n"
    assert browser.eval("typeof window.pwned") == "undefined"
    assert browser.eval("document.querySelectorAll('#detail script, #detail img').length") == 0
    assert browser.eval("Array.from(document.querySelectorAll('#detail b')).filter(function (x) {"
                        "return x.textContent === 'bold'; }).length") == 0
    assert browser.errors() == []


def test_large_run_page_gzipped_data(view_fake_run, tmp_path, browser):
    """The data of a long run is gzipped in the page (view/page.py); the page unpacks it and draws the same."""
    from janus_memory.view.data import view_data
    from janus_memory.view.page import render

    path = tmp_path / "packed.html"
    path.write_text(render(view_data([view_fake_run]), inline_max=0), encoding="utf-8")
    assert 'type="application/x-janus-gzip-base64"' in path.read_text()
    _open(browser, path)
    assert browser.errors() == []
    assert browser.eval("document.querySelectorAll('#timeline i[data-s]').length") == 24
    browser.click('#timeline .lane[data-m="1"] i[data-s="9"]')
    assert browser.eval("document.querySelector('#detail h2').textContent") == "dc_rs+janus · step 9 of 12"
    assert browser.eval("document.querySelectorAll('#evalset tbody tr').length") == 4


REAL_RUN = Path(__file__).resolve().parent / "view_real_run" / "smollm2_dc_rs"


def test_real_model_run_page(tmp_path, browser):
    """The stored run on a real model (SmolLM2-135M, tests/view_real_run/README.md): exported files only."""
    from janus_memory.view.page import write_view

    shutil.copytree(REAL_RUN, tmp_path / "run")
    path, data = write_view([tmp_path / "run"])
    run = data["runs"][0]
    assert (run["header"]["backend"], run["header"]["model"]) == ("local", "SmolLM2-135M-Instruct.Q4_1.gguf")
    assert [m["f"] for m in run["methods"]] == [[132, 132, 132, 84, 132], [164, 134, 134, 86, 134]]
    _open(browser, path)
    assert browser.errors() == []
    assert browser.eval("document.querySelectorAll('#timeline i[data-s]').length") == 10
    browser.click('#timeline .lane[data-m="1"] i[data-s="4"]')  # the injected poison, accepted (E: 0 vs 0)
    assert browser.eval("document.querySelector('#detail h2').textContent") == "dc_rs+janus · step 4 of 5"
    assert browser.eval("Array.from(document.querySelectorAll('#diff .del, #diff .add')).map(function (x) {"
                        "return x.textContent.slice(0, 14); })") == ["-(empty)\n", "+## Grading no", "+- When option"]
    decision = browser.eval("document.getElementById('decision').textContent")
    assert "old memory 0.000 vs candidate 0.000" in decision and "(new_ge_old)" in decision
    step = json.loads((REAL_RUN / "dc_rs+janus" / "steps.jsonl").read_text().splitlines()[3])
    assert browser.eval("document.getElementById('answer-text').textContent") == step["output"] == ""
    assert browser.eval("document.querySelector('#detail details pre').textContent") == step["reasoning"] != ""
    assert "The model's answer text is empty (its output is under reasoning above)." in browser.eval(
        "document.getElementById('detail').textContent")
    assert browser.errors() == []
    _shot(browser, tmp_path, "view_real_step4.png")


def test_live_real_model_run_page(tmp_path, browser, monkeypatch):
    """Opt-in (JANUS_SMOKE_MODEL=1, as tests/test_smoke_model.py): a new run on SmolLM2-135M, then its page."""
    gguf = os.environ.get("JANUS_TEST_SMOLLM2_GGUF")
    if os.environ.get("JANUS_SMOKE_MODEL") != "1" or not gguf or not Path(gguf).is_file():
        pytest.skip("opt-in: JANUS_SMOKE_MODEL=1 and JANUS_TEST_SMOLLM2_GGUF (minutes on 2 shared cores)")
    pytest.importorskip("xllamacpp")
    from janus_memory.settings.config import RunConfig
    from janus_memory.run.experiment import run_experiment
    from janus_memory.view.page import write_view

    monkeypatch.setenv("JANUS_CACHE_DIR", str(tmp_path / "cache"))
    cfg = RunConfig(backend="local", model_path=gguf, preset="small", dataset="gsm8k", stream_size=3, test_size=1,
                    controller="janus", encoder="hashing:256", out=str(tmp_path / "run"), no_cache=True,
                    solver_max_tokens=64, curator_max_tokens=64,
                    janus={"warmup": 1, "coverage_size": 1, "boundary_size": 1, "fresh_size": 1, "trigger": "always"})
    run_experiment(cfg, log=lambda m: None)
    path, data = write_view([tmp_path / "run"])
    _open(browser, path)
    assert browser.errors() == []
    assert browser.eval("document.querySelectorAll('#timeline i[data-s]').length") == 3
    m = data["runs"][0]["methods"][0]
    assert data["runs"][0]["header"]["backend"] == "local" and m["n"] == 3
    browser.click('#timeline .lane[data-m="0"] i[data-s="2"]')
    assert browser.eval("document.querySelector('#detail h2').textContent") == "dc_rs+janus · step 2 of 3"
    assert browser.eval("document.getElementById('answer-text').textContent") == (m["d"][1].get("a") or "")
    assert browser.errors() == []
