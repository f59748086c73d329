"""Prompt tokens and latency per item with and without an image, on the CPU VLM judge.

``smolvlm`` (cpujudge.sh's optional judge: SmolLM2 behind an untrained Idefics3 vision
tower, deploy/cpu-judge/vlm.py) gets the same single-token Yes/No call for each item in
four variants: text only, and with one PNG data: URL of 64x48, 320x240 or 1024x768 pixels.
Each item's question and each image are the item's own (a tag in the text, one pixel in
the image), so neither vLLM's prefix cache nor its multimodal cache holds them: every call
pays the image's decode, resize and encoding. Calls go one at a time (latency, not
throughput); each variant's order rotates between items.

    .venv/bin/python -m bench.multimodal [--items 16] [--routes direct rewardsvc] [--out DIR]

Needs ``deploy/cpu-judge/cpujudge.sh start smolvlm``. ``--routes`` picks how an item reaches
the judge (``ROUTES``): ``direct`` is vLLM's chat API; ``rewardsvc`` starts ``rewardsvc
serve`` (a pool of smolvlm with ``capabilities.vision``, a one-criterion rubric with
``media: [image]``) and posts each item to ``/v1/rewards``, the image as a content part of
its prompt: its prompt tokens are the service's ``usage.prompt_tokens`` (the rubric's judge
prompt, longer than the bare question), its time the whole request's.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import io
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from PIL import Image

from bench.harness import rewardsvc_service
from bench.outputs import add_out_argument, write_results
from rewardsvc.core.rubric import Rubric

VLM_URL = "http://127.0.0.1:8108/v1/chat/completions"
MODEL = "smolvlm-135m-untrained"
SIZES: dict[str, tuple[int, int] | None] = {
    "text only": None,
    "64x48 PNG": (64, 48),
    "320x240 PNG": (320, 240),
    "1024x768 PNG": (1024, 768),
}


@dataclass(frozen=True)
class Item:
    """One bench item: a question, and the image's data: URL (None: text only)."""

    question: str
    image_url: str | None

    @property
    def image_bytes(self) -> int:
        """The PNG's size (before base64)."""
        return 0 if self.image_url is None else len(base64.b64decode(self.image_url.split(",")[1]))


@dataclass(frozen=True)
class Measured:
    """What one call cost: the judge's prompt tokens and the wall time of the call."""

    prompt_tokens: int
    seconds: float


def png(size: tuple[int, int], seed: int) -> str:
    """A red square on white with one pixel set by ``seed``, as a PNG data: URL."""
    image = Image.new("RGB", size, "white")
    image.paste((255, 0, 0), (size[0] // 8, size[1] // 8, size[0] // 2, size[1] // 2))
    image.putpixel((seed % size[0], (seed // size[0]) % size[1]), (0, 0, seed % 256))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def chat_body(question: str, image_urls: Sequence[str] = ()) -> dict[str, Any]:
    """A single-token Yes/No chat call to the VLM judge (top 20 logprobs): one user message
    of the images' ``image_url`` parts, then the question."""
    parts: list[dict[str, Any]] = [
        {"type": "image_url", "image_url": {"url": url}} for url in image_urls
    ]
    parts.append({"type": "text", "text": question})
    return {
        "model": MODEL,
        "messages": [{"role": "user", "content": parts}],
        "max_tokens": 1,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": 20,
    }


def direct(client: httpx.Client, item: Item) -> Measured:
    """The item as one chat call to the VLM judge."""
    images = () if item.image_url is None else (item.image_url,)
    start = time.perf_counter()
    reply = client.post(VLM_URL, json=chat_body(item.question, images))
    seconds = time.perf_counter() - start
    reply.raise_for_status()
    return Measured(reply.json()["usage"]["prompt_tokens"], seconds)


Call = Callable[[httpx.Client, Item], Measured]
VLM_POOL: dict[str, Any] = {
    "judges": {
        "seer": {
            "model": MODEL,
            "base_urls": [VLM_URL.removesuffix("/chat/completions")],
            "api": "chat",
            "method": "logprob",
            "timeout_s": 120,
            "max_context_tokens": 2048,
            "capabilities": {"vision": True, "image_tokens": 67},
        }
    }
}
VLM_RUBRIC = Rubric.model_validate(
    {
        "id": "picture",
        "description": "Answers about a picture.",
        "criteria": [{"id": "correct", "text": "The answer is right about the picture."}],
        "judges": ["seer"],
        "media": ["image"],
    }
)


@contextlib.contextmanager
def direct_route() -> Iterator[Call]:
    """Each item as one chat call to the VLM judge."""
    yield direct


@contextlib.contextmanager
def rewardsvc_route() -> Iterator[Call]:
    """Each item through a started ``rewardsvc serve`` (the verdict cache never hits: every
    item is new)."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-multimodal-") as work,
        rewardsvc_service(Path(work), VLM_POOL, [VLM_RUBRIC]) as service,
    ):

        def call(client: httpx.Client, item: Item) -> Measured:
            parts: list[dict[str, Any]] = [{"type": "text", "text": item.question}]
            if item.image_url is not None:
                parts.append({"type": "image_url", "image_url": {"url": item.image_url}})
            one = {"prompt": [{"role": "user", "content": parts}], "completion": "Yes."}
            body = {"rubric": VLM_RUBRIC.id, "items": [one]}
            start = time.perf_counter()
            reply = client.post(f"{service.url}/v1/rewards", json=body)
            seconds = time.perf_counter() - start
            reply.raise_for_status()
            got = reply.json()
            if got["results"][0]["status"] != "ok" or got["usage"]["judge_calls"] != 1:
                raise RuntimeError(f"not one fresh judge call: {got}")
            return Measured(got["usage"]["prompt_tokens"], seconds)

        yield call


ROUTES: dict[str, Callable[[], contextlib.AbstractContextManager[Call]]] = {
    "direct": direct_route,
    "rewardsvc": rewardsvc_route,
}


def items(n: int, variant: str, seed: int) -> list[Item]:
    """``n`` items of one variant, each with its own question and (if any) its own image;
    the questions of every variant have the same number of tokens."""
    size = SIZES[variant]
    return [
        Item(
            f"[item {seed}.{k}] Does the picture show a red square? Answer Yes or No.",
            None if size is None else png(size, seed=100 * seed + k),
        )
        for k in range(n)
    ]


def run(n: int, route: str, salt: int = 0) -> dict[str, dict[str, float]]:
    """Every variant's mean prompt tokens, median and p90 latency, mean PNG bytes; ``salt``
    keeps one route's questions and images apart from another's (no cache holds them)."""
    got: dict[str, list[Measured]] = {v: [] for v in SIZES}
    sets = {v: items(n, v, 10 * salt + seed) for seed, v in enumerate(SIZES, start=1)}
    with ROUTES[route]() as call, httpx.Client(timeout=120) as client:
        call(client, items(1, "320x240 PNG", seed=10 * salt)[0])  # warm-up
        for k in range(n):
            order = list(SIZES)[k % len(SIZES) :] + list(SIZES)[: k % len(SIZES)]
            for variant in order:
                got[variant].append(call(client, sets[variant][k]))
    return {
        variant: {
            "prompt_tokens": statistics.mean(m.prompt_tokens for m in measured),
            "median_s": statistics.median(m.seconds for m in measured),
            "p90_s": statistics.quantiles([m.seconds for m in measured], n=10)[-1],
            "png_bytes": statistics.mean(i.image_bytes for i in sets[variant]),
        }
        for variant, measured in got.items()
    }


def report(routes: dict[str, dict[str, dict[str, float]]], n: int) -> str:
    """The Markdown table: each route's variants against its text only."""
    lines = [
        f"# Multimodal: one item with and without an image ({MODEL})",
        "",
        f"{n} items per variant and route, one call at a time, fresh question and image per "
        "call. `direct`: one chat call to vLLM; `rewardsvc`: one item to `/v1/rewards` of a "
        "started service (one judge call; the rubric's prompt, the whole request's time).",
        "",
        "| route | variant | PNG bytes | prompt tokens | + image tokens | median s | p90 s "
        "| + median s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for route, rows in routes.items():
        base = rows["text only"]
        for variant, row in rows.items():
            lines.append(
                f"| {route} | {variant} | {row['png_bytes']:.0f} | {row['prompt_tokens']:.0f} "
                f"| {row['prompt_tokens'] - base['prompt_tokens']:.0f} | {row['median_s']:.3f} "
                f"| {row['p90_s']:.3f} | {row['median_s'] - base['median_s']:+.3f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run the bench and write ``multimodal.json`` and ``multimodal.md`` to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--routes", nargs="+", choices=sorted(ROUTES), default=list(ROUTES))
    add_out_argument(parser)
    args = parser.parse_args()
    routes = {route: run(args.items, route, salt) for salt, route in enumerate(args.routes)}
    result = {"items": args.items, "model": MODEL, "routes": routes}
    write_results(Path(args.out), "multimodal", result, report(routes, args.items))


if __name__ == "__main__":
    main()
