"""YAML for settings files (``--config``, grid files): ``yaml.safe_load`` that refuses a key given twice in any
mapping. PyYAML alone keeps the last value silently, so ``stream_size: 5`` followed later by ``stream_size: 500``
would run 500 tasks without a word; here it is a YAML error naming the key and both lines.

Size limits (checked before anything is created): a settings file is a regular file of at most
:data:`MAX_SETTINGS_BYTES` (a directory, FIFO or device such as ``/dev/zero`` is named as what it is, never read), and
its document expands to at most :data:`MAX_VALUES` values with every alias counted where it is used, nested at most
:data:`MAX_DEPTH` deep: a few lines of aliases (a "billion laughs" document) otherwise expand to billions of values
once validated or written out, a hang or a MemoryError long after the run folder was made."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import yaml

MAX_SETTINGS_BYTES = 1 << 20  # 1 MiB: a settings file is a few KB (the largest grid file in docs/: 3 KB)
MAX_VALUES = 100_000  # values a document may expand to, aliases counted at every use
MAX_DEPTH = 64  # nesting of mappings and lists

MERGE_TAG = "tag:yaml.org,2002:merge"


class _UniqueKeyLoader(yaml.SafeLoader):
    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == MERGE_TAG:  # '<<: *anchor' merges are resolved by PyYAML itself
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: PyYAML's own error follows
                    continue
                line = key_node.start_mark.line + 1
                if first is not None:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key '{key}' at line {line} (first at line {first}); give it once",
                        key_node.start_mark)
                seen[key] = line
        return super().construct_mapping(node, deep)


class SettingsTooLarge(yaml.YAMLError):
    """A settings document beyond the size limits (module docstring)."""


def load_unique(text: str):
    """The YAML document in ``text`` (safe types only); raises yaml.YAMLError, also for a duplicate key and for a
    document that expands beyond :data:`MAX_VALUES` values or :data:`MAX_DEPTH` levels (SettingsTooLarge)."""
    loader = _UniqueKeyLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise SettingsTooLarge(f"the document is nested too deeply (more than {MAX_DEPTH} levels)") from None
        if node is None:
            return None
        check_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def check_expansion(root) -> None:
    """SettingsTooLarge when the node graph ``root`` (aliases are shared nodes) expands to more than MAX_VALUES
    values, nests deeper than MAX_DEPTH, or refers to itself (a recursive alias). Linear in the number of distinct
    nodes: each node's expanded size is computed once."""
    sizes: dict[int, int] = {}

    def size(node, depth: int, path: set) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in path:
            raise SettingsTooLarge("the document refers to itself (a recursive alias); write the values out")
        if depth > MAX_DEPTH:
            raise SettingsTooLarge(f"the document is nested too deeply (more than {MAX_DEPTH} levels)")
        n = 1
        if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)):
            path.add(key)
            children = node.value if isinstance(node, yaml.SequenceNode) else [c for kv in node.value for c in kv]
            for child in children:
                n += size(child, depth + 1, path)
                if n > MAX_VALUES:
                    raise SettingsTooLarge(f"the document expands to more than {MAX_VALUES:,} values (YAML aliases "
                                           "count at every use: an alias bomb?); write the values out")
            path.discard(key)
        sizes[key] = n
        return n

    size(root, 0, set())


def read_settings_text(path: str | os.PathLike, what: str = "config file") -> str:
    """The text of a settings file, checked before it is read: it exists, is a regular file (a directory, FIFO,
    socket or device is named as what it is: reading /dev/zero or a FIFO never ends), holds at most
    MAX_SETTINGS_BYTES and is UTF-8. ValueError (one line naming the file and the fix) otherwise."""
    p = Path(path).expanduser()
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        raise ValueError(f"{what} not found: {p}") from None
    except OSError as e:
        raise ValueError(f"cannot read {what} {p} ({e.strerror or e})") from None
    if not stat.S_ISREG(mode):
        kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "not a regular file")
        raise ValueError(f"{what} {p} is {kind}, not a file; give the path of a YAML or JSON file")
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_SETTINGS_BYTES + 1)
    except OSError as e:
        raise ValueError(f"cannot read {what} {p} ({e.strerror or e})") from None
    if len(data) > MAX_SETTINGS_BYTES:
        raise ValueError(f"{what} {p} is larger than {MAX_SETTINGS_BYTES // 1024:,} KiB; a settings file holds a few "
                         "keys (is it the right file?)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{p} is not UTF-8 text (byte offset {e.start}); save it as UTF-8") from None


def key_line(text: str, dotted: str) -> int | None:
    """1-based line of the key ``dotted`` ("janus.warmup", "llm.temperature", "stream_size") in the YAML mapping
    ``text``, or None when that key is not written there (or the text is not a mapping). A flat backend key given at
    the top level ("temperature") is found for "llm.temperature" too."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    parts = dotted.split(".")
    found = _walk(node, parts)
    if found is None and len(parts) == 2 and parts[0] == "llm":
        found = _walk(node, parts[1:])
    return found


def _walk(node, parts: list[str]) -> int | None:
    line = None
    for part in parts:
        if not isinstance(node, yaml.MappingNode):
            return None
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == part:
                node, line = v, k.start_mark.line + 1
                break
        else:
            return None
    return line
