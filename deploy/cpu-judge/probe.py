"""Show what the two local CPU judges return for the request shapes rewardsvc uses.

Needs the `openai` package (the cpu-judge venv has it) and both servers up
(`cpujudge.sh start && cpujudge.sh wait`):

    "$REWARDSVC_CACHE/cpu-judge/venv/bin/python" deploy/cpu-judge/probe.py [--bench N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from openai import OpenAI

SMOL = f"http://127.0.0.1:{os.environ.get('REWARDSVC_SMOLLM2_PORT', '8101')}/v1"
GEMMA = f"http://127.0.0.1:{os.environ.get('REWARDSVC_GEMMA_PORT', '8102')}/v1"
smol = OpenAI(base_url=SMOL, api_key="none", timeout=120)
gemma = OpenAI(base_url=GEMMA, api_key="none", timeout=120)

QUESTION = "Is the answer correct? Question: What is 2+2? Answer: 4. Reply yes or no."
GEMMA_PROMPT = "Question: What is 2+2?\nAnswer: 4\nIs the answer correct (yes or no)?\nVerdict:"
SCHEMA = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": 80},
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["reason", "score"],
    "additionalProperties": False,
}


def show(title: str, value: object) -> None:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    print(f"--- {title}\n{text}")


def chat_choice(choices: list[str]) -> None:
    r = smol.chat.completions.create(
        model="smollm2-135m-instruct",
        messages=[{"role": "user", "content": QUESTION}],
        max_tokens=1,
        temperature=0,
        logprobs=True,
        top_logprobs=20,
        extra_body={"structured_outputs": {"choice": choices}},
    )
    c = r.choices[0]
    top = [(t.token, round(t.logprob, 3)) for t in c.logprobs.content[0].top_logprobs]
    show(
        f"smollm2 chat choice={choices}",
        {
            "content": c.message.content,
            "finish_reason": c.finish_reason,
            "completion_tokens": r.usage.completion_tokens,
            "prompt_tokens": r.usage.prompt_tokens,
            "n_top": len(top),
            "top_logprobs": top,
        },
    )


def chat_no_constraint() -> None:
    r = smol.chat.completions.create(
        model="smollm2-135m-instruct",
        messages=[{"role": "user", "content": QUESTION}],
        max_tokens=1,
        temperature=0,
        logprobs=True,
        top_logprobs=20,
    )
    top = [(t.token, round(t.logprob, 3)) for t in r.choices[0].logprobs.content[0].top_logprobs]
    show("smollm2 chat, no constraint", {"n_top": len(top), "top_logprobs": top[:10]})


def completion_choice(choices: list[str] | None, ids: bool = False) -> None:
    extra: dict[str, object] = {"structured_outputs": {"choice": choices}} if choices else {}
    if ids:  # keys "token_id:N": tokens with the same text no longer collide in the dict
        extra["return_tokens_as_token_ids"] = True
    r = gemma.completions.create(
        model="gemma3-270m",
        prompt=GEMMA_PROMPT,
        max_tokens=1,
        temperature=0,
        logprobs=20,
        extra_body=extra or None,
    )
    c = r.choices[0]
    lp = c.logprobs
    top = lp.top_logprobs[0] if lp and lp.top_logprobs else None
    show(
        f"gemma completion choice={choices}{' return_tokens_as_token_ids' if ids else ''}",
        {
            "text": c.text,
            "finish_reason": c.finish_reason,
            "completion_tokens": r.usage.completion_tokens,
            "prompt_tokens": r.usage.prompt_tokens,
            "tokens": lp.tokens,
            "token_logprobs": lp.token_logprobs,
            "top_logprobs_type": f"{type(lp.top_logprobs).__name__}[{type(top).__name__}]",
            "n_top": len(top or {}),
            "top_logprobs[0]": {k: round(v, 3) for k, v in (top or {}).items()},
        },
    )


def json_schema() -> None:
    rf = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA}}
    r = smol.chat.completions.create(
        model="smollm2-135m-instruct",
        messages=[
            {"role": "user", "content": QUESTION + " Give a reason and a score 1-5 as JSON."}
        ],
        max_tokens=120,
        temperature=0,
        response_format=rf,
    )
    text = r.choices[0].message.content
    show(
        "smollm2 chat response_format json_schema",
        {"content": text, "valid": _valid(text), "finish": r.choices[0].finish_reason},
    )
    for name, extra in [
        ("response_format", {"response_format": rf}),
        ("structured_outputs.json", {"structured_outputs": {"json": SCHEMA}}),
    ]:
        try:
            g = gemma.completions.create(
                model="gemma3-270m",
                prompt=GEMMA_PROMPT + " Answer as JSON.\n",
                max_tokens=120,
                temperature=0,
                extra_body=extra,
            )
            text = g.choices[0].text
            show(
                f"gemma completion {name}",
                {"text": text, "valid": _valid(text), "finish": g.choices[0].finish_reason},
            )
        except Exception as e:
            show(f"gemma completion {name}", f"ERROR {e}")


def _valid(text: str) -> bool:
    try:
        obj = json.loads(text)
    except ValueError:
        return False
    return isinstance(obj, dict) and set(obj) == {"reason", "score"} and 1 <= obj["score"] <= 5


def sampling() -> None:
    r = smol.chat.completions.create(
        model="smollm2-135m-instruct",
        messages=[{"role": "user", "content": QUESTION}],
        n=4,
        temperature=1.0,
        max_tokens=8,
        seed=None,
    )
    show(
        "smollm2 chat n=4 t=1",
        [c.message.content for c in r.choices] + [f"completion_tokens={r.usage.completion_tokens}"],
    )
    g = gemma.completions.create(
        model="gemma3-270m", prompt=GEMMA_PROMPT, n=4, temperature=1.0, max_tokens=8
    )
    show(
        "gemma completion n=4 t=1",
        [c.text for c in g.choices] + [f"completion_tokens={g.usage.completion_tokens}"],
    )


def metrics() -> None:
    for name, base in [("smollm2", SMOL), ("gemma", GEMMA)]:
        body = (
            urllib.request.urlopen(base.removesuffix("/v1") + "/metrics", timeout=10)
            .read()
            .decode()
        )
        wanted = r"vllm:(prefix_cache_\w+|num_requests_\w+|prompt_tokens_total|kv_cache_usage_perc)"
        lines = [line for line in body.splitlines() if re.match(wanted, line)]
        show(f"{name} /metrics (prefix cache and load)", "\n".join(lines))


def bench(n: int, workers: int) -> None:
    prompts = [
        f"Item {i}: the answer to 2+{i} is {i + 2}. Is it correct? Reply yes or no."
        for i in range(n)
    ]

    def smol_call(p: str) -> None:
        smol.chat.completions.create(
            model="smollm2-135m-instruct",
            messages=[{"role": "user", "content": p}],
            max_tokens=1,
            temperature=0,
            logprobs=True,
            top_logprobs=5,
            extra_body={"structured_outputs": {"choice": ["yes", "no"]}},
        )

    def gemma_call(p: str) -> None:
        gemma.completions.create(
            model="gemma3-270m",
            prompt=p + "\nVerdict:",
            max_tokens=1,
            temperature=0,
            logprobs=5,
            extra_body={"structured_outputs": {"choice": ["yes", "no"]}},
        )

    for name, fn in [("smollm2 chat", smol_call), ("gemma completion", gemma_call)]:
        fn(prompts[0])
        t0 = time.monotonic()
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(fn, prompts))
        dt = time.monotonic() - t0
        print(
            f"--- bench {name}: {n} single-token calls, {workers} concurrent: {n / dt:.1f} calls/s"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", type=int, default=0, help="also time N single-token calls per judge")
    ap.add_argument("--workers", type=int, default=8)
    args = ap.parse_args()
    chat_choice(["yes", "no"])
    chat_choice(["1", "2", "3", "4", "5"])
    chat_no_constraint()
    completion_choice(None)
    completion_choice(["yes", "no"])
    completion_choice(["1", "2", "3", "4", "5"])
    completion_choice(["1", "2", "3", "4", "5"], ids=True)
    json_schema()
    sampling()
    metrics()
    if args.bench:
        bench(args.bench, args.workers)


if __name__ == "__main__":
    main()
