"""The prompt tokens a judge must compute even with a perfect prefix cache.

vLLM reuses a prompt's prefix in whole KV blocks: a call computes its tokens past the
longest prefix, rounded down to a block, that it shares with any prompt the server saw
before. Replaying a contender's prompts in order through that rule gives the least
prefill it can cost on that server, to set beside the measured figure (``vllm:prefix_cache
queries - hits``): equal means the server recomputed nothing it could have reused (e.g.
for calls of one item that arrived together), and the ideal of each contender says what
its prompt layout costs, whatever the engine does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import httpx

Messages = list[dict[str, str]]

_BLOCK = re.compile(r'^vllm:cache_config_info\{[^}]*\bblock_size="(\d+)"', re.M)


def block_size(url: str) -> int:
    """The KV block size of the vLLM server at ``url`` (its ``/v1`` base), from ``/metrics``."""
    text = httpx.get(url.rstrip("/").removesuffix("/v1") + "/metrics", timeout=10).text
    match = _BLOCK.search(text)
    if match is None:
        raise RuntimeError(f"{url} reports no block_size in vllm:cache_config_info")
    return int(match.group(1))


def tokenize(url: str, model: str, messages: Messages) -> list[int]:
    """The prompt token ids of a chat call, as the server's chat template renders it."""
    reply = httpx.post(
        url.rstrip("/").removesuffix("/v1") + "/tokenize",
        json={"model": model, "messages": messages, "add_generation_prompt": True},
        timeout=30,
    )
    reply.raise_for_status()
    return list(reply.json()["tokens"])


def _shared(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def least_prefill(warm: Iterable[Sequence[int]], run: Iterable[Sequence[int]], block: int) -> int:
    """Tokens the ``run`` prompts compute, in order, after the ``warm`` ones, with every
    earlier prompt's full blocks cached (no eviction, no recomputation)."""
    seen = [list(p) for p in warm]
    total = 0
    for prompt in run:
        reused = max((_shared(s, prompt) for s in seen), default=0) // block * block
        # vLLM always computes the last token, for the logits of the first output.
        total += len(prompt) - min(reused, len(prompt) - 1)
        seen.append(list(prompt))
    return total
