"""The HTML page of `janus view`: one self-contained file (data, chart library, script and style inline).

The page is rendered with Jinja2 (autoescaping on: every value is escaped unless it is one of the inline blocks
below). Those blocks are raw text inside ``<script>``/``<style>`` elements, where HTML escaping does not apply, so
each is made safe for its place instead:

* the data is JSON with ``<``, ``>`` and ``&`` (and U+2028/U+2029) written as ``\\u003c`` etc. (:func:`script_json`):
  no text from a model answer can close the ``<script>`` element or open a comment, and ``JSON.parse`` reads the
  escapes back to the same characters. Above :data:`INLINE_JSON_MAX` bytes (a long run: 10,000 steps make ~40 MB of
  JSON, most of it answers and memory diffs) the same JSON is gzipped and base64-encoded (an alphabet without ``<``),
  and the page unpacks it with the browser's own ``DecompressionStream``: about a fifth of the size;
* the vendored uPlot and our own script and style are checked to hold no ``</script`` / ``</style`` / ``<!--``.

Every string of the data, the title and the subtitle passes through :func:`visible` first: a bidirectional control
(a right-to-left override shows "evil" as "live") or another control character is shown as a visible escape
(``\\u202e``), as the CLI does (errors.printable); newlines and tabs stay.

A Content-Security-Policy in the page allows only these inline scripts (by their sha256) and nothing from the
network (``default-src 'none'``): the page fetches nothing, and a script smuggled in would not run.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from html import unescape
from importlib import resources
from pathlib import Path

from ..errors import OutputError

_HERE = "janus_memory.view"
INLINE_JSON_MAX = 2 * 2**20  # bytes of JSON kept readable in the page; larger data is gzipped (module docstring)
_UNSAFE = {"script": re.compile(r"</script|<!--", re.I), "style": re.compile(r"</style|<!--", re.I)}


def visible(obj):
    """``obj`` (str, list, tuple or dict, nested) with every string's bidi and control characters written as visible
    escapes (errors.printable; newlines and tabs kept); keys too. Other values are returned as they are."""
    from ..errors import printable

    if isinstance(obj, str):
        return printable(obj)
    if isinstance(obj, dict):
        return {visible(k): visible(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [visible(v) for v in obj]
    return obj


def script_json(obj) -> str:
    """Compact JSON that is safe as the text of a ``<script type="application/json">`` element."""
    return _escape(_dumps(obj))


def _dumps(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _escape(text: str) -> str:
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def data_block(obj, *, inline_max: int = INLINE_JSON_MAX) -> tuple[str, str]:
    """(type, text) of the page's data element: ``application/json`` with :func:`script_json`, or, above
    ``inline_max`` bytes, ``application/x-janus-gzip-base64`` (gzip level 6, mtime 0: the same data gives the same
    page)."""
    import gzip

    raw = _dumps(obj).encode("utf-8")
    if len(raw) <= inline_max:
        return "application/json", _escape(raw.decode("utf-8"))
    return "application/x-janus-gzip-base64", base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode()


def _asset(*parts: str) -> str:
    return resources.files(_HERE).joinpath(*parts).read_text(encoding="utf-8")


def _inline(text: str, kind: str, name: str):
    from markupsafe import Markup

    if _UNSAFE[kind].search(text):
        raise RuntimeError(f"{name} cannot be inlined: it holds a closing </{kind}> or <!--")
    return Markup(text)


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def render(data: dict, *, inline_max: int = INLINE_JSON_MAX) -> str:
    """The page for ``data`` (view.data.view_data); data over ``inline_max`` bytes of JSON is gzipped."""
    from jinja2 import Environment, PackageLoader, select_autoescape
    from markupsafe import Markup

    data = visible(data)
    kind, block = data_block(data, inline_max=inline_max)
    env = Environment(loader=PackageLoader(_HERE, "templates"), autoescape=select_autoescape(["html", "j2"]),
                      keep_trailing_newline=True)
    uplot_js, view_js = _asset("vendor", "uplot", "uPlot.iife.min.js"), _asset("static", "view.js")
    runs = data.get("runs") or []
    title = runs[0]["name"] if len(runs) == 1 else f"{len(runs)} runs"
    sub = "; ".join(f"{r['name']}: {r['header'].get('caption', '')}" for r in runs[:3])
    sub += " …" if len(runs) > 3 else ""
    csp = ("default-src 'none'; script-src " + " ".join(_sha256(t) for t in (uplot_js, view_js)) +
           "; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'")
    return env.get_template("view.html.j2").render(
        title=title, subtitle=sub, csp=csp, version=_version(),
        uplot_css=_inline(_asset("vendor", "uplot", "uPlot.min.css"), "style", "uPlot.min.css"),
        view_css=_inline(_asset("static", "view.css"), "style", "view.css"),
        uplot_js=_inline(uplot_js, "script", "uPlot.iife.min.js"), view_js=_inline(view_js, "script", "view.js"),
        data_type=kind, data_json=Markup(block))


def _version() -> str:
    from .. import __version__

    return __version__


GENERATOR = 'name="generator" content="janus-memory'  # in every page this module writes (templates/view.html.j2)


def view_path(run_dirs: list[str | Path], out: str | Path | None = None) -> Path:
    """Where the page for ``run_dirs`` goes: ``out`` (``<out>/view.html`` when it is a folder); by default
    ``<RUN>/view.html`` for one folder given, a run folder or a folder of runs (the demo's ``runs/demo-<time>``, a
    grid root: one page beside the runs, never inside one of them), and for several folders their deepest common
    folder."""
    if out is not None:
        path = Path(out).expanduser()
        return path / "view.html" if path.is_dir() else path
    dirs = [Path(d).expanduser().absolute() for d in run_dirs]
    if len(dirs) == 1:
        return dirs[0] / "view.html"
    return Path(os.path.commonpath([str(d) for d in dirs])) / "view.html"


def existing_page(path: Path) -> str | None:
    """What is at ``path`` before the page is written: None (nothing), or the page janus view wrote there, in words
    (what it shows and when it was written: ``"real, written 2026-12-05 01:32:16"``), for the line that says it was
    replaced. OutputError (one line, nothing
    written) for a file that is not such a page: a run's file, or an .html file of the user's."""
    import datetime

    if not path.exists() and not path.is_symlink():
        return None
    if path.is_dir() or path.suffix.lower() not in (".html", ".htm"):
        # never overwrite a file the page is not (run.sqlite, summary.json, a user's file): one line, nothing lost
        raise OutputError(f"refusing to overwrite {path} with the view: it exists and is not an .html file; "
                          "give a new file or an .html path")
    if not path.is_file():  # a pipe, a device, a dangling link: never opened here; the write says what it cannot do
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(4096)
        when = datetime.datetime.fromtimestamp(path.stat().st_mtime).strftime("%Y-%m-%d %H:%M:%S")
    except OSError as e:
        raise OutputError(f"cannot read {path} before replacing it: {e.strerror or e}") from None
    if GENERATOR not in head:
        raise OutputError(f"refusing to overwrite {path}: it is an HTML file janus view did not write; give another "
                          "--out, or move that file")
    title = re.search(r"<title>janus view: (.*?)</title>", head, re.S)
    name = unescape(title.group(1)) if title else "?"
    return f"{name}, written {when}"


def write_view(run_dirs: list[str | Path], out: str | Path | None = None) -> tuple[Path, dict]:
    """Write the page for ``run_dirs`` to :func:`view_path` (``out``, or beside the runs). Returns (path, data); the
    page a previous `janus view` wrote there is replaced (:func:`existing_page` says what it was; the CLI prints it),
    any other file is refused. OutputError (one line) when the file cannot be written."""
    from ..store.jsonio import atomic_write_text
    from .data import view_data

    path = view_path(run_dirs, out)
    existing_page(path)  # refuses a file that is not a page of ours before anything is read
    data = view_data(run_dirs)
    html = render(data)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, html)
    except OSError as e:
        raise OutputError(f"cannot write the view to {path}: {e.strerror or e}") from None
    return path, data
