"""A bound on what is read from a model server: a reply body larger than the request can justify is refused, not read.

A chat reply holds at most ``max_tokens`` generated tokens (reasoning included); its JSON body is bounded by
:func:`reply_limit`: :data:`BASE_BYTES` (the envelope: ids, usage, a server's extra fields) plus
:data:`BYTES_PER_TOKEN` per requested token, generous for any tokenizer (a token is a few characters; JSON escapes
such as ``\\u00e9`` take 6 bytes per character). With the default ``max_tokens`` of 8192 that is 1.5 MiB. Other
requests (``GET /models``, an error body) get :data:`BASE_BYTES`.

The limit applies to the bytes after any content decoding (a gzip body of a few KB can expand to GBs): the response
hook :func:`cap_response` (an httpx ``event_hooks["response"]`` entry) wraps the body stream before httpx reads it,
decodes gzip/deflate itself, and raises :class:`ReplyTooLarge` at the first byte past the limit, closing the
connection; a declared ``Content-Length`` past the limit is refused before any byte is read. The limit of the
request in flight travels in a context variable (:func:`limit_replies`), so no header reaches the server.
``ReplyTooLarge`` is not retried (the same request would be answered the same way): the run ends with one line,
every committed step kept, and resumes when the server is fixed.
"""
from __future__ import annotations

import contextvars
import zlib
from collections.abc import AsyncIterator
from contextlib import contextmanager

import httpx
import openai

BASE_BYTES = 1 << 20  # 1 MiB
ACCEPT_ENCODING = "gzip, deflate"  # what the client asks for: the encodings whose decoded size is bounded here
BYTES_PER_TOKEN = 64
DEFAULT_MAX_TOKENS = 8192  # a request without max_tokens: the settings' default

_LIMIT: contextvars.ContextVar[int] = contextvars.ContextVar("janus_reply_limit", default=BASE_BYTES)


def reply_limit(max_tokens: int | None) -> int:
    """Bytes a reply to a request for ``max_tokens`` tokens may hold (module docstring)."""
    return BASE_BYTES + BYTES_PER_TOKEN * int(max_tokens or DEFAULT_MAX_TOKENS)


class ReplyTooLarge(openai.OpenAIError):
    """A server's reply body went past its limit (an OpenAIError, so the SDK passes it on unwrapped)."""

    def __init__(self, url, limit: int, *, declared: int | None = None, encoding: str | None = None):
        if encoding is not None:
            text = (f"the reply of {url} is compressed with {encoding!r}, which was not asked for (gzip or deflate "
                    "only: their decoded size is bounded); it was not read")
        else:
            what = f"declares {declared:,} bytes" if declared is not None else f"went past {limit:,} bytes"
            text = (f"the reply of {url} {what}; a reply may hold at most {limit:,} bytes (1 MiB + {BYTES_PER_TOKEN} "
                    "bytes per requested token): the rest was not read")
        super().__init__(text)
        self.limit = limit


@contextmanager
def limit_replies(limit: int):
    """Replies read inside the block are bounded by ``limit`` bytes."""
    token = _LIMIT.set(int(limit))
    try:
        yield
    finally:
        _LIMIT.reset(token)


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner, limit: int, url, encoding: str):
        self.inner, self.limit, self.url = inner, limit, url
        # gzip and zlib/deflate decoded here (wbits 47: either header), so the bound is on the decoded bytes
        self.decoder = zlib.decompressobj(47) if encoding in ("gzip", "deflate", "x-gzip") else None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        n = 0
        async for chunk in self.inner:
            if self.decoder is not None:  # at most limit + 1 bytes out of any input chunk
                chunk = self.decoder.decompress(chunk, self.limit + 1 - n)
                if self.decoder.unconsumed_tail:
                    raise ReplyTooLarge(self.url, self.limit)
            n += len(chunk)
            if n > self.limit:
                raise ReplyTooLarge(self.url, self.limit)
            if chunk:
                yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


async def cap_response(response: httpx.Response) -> None:
    """httpx response hook: bound the body about to be read (module docstring)."""
    limit = _LIMIT.get()
    url = response.request.url
    declared = response.headers.get("content-length", "")
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if declared.isdigit() and int(declared) > limit and encoding == "identity":
        await response.aclose()
        raise ReplyTooLarge(url, limit, declared=int(declared))
    if encoding not in ("identity", "", "gzip", "deflate", "x-gzip"):
        await response.aclose()
        raise ReplyTooLarge(url, limit, encoding=encoding)
    response.stream = _CappedStream(response.stream, limit, url, encoding)
    if "content-encoding" in response.headers:
        del response.headers["content-encoding"]  # decoded by _CappedStream: httpx must not decode it again
