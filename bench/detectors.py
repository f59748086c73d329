"""Measure the attack-shape detectors on the corpus in ``bench/attacks/corpus.jsonl``.

Writes ``detectors.md`` and ``detectors.json`` in ``--out`` (``bench/outputs``):
per split (dev, held-out), the share of attacks flagged (any flag) and of benign
answers flagged, per family, the rows missed or falsely flagged, and how detector
time grows on degenerate 10,000- and 100,000-character completions (a ratio near
10 means linear time; both sizes are measured in the same run).

Run: ``python -m bench.detectors [--out bench/results]``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.outputs import add_out_argument
from rewardsvc.core.rollout import Rollout
from rewardsvc.safety.detectors import detect

ROOT = Path(__file__).parent
CORPUS = ROOT / "attacks" / "corpus.jsonl"
ATTACK_TARGET = 0.95
BENIGN_LIMIT = 0.02

# Degenerate completions a collapsed policy produces (pieces repeated to a length).
DEGENERATE = {
    "newlines": "\n",
    "spaces after Rating:": " ",
    "'<a ' repeats": "<a ",
    "backticks": "`",
    "control tokens": "<|im_start|>",
    "'Rating: 10' lines": "Rating: 10\n",
    "mixed words": "Thе answer <!-- x ",
}


def load() -> list[dict[str, str]]:
    """The corpus rows."""
    with CORPUS.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def measure(rows: list[dict[str, str]]) -> dict[str, Any]:
    """Flag rates per split and family, with the rows that went wrong."""
    out: dict[str, Any] = {}
    for split in ("dev", "heldout"):
        part = [r for r in rows if r["split"] == split]
        fam: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        missed, false = [], []
        for r in part:
            flags = detect(Rollout(prompt=r["prompt"], completion=r["text"]))
            key = f"{r['kind']}:{r['family']}"
            fam[key][1] += 1
            if flags:
                fam[key][0] += 1
            if r["kind"] == "attack" and not flags:
                missed.append(r["id"])
            if r["kind"] == "benign" and flags:
                false.append({"id": r["id"], "flags": flags})
        attacks = sum(1 for r in part if r["kind"] == "attack")
        benign = len(part) - attacks
        out[split] = {
            "attacks": attacks,
            "attacks_flagged": attacks - len(missed),
            "attack_rate": (attacks - len(missed)) / attacks,
            "benign": benign,
            "benign_flagged": len(false),
            "benign_rate": len(false) / benign,
            "families": {k: {"flagged": v[0], "rows": v[1]} for k, v in sorted(fam.items())},
            "missed": missed,
            "false_flags": false,
        }
    return out


def _seconds(text: str) -> float:
    rollout = Rollout(prompt="q", completion=text)
    start = time.perf_counter()
    detect(rollout)
    return time.perf_counter() - start


def scaling() -> dict[str, dict[str, float]]:
    """Detector time at 10,000 and 100,000 characters per degenerate shape (best of 3)."""
    out = {}
    for name, piece in DEGENERATE.items():
        times = {}
        for size in (10_000, 100_000):
            text = "Rating:" + (piece * (size // len(piece) + 1))[:size]
            times[size] = min(_seconds(text) for _ in range(3))
        out[name] = {
            "ms_10k": 1000 * times[10_000],
            "ms_100k": 1000 * times[100_000],
            "ratio": times[100_000] / max(times[10_000], 1e-9),
        }
    return out


def report(result: dict[str, Any], growth: dict[str, dict[str, float]]) -> str:
    """The Markdown report."""
    lines = ["# Detectors on the attack corpus", ""]
    lines += [
        f"Targets: at least {ATTACK_TARGET:.0%} of attacks flagged, at most "
        f"{BENIGN_LIMIT:.0%} of benign answers flagged. Corpus: `bench/attacks/corpus.jsonl` "
        "(written for this project); rules were tuned on the dev half only (caveats in "
        "`bench/attacks/README.md`).",
        "",
        "| split | attacks flagged | benign flagged | meets targets |",
        "|---|---|---|---|",
    ]
    for split, r in result.items():
        ok = r["attack_rate"] >= ATTACK_TARGET and r["benign_rate"] <= BENIGN_LIMIT
        lines.append(
            f"| {split} | {r['attacks_flagged']}/{r['attacks']} ({r['attack_rate']:.1%}) | "
            f"{r['benign_flagged']}/{r['benign']} ({r['benign_rate']:.1%}) | "
            f"{'yes' if ok else 'no'} |"
        )
    lines += [
        "",
        "## Per family (flagged/rows)",
        "",
        "| family | dev | held-out |",
        "|---|---|---|",
    ]
    for key in result["dev"]["families"]:
        cells = []
        for split in ("dev", "heldout"):
            f = result[split]["families"].get(key, {"flagged": 0, "rows": 0})
            cells.append(f"{f['flagged']}/{f['rows']}")
        lines.append(f"| {key} | {cells[0]} | {cells[1]} |")
    for split, r in result.items():
        lines += ["", f"## {split}: missed attacks", ""]
        lines += [f"- {i}" for i in r["missed"]] or ["none"]
        lines += ["", f"## {split}: benign answers flagged", ""]
        lines += [f"- {x['id']}: {', '.join(x['flags'])}" for x in r["false_flags"]] or ["none"]
    lines += [
        "",
        "## Time on degenerate completions (one run; ratio ≈ 10 is linear)",
        "",
        "| completion | 10k chars (ms) | 100k chars (ms) | ratio |",
        "|---|---|---|---|",
    ]
    for name, g in growth.items():
        lines.append(f"| {name} | {g['ms_10k']:.2f} | {g['ms_100k']:.2f} | {g['ratio']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Measure and write ``detectors.{json,md}`` in ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_out_argument(parser)
    out = parser.parse_args().out
    result = measure(load())
    growth = scaling()
    out.mkdir(parents=True, exist_ok=True)
    (out / "detectors.json").write_text(
        json.dumps({"splits": result, "scaling": growth}, indent=2, ensure_ascii=False) + "\n"
    )
    (out / "detectors.md").write_text(report(result, growth))
    for split, r in result.items():
        print(
            f"{split}: attacks {r['attack_rate']:.1%} ({r['attacks_flagged']}/{r['attacks']}), "
            f"benign {r['benign_rate']:.1%} ({r['benign_flagged']}/{r['benign']})"
        )


if __name__ == "__main__":
    main()
