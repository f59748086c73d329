"""Runs in the AReaL 1.0.4 venv: AReaL's own ``AsyncRewardWrapper`` (its process pool, 15 s
timeout, 3 retries) calls the rewardsvc ``reward_fn`` as its RLVR workflow does.

argv: URL RUBRIC OUT.json. The reward API module is loaded from its file (the package's
__init__ imports torch and the launchers; the wrapper needs neither). First batch: right,
wrong and no-reference answers; then ``OUTAGE?``: the test makes the judges unreachable while
a second batch is scored. For each call: the reward and its Python type (AReaL's wrapper
answers a timed-out last attempt with its own ``int`` 0; the adapter only returns floats), or
the exception AReaL's workflow would meet (its WorkflowExecutor then rejects the rollout), and
the seconds it took.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import time
import types
import uuid
from pathlib import Path
from typing import Any

from rewardsvc_client.areal import make_reward_fn

_spec = importlib.util.find_spec("areal")
assert _spec is not None and _spec.submodule_search_locations
_root = Path(next(iter(_spec.submodule_search_locations)))
for _name, _path in (
    ("areal", _root),
    ("areal.api", _root / "api"),
    ("areal.utils", _root / "utils"),
):
    _module = types.ModuleType(_name)
    _module.__path__ = [str(_path)]
    sys.modules[_name] = _module

from areal.api.reward_api import AsyncRewardWrapper  # noqa: E402

PROMPT = "<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n"


async def score(wrapper: Any, completion: str, answer: str | None) -> dict[str, Any]:
    started = time.monotonic()
    data = {"answer": answer} if answer is not None else {}
    try:
        reward = await wrapper(PROMPT, completion, [1, 2], [3], **data)
    except Exception as exc:  # what RLVRWorkflow.arun_episode would raise
        return {"completion": completion, "error": repr(exc), "seconds": time.monotonic() - started}
    return {"completion": completion, "reward": reward, "type": type(reward).__name__,
            "seconds": time.monotonic() - started}  # fmt: skip


async def main() -> None:
    url, rubric, out = sys.argv[1:4]
    wrapper = AsyncRewardWrapper(make_reward_fn(url, rubric, run="areal-test"), max_workers=4)
    before = await asyncio.gather(
        score(wrapper, "5", "5"), score(wrapper, "It is 7.", "5"), score(wrapper, "5", None)
    )
    print("OUTAGE?", flush=True)
    sys.stdin.readline()
    nonce = uuid.uuid4().hex[:6]  # fresh answers: a persistent service cache would skip the judges
    during = await asyncio.gather(
        score(wrapper, f"Five. (#{nonce})", "5"), score(wrapper, f"It is 9. (#{nonce})", "5")
    )
    with open(out, "w") as f:
        json.dump({"before": before, "during": during, "timeout": wrapper.timeout_seconds,
                   "retries": wrapper.max_retries}, f)  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
