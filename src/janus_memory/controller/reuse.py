"""The parts of :class:`~janus_memory.controller.janus.Janus` that reuse measured outcomes (issue 24): the deployed
memory's outcome cache (``reuse_old_results``), near-copy inheritance (``near_copy_inherit``) and the stable panel
(``eval_set="panel"``). A mixin over the controller's private fields, as ``state.StateMixin`` is.
"""
from __future__ import annotations

import hashlib

from .changes import rewords_only, shingle_similarity
from .decision import Comparison
from .step import Decision


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ReuseMixin:
    def _near_copy(self, d: Decision, old_text: str, new_text: str) -> None:
        """A near copy under ``near_copy_inherit``: a rewording (``changes.rewords_only``) is checked on the first
        ``near_copy_pairs`` tasks (0: accepted unevaluated, reason "near_copy") and, deployed, keeps the deployed
        memory's outcomes on the tasks it was not asked; any other near copy (an inserted, dropped or rewritten
        line, e.g. a planted instruction) is compared as any candidate."""
        c = self.config
        if not rewords_only(old_text, new_text):
            self._trigger(d, old_text, new_text)
            return
        if c.near_copy_anchor and not self._anchored(old_text, new_text):
            d.trigger_signals = {**d.trigger_signals, "near_copy": "drifted"}
            self._trigger(d, old_text, new_text)
            return
        d.trigger_signals = {**d.trigger_signals, "near_copy": "rewording"}
        if c.near_copy_pairs == 0:  # measured, not the default: a one-word change outside the guard words passes
            d.triggered = False
            d.reason = "near_copy"
            if self._old_key == _sha(old_text):  # the rewording answers as the deployed memory did
                self._old_key = _sha(new_text)
            self._stats["accepts"] += 1
            return
        self._trigger(d, old_text, new_text, max_pairs=c.near_copy_pairs, inherit=True)

    def _anchored(self, old_text: str, new_text: str) -> bool:
        """``near_copy_anchor``: the candidate is a near copy and a rewording of the anchor, the last fully compared
        memory (whose outcome cache holds its own measurements, not inherited ones). When the deployed memory is the
        anchor this is the rewording test already passed; after an inherited rewording it is the whole drift since
        the anchor, so rewordings cannot chain (each checked on one task) into a memory nobody measured. No anchor
        yet (nothing measured): False."""
        if self._anchor_sha is None:
            return False
        if self._anchor_sha == _sha(old_text):
            self._anchor_text = old_text  # (a restored state holds the anchor's text only when it is not deployed)
            return True
        anchor = self._anchor_text
        if anchor is None:  # restored with the anchor deployed, and the caller now passes another memory
            return False
        return (shingle_similarity(anchor, new_text) >= self.config.near_copy_similarity
                and rewords_only(anchor, new_text))

    def _set_anchor(self, text: str) -> None:
        self._anchor_sha, self._anchor_text = _sha(text), text

    def _remember(self, entries: list[int], comp: Comparison, new_text: str, inherit: bool = False) -> None:
        """reuse_old_results: keep the deployed memory's measured outcomes (the candidate's when it is deployed);
        an indeterminate outcome (None) is not kept, so it is measured again. ``inherit`` (a rewording checked on a
        few tasks and deployed): the old memory's outcomes on the tasks the candidate was not asked are kept as
        its own."""
        if comp.accept:
            asked = set(entries[:len(comp.new_correct)])
            kept = {i: v for i, v in self._old_cache.items() if i not in asked} if inherit else {}
            self._old_key, self._old_cache = _sha(new_text), kept
            if not inherit:  # its outcomes are its own measurements: the new anchor
                self._set_anchor(new_text)
            pairs = zip(entries, comp.new_correct)
        else:
            pairs = zip(entries, comp.old_correct)
        for i, v in pairs:
            if v is not None:
                self._old_cache[i] = bool(v)
