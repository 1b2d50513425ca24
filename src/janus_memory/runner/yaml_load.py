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
