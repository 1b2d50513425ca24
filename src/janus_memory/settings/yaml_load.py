"""YAML for settings files (``--config``, grid files): ``yaml.safe_load`` that refuses a key given twice in any
mapping. PyYAML alone keeps the last value silently, so ``stream_size: 5`` followed later by ``stream_size: 500``
would run 500 tasks without a word; here it is a YAML error naming the key and both lines."""
from __future__ import annotations

import yaml

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


def load_unique(text: str):
    """The YAML document in ``text`` (safe types only); raises yaml.YAMLError, also for a duplicate key."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


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
