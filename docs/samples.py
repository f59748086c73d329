"""Regenerate the sample outputs of the README and the first-reward tutorial.

Each sample is a JSON block between ``<!-- sample-output: NAME -->`` and
``<!-- /sample-output -->``; its request is the ``curl`` block just before it on the page
(the body after ``-d '``), so the page's request and its shown answer cannot drift apart.
The script sends each request to a running service and rewrites the block, trimmed the
way the pages show it (the first result in full with each judge's first criterion, the
others by their headline fields, and the usage). Each request is sent with
``options.use_cache: false``, so a sample shows what a fresh service answers:

    .venv/bin/python docs/samples.py                  # against `make serve` on :8000
    .venv/bin/python docs/samples.py --url http://127.0.0.1:8210   # another service
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "docs" / "tutorial" / "first-reward.md"]
SAMPLE = re.compile(
    r"(?P<open><!-- sample-output: (?P<name>[\w-]+) -->\n```json\n)(?P<body>.*?)"
    r"(?P<close>```\n<!-- /sample-output -->)",
    re.S,
)
REQUEST = re.compile(r"curl -s localhost:8000(?P<path>/\S+) .*?-d '(?P<body>.*?)'\n```", re.S)
HEADLINE = ("id", "reward", "status", "uncertainty", "flags", "cached")
MORE = {"…": "…"}


def rounded(value: Any) -> Any:
    """Floats to 3 decimals (latency to 1), throughout: the pages show no more."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: round(v, 1) if k == "latency_ms" else rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def trimmed(response: dict[str, Any]) -> str:
    """The response as the pages show it: one line per part, the rest elided with "…"."""
    response = rounded(response)
    results = response["results"]
    first = {k: results[0][k] for k in HEADLINE if k in results[0]}
    first["judges"] = {
        name: {"score": judge.get("score"), "criteria": _first_criterion(judge)}
        for name, judge in (results[0].get("judges") or {}).items()
    }
    others = [
        {**{k: r[k] for k in (*HEADLINE[:3], "flags") if k in r}, **MORE} for r in results[1:]
    ]
    usage_keys = ("judge_calls", "cache_hits", "prompt_tokens", "completion_tokens", "latency_ms")
    usage = {k: response["usage"][k] for k in usage_keys if k in response["usage"]}
    judges = first.pop("judges")
    head = json.dumps(first, ensure_ascii=False)[:-1]
    judge_lines = ",\n                         ".join(
        f"{json.dumps(name)}: {json.dumps(judge, ensure_ascii=False)}"
        for name, judge in judges.items()
    )
    lines = [
        f'{{"rubric": {json.dumps(response["rubric"])},',
        f' "results": [{head},\n              "judges": {{{judge_lines}}}}}'
        + "".join(f",\n             {json.dumps(o, ensure_ascii=False)}" for o in others)
        + "],",
        f' "usage": {json.dumps(usage)}}}',
    ]
    return "\n".join(lines) + "\n"


def _first_criterion(judge: dict[str, Any]) -> dict[str, Any]:
    criteria = judge.get("criteria") or {}
    if not criteria:
        return {}
    cid, value = next(iter(criteria.items()))
    shown = {cid: {k: value[k] for k in ("score", "p") if k in value}}
    return {**shown, **MORE} if len(criteria) > 1 else shown


def regenerate(page: Path, client: httpx.Client) -> tuple[str, str]:
    """The page's text before and after its samples are regenerated."""
    text = page.read_text(encoding="utf-8")
    pieces, last = [], 0
    for sample in SAMPLE.finditer(text):
        requests = list(REQUEST.finditer(text, 0, sample.start()))
        if not requests:
            raise SystemExit(f"{page}: sample {sample['name']} has no curl request before it")
        request = requests[-1]
        body = json.loads(request["body"])
        # What a first request on a fresh service answers, whatever this one has cached.
        body.setdefault("options", {})["use_cache"] = False
        answer = client.post(request["path"], json=body, timeout=300)
        answer.raise_for_status()
        pieces += [text[last : sample.start("body")], trimmed(answer.json())]
        last = sample.end("body")
    return text, "".join(pieces) + text[last:]


def main() -> int:
    """Rewrite every sample of the pages from the service's answers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="a running rewardsvc")
    args = parser.parse_args()
    rewritten = []
    with httpx.Client(base_url=args.url) as client:
        for page in PAGES:
            before, after = regenerate(page, client)
            if before != after:
                rewritten.append(page.relative_to(ROOT).as_posix())
                page.write_text(after, encoding="utf-8")
    print(f"samples rewritten: {', '.join(rewritten) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
