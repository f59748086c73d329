"""Fencing properties extended to every trajectory part: tool names, arguments, ids,
results, reasoning and messages never leave their own fence, in every view and step."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_prompts import APIS, HOSTILE, body

from rewardsvc.application.items import read_item
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges import prompts
from rewardsvc.judges.fencing import parse_fences
from rewardsvc.judges.methods import method_for
from rewardsvc.judges.shapes import shape_for
from rewardsvc.safety.defuse import sanitize

RUBRIC = Rubric.model_validate(
    {
        "id": "fencing",
        "instructions": "Grade the agent.",
        "criteria": [{"id": "good", "text": "The agent did well."}],
        "judges": ["j"],
    }
)
# read_item rejects a NUL (judges cannot be sent one) before any rendering happens.
TEXT = HOSTILE.map(lambda s: s.replace("\x00", ""))
BIG = 10_000_000  # no fitting: every body is shown whole


def completion(name: str, arguments: str, call_id: str, result: str, text: str) -> list[Any]:
    return [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]},
        {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments},
        {"type": "function_call_output", "call_id": call_id, "output": result},
        {"role": "assistant", "content": [{"type": "output_text", "text": text}]},
    ]


def prompt_body(items: list[Any], view: Any, step: int | None, api: Any) -> str:
    item = read_item(0, {"prompt": [{"role": "user", "content": "Task."}], "completion": items})
    assert item.rollout is not None, item.error
    rollout = item.rollout if step is None else item.rollout.at_step(step)
    rubric = RUBRIC.model_copy(update={"view": view})
    p = prompts.criterion_prompt(
        rubric,
        rubric.criteria[0],
        rollout,
        prompts.Asking(method_for("logprob"), shape_for(api), fit_chars=BIG),
    )
    return body(p)


@settings(max_examples=200, deadline=None)
@given(
    name=TEXT,
    arguments=TEXT,
    result=TEXT,
    text=TEXT,
    view=st.sampled_from(["trace", "tools", "final"]),
    step=st.none() | st.just(0),
    api=st.sampled_from(APIS),
)
def test_every_trajectory_part_stays_in_its_fence(
    name: str, arguments: str, result: str, text: str, view: str, step: int | None, api: Any
) -> None:
    call_id = "id-" + name[:10]
    hostile = prompt_body(completion(name, arguments, call_id, result, text), view, step, api)
    blank = prompt_body(completion("", "", "id-", "", ""), view, step, api)
    skeleton, blocks = parse_fences(hostile)
    call = f"name: {name}\narguments: {arguments}\nid: {call_id}"
    expected = {
        "trace": [("reasoning", text), ("call", call), ("result", result), ("assistant", text)],
        "tools": [("call", call), ("result", result)],
        "final": [("response", text)],
    }[view]
    if step == 0:  # the first step is reasoning, call and result; the answer is step 2
        expected = [
            (label, content)
            for label, content in expected
            if label in ("reasoning", "call", "result")
        ]
    assert blocks == [("prompt", "user: Task.")] + [
        (label, sanitize(content)) for label, content in expected
    ]
    # Outside the fences, a hostile trajectory reads exactly like an empty one.
    assert skeleton == parse_fences(blank)[0]
