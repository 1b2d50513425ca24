"""errors.printable: every invisible or reordering character (Unicode categories Cc, Cf, Zl, Zp, every bidi control,
the tag block) is written as a visible escape; ordinary text of any script, and emoji, are left as they are. The
run page and the guard record printer show the same escapes (they call it)."""
from __future__ import annotations

import json
import sys
import unicodedata

import pytest

from janus_memory.errors import printable

ESCAPED = [
    ("\u061c", "\\u061c"),          # Arabic letter mark (bidi)
    ("\u200e", "\\u200e"), ("\u200f", "\\u200f"),
    ("\u202a", "\\u202a"), ("\u202e", "\\u202e"),
    ("\u2066", "\\u2066"), ("\u2069", "\\u2069"),
    ("\u2028", "\\u2028"), ("\u2029", "\\u2029"),
    ("\u200b", "\\u200b"),          # zero-width space
    ("\ufeff", "\\ufeff"),          # byte order mark / zero-width no-break space
    ("\u00ad", "\\xad"),            # soft hyphen
    ("\u0085", "\\x85"), ("\x7f", "\\x7f"), ("\x1b", "\\x1b"), ("\r", "\\r"), ("\x0b", "\\x0b"),
    ("\u2060", "\\u2060"), ("\u2064", "\\u2064"), ("\ufff9", "\\ufff9"),
    ("\U000e0001", "\\U000e0001"), ("\U000e0041", "\\U000e0041"), ("\U000e007f", "\\U000e007f"),
    ("\U000e0000", "\\U000e0000"),  # unassigned, but inside the tag block
    ("\ud800", "\\ud800"),          # a lone surrogate
]
KEPT = ["plain ASCII ~!", "é ü ß", "中文 日本語 한국어", "العربية", "עברית", "हिन्दी", "Ελληνικά", "кириллица",
        "😀 👍🏽 🇫🇷", "👨\u200d👩\u200d👧", "می\u200cخواهم", "tab\there", "line 1\nline 2", "\u00a0nbsp \u3000 ideographic"]


@pytest.mark.parametrize("char,shown", ESCAPED)
def test_each_invisible_or_reordering_character_is_escaped(char, shown):
    assert printable(f"a{char}b") == f"a{shown}b"
    assert printable(f"a{char}b", one_line=True) == f"a{shown}b"


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_text_is_left_as_it_is(text):
    assert printable(text) == text


def test_a_tagged_emoji_flag_shows_its_tags():
    england = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"
    assert printable(england) == "\U0001f3f4\\U000e0067\\U000e0062\\U000e0065\\U000e006e\\U000e0067\\U000e007f"


def test_newline_only_escaped_on_one_line():
    assert printable("a\nb\u2028c", one_line=True) == "a\\nb\\u2028c"
    assert printable("a\nb\u2028c") == "a\nb\\u2028c"


def test_every_character_of_those_categories_is_escaped():
    kept = {"\t", "\n", "\u200c", "\u200d"}
    bad = [c for c in map(chr, range(sys.maxunicode + 1))
           if unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp", "Cs"} and c not in kept]
    assert len(bad) > 2000
    assert [c for c in bad if printable(c) == c] == []
    assert "".join(printable(c) for c in bad).count("\\") == len(bad)


def test_json_escapes_are_valid_json_of_the_same_string():
    from janus_memory.errors import json_escaped

    text = json.dumps({"k": "a\u202eb\u2028c\U000e0041d 中"}, ensure_ascii=False)
    line = json_escaped(text)
    assert line == '{"k": "a\\u202eb\\u2028c\\udb40\\udc41d 中"}'
    assert json.loads(line) == {"k": "a\u202eb\u2028c\U000e0041d 中"}


def test_page_and_guard_printer_show_the_escapes():
    from janus_memory.integrations.__main__ import _json_line, _line, _visible
    from janus_memory.view.page import visible

    hostile = "x\u061cy\u200bz\ufeff\U000e0041"
    shown = "x\\u061cy\\u200bz\\ufeff\\U000e0041"
    assert visible({"memory": hostile}) == {"memory": shown}
    assert _line(hostile) == shown
    assert _visible({"value": hostile}) == {"value": shown}
    assert _json_line({"v": hostile}) == '{"v": "x\\u061cy\\u200bz\\ufeff\\udb40\\udc41"}'
    assert _line("a" * 95 + "\U000e0041" * 3) == "a" * 95 + "..."  # an escape is never cut in two
