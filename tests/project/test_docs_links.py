"""Every link in README.md and docs/*.md resolves: a relative Markdown link names a file that exists and, with a
#fragment, a heading of that file (GitHub's anchor rule); every `docs/NAME.md` the text mentions exists; docs/README.md
lists every page of docs/."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
MENTION = re.compile(r"(?<![\w/.-])docs/([\w.-]+\.md)\b")


def prose(text: str) -> str:
    """The text outside fenced code blocks (a heading or link shown as code is not one)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to '-', repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose(path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6} +(.*?)\s*#*\s*$", line)
        if not m:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))  # a link in a heading counts by its text
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links() -> list[str]:
    bad = []
    for page in PAGES:
        text = prose(page.read_text(encoding="utf-8"))
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            file, _, fragment = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            where = f"{page.relative_to(ROOT)}: ({target})"
            if not dest.exists():
                bad.append(f"{where}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                bad.append(f"{where}: no heading with anchor #{fragment} in {dest.relative_to(ROOT)}")
        for name in MENTION.findall(page.read_text(encoding="utf-8")):
            if not (ROOT / "docs" / name).exists():
                bad.append(f"{page.relative_to(ROOT)}: mentions docs/{name}, which does not exist")
    return bad


def test_every_link_and_doc_mention_resolves():
    assert broken_links() == []


def test_the_docs_index_lists_every_page():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([\w.-]+\.md)\)", index))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert listed == pages


def test_anchor_rule_on_known_headings(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# `janus demo`\n## MMT on the demo's short stream (2026-12-01)\n## Ignoring `ignore_usage_counters`\n"
                    "## Cost\n## Cost\n```\n# not a heading\n```\n", encoding="utf-8")
    assert anchors(page) == {"janus-demo", "mmt-on-the-demos-short-stream-2026-12-01",
                             "ignoring-ignore_usage_counters", "cost", "cost-1"}
