"""Trajectories through the HTTP API: per-step process rewards and ``options.explain``."""

from __future__ import annotations

from pathlib import Path

from fakejudge import FakeJudge
from test_api_support import app_client, fake_pool, settings_for, write_library

PROCESS = {
    "id": "process",
    "description": "One step criterion and one outcome criterion.",
    "criteria": [
        {"id": "answered", "text": "The final answer is correct."},
        {"id": "sound-step", "scope": "step", "text": "This step moves the task forward."},
    ],
    "judges": ["primary", "secondary"],
    "min_judges": 1,
    "step_combine": "mean",
}

TRAJECTORY = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "search", "arguments": '{"q": "capital of France"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "Paris is the capital of France."},
    {"role": "assistant", "content": "Let me check the spelling."},
    {"role": "user", "content": "Go on."},
    {"role": "assistant", "content": "The capital of France is Paris."},
]


async def test_three_steps_three_step_rewards_and_what_the_judges_read(tmp_path: Path) -> None:
    with FakeJudge() as primary, FakeJudge() as secondary:
        settings = settings_for(write_library(tmp_path / "rubrics"))
        async with app_client(settings, fake_pool(primary.url, secondary.url)) as (http, _, _):
            item = {"id": "t", "prompt": "What is the capital of France?", "completion": TRAJECTORY}
            body = {"rubric": PROCESS, "items": [item], "options": {"explain": True}}
            reply = await http.post("/v1/rewards", json=body)
    assert reply.status_code == 200, reply.text
    (result,) = reply.json()["results"]
    assert result["status"] == "ok"
    steps = result["steps"]
    assert [s["index"] for s in steps] == [0, 1, 2]
    assert all(s["status"] == "ok" and 0.0 <= s["reward"] <= 1.0 for s in steps)
    assert 0.0 <= result["reward"] <= 1.0
    # Each judge was asked the outcome criterion once and the step criterion per step.
    for judge in ("primary", "secondary"):
        seen = result["explain"][judge]
        assert set(seen) == {"answered", *(f"sound-step@step{k}" for k in range(3))}
    chat = "\n".join(m["content"] for m in result["explain"]["primary"]["answered"])
    assert "search" in chat and "capital of France" in chat and "Paris is the capital" in chat
    # Step 0's prompt stops at its own step: the later replies are not in it.
    first = "\n".join(m["content"] for m in result["explain"]["primary"]["sound-step@step0"])
    assert "Let me check the spelling." not in first
