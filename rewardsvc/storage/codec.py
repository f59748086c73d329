"""The verdict cache's byte encoding: one compact form for memory, SQLite and Redis.

A cached verdict is kept as these bytes rather than as a ``Verdict`` object: a few dozen
bytes where the object with its dicts and floats takes most of a kilobyte, which is what
lets a 100,000-verdict cache stay within a quarter of a kilobyte per verdict. The same bytes
are what replicas share through Redis, so the first byte is a format tag: a reader that
does not know a tag treats the entry as a miss and the verdict is asked again.

Format 1 (successful verdicts, the common case): a fixed header with score, variance,
latency and token counts, then each probability as a length-prefixed UTF-8 token and a
float64, then the raw judge output as UTF-8. Anything format 1 cannot hold (a token over
255 bytes, more than 254 probabilities, a reasoning judge's reasoning) is written as
format 2, compact JSON.

Format 2 keeps every field. Format 1 keeps what a cache hit is read for; it leaves out the
spend of the call that made the verdict (``cached_tokens``, ``cost``, ``calls``), which a
hit does not repeat: a hit is counted as a hit, never as a call
(``rewardsvc.core.results.Usage.called``).
"""

from __future__ import annotations

import dataclasses
import json
import struct

from rewardsvc.core.verdict import Verdict

_BINARY = 1
_JSON = 2
_HEADER = struct.Struct("<BBdddII")
_PROB = struct.Struct("<d")
_NO_PROBS = 255
_TEXT_ERRORS = "surrogatepass"  # judge output decoded from JSON escapes may hold lone surrogates


def encode(verdict: Verdict) -> bytes:
    """The bytes of a verdict: ``decode(encode(v)) == v`` but for format 1's spend fields
    (the module docstring)."""
    probs = verdict.probs
    if (
        verdict.score is None
        or verdict.error is not None
        or verdict.error_kind is not None
        or verdict.reasoning  # a reasoning judge's verdict: format 2 keeps its reasoning
        or verdict.reasoning_tokens
        or (probs is not None and len(probs) >= _NO_PROBS)
        or not 0 <= verdict.prompt_tokens < 2**32
        or not 0 <= verdict.completion_tokens < 2**32
    ):
        return _encode_json(verdict)
    parts = [
        _HEADER.pack(
            _BINARY,
            _NO_PROBS if probs is None else len(probs),
            verdict.score,
            verdict.variance,
            verdict.latency_ms,
            verdict.prompt_tokens,
            verdict.completion_tokens,
        )
    ]
    for token, p in (probs or {}).items():
        name = token.encode("utf-8", _TEXT_ERRORS)
        if len(name) > 255:
            return _encode_json(verdict)
        parts += [bytes((len(name),)), name, _PROB.pack(p)]
    parts.append(verdict.raw.encode("utf-8", _TEXT_ERRORS))
    return b"".join(parts)


def decode(data: bytes) -> Verdict | None:
    """The verdict in ``data``, or None when the bytes are damaged or of an unknown format."""
    try:
        if data[:1] == bytes((_BINARY,)):
            return _decode_binary(data)
        if data[:1] == bytes((_JSON,)):
            fields = json.loads(data[1:])
            known = {f.name for f in dataclasses.fields(Verdict)}
            return Verdict(**{k: v for k, v in fields.items() if k in known})
    except (ValueError, TypeError, struct.error, IndexError, AttributeError):
        return None
    return None


def _encode_json(verdict: Verdict) -> bytes:
    text = json.dumps(dataclasses.asdict(verdict), separators=(",", ":"))
    return bytes((_JSON,)) + text.encode()


def _decode_binary(data: bytes) -> Verdict:
    _, count, score, variance, latency, prompt, completion = _HEADER.unpack_from(data)
    at = _HEADER.size
    probs: dict[str, float] | None = None
    if count != _NO_PROBS:
        probs = {}
        for _ in range(count):
            size = data[at]
            token = data[at + 1 : at + 1 + size].decode("utf-8", _TEXT_ERRORS)
            at += 1 + size
            (probs[token],) = _PROB.unpack_from(data, at)
            at += _PROB.size
    return Verdict(
        score=score,
        variance=variance,
        probs=probs,
        raw=data[at:].decode("utf-8", _TEXT_ERRORS),
        prompt_tokens=prompt,
        completion_tokens=completion,
        latency_ms=latency,
    )
