"""Show that an image reaches the CPU VLM judge ``smolvlm`` and what it costs in tokens.

Needs the `openai` and `Pillow` packages (the cpu-judge venv has both) and the judge up
(`cpujudge.sh start smolvlm && cpujudge.sh wait smolvlm`):

    "$REWARDSVC_CACHE/cpu-judge/venv/bin/python" deploy/cpu-judge/probe_vlm.py

The same chat request is sent without and with one data: URL PNG; the judge's
``prompt_tokens`` must grow by the image's token count, and the single-token answer must
carry Yes/No logprobs either way. An http(s) image URL must be refused by vLLM itself
(cpujudge.sh lists only an unresolvable media domain).
"""

from __future__ import annotations

import base64
import io
import json
import os

from openai import BadRequestError, OpenAI
from PIL import Image, ImageDraw

BASE = f"http://127.0.0.1:{os.environ.get('REWARDSVC_SMOLVLM_PORT', '8108')}/v1"
MODEL = "smolvlm-135m-untrained"
QUESTION = "Does the picture show a red square? Answer Yes or No."


def png_data_url(colour: str = "red", size: tuple[int, int] = (320, 240)) -> str:
    """A small PNG (a square on white) as a base64 data: URL."""
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).rectangle((40, 40, 200, 200), fill=colour)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def ask(client: OpenAI, image_url: str | None) -> dict[str, object]:
    """One single-token logprob call; the prompt tokens and the Yes/No logprobs it returned."""
    parts: list[dict[str, object]] = []
    if image_url is not None:
        parts.append({"type": "image_url", "image_url": {"url": image_url}})
    parts.append({"type": "text", "text": QUESTION})
    reply = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": parts}],  # type: ignore[misc, list-item]
        max_tokens=1,
        temperature=0,
        logprobs=True,
        top_logprobs=20,
    )
    top = reply.choices[0].logprobs.content[0].top_logprobs  # type: ignore[union-attr]
    yes_no = {t.token: round(t.logprob, 3) for t in top if t.token.strip() in ("Yes", "No")}
    usage = reply.usage
    assert usage is not None
    return {"prompt_tokens": usage.prompt_tokens, "yes_no_logprobs": yes_no}


def main() -> None:
    client = OpenAI(base_url=BASE, api_key="none", timeout=120)
    without = ask(client, None)
    with_image = ask(client, png_data_url())
    grown = int(with_image["prompt_tokens"]) - int(without["prompt_tokens"])  # type: ignore[call-overload]
    print(json.dumps({"without": without, "with_image": with_image, "image_tokens": grown}))
    try:
        ask(client, "https://example.com/cat.png")
        print("http image URL: ACCEPTED (vLLM would fetch it)")
    except BadRequestError as refused:
        print(f"http image URL refused by vLLM: {refused.status_code}")


if __name__ == "__main__":
    main()
