"""Structural deltas between two JSON values: how the run store keeps per-step checkpoint cost flat.

A method's checkpoint (updater snapshot + controller state + counters) grows with the stream: the controller keeps every
seen task and its embedding, retrieval updaters keep a bank. Rewriting it whole every step made the database grow
quadratically (a 500-step run reached 136 MB). Between two consecutive steps almost all of it is unchanged or only
appended to, so :func:`diff` records just that:

* dict:   ``{"d": {key: delta, ...}, "x": [removed keys]}`` (unchanged keys are absent)
* list:   ``{"a": [appended items]}`` when the old list is a prefix of the new one, else ``{"s": new}``
* string: ``{"k": n, "t": tail}``: keep the first ``n`` characters, append ``tail`` (base64 embedding matrices grow
  this way), when that is shorter than the new string; else ``{"s": new}``
* other:  ``{"s": new}`` (set)

``apply(old, diff(old, new))`` equals ``new`` after a JSON round trip. Scalars are compared strictly (``1``, ``1.0`` and
``True`` differ) so the canonical JSON of the rebuilt value is byte-identical. One relaxation keeps the cost flat: the
unchanged prefix of a list longer than 256 items is compared with Python's ``==`` (a single C-level call); items that
the state appended earlier and never touches again (tasks, ids, bank entries) are what such lists hold. The previous
value is always the JSON round-tripped one the store keeps (RunStore), so tuples and numpy scalars do not reach it.
"""
from __future__ import annotations

from typing import Any

_SCALARS = (int, float, bool, type(None))
NEW = "_new"  # the whole new string, beside a string op: for the in-memory copy only, never stored (see strip)
SEP = "\x1f"  # separates keys in the store's path column; a dict with such a key is set whole
_STRICT_MAX = 256  # lists longer than this compare their unchanged prefix with ``==`` (one C call, not n Python calls)


def _same_scalar(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b``. Cheap in the case that matters, a string that grew by
    appending (possibly after rewriting its last base64 padding group): one C-level comparison, no bisection. Also
    the prefix of the run store's text deltas (store/text_log.py)."""
    n = min(len(a), len(b))
    if b.startswith(a if n == len(a) else a[:n]):
        return n
    if a[:64] != b[:64]:
        return 0 if a[:1] != b[:1] else _bisect(a, b, 0, 64)
    for d in (8, 64):  # the common case below a full match: the last few characters differ
        if n > d and b.startswith(a[:n - d]):
            return _bisect(a, b, n - d, n)
    return _bisect(a, b, 64, n)


def _bisect(a: str, b: str, lo: int, hi: int) -> int:
    """Common prefix length when a[:lo] == b[:lo] and a[:hi] != b[:hi]."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _list_prefix(old: list, new: list | tuple) -> bool:
    if len(new) < len(old):
        return False
    if not old:
        return True
    if not (_eq(old[-1], new[len(old) - 1]) and _eq(old[0], new[0])):  # cheap rejections first
        return False
    if len(old) > _STRICT_MAX:  # long lists (tasks, ids): C-speed ==, see the module docstring
        return old == list(new[:len(old)])
    return all(_eq(a, b) for a, b in zip(old, new))


def _eq(a: Any, b: Any) -> bool:
    """Strict JSON equality (types of scalars included); containers recurse only when ``==`` already holds."""
    if isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    if isinstance(a, _SCALARS) or isinstance(b, _SCALARS):
        return _same_scalar(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_eq(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b))
    return False


def diff(old: Any, new: Any, pinned: dict | None = None, _path: tuple = ()) -> dict | None:
    """The delta turning ``old`` into ``new``; None when they are equal.

    ``pinned``: ``{key path: leaf op or None}`` decided by the caller without comparing (store/ckpt_log.py: what a
    producer declared appended); a key path in it is not compared, its op is taken as is. Only paths reached through
    dicts present in both values are looked up."""
    if isinstance(old, dict) and isinstance(new, dict) and not any(SEP in k for k in new if isinstance(k, str)):
        changed: dict = {}
        for k, v in new.items():
            if k not in old:
                changed[k] = {"s": v}
                continue
            if pinned:
                sub = _path + (k,)
                d = pinned[sub] if sub in pinned else diff(old[k], v, pinned, sub)
            else:
                d = diff(old[k], v)
            if d is not None:
                changed[k] = d
        removed = [k for k in old if k not in new]
        if not changed and not removed:
            return None
        out: dict = {"d": changed}
        if removed:
            out["x"] = removed
        return out
    if isinstance(old, list) and isinstance(new, (list, tuple)):
        if len(old) == len(new) and _list_prefix(old, new):
            return None
        if _list_prefix(old, new):
            return {"a": list(new[len(old):])}
        return {"s": new}
    if isinstance(old, str) and isinstance(new, str):
        if old == new:
            return None
        k = common_prefix(old, new)
        if k > 64 and len(new) - k <= len(new) // 2:  # a growing string (base64 matrix), not a rewritten one
            return {"k": k, "t": new[k:], NEW: new}
        return {"s": new}
    if isinstance(new, _SCALARS) and _same_scalar(old, new):
        return None
    return {"s": new}


def ops(delta: dict | None, keys: tuple = ()) -> list[tuple[list[str], dict]]:
    """Flatten a nested delta into ``[(key path, leaf op), ...]`` in application order. Leaf ops: ``{"s": value}``
    (set: supersedes every earlier op at or below the path), ``{"x": 1}`` (remove the key: supersedes too),
    ``{"a": items}`` and ``{"k": n, "t": tail}`` (depend on the earlier value, never superseded)."""
    if delta is None:
        return []
    if "d" not in delta:
        return [(list(keys), delta)]
    out = [(list(keys) + [k], {"x": 1}) for k in delta.get("x", ())]
    for k, d in delta["d"].items():
        out += ops(d, keys + (k,))
    return out


def stored(op: dict) -> dict:
    """The op as written to the store (without the in-memory :data:`NEW` string)."""
    return {k: v for k, v in op.items() if k != NEW} if NEW in op else op


def in_memory(op: dict) -> dict | None:
    """For a string op, the equivalent set of the new string (strings are immutable: no copy); else None."""
    return {"s": op[NEW]} if NEW in op else None


def superseding(op: dict) -> bool:
    return "s" in op or "x" in op


def apply_op(root: Any, keys: list[str], op: dict) -> Any:
    """``root`` with one leaf op applied at ``keys`` (in place where possible); returns the new root.
    Raises ValueError when the path or the op does not fit ``root`` (a damaged store)."""
    if not keys:
        return _apply_leaf(root, op)
    node = root
    try:
        for k in keys[:-1]:
            node = node[k]
    except (KeyError, TypeError, IndexError):
        raise ValueError(f"checkpoint delta path {'/'.join(map(str, keys))} does not exist") from None
    if not isinstance(node, dict):
        raise ValueError(f"checkpoint delta path {'/'.join(map(str, keys))} is not inside an object")
    if "x" in op:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = _apply_leaf(node.get(keys[-1]), op)
    return root


def _apply_leaf(old: Any, op: dict) -> Any:
    if "s" in op:
        return op["s"]
    if "a" in op:
        if not isinstance(old, list):
            raise ValueError("checkpoint delta appends to a non-list")
        old.extend(op["a"])
        return old
    if "t" in op:
        if not isinstance(old, str) or len(old) < op["k"]:
            raise ValueError("checkpoint delta expects a longer string")
        return old[:op["k"]] + op["t"]
    raise ValueError(f"unknown checkpoint delta op {sorted(op)}")


def apply(old: Any, delta: dict | None) -> Any:
    """``old`` changed by a nested ``delta`` from :func:`diff` (after a JSON round trip)."""
    for keys, op in ops(delta):
        old = apply_op(old, keys, op)
    return old
