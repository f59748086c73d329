"""The lean judge transport, the reading of plain-JSON replies, and failure classification.

The transport runs against the scripted fake judge (its failure paths); the wire format
against the real vLLM judges is pinned in ``test_judges_real.py``.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer
from fakejudge import OVERFLOW_MESSAGE, FakeJudge, free_port
from multidict import CIMultiDict

from rewardsvc.judges.failures import classify
from rewardsvc.judges.shapes import CHAT, COMPLETION, choices, usage
from rewardsvc.judges.transport import (
    MAX_REPLY_BYTES,
    TRANSPORT_ERRORS,
    HttpStatusError,
    JudgeTransport,
    ReplyTooLarge,
    error_message,
)

URL = "http://judge.example/v1"
AUTH = "Bearer k"


@pytest_asyncio.fixture(loop_scope="function")
async def transports() -> AsyncIterator[list[JudgeTransport]]:
    made: list[JudgeTransport] = []
    yield made
    for t in made:
        await t.aclose()


def transport(made: list[JudgeTransport], url: str) -> JudgeTransport:
    t = JudgeTransport(url, max_connections=4, connect_s=2.0)
    made.append(t)
    return t


def chat_body(text: str) -> dict[str, Any]:
    return {
        "model": "fake",
        "messages": [{"role": "user", "content": text}],
        "max_tokens": 1,
        "logprobs": True,
        "top_logprobs": 2,
        "structured_outputs": {"choice": ["yes", "no"]},
    }


async def test_body_arrives_as_sent_and_reply_is_plain_json(
    fake: FakeJudge, transports: list[JudgeTransport]
) -> None:
    # Non-ASCII and a lone surrogate (possible in untrusted text decoded from JSON) must
    # arrive as they were, not fail the encoding.
    body = chat_body("Grade: 数学 \ud800 done")
    reply = await transport(transports, fake.url).post(CHAT.path, body, AUTH)
    assert fake.script.bodies == [body]
    assert fake.script.headers[0]["authorization"] == AUTH
    assert type(reply) is dict and CHAT.well_formed(reply)
    assert CHAT.text(choices(reply)[0]) == "yes"
    assert dict(CHAT.first_top_logprobs(choices(reply)[0]))["no"] == pytest.approx(-1.609, 1e-3)
    assert usage(reply) == (100, 1)


async def test_non_json_200_comes_back_as_text(
    fake: FakeJudge, transports: list[JudgeTransport]
) -> None:
    fake.script.default = "html"
    reply = await transport(transports, fake.url).post(COMPLETION.path, {"prompt": "x"}, AUTH)
    assert isinstance(reply, str) and "502 Bad Gateway" in reply
    assert not COMPLETION.well_formed(reply)


@pytest.mark.parametrize(
    ("behaviour", "kind", "words"),
    [
        ("500", "http_5xx", "scripted 500"),
        ("400", "http_4xx", "scripted 400"),
        ("overflow", "context_overflow", "maximum context length"),
        ("429", "rate_limited", "scripted 429"),
    ],
)
async def test_error_statuses_carry_the_server_message(
    fake: FakeJudge, transports: list[JudgeTransport], behaviour: str, kind: str, words: str
) -> None:
    fake.script.default = behaviour
    fake.script.retry_after = 7
    with pytest.raises(HttpStatusError) as info:
        await transport(transports, fake.url).post(CHAT.path, chat_body("x"), AUTH)
    error = classify(info.value, fake.url)
    assert error.kind == kind and words in str(error)
    assert error.retry_after == (7.0 if behaviour == "429" else None)


async def test_refused_connection_is_a_connection_error(transports: list[JudgeTransport]) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(TRANSPORT_ERRORS) as info:
        await transport(transports, url).post(CHAT.path, chat_body("x"), AUTH)
    assert classify(info.value, url).kind == "connection"


async def test_models_list_and_reopen_after_close(
    fake: FakeJudge, transports: list[JudgeTransport]
) -> None:
    t = transport(transports, fake.url)
    assert (await t.get("/models", AUTH))["data"][0]["id"] == "fake"
    await t.aclose()
    assert (await t.get("/models", "Bearer other"))["object"] == "list"
    assert fake.script.model_lists == [AUTH, "Bearer other"]


def test_error_message_reads_the_usual_error_bodies() -> None:
    assert error_message(b'{"error": {"message": "too long", "code": 400}}') == "too long"
    assert error_message(b'{"object": "error", "message": "bad model"}') == "bad model"
    assert error_message(b'{"detail": "Not Found"}') == "Not Found"
    assert error_message(b"<html>\n<h1>503</h1>\n</html>") == "<html> <h1>503</h1> </html>"
    assert error_message(b"x" * 1000).endswith("...") and len(error_message(b"x" * 1000)) < 310


def test_classify_transport_failures() -> None:
    headers = CIMultiDict({"Retry-After": "2"})
    assert classify(HttpStatusError(503, "busy", headers), URL).retry_after == 2.0
    assert classify(HttpStatusError(503, "busy", headers), URL).kind == "http_5xx"
    assert classify(HttpStatusError(400, OVERFLOW_MESSAGE, {}), URL).kind == "context_overflow"
    assert classify(HttpStatusError(404, "no such route", {}), URL).kind == "http_4xx"
    assert classify(HttpStatusError(401, "bad key", {}), URL).status == 401
    # aiohttp's read and connect timeouts are connection errors too: they are timeouts.
    assert classify(aiohttp.ServerTimeoutError("read"), URL).kind == "timeout"
    assert classify(TimeoutError(), URL).kind == "timeout"
    assert classify(aiohttp.ServerDisconnectedError(), URL).kind == "connection"
    assert classify(aiohttp.ClientPayloadError("cut short"), URL).kind == "connection"
    assert classify(ConnectionResetError(), URL).kind == "connection"
    assert classify(KeyError("x"), URL).kind == "internal"


def test_shapes_refuse_replies_without_usable_choices() -> None:
    for shape in (CHAT, COMPLETION):
        for reply in ("<html>", None, [], {}, {"choices": []}, {"choices": ["a"]}):
            assert not shape.well_formed(reply), (shape.name, reply)
    assert not CHAT.well_formed({"choices": [{"text": "yes"}]})
    assert COMPLETION.well_formed({"choices": [{"text": "yes"}]})
    assert usage({"choices": [{}]}) == (0, 0)
    assert usage({"usage": {"prompt_tokens": 9, "completion_tokens": None}}) == (9, 0)


def test_shapes_read_missing_logprobs_as_absent_and_partial_ones_as_damaged() -> None:
    assert CHAT.first_top_logprobs({"message": {"content": "yes"}, "logprobs": None}) == []
    assert CHAT.text({"message": {"content": None}}) == ""
    partial = {
        "logprobs": {
            "content": [
                {
                    "token": "yes",
                    "logprob": -0.1,
                    "top_logprobs": [{"token": "no", "logprob": None}, {"token": "yes"}, "x"],
                }
            ]
        }
    }
    # An entry without its logprob (or not an entry at all) is kept as damaged (NaN): the
    # answer's reading fails on it rather than renormalising the rest (issue 36).
    read = CHAT.first_top_logprobs(partial)
    assert [token for token, _ in read] == ["no", "yes", "", "yes"]
    assert all(math.isnan(logprob) for _, logprob in read[:3]) and read[3] == ("yes", -0.1)
    completion = {
        "text": "4",
        "logprobs": {"top_logprobs": [{"4": -0.2, "5": -2.0}], "tokens": [], "token_logprobs": []},
    }
    assert COMPLETION.first_top_logprobs(completion) == [("4", -0.2), ("5", -2.0)]
    assert COMPLETION.first_top_logprobs({"text": "4", "logprobs": {"top_logprobs": None}}) == []
    assert COMPLETION.text({"text": 4}) == ""


async def test_redirects_are_not_followed(transports: list[JudgeTransport]) -> None:
    # A judge URL that redirects (misconfigured or hostile) must not send the call, with
    # the judge's key, wherever it points: here another server that counts what reaches it.
    with FakeJudge() as redirecting, FakeJudge() as target:
        redirecting.script.default = "redirect"
        redirecting.script.redirect_to = target.url + "/chat/completions"
        t = transport(transports, redirecting.url)
        with pytest.raises(HttpStatusError) as info:
            await t.post("/chat/completions", chat_body("hi"), AUTH)
    assert info.value.status == 307
    assert target.script.requests == 0
    error = classify(info.value, redirecting.url)
    assert error.kind == "unparseable" and "redirect" in str(error)
    assert target.url not in str(error) and target.url in error.log_text


async def test_a_huge_reply_is_refused_without_reading_it_all(
    fake: FakeJudge, transports: list[JudgeTransport]
) -> None:
    fake.script.default = "huge"  # 64 MiB of JSON whitespace, streamed without a length
    t = transport(transports, fake.url)
    with pytest.raises(ReplyTooLarge) as info:
        await t.post("/chat/completions", chat_body("hi"), AUTH)
    # The transport stopped at its bound; the fake sent little more than the socket buffers.
    assert info.value.limit == MAX_REPLY_BYTES
    assert fake.script.sent_bytes < 2 * MAX_REPLY_BYTES < fake.script.huge_bytes
    error = classify(info.value, fake.url)
    assert error.kind == "unparseable" and "larger than" in str(error)


async def test_a_compressed_reply_is_bounded_by_its_inflated_size(
    transports: list[JudgeTransport],
) -> None:
    # A reply's Content-Length counts compressed bytes: a short gzip body that inflates
    # past the bound is refused as a long one is, not read at once on its length's word.
    packed = gzip.compress(b'{"choices": []}' + b" " * 4096)

    async def handle(request: web.Request) -> web.Response:
        headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
        return web.Response(body=packed, headers=headers)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    async with TestServer(app) as server:
        t = JudgeTransport(
            str(server.make_url("/v1")),
            max_connections=2,
            connect_s=2.0,
            max_reply_bytes=1024,
        )
        transports.append(t)
        with pytest.raises(ReplyTooLarge):
            await t.post("/chat/completions", chat_body("hi"), AUTH)


def test_failure_messages_hold_no_url() -> None:
    for exc in (
        HttpStatusError(503, "busy", {}),
        HttpStatusError(400, OVERFLOW_MESSAGE, {}),
        TimeoutError(),
        aiohttp.ClientConnectionError(f"Cannot connect to host {URL}"),
        ConnectionRefusedError(111, f"Connect call failed {URL}"),
        KeyError(URL),
    ):
        error = classify(exc, URL)
        assert "judge.example" not in str(error), str(error)
        assert URL in error.log_text
