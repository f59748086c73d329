"""A scripted OpenAI-compatible judge server, for failure-path tests and the overhead benchmark.

It answers ``/v1/chat/completions`` and ``/v1/completions`` in vLLM's shapes
(``top_logprobs`` over the allowed ``structured_outputs.choice`` tokens, JSON
for ``response_format``), counts every request, and can be scripted to fail:
a queue of behaviours is consumed one per request, then ``default`` applies.

Behaviours: ``ok``, ``500``, ``400``, ``429`` (with ``Retry-After: retry_after``),
``timeout`` (sleeps ``delay_s`` before answering), ``garbage`` (a 200 whose
content is not a scale token, and no logprobs), ``html`` (a 200 with an HTML page, as
from a misrouted proxy), ``notjson`` (a 200 with JSON that is not a completion),
``overflow`` (vLLM's 400 for a prompt longer than the context), ``trickle`` (a 200 that
sends one space every ``trickle_s`` for ``delay_s``, then the answer), ``stall``
(answers nothing until the client hangs up; counted in ``disconnects``), ``redirect`` (a
307 to ``redirect_to``), ``huge`` (a 200 streaming ``huge_bytes`` of JSON whitespace,
counted in ``sent_bytes``). ``rewrite`` and ``reply_headers`` make the answered replies
hostile (damaged logprobs, usage or rate-limit headers).

Tool calling (an agentic judge's loop, ``rewardsvc.judges.toolloop``): a request that
offers ``tools`` takes the next entry of ``tool_turns`` (a list of ``(name, arguments)``
answered as the message's ``tool_calls``); with none left, ``tool_forever`` when set (a
judge that never stops calling tools), else the tool that a named ``tool_choice`` names
(as vLLM forces it), else it is answered as any other request (no tool call).

:class:`RecordingObserver` records what judges and backends report to their observer.

Run it on its own for benchmarks: ``python tests/fakejudge.py --port 9100``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from faketools import next_tool_calls, tool_reply
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse

from rewardsvc.core.verdict import Verdict

# vLLM 0.32's message for a prompt that does not fit (seen on the CPU judges).
OVERFLOW_MESSAGE = (
    "This model's maximum context length is 2048 tokens. However, your prompt contains at "
    "least 2049 input tokens, which exceeds this limit even without any output tokens. "
    "Please reduce the length of the input prompt. (parameter=input_tokens, value=2049)"
)


@dataclass
class Script:
    """What the fake does; mutate it from a test between requests."""

    default: str = "ok"
    queue: deque[str] = field(default_factory=deque)
    delay_s: float = 0.0
    retry_after: float | str = 1.0
    # Probability mass put on the first allowed choice token (e.g. "yes"); the rest
    # is spread evenly over the other choices.
    first_choice_p: float = 0.8
    requests: int = 0
    request_times: list[float] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    record_bodies: bool = True
    trickle_s: float = 0.05
    disconnects: int = 0
    headers: list[dict[str, str]] = field(default_factory=list)
    # The Authorization header of each GET /v1/models.
    model_lists: list[str] = field(default_factory=list)
    # The model entry GET /v1/models lists (edit it to swap the model behind the name).
    model_entry: dict[str, Any] = field(default_factory=lambda: {"id": "fake", "object": "model"})
    # Loopback, where nothing listens (the discard port): tests send nothing elsewhere.
    redirect_to: str = "http://127.0.0.1:9/latest/meta-data/iam"
    huge_bytes: int = 64 * 1024 * 1024
    sent_bytes: int = 0
    # Hostile replies: ``rewrite`` edits each answered reply (its JSON, as a dict) before it
    # is sent; ``reply_headers`` are extra headers, one entry per reply (429s included)
    # while there are any.
    rewrite: Callable[[dict[str, Any]], None] | None = None
    reply_headers: deque[dict[str, str]] = field(default_factory=deque)

    def next_headers(self) -> dict[str, str]:
        """The extra headers of the next reply."""
        return self.reply_headers.popleft() if self.reply_headers else {}

    # Tool-calling turns: each a list of (name, arguments); arguments as a dict (sent as
    # JSON) or a string (sent as it is).
    tool_turns: deque[list[tuple[str, Any]]] = field(default_factory=deque)
    tool_forever: tuple[str, Any] | None = None

    # A judge's policy: P(first choice) read from the request body, instead of
    # ``first_choice_p`` (e.g. "yes unless a tool result shows otherwise").
    policy: Callable[[dict[str, Any]], float] | None = None

    # Answers to response_format requests, one per request; then one the schema fits.
    json_texts: deque[str] = field(default_factory=deque)

    def next_behaviour(self) -> str:
        return self.queue.popleft() if self.queue else self.default


def _distribution(choices: list[str], first_p: float) -> dict[str, float]:
    if len(choices) == 1:
        return {choices[0]: 1.0}
    rest = (1.0 - first_p) / (len(choices) - 1)
    return {c: (first_p if i == 0 else rest) for i, c in enumerate(choices)}


def _choices(body: dict[str, Any]) -> list[str]:
    so = (body.get("structured_outputs") or {}).get("choice")
    return list(so) if so else ["yes", "no"]


def _json_answer(body: dict[str, Any]) -> str:
    schema = body["response_format"]["json_schema"]["schema"]
    props = schema.get("properties", {})
    out: dict[str, Any] = {}
    for name, spec in props.items():
        if "enum" in spec:
            out[name] = spec["enum"][0]
        elif spec.get("type") == "string":
            out[name] = "fake reasoning"
        elif spec.get("type") in ("integer", "number"):
            out[name] = spec.get("maximum", 1)
    return json.dumps(out)


def make_app(script: Script) -> FastAPI:
    """The fake server's app, driven by ``script``."""
    app = FastAPI()

    async def handle(request: Request, chat: bool) -> Response:
        body = await request.json()
        script.requests += 1
        script.request_times.append(time.monotonic())
        script.headers.append(dict(request.headers))
        if script.record_bodies:
            script.bodies.append(body)
        behaviour = script.next_behaviour()
        if behaviour == "500":
            return JSONResponse({"error": {"message": "scripted 500"}}, status_code=500)
        if behaviour == "400":
            return JSONResponse({"error": {"message": "scripted 400"}}, status_code=400)
        if behaviour == "overflow":
            error = {"message": OVERFLOW_MESSAGE, "type": "BadRequestError", "code": 400}
            return JSONResponse({"error": error}, status_code=400)
        if behaviour == "429":
            return JSONResponse(
                {"error": {"message": "scripted 429"}},
                status_code=429,
                headers={"Retry-After": str(script.retry_after), **script.next_headers()},
            )
        if behaviour == "html":
            return HTMLResponse("<html><body><h1>502 Bad Gateway</h1></body></html>")
        if behaviour == "notjson":
            return JSONResponse({"status": "ok"})
        if behaviour == "redirect":
            return Response(status_code=307, headers={"Location": script.redirect_to})
        if behaviour == "huge":
            return StreamingResponse(_huge(script), media_type="application/json")
        if behaviour == "stall":
            while not await request.is_disconnected():
                await asyncio.sleep(0.01)
            script.disconnects += 1
            return JSONResponse({})
        if behaviour == "trickle":
            dist = _distribution(_choices(body), script.first_choice_p)
            top = max(dist, key=lambda t: dist[t])
            answer = json.dumps(_reply(body, chat, [top], dist)).encode()
            return StreamingResponse(_trickle(script, answer), media_type="application/json")
        if behaviour == "timeout":
            await asyncio.sleep(script.delay_s)
        n = int(body.get("n") or 1)
        calls = next_tool_calls(script.tool_turns, script.tool_forever, body)
        if calls is not None:
            return _answer(script, tool_reply(body, calls))
        if behaviour == "garbage":
            return _answer(script, _reply(body, chat, ["I refuse to answer."] * n, None))
        if "json" in (body.get("structured_outputs") or {}):  # a tool's arguments (toolchoice)
            text = script.json_texts.popleft() if script.json_texts else "{}"
            return _answer(script, _reply(body, chat, [text] * n, None))
        if "response_format" in body:
            text = script.json_texts.popleft() if script.json_texts else _json_answer(body)
            return _answer(script, _reply(body, chat, [text] * n, None))
        first_p = script.first_choice_p if script.policy is None else script.policy(body)
        dist = _distribution(_choices(body), first_p)
        top = max(dist, key=lambda t: dist[t])
        want_logprobs = body.get("logprobs") not in (None, False)
        return _answer(script, _reply(body, chat, [top] * n, dist if want_logprobs else None))

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        return await handle(request, chat=True)

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        return await handle(request, chat=False)

    @app.get("/v1/models")
    async def models(request: Request) -> dict[str, Any]:
        script.model_lists.append(request.headers.get("authorization", ""))
        return {"object": "list", "data": [dict(script.model_entry)]}

    return app


def _answer(script: Script, reply: dict[str, Any]) -> Response:
    """A 200 with ``reply``, rewritten and with the extra headers when the script says."""
    if script.rewrite is not None:
        script.rewrite(reply)
    # JSONResponse's encoding, but NaN and the infinities allowed (as Python writes them).
    body = json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
    return Response(body, media_type="application/json", headers=script.next_headers())


async def _trickle(script: Script, answer: bytes) -> AsyncIterator[bytes]:
    """Leading whitespace (valid before JSON), one byte at a time, then the answer."""
    end = time.monotonic() + script.delay_s
    try:
        while time.monotonic() < end:
            yield b" "
            await asyncio.sleep(script.trickle_s)
        yield answer
    except asyncio.CancelledError:
        script.disconnects += 1
        raise


async def _huge(script: Script) -> AsyncIterator[bytes]:
    chunk = b" " * 65536
    yield b"{"
    while script.sent_bytes < script.huge_bytes:
        script.sent_bytes += len(chunk)
        yield chunk
    yield b"}"


def _reply(
    body: dict[str, Any], chat: bool, texts: list[str], dist: dict[str, float] | None
) -> dict[str, Any]:
    choices = []
    for i, text in enumerate(texts):
        logprobs = None
        if dist is not None:
            top = sorted(dist.items(), key=lambda kv: -kv[1])
            if chat:
                entries = [
                    {"token": t, "logprob": math.log(p), "bytes": list(t.encode())} for t, p in top
                ]
                logprobs = {
                    "content": [
                        {
                            "token": text,
                            "logprob": math.log(dist[text]),
                            "bytes": None,
                            "top_logprobs": entries,
                        }
                    ]
                }
            else:
                logprobs = {
                    "tokens": [text],
                    "token_logprobs": [math.log(dist[text])],
                    "top_logprobs": [{t: math.log(p) for t, p in top}],
                    "text_offset": [0],
                }
        if chat:
            choices.append(
                {
                    "index": i,
                    "message": {"role": "assistant", "content": text},
                    "logprobs": logprobs,
                    "finish_reason": "stop",
                }
            )
        else:
            choices.append(
                {"index": i, "text": text, "logprobs": logprobs, "finish_reason": "stop"}
            )
    completion_tokens = sum(max(1, len(t.split())) for t in texts)
    return {
        "id": "fake-1",
        "object": "chat.completion" if chat else "text_completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": choices,
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": completion_tokens,
            "total_tokens": 100 + completion_tokens,
        },
    }


class RecordingObserver:
    """An observer that keeps the judge and breaker events it is given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Verdict]] = []
        self.breakers: list[tuple[str, str, bool]] = []
        self.loops: list[tuple[str, str, list[tuple[str, bool]]]] = []

    def judge_call(self, judge: str, verdict: Verdict) -> None:
        """Keep the verdict."""
        self.calls.append((judge, verdict))

    def breaker(self, judge: str, url: str, is_open: bool) -> None:
        """Keep the change."""
        self.breakers.append((judge, url, is_open))

    def tool_loop(self, judge: str, ended: str, calls: Any) -> None:
        """Keep how an agentic judge's loop ended and its tool calls."""
        self.loops.append((judge, ended, list(calls)))

    def cache_hit(self, dedup: bool) -> None:
        """Ignore."""

    def batch(self, label: str, result: Any) -> None:
        """Ignore."""

    def groups(self, label: str, result: Any) -> None:
        """Ignore."""

    def rubric_file(self, file: str, refused: bool) -> None:
        """Ignore."""

    def errors(self, judge: str, kind: str) -> int:
        """Failed calls of ``judge`` with ``error_kind`` ``kind``."""
        return sum(1 for j, v in self.calls if j == judge and v.error_kind == kind)


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FakeJudge:
    """The fake server running in a background thread: ``with FakeJudge() as fake: fake.url``."""

    def __init__(self, script: Script | None = None, port: int | None = None):
        self.script = script or Script()
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        config = uvicorn.Config(
            make_app(self.script), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> FakeJudge:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("fake judge did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def main() -> None:
    """Serve the fake judge in the foreground (for benchmarks)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9100)
    args = parser.parse_args()
    script = Script(record_bodies=False)
    uvicorn.run(make_app(script), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
