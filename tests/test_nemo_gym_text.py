"""The NeMo Gym verify route with text that has no UTF-8 encoding (a lone surrogate, as a
JSON ``\\ud800`` escape) anywhere in the body: never a 500. In what is scored it is the
item's fault alone (masked, ``verifier_error``, the field named); elsewhere the echo
escapes it; the service goes on serving."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakejudge import FakeJudge, Script
from test_api_support import app_client, fake_pool, settings_for, write_library

SURROGATE = "\ud800"


def verify_body(**changes: Any) -> dict[str, Any]:
    """A verify request of the task "What is 2+2?" answered "4", with ``changes`` on top."""
    output = [{"type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "4"}]}]  # fmt: skip
    body = {
        "responses_create_params": {"input": "What is 2+2?"},
        "response": {"output": output},
        "expected_answer": "4",
    }
    return body | changes


def raw(body: dict[str, Any]) -> bytes:
    """The body as a client sends it: the lone surrogate as its JSON escape."""
    return json.dumps(body).encode()


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    with FakeJudge(Script()) as fake:
        settings = settings_for(write_library(tmp_path / "rubrics"))
        async with app_client(settings, fake_pool(fake.url, fake.url)) as (client, _, _):
            yield client


async def verify(http: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    return await http.post(
        "/nemo-gym/tiny/verify", content=raw(body), headers={"content-type": "application/json"}
    )


OUTPUT_TEXT = [{"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": f"It is 4{SURROGATE}."}]}]  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"response": {"output": OUTPUT_TEXT}}, "response.output[0].content[0].text"),
        (
            {"responses_create_params": {"input": f"What is{SURROGATE} 2+2?"}},
            "responses_create_params.input",
        ),
        (
            {"responses_create_params": {"input": "2+2?", "instructions": SURROGATE}},
            "responses_create_params.instructions",
        ),
        ({"expected_answer": f"4{SURROGATE}"}, "expected_answer"),
        ({"criteria": [f"Says four{SURROGATE}."]}, "criteria[0]"),
    ],
)
async def test_a_lone_surrogate_in_what_is_scored_masks_the_sample_naming_the_field(
    http: httpx.AsyncClient, changes: dict[str, Any], field: str
) -> None:
    reply = await verify(http, verify_body(**changes))
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert (data["reward"], data["mask_sample"], data["failure_kind"]) == (
        0.0,
        True,
        "verifier_error",
    )
    assert data["failure_reason"].startswith(f"{field}: contains a lone surrogate")
    assert data["instance_config"]["mask_sample"] is True
    # The echo carries the escape as text: valid UTF-8 for any reader.
    assert "\\ud800" in reply.text and SURROGATE not in json.dumps(data, ensure_ascii=False)
    # The service goes on serving.
    after = await verify(http, verify_body())
    assert after.status_code == 200 and after.json()["mask_sample"] is False


async def test_a_lone_surrogate_only_in_echoed_fields_is_scored_and_echoed_escaped(
    http: httpx.AsyncClient,
) -> None:
    body = verify_body(
        metadata={"note": f"seen{SURROGATE}", f"key{SURROGATE}": 1},
        responses_create_params={"input": "What is 2+2?", "model": SURROGATE},
    )
    reply = await verify(http, body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["mask_sample"] is False and data["reward"] > 0
    assert data["metadata"] == {"note": "seen\\ud800", "key\\ud800": 1}
    assert data["responses_create_params"]["model"] == "\\ud800"
