"""The per-environment ORS routes (``/{env}/…``, and the same without ``/{env}`` for the
first environment): splits, tasks, tools, the session's prompt and its tool calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import StreamingResponse
from starlette.routing import BaseRoute

from rewardsvc.core.errors import RequestError
from rewardsvc.ors.environments import OrsTask
from rewardsvc.ors.sessions import answer_tool
from rewardsvc.protocol.ors import (
    MessageOut,
    NumTasksOut,
    SplitOut,
    SplitRequest,
    TaskOut,
    TaskRangeRequest,
    TaskRequest,
    TasksOut,
    TextBlock,
    ToolCallRequest,
    ToolsOut,
)
from rewardsvc.server.ors import SID, OrsRoute, OrsRoutes, check_names, session_router
from rewardsvc.server.service import ServiceDep


def messages_of(task: OrsTask) -> list[MessageOut]:
    """The prompt as chat messages of text blocks."""
    return [MessageOut(role=m.role, blocks=[TextBlock(text=m.content)]) for m in task.messages()]


def prompt_of(task: OrsTask) -> list[TextBlock]:
    """The prompt as one text block (chat messages: their texts, one per paragraph)."""
    prompt = task.task.prompt
    text = prompt if isinstance(prompt, str) else "\n\n".join(m.content for m in prompt)
    return [TextBlock(text=text)]


def split_type(name: str) -> Any:
    """The ORS type of split ``name``: its own name when it is one, else validation."""
    return name if name in ("train", "validation", "test") else "validation"


def _name(request: Request) -> str | None:
    """The environment the path names (None: the default one)."""
    name = request.path_params.get("env_name")
    return None if name is None else str(name)


def env_router(ors: OrsRoutes) -> APIRouter:
    """The per-environment routes, each at ``/{env_name}/<route>`` and ``/<route>``."""
    router = APIRouter(tags=["ors"], route_class=OrsRoute)

    def add(method: str, route: str, handler: Callable[..., Any], model: Any) -> None:
        for path in (f"/{{env_name}}/{route}", f"/{route}"):
            router.add_api_route(
                path,
                handler,
                methods=[method],
                response_model=model,
                summary=f"ORS: {handler.__doc__}",
                include_in_schema=path.startswith("/{"),
            )

    async def splits(request: Request) -> list[SplitOut]:
        """the environment's splits"""
        env = ors.env(_name(request))
        return [SplitOut(name=s, type=split_type(s)) for s in env.splits]

    async def tasks(request: Request, body: SplitRequest) -> TasksOut:
        """every task spec of a split"""
        env = ors.env(_name(request))
        return TasksOut(tasks=[t.spec for t in ors.split(env, body.split)], env_name=env.name)

    async def num_tasks(request: Request, body: SplitRequest) -> NumTasksOut:
        """the number of tasks of a split"""
        return NumTasksOut(num_tasks=len(ors.split(ors.env(_name(request)), body.split)))

    async def task(request: Request, body: TaskRequest) -> TaskOut:
        """one task spec by split and index"""
        env = ors.env(_name(request))
        found = ors.split(env, body.split)
        if not -len(found) <= body.index < len(found):
            raise RequestError("Invalid index", field="index")
        return TaskOut(task=found[body.index].spec, env_name=env.name)

    async def task_range(request: Request, body: TaskRangeRequest) -> TasksOut:
        """the task specs of range(start, stop)"""
        env = ors.env(_name(request))
        found = ors.split(env, body.split)[body.start : body.stop]
        return TasksOut(tasks=[t.spec for t in found], env_name=env.name)

    async def tools(request: Request) -> ToolsOut:
        """the environment's tools"""
        return ToolsOut(tools=[answer_tool(ors.env(_name(request)))])

    add("GET", "splits", splits, list[SplitOut])
    add("POST", "tasks", tasks, TasksOut)
    add("POST", "num_tasks", num_tasks, NumTasksOut)
    add("POST", "task", task, TaskOut)
    add("POST", "task_range", task_range, TasksOut)
    add("GET", "tools", tools, ToolsOut)
    add_session_routes(ors, add)
    return router


def add_session_routes(ors: OrsRoutes, add: Callable[[str, str, Any, Any], None]) -> None:
    """The routes of one session: its tools, its prompt and its tool calls."""

    async def task_tools(request: Request, sid: SID) -> ToolsOut:
        """the session's tools"""
        return ToolsOut(tools=[answer_tool(ors.episode(sid, _name(request)).env)])

    async def prompt(request: Request, sid: SID) -> list[TextBlock]:
        """the session's prompt as text blocks"""
        return prompt_of(ors.episode(sid, _name(request)).task)

    async def messages(request: Request, sid: SID) -> list[MessageOut]:
        """the session's prompt as chat messages"""
        return messages_of(ors.episode(sid, _name(request)).task)

    async def call(
        request: Request, body: ToolCallRequest, sid: SID, service: ServiceDep
    ) -> StreamingResponse:
        """call a tool (SSE: task_id, keep-alives, then end or error)"""
        return ors.call(ors.episode(sid, _name(request)), body, service)

    add("GET", "task_tools", task_tools, ToolsOut)
    add("GET", "prompt", prompt, list[TextBlock])
    add("GET", "messages", messages, list[MessageOut])
    add("POST", "call", call, None)


def add_ors(app: FastAPI, ors: OrsRoutes) -> list[BaseRoute]:
    """Serve ``ors``'s environments on ``app`` (after its own routes, which keep their
    paths: an environment named like one of them is refused); the ORS routes, whose
    refusals are in ORS's form even when a middleware refuses before routing."""
    check_names(ors.envs, app)
    routers = [session_router(ors), env_router(ors)]
    for router in routers:
        app.include_router(router)
    return [route for router in routers for route in router.routes]
