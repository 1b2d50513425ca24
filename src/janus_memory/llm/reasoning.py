"""Separate reasoning from the answer channel, and normalise OpenAI-format responses.

Failure cases handled (docs/research-notes.md):

* C20-A/B: reasoning arrives in a separate ``reasoning`` (vLLM >= PR #27752) or ``reasoning_content`` field.
* C20-C: the opening ``<think>`` is missing (Qwen3-*-Thinking-2507): everything before the LAST lone
  ``</think>`` is reasoning.
* C20-D: repeated (possibly empty) ``<think>...</think>`` pairs: every pair is removed, not only the first.
* C19: ``finish_reason == "length"`` and the think block never closed (an unclosed ``<think>``, or no tags at
  all and no separate reasoning field, as vLLM returns a cut-off trace in ``content``): the answer text is
  ``""`` and everything goes to ``reasoning``. An unclosed ``<think>`` with any other finish reason (the reply
  stopped while reasoning, e.g. "Answer: 5 <think>wait"): the same, so an answer being revised is never read
  (``split_answer`` reads a plain text that way too). Consequence: a non-reasoning model cut off by ``max_tokens``
  also has ``text == ""``; its partial output is kept in ``reasoning`` and ``ChatResult.truncated`` is True.

Token estimates (C22-A) are used when the server sends no usage: ``max(words, ceil(chars / 4))`` per text plus
4 tokens of chat-template overhead per message. They are flagged ``Usage.estimated = True`` and never 0.
For the silent-truncation check (C22-B) a conservative LOWER bound is used instead (whitespace-separated
words: every BPE/WordPiece tokenizer emits at least one token per word), so normal prompts never trip it.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from janus_memory.values import ChatResult, Usage

# the reasoning delimiters models write in plain text: <think> (DeepSeek-R1, Qwen3, QwQ, GLM), <thinking> and
# <reasoning> (prompted formats), <seed:think> (Seed-OSS), [THINK] (Magistral), ◁think▷ (Kimi)
_OPEN_TAG = r"<think>|<thinking>|<reasoning>|<seed:think>|\[THINK\]|◁think▷"
_CLOSE_TAG = r"</think>|</thinking>|</reasoning>|</seed:think>|\[/THINK\]|◁/think▷"
_PAIR = re.compile(rf"(?:{_OPEN_TAG})(.*?)(?:{_CLOSE_TAG})", re.DOTALL | re.IGNORECASE)
_OPEN = re.compile(_OPEN_TAG, re.IGNORECASE)
_CLOSE = re.compile(_CLOSE_TAG, re.IGNORECASE)
# gpt-oss "harmony" text left unparsed: <|channel|>analysis<|message|>...<|end|> then <|channel|>final<|message|>...
_HARMONY = re.compile(r"<\|channel\|>\s*(\w+)[^<]*?<\|message\|>(.*?)(?=<\|end\|>|<\|return\|>|<\|start\|>|<\|channel\|>|\Z)",
                      re.DOTALL)
_WORD = re.compile(r"\S+")


def _join(parts: Iterable[str]) -> str:
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def split_reasoning(
    content: str | None, reasoning_field: str | None = None, finish_reason: str | None = "stop"
) -> tuple[str, str]:
    """Return ``(answer_text, reasoning_text)`` from a message's ``content`` and its reasoning field.

    Examples (from C20): ``("<think>\\n\\n</think>\\n\\n<think>\\n</think>\\n\\nThe answer is 5.")`` ->
    ``("The answer is 5.", "")``; ``("Try 12 apples.\\n</think>\\n\\nThe answer is 5.")`` ->
    ``("The answer is 5.", "Try 12 apples.")``.
    """
    content = content or ""
    if "<|channel|>" in content:
        content = _harmony_as_tags(content)
    reasoning_parts: list[str] = [reasoning_field] if reasoning_field else []
    # 1. every complete pair, including empty and repeated ones
    inner = _PAIR.findall(content)
    reasoning_parts.extend(inner)
    rest = _PAIR.sub("", content)
    # 2. a lone closing tag with no opening one: everything before the last one is reasoning
    closes = list(_CLOSE.finditer(rest))
    if closes:
        last = closes[-1]
        reasoning_parts.append(_CLOSE.sub("", rest[: last.start()]))
        rest = rest[last.end():]
    # 3. an opening tag that never closed: the reply ended inside reasoning (C19 when cut off; with any other finish
    # the model stopped while revising): no answer, and what came before the tag was being revised (as split_answer)
    m = _OPEN.search(rest)
    if m:
        reasoning_parts.extend([rest[: m.start()], rest[m.end():]])
        rest = ""
    elif finish_reason == "length" and not closes and not inner and not reasoning_field:
        # C19: cut-off trace returned as content with no tags and no reasoning field
        reasoning_parts.append(rest)
        rest = ""
    return rest.strip(), _join(reasoning_parts)


def _harmony_as_tags(content: str) -> str:
    """Harmony messages rewritten with think tags: every non-final channel is reasoning; a reasoning channel that
    never ended (no ``<|end|>``, no later message) stays open."""
    parts = []
    for m in _HARMONY.finditer(content):
        channel, body = m.group(1).lower(), m.group(2)
        if channel == "final":
            parts.append(body)
        else:
            ended = m.end() < len(content)
            parts.append(f"<think>{body}</think>" if ended else f"<think>{body}")
    return "".join(parts) if parts else content


def split_answer(text: str | None) -> tuple[str, bool]:
    """The answer part of a plain text that may still hold the model's reasoning (a server without a reasoning
    parser, logs re-scored from text), and whether a reasoning block was left open.

    Only the text after the reasoning counts: every complete block is removed, everything before a lone closing tag
    is reasoning (C20). A block opened and never closed means the reply stopped while reasoning: ``("", True)``,
    whatever came before the opening tag (an answer followed by a reasoning block that never ended was being revised).
    """
    content = text or ""
    if "<|channel|>" in content:
        content = _harmony_as_tags(content)
    rest = _PAIR.sub("", content)
    closes = list(_CLOSE.finditer(rest))
    if closes:
        rest = rest[closes[-1].end():]
    if _OPEN.search(rest):
        return "", True
    return re.sub(r"\A(?:[ \t]*\n)+", "", rest).rstrip(), False  # blank lines go; a code body keeps its indent


def estimate_text_tokens(text: str) -> int:
    """Rough token count of a text: ``max(words, ceil(chars / 4))``."""
    if not text:
        return 0
    return max(len(_WORD.findall(text)), math.ceil(len(text) / 4))


def estimate_prompt_tokens(messages: Iterable[dict]) -> int:
    """Rough prompt token count (>= 1): text estimate + 4 per message + 2 for the assistant header."""
    msgs = list(messages)
    return max(1, sum(estimate_text_tokens(str(m.get("content", ""))) + 4 for m in msgs) + 2)


def prompt_tokens_lower_bound(messages: Iterable[dict]) -> int:
    """Conservative lower bound of a prompt's token count: whitespace-separated words (C22-B check)."""
    return sum(len(_WORD.findall(str(m.get("content", "")))) for m in messages)


def is_context_truncated(reported_prompt_tokens: int, messages: Iterable[dict], ratio: float = 0.9) -> tuple[bool, int]:
    """True when the server's prompt_tokens is below ``ratio`` times the local lower-bound estimate (C22-B)."""
    lb = prompt_tokens_lower_bound(messages)
    return (reported_prompt_tokens < ratio * lb), lb


def normalise_response(resp: dict[str, Any], messages: list[dict], *, model: str = "") -> ChatResult:
    """Turn an OpenAI-format chat-completion dict into a :class:`ChatResult`.

    Raises ``ValueError`` when the body has no ``choices[0].message`` (treated as a malformed, retryable body).
    Missing or null usage -> local estimate with ``estimated=True`` (C22-A).
    """
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise ValueError(f"response has no choices: {str(resp)[:200]}")
    ch = choices[0]
    msg = ch.get("message")
    if not isinstance(msg, dict):
        raise ValueError(f"response choice has no message: {str(ch)[:200]}")
    finish = ch.get("finish_reason") or "stop"
    rfield = _join([msg.get("reasoning") or "", msg.get("reasoning_content") or ""]) or None
    text, reasoning = split_reasoning(msg.get("content"), rfield, finish)
    usage = resp.get("usage") or None
    pt = ct = None
    if isinstance(usage, dict):
        pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if isinstance(pt, int) and isinstance(ct, int) and pt > 0:
        u = Usage(prompt_tokens=pt, completion_tokens=ct, estimated=False)
    else:
        u = Usage(
            prompt_tokens=estimate_prompt_tokens(messages),
            completion_tokens=max(1, estimate_text_tokens((msg.get("content") or "") + (rfield or ""))),
            estimated=True,
        )
    fp = resp.get("system_fingerprint")
    return ChatResult(text=text, reasoning=reasoning, finish_reason=str(finish), usage=u,
                      model=str(resp.get("model") or model), fingerprint=fp if isinstance(fp, str) else "")
