"""Runs in the OpenRLHF 0.11.2 venv: OpenRLHF's own remote-reward client functions
(``SingleTurnAgentExecutor._fetch_rewards_via_http`` and ``_fetch_rewards_via_func`` from
``openrlhf/utils/agent.py``) get rewards from rewardsvc.

argv: BASE_URL RUBRIC OUT.json. The HTTP path is given two comma-separated route URLs (it
rotates over them); the python-file path loads the client package's ``openrlhf.py`` file, as
``--reward.remote_url /path/to/openrlhf.py`` does. One sample per call, as the executor
sends. Then ``OUTAGE?``: the test makes the judges unreachable while both paths score a
second batch.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import rewardsvc_client.openrlhf

# The package's __init__ chain imports deepspeed and torch; the reward client needs neither:
# bind the two package names to their folders without running their __init__ files.
_spec = importlib.util.find_spec("openrlhf")
assert _spec is not None and _spec.submodule_search_locations
_root = Path(next(iter(_spec.submodule_search_locations)))
for _name, _path in (("openrlhf", _root), ("openrlhf.utils", _root / "utils")):
    _module = types.ModuleType(_name)
    _module.__path__ = [str(_path)]
    sys.modules[_name] = _module

from openrlhf.utils.agent import SingleTurnAgentExecutor  # noqa: E402

QUESTION = "What is 2 + 3?"
PROMPT = f"<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"
# (query, prompt, label): right, wrong, a left-truncated prompt, and no label (rejected).
SAMPLES = [
    (PROMPT + "5<|im_end|>", PROMPT, "5"),
    (PROMPT + "It is 7.<|im_end|>", PROMPT, "5"),
    (PROMPT[12:] + "5.<|im_end|>", PROMPT, "5"),
    (PROMPT + "5<|im_end|>", PROMPT, ""),
]
SAMPLES_DURING = [(PROMPT + "Five<|im_end|>", PROMPT, "5"), (PROMPT + "6<|im_end|>", PROMPT, "5")]


async def score(executor: Any, samples: list[tuple[str, str, str]], http: bool) -> list[Any]:
    fetch = executor._fetch_rewards_via_http if http else executor._fetch_rewards_via_func

    async def one(query: str, prompt: str, label: str) -> Any:
        try:
            (info,) = await fetch([query], [prompt], [label])
        except Exception as exc:  # the executor logs it and leaves the reward None
            return {"error": repr(exc)}
        return {"rewards": info.get("rewards"), "extra_logs": info.get("extra_logs")}

    return list(await asyncio.gather(*(one(*s) for s in samples)))


async def main() -> None:
    base, rubric, out = sys.argv[1:4]
    route = f"{base}/openrlhf/{rubric}?run=openrlhf-test"
    http = SingleTurnAgentExecutor(remote_rm_url=[route, route + "&replica=2"])
    os.environ.update({"REWARDSVC_URL": base, "REWARDSVC_RUBRIC": rubric})
    hook = SingleTurnAgentExecutor(remote_rm_url=rewardsvc_client.openrlhf.__file__)
    before = {"http": await score(http, SAMPLES, True), "func": await score(hook, SAMPLES, False)}
    print("OUTAGE?", flush=True)
    sys.stdin.readline()
    during_http, during_func = await asyncio.gather(
        score(http, SAMPLES_DURING, True), score(hook, SAMPLES_DURING, False)
    )
    with open(out, "w") as f:
        json.dump({"before": before, "during": {"http": during_http, "func": during_func}}, f)


if __name__ == "__main__":
    asyncio.run(main())
