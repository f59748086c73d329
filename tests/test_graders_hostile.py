"""Graders under hostile specs and load, through the HTTP API with fake judges.

A grader spec arrives inline in a request, so it is untrusted: its JSON Schema must never
fetch a URL or read a file, and no grader may run without a deadline, take the threads the
verdict cache needs, or let one request's slow items turn another's correct answers into
errors. A grader that cannot finish gives ``reward: null`` with a typed ``error_kind``,
never 0.0.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fakejudge import FakeJudge
from test_api_support import app_client, fake_pool, settings_for, write_library

from rewardsvc.core.graders_spec import JsonSpec
from rewardsvc.core.rollout import Rollout
from rewardsvc.graders.registry import Graders
from rewardsvc.graders.structured import json_check

# Each level of nesting doubles the work of jsonschema on this schema: 40 characters of
# nested arrays took 66 s.
EXPONENTIAL = {
    "anyOf": [
        {"type": "array", "items": {"$ref": "#"}, "minItems": 2},
        {"type": "array", "items": {"$ref": "#"}},
    ]
}
NESTED_40 = "[" * 20 + "]" * 20
HOSTILE_MATH = r"\boxed{9^{9^{9^{9}}}}"
GRADER_TIMEOUT_S = 1.0


class CountingServer:
    """An HTTP server on 127.0.0.1 that answers every GET with a JSON Schema and counts
    the requests (the internal URL a hostile schema points at)."""

    def __init__(self) -> None:
        self.hits = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.hits += 1
                body = json.dumps({"type": "string", "secret": "iam-credentials"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/latest/meta-data/iam"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> CountingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def internal() -> Iterator[CountingServer]:
    with CountingServer() as server:
        yield server


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeJudge, FakeJudge]]:
    with FakeJudge() as primary, FakeJudge() as secondary:
        yield primary, secondary


@contextlib.asynccontextmanager
async def serving(
    folder: Path, fakes: tuple[FakeJudge, FakeJudge], **settings: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """The app in-process on the fake judges, with two grader workers."""
    for fake in fakes:
        fake.script.delay_s = 0.0
    values = {
        "cache_path": folder / "cache.sqlite",
        "grader_workers": 2,
        "grader_timeout_s": GRADER_TIMEOUT_S,
        **settings,
    }
    ready = settings_for(write_library(folder / "rubrics"), **values)
    async with app_client(ready, fake_pool(fakes[0].url, fakes[1].url)) as (http, _, _):
        http.timeout = httpx.Timeout(180)
        yield http


@pytest_asyncio.fixture(loop_scope="function")
async def client(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(tmp_path, fakes) as http:
        yield http


def recipe(grader: dict[str, Any]) -> dict[str, Any]:
    """An inline recipe of one grader component."""
    return {"kind": "recipe", "id": "hostile", "components": [{"id": "g", "grader": grader}]}


def json_recipe(schema: dict[str, Any]) -> dict[str, Any]:
    return recipe({"type": "json", "extract": "none", "schema": schema})


def math_items(answers: list[str], tag: str) -> list[dict[str, Any]]:
    return [
        {"id": f"{tag}{n}", "prompt": "3?", "completion": answer, "reference": "3"}
        for n, answer in enumerate(answers)
    ]


# ------------------------------------------------------------------ $ref


async def test_schema_ref_to_an_internal_url_is_refused_and_never_fetched(
    client: httpx.AsyncClient, internal: CountingServer
) -> None:
    for key in ("$ref", "$dynamicRef"):
        schema = {"type": "object", "properties": {"a": {key: internal.url}}}
        item = {"id": "x", "prompt": "p", "completion": '{"a": "b"}'}
        reply = await client.post(
            "/v1/rewards", json={"rubric": json_recipe(schema), "items": [item]}
        )
        assert reply.status_code == 422, reply.text
        body = reply.json()
        assert body["field"] == "rubric.components[0].grader.schema", body
        assert f"properties.a.{key}" in body["message"], body
        assert "iam-credentials" not in reply.text
    assert internal.hits == 0


async def test_schema_ref_to_a_file_is_refused_not_read_not_a_500(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"type": "string", "description": "top-secret-token"}))
    for ref in (secret.as_uri(), "file:///etc/passwd", (tmp_path / "missing.json").as_uri()):
        item = {"id": "x", "prompt": "p", "completion": '"text"'}
        reply = await client.post(
            "/v1/rewards", json={"rubric": json_recipe({"$ref": ref}), "items": [item]}
        )
        assert reply.status_code == 422, reply.text
        assert "$ref" in reply.json()["message"]
        assert "top-secret-token" not in reply.text and "root:" not in reply.text


def test_a_schema_that_escapes_validation_still_fetches_nothing(internal: CountingServer) -> None:
    """Defence in depth: a spec built without validation reaches the grader with its
    remote $ref; the grader's registry refuses it: no score, a typed error, no request."""
    spec = JsonSpec.model_construct(
        type="json", extract="none", json_schema={"$ref": internal.url}, partial_credit=False
    )
    result = json_check('"text"', spec)
    assert internal.hits == 0
    assert (result.score, result.kind) == (None, "grader_failed"), result
    assert "not inside the schema" in (result.error or "")


# ------------------------------------------------------------------ deadlines


async def test_exponential_schema_gives_null_with_a_typed_error_within_its_deadline(
    client: httpx.AsyncClient,
) -> None:
    """No `pattern` here: every schema runs under the grader deadline (1 s here)."""
    item = {"id": "x", "prompt": "p", "completion": NESTED_40}
    request = client.post("/v1/rewards", json={"rubric": json_recipe(EXPONENTIAL), "items": [item]})
    # A bound, not a timing: the grader deadline is 1 s; this one took 66 s.
    reply = await asyncio.wait_for(request, 60)
    assert reply.status_code == 200, reply.text
    result = reply.json()["results"][0]
    assert (result["reward"], result["status"]) == (None, "judge_error"), result
    component = result["components"]["g"]
    assert component["score"] is None
    assert component["error_kind"] == "grader_timeout", component


async def test_a_rubric_grader_criterion_reports_the_timeout_kind(
    client: httpx.AsyncClient,
) -> None:
    """The same deadline inside a rubric: the criterion's error_kind, the item's null."""
    rubric = {
        "id": "shape",
        "criteria": [{"id": "json", "grader": {"type": "json", "schema": EXPONENTIAL}}],
        "judges": ["primary"],
    }
    item = {"id": "x", "prompt": "p", "completion": NESTED_40}
    reply = await client.post("/v1/rewards", json={"rubric": rubric, "items": [item]})
    assert reply.status_code == 200, reply.text
    result = reply.json()["results"][0]
    assert (result["reward"], result["status"]) == (None, "judge_error"), result
    criterion = result["judges"]["primary"]["criteria"]["json"]
    assert (criterion["score"], criterion["error_kind"]) == (None, "grader_timeout"), criterion


async def test_the_request_deadline_bounds_grading(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    """With request_timeout_s=1 a grader allowed 30 s is cut at the request's deadline
    (this request was answered after 2.8 s, and this grader ran for a minute); the item
    that waited for one of the two workers never ran: grader_busy."""
    items = [{"id": f"x{n}", "prompt": "p", "completion": NESTED_40} for n in range(3)]
    body = {"rubric": json_recipe(EXPONENTIAL), "items": items}
    async with serving(tmp_path, fakes, request_timeout_s=1, grader_timeout_s=30) as http:
        reply = await asyncio.wait_for(http.post("/v1/rewards", json=body), 20)  # a bound
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert [(r["reward"], r["status"]) for r in results] == [(None, "judge_error")] * 3, results
    kinds = [r["components"]["g"]["error_kind"] for r in results]
    assert kinds == ["deadline", "deadline", "grader_busy"], results


async def test_correct_answer_queued_behind_slow_items_still_scores_one(
    client: httpx.AsyncClient,
) -> None:
    """The item's time limit starts when a worker takes it, not while it waits its turn
    (this answer scored 0.0, status ok, behind a slow one)."""
    grader = {"type": "math", "timeout_s": 2}
    answers = [HOSTILE_MATH] * 4 + [r"\boxed{3}"]
    reply = await client.post(
        "/v1/rewards", json={"rubric": recipe(grader), "items": math_items(answers, "q")}
    )
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert (results[-1]["reward"], results[-1]["status"]) == (1.0, "ok"), results[-1]
    for hostile in results[:-1]:
        assert (hostile["reward"], hostile["status"]) == (None, "judge_error"), hostile
        assert hostile["components"]["g"]["error_kind"] == "grader_timeout", hostile


async def test_hostile_answers_do_not_turn_correct_ones_into_errors(
    client: httpx.AsyncClient,
) -> None:
    """20 hostile answers interleaved with 20 correct ones, and a second request beside
    them: every correct answer scores 1.0 (13 of them were judge_error, "busy"), every
    hostile one is null with grader_timeout (never 0.0)."""
    # Long enough for a correct answer on a loaded machine, short enough for 20 hostile.
    grader = {"type": "math", "timeout_s": 1.5}
    mixed = [HOSTILE_MATH if n % 2 == 0 else r"\boxed{3}" for n in range(40)]
    first = client.post(
        "/v1/rewards", json={"rubric": recipe(grader), "items": math_items(mixed, "m")}
    )
    second = client.post(
        "/v1/rewards",
        json={"rubric": recipe(grader), "items": math_items([r"\boxed{3}"] * 5, "s")},
    )
    replies = await asyncio.gather(first, second)
    for reply in replies:
        assert reply.status_code == 200, reply.text
    results = replies[0].json()["results"] + replies[1].json()["results"]
    answers = mixed + [r"\boxed{3}"] * 5
    scored = list(zip(answers, results, strict=True))
    correct = [(r["reward"], r["status"]) for a, r in scored if a != HOSTILE_MATH]
    assert correct == [(1.0, "ok")] * 25, correct
    for result in (r for a, r in scored if a == HOSTILE_MATH):
        assert (result["reward"], result["status"]) == (None, "judge_error"), result
        assert result["components"]["g"]["error_kind"] == "grader_timeout", result


async def test_benign_requests_are_answered_while_six_hostile_ones_still_run(
    client: httpx.AsyncClient,
) -> None:
    """Six exponential-schema requests once filled the default thread pool that also ran
    the SQLite verdict cache: a judged item waited behind them. Now graders have workers
    of their own and a request that has used no worker time goes next: a judged request
    and a grader request are both answered before any hostile one."""
    nested = "[" * 18 + "]" * 18
    hostile = [
        asyncio.ensure_future(
            client.post(
                "/v1/rewards",
                json={
                    "rubric": json_recipe(EXPONENTIAL),
                    "items": [
                        {"id": f"h{n}-{k}", "prompt": "p", "completion": nested} for k in range(2)
                    ],
                },
            )
        )
        for n in range(6)
    ]
    await asyncio.sleep(0.2)  # the hostile requests are in
    judged = client.post(
        "/v1/rewards",
        json={"rubric": "tiny", "items": [{"id": "b", "prompt": "2+2?", "completion": "4"}]},
    )
    graded = client.post(
        "/v1/rewards",
        json={
            "rubric": recipe({"type": "exact"}),
            "items": [{"id": "e", "prompt": "p", "completion": "Paris", "reference": "Paris"}],
        },
    )
    benign = [asyncio.ensure_future(judged), asyncio.ensure_future(graded)]
    for reply in asyncio.as_completed(benign):
        answered = await reply
        assert answered.status_code == 200, answered.text
        assert answered.json()["results"][0]["status"] == "ok", answered.text
        assert not any(h.done() for h in hostile), "a benign request waited for a hostile one"
    for reply in await asyncio.gather(*hostile):
        for result in reply.json()["results"]:
            assert result["reward"] is None
            assert result["components"]["g"]["error_kind"] == "grader_timeout", result


# ------------------------------------------------------------------ uniqueItems


async def test_unique_items_is_checked_in_linear_time() -> None:
    """jsonschema compares every pair of objects (3,000 objects took 10 s, quadratic):
    20,000 distinct objects now pass within a grader deadline of 10 s (quadratic, they
    would take minutes)."""
    spec = JsonSpec(type="json", extract="none", schema={"type": "array", "uniqueItems": True})
    many = json.dumps([{"n": n, "tags": [n, str(n)]} for n in range(20_000)])
    repeated = json.dumps([{"n": n} for n in range(20_000)] + [{"n": 7}])
    graders = Graders(workers=1, timeout_s=10)
    try:
        graders.warm()
        distinct = await graders.grade(spec, Rollout("", many))
        twice = await graders.grade(spec, Rollout("", repeated))
    finally:
        graders.close()
    assert (distinct.score, distinct.kind) == (1.0, None), distinct
    assert twice.score == 0.0, twice
    assert "uniqueItems" in twice.evidence["schema_errors"][0]


@pytest.mark.parametrize(
    ("value", "unique"),
    [
        ([1, 1.0], False),
        ([1, True], True),
        ([0, False], True),
        ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False),
        ([[1, 2], [2, 1]], True),
        ([None, "null"], True),
        ([{"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}], False),
    ],
)
def test_unique_items_follows_json_schema_equality(value: list[Any], unique: bool) -> None:
    spec = JsonSpec(type="json", extract="none", schema={"uniqueItems": True})
    assert json_check(json.dumps(value), spec).score == float(unique)
