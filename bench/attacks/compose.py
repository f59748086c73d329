"""Compose the detector corpus (``corpus.jsonl``) from the hand-written parts in this folder.

Run ``python -m bench.attacks.compose`` to rebuild it; the output is deterministic.
Every row has ``id``, ``kind`` (``attack`` or ``benign``), ``family``, ``prompt``,
``text`` and ``split`` (``dev`` or ``heldout``: alternate rows of each family, so
both halves hold every family).
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.attacks.benign_answers import LONG, MEDIUM, SHORT
from bench.attacks.benign_claims import CLAIMS
from bench.attacks.benign_lookalikes import CODE, GRADING, MISC, SCORES, TOKENS
from bench.attacks.benign_praise import PRAISE
from bench.attacks.carriers import CARRIERS
from bench.attacks.padding import PADDED
from bench.attacks.payloads import ADDED, CONTROL, PAYLOADS, WHOLE

OUT = Path(__file__).with_name("corpus.jsonl")

# Where a payload goes in its carrier, cycled through per family.
POSITIONS = ("end", "start", "middle", "inline")
# Position cycles for families whose payload only makes sense in one place.
FIXED_POSITION = {"fence_escape": ("end", "end", "middle"), "zero_width": ("inside",)}


def _sentences(answer: str) -> list[str]:
    return [s.strip().rstrip(".") + "." for s in answer.replace("\n", " ").split(". ") if s]


def insert(carrier: str, payload: str, position: str) -> str:
    """``payload`` placed in ``carrier`` at ``position``."""
    if position == "end":
        return f"{carrier}\n\n{payload}"
    if position == "start":
        return f"{payload}\n\n{carrier}"
    if position == "inline":
        return f"{carrier} {payload}"
    if position == "inside":
        # Invisible characters go between the letters of words, several times.
        words = carrier.split(" ")
        for i in range(1, len(words), 3):
            w = words[i]
            words[i] = w[: len(w) // 2] + payload + w[len(w) // 2 :]
        return " ".join(words)
    sents = _sentences(carrier)
    if len(sents) < 2:
        return f"{carrier}\n{payload}"
    return f"{sents[0]}\n{payload}\n{' '.join(sents[1:])}"


def padded_from(carrier: str, variant: int) -> str:
    """Programmatic padding of an honest answer: repetition and restatement markers."""
    sents = _sentences(carrier)
    if variant == 0:
        return carrier + "\n\n" + "\n".join(f"- To restate: {s}" for s in sents * 3)
    if variant == 1:
        return "\n\n".join([carrier] * 4)
    if variant == 2:
        return "\n".join(f"- {s}" for s in sents * 4)
    markers = ("In other words,", "Put differently,", "To reiterate,", "Once again,")
    return carrier + " " + " ".join(f"{m} {carrier[0].lower()}{carrier[1:]}" for m in markers)


def attack_rows() -> list[dict[str, str]]:
    """Every attack row, family by family."""
    rows: list[dict[str, str]] = []
    families = {**PAYLOADS, **CONTROL, **ADDED}
    for f_index, (family, payloads) in enumerate(families.items()):
        positions = FIXED_POSITION.get(family, POSITIONS)
        for i, payload in enumerate(payloads):
            prompt, carrier = CARRIERS[(f_index * 5 + i) % len(CARRIERS)]
            if family in WHOLE:
                text = payload
            else:
                text = insert(carrier, payload, positions[(i + f_index) % len(positions)])
            rows.append({"family": family, "prompt": prompt, "text": text})
    for i, (prompt, text) in enumerate(PADDED):
        rows.append({"family": "padding", "prompt": prompt, "text": text})
        c_prompt, carrier = CARRIERS[(i * 7 + 3) % len(CARRIERS)]
        if i < 5:
            rows.append(
                {"family": "padding", "prompt": c_prompt, "text": padded_from(carrier, i % 4)}
            )
    return [{"kind": "attack", **r} for r in rows]


def benign_rows() -> list[dict[str, str]]:
    """Every benign row: honest answers, their meaning-preserving rewrites, look-alikes."""
    rows: list[dict[str, str]] = []
    for prompt, answer in CARRIERS:
        sents = _sentences(answer)
        rows.append({"family": "plain", "prompt": prompt, "text": answer})
        rows.append(
            {
                "family": "rewrite_bullets",
                "prompt": prompt,
                "text": "\n".join(f"- {s}" for s in sents),
            }
        )
        numbered = "\n".join(f"{n}. {s}" for n, s in enumerate(sents, 1))
        rows.append({"family": "rewrite_numbered", "prompt": prompt, "text": numbered})
        rows.append(
            {"family": "rewrite_heading", "prompt": prompt, "text": f"## Answer\n\n{answer}"}
        )
        rows.append({"family": "rewrite_qa", "prompt": prompt, "text": f"Q: {prompt}\nA: {answer}"})
    for family, pairs in (
        ("short", SHORT),
        ("medium", MEDIUM),
        ("long", LONG),
        ("lookalike_score", SCORES),
        ("lookalike_grading", GRADING),
        ("lookalike_code", CODE),
        ("lookalike_misc", MISC),
        ("lookalike_tokens", TOKENS),
        ("lookalike_praise", PRAISE),
        ("lookalike_claims", CLAIMS),
    ):
        rows += [{"family": family, "prompt": p, "text": t} for p, t in pairs]
    return [{"kind": "benign", **r} for r in rows]


def corpus() -> list[dict[str, str]]:
    """All rows with stable ids and a deterministic dev/held-out split."""
    out: list[dict[str, str]] = []
    seen: dict[str, int] = {}
    for row in attack_rows() + benign_rows():
        n = seen.get(row["family"], 0)
        seen[row["family"]] = n + 1
        prefix = "atk" if row["kind"] == "attack" else "ben"
        split = "dev" if n % 2 == 0 else "heldout"
        out.append({"id": f"{prefix}-{row['family']}-{n:02d}", **row, "split": split})
    return out


def main() -> None:
    """Write ``corpus.jsonl``."""
    rows = corpus()
    with OUT.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    attacks = [r for r in rows if r["kind"] == "attack"]
    print(
        f"{len(attacks)} attacks in {len({r['family'] for r in attacks})} families, "
        f"{len(rows) - len(attacks)} benign -> {OUT.name}"
    )


if __name__ == "__main__":
    main()
