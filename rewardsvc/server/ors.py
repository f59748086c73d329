"""The Open Reward Standard (ORS) routes: the environments of ``ors_environments`` served
over HTTP + SSE at the root of the service, where the ``openreward`` client looks for them.

The client's base URL is a host with no path (its requests are absolute paths), so the
routes are the protocol's own: ``/create_session``, ``/create``, ``/ping``, ``/delete``,
``/delete_session``, ``/version``, and per environment ``/{env}/splits``, ``/{env}/tasks``,
``/{env}/num_tasks``, ``/{env}/task``, ``/{env}/task_range``, ``/{env}/tools``,
``/{env}/task_tools``, ``/{env}/prompt``, ``/{env}/messages`` and ``/{env}/call``; without
``/{env}``, the same routes serve the first environment (a client that names none).

``/call`` streams Server-Sent Events: ``task_id`` (the call's resume token), comments as
keep-alives while the judges score, then ``end`` with the outcome, or ``error`` when no
reward exists (judge_error; see ``rewardsvc.ors.sessions``), written ``kind: message``.
Refusals before a stream are the service's errors (``ServiceError``, with their kinds) in
ORS's form: routes of :class:`OrsRoute` answer ``ErrorDetail`` with ORS's ``detail`` beside
and ORS's statuses (``ORS_STATUS_OF_KIND``), also when a middleware refuses before routing.

A scoped API key reads and opens sessions only on the environments whose target it may
use (403 otherwise); a session is its creator's key's, and other keys find no such session
(404). Each session and each tool call is admitted as held work
(``rewardsvc.server.ledger``) before it starts, 429 or 413 when it does not fit.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Header
from fastapi.openapi.utils import get_openapi
from fastapi.responses import StreamingResponse
from fastapi.routing import APIRoute

from rewardsvc import __version__
from rewardsvc.application.targets import library_target
from rewardsvc.core.errors import ErrorKind, Refused, RequestError, ServiceError
from rewardsvc.ors.environments import OrsEnvironment, OrsTask, load_environments
from rewardsvc.ors.sessions import (
    Episode,
    JudgeFailure,
    Outcome,
    Sessions,
    wait_call,
)
from rewardsvc.protocol.ors import (
    CreateRequest,
    SessionOut,
    StatusOut,
    ToolCallRequest,
    VersionOut,
)
from rewardsvc.protocol.rewards import RewardOptions, RewardResponse
from rewardsvc.server import access
from rewardsvc.server.errors import ORS_FORM, one_line
from rewardsvc.server.ledger import Ledger
from rewardsvc.server.service import Service, ServiceDep

log = logging.getLogger(__name__)

SESSION_BYTES = 2048
"""What an open session holds: its record (the task is the served one, not a copy)."""
KEEPALIVE_S = 10.0
"""The client gives up on a stream silent for 30 s: a comment goes out every 10 s."""
SID = Annotated[str, Header(alias="X-Session-ID")]
ENV_ROUTES = (
    "splits", "tasks", "num_tasks", "task", "task_range", "tools", "task_tools", "prompt",
    "messages", "call",
)  # fmt: skip


class OrsRoute(APIRoute):
    """A route of ORS: the app's error handler answers its refusals in ORS's form (the
    ``detail`` the ``openreward`` client reads beside ErrorDetail; ORS's statuses)."""

    error_form = ORS_FORM


def check_names(envs: dict[str, OrsEnvironment], app: FastAPI) -> None:
    """Refuse environment names that are a first path segment of the service's routes."""
    paths = get_openapi(title=app.title, version=app.version, routes=app.routes)["paths"]
    taken = {str(p).strip("/").split("/", 1)[0] for p in paths}
    clash = sorted(set(envs) & (taken | set(ENV_ROUTES)))
    if clash:
        raise ValueError(f"ORS environment names {clash} are route names of the service")


def _sse(event: str, data: str) -> bytes:
    return f"event: {event}\ndata: {data}\n\n".encode()


class OrsRoutes:
    """The ORS routes over ``envs`` (in order: the first is the default) and open sessions."""

    def __init__(self, envs: dict[str, OrsEnvironment], sessions: Sessions | None = None):
        self.envs = envs
        self.sessions = sessions if sessions is not None else Sessions()

    @classmethod
    def load(cls, paths: list[Path]) -> OrsRoutes:
        """The routes of the environment files ``paths`` (raises InvalidFile)."""
        return cls(load_environments(paths))

    def check_targets(self, service: Service) -> None:
        """Refuse to start when an environment's target is not in the library."""
        for env in self.envs.values():
            if library_target(service.registry, env.config.target) is None:
                raise ValueError(
                    f"ORS environment {env.name!r}: no rubric, recipe or routing table "
                    f"{env.config.target!r} in the library"
                )

    def env(self, name: str | None) -> OrsEnvironment:
        """Environment ``name`` (the first for None), else 404; 403 when the request's key
        may not use its target."""
        found = self.envs.get(name) if name is not None else next(iter(self.envs.values()))
        if found is None:
            message = f"unknown environment {name!r}"
            raise RequestError(message, kind=ErrorKind.UNKNOWN_ENVIRONMENT, field="env")
        if not access.can_read_rubric(found.config.target):
            message = f"this API key may not use environment {found.name!r}"
            raise Refused(message, kind=ErrorKind.FORBIDDEN, field="env")
        return found

    def episode(self, sid: str, name: str | None) -> Episode:
        """Open session ``sid`` of the request's key (of environment ``name`` when given),
        else 404."""
        episode = self.sessions.get(sid.strip(), access.current_holder())
        if episode is None or (name is not None and episode.env.name != name):
            kind = ErrorKind.UNKNOWN_SESSION
            raise RequestError("Active environment not found", kind=kind, field="X-Session-ID")
        return episode

    @staticmethod
    def split(env: OrsEnvironment, split: str) -> list[OrsTask]:
        """The tasks of ``split``, else 400."""
        if split not in env.splits:
            raise RequestError(f"Invalid split {split!r}", field="split")
        return env.splits[split]

    def create(self, sid: str, body: CreateRequest, ledger: Ledger) -> SessionOut:
        """Open session ``sid`` on the task the body names (served tasks only), held in
        ``ledger`` until it closes."""
        if body.toolset_name is not None:
            raise RequestError("no ORS toolset is served", field="toolset_name")
        env = self.env(body.env_name)
        if body.task_spec is not None:
            task = env.find(body.task_spec)
            if task is None:
                raise RequestError("not a task of this environment", field="task_spec")
        elif body.split is not None and body.index is not None:
            tasks = self.split(env, body.split)
            if not 0 <= body.index < len(tasks):
                raise RequestError("Invalid index", field="index")
            task = tasks[body.index]
        else:
            raise RequestError("give task_spec, or split and index", field="split")

        def admit() -> Callable[[], None]:
            return ledger.hold(SESSION_BYTES, "the ORS session").release

        self.sessions.create(sid.strip(), env, task, access.current_holder(), admit)
        return SessionOut(sid=sid.strip())

    def call(self, episode: Episode, body: ToolCallRequest, service: Service) -> StreamingResponse:
        """Run (or, with ``task_id``, resume) a tool call, streamed as SSE."""
        task_id = body.task_id
        if task_id is None:
            task_id = uuid.uuid4().hex
            # The input waits for the session's turn in its task: held from now on.
            holding = service.hold(body.input, "the ORS tool call")
            episode.start_call(task_id, body.name, body.input, scorer(service), holding.release)
        stream = self._stream(episode, task_id)
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(stream, media_type="text/event-stream", headers=headers)

    async def _stream(self, episode: Episode, task_id: str) -> AsyncIterator[bytes]:
        call = episode.calls.get(task_id)
        if call is None:
            yield _sse("error", "unknown task_id")
            return
        yield _sse("task_id", task_id)
        outcome: Outcome | None = None
        while outcome is None:
            try:
                outcome = await wait_call(call, KEEPALIVE_S)
            except Exception as exc:  # every failure ends the stream with its error event
                yield _sse("error", _failure(exc))
                return
            if outcome is None:
                yield b": keep-alive\n\n"
        yield _sse("end", outcome.model_dump_json())


def _failure(exc: Exception) -> str:
    """What the ``error`` event says about a call that has no outcome."""
    if isinstance(exc, JudgeFailure):
        return str(exc)
    if isinstance(exc, ServiceError):
        return one_line(exc)
    log.exception("ORS tool call failed", exc_info=exc)
    return "internal_error: see the service log"


def scorer(service: Service) -> Callable[[OrsEnvironment, dict[str, Any]], Any]:
    """How an episode scores its item: ``/v1/rewards``'s path (the service's target,
    limits, run and reward log)."""

    async def score(env: OrsEnvironment, item: dict[str, Any]) -> RewardResponse:
        target = service.target(env.config.target)
        options = env.config.options or RewardOptions()
        return await service.score(target, [item], options, run=env.config.run)

    return score


def session_router(ors: OrsRoutes) -> APIRouter:
    """The routes of the session's life: create, ping, delete, and the version."""
    router = APIRouter(tags=["ors"], route_class=OrsRoute)

    @router.post("/create_session", summary="ORS: a new session id (SSE)")
    async def create_session() -> StreamingResponse:
        """A new session id, as the ``task_id`` event of a stream that ends at once."""
        sid = uuid.uuid4().hex
        body = _sse("task_id", sid) + _sse("end", "")
        return StreamingResponse(iter([body]), media_type="text/event-stream")

    @router.post("/create", response_model=SessionOut, summary="ORS: open a session on a task")
    async def create(body: CreateRequest, sid: SID, service: ServiceDep) -> SessionOut:
        return ors.create(sid, body, service.ledger)

    @router.post("/ping", response_model=StatusOut, summary="ORS: keep a session open")
    async def ping(sid: SID) -> StatusOut:
        ors.episode(sid, None)
        return StatusOut()

    @router.post("/delete", response_model=SessionOut, summary="ORS: close a session")
    async def delete(sid: SID) -> SessionOut:
        ors.sessions.delete(sid.strip(), access.current_holder())
        return SessionOut(sid=sid.strip())

    @router.post("/delete_session", response_model=SessionOut, summary="ORS: forget a session id")
    async def delete_session(sid: SID) -> SessionOut:
        ors.sessions.delete(sid.strip(), access.current_holder())
        return SessionOut(sid=sid.strip())

    @router.get("/version", response_model=VersionOut, summary="ORS: the server's version")
    async def version() -> VersionOut:
        return VersionOut(version=__version__)

    return router
