"""The service in this process, for the code benches: the app with its lifespan running
behind an httpx client (ASGI, no socket), an empty rubric library, no verdict cache (each
item is graded, none answered from memory) and the real sandbox, and the recipe that
grades the corpus."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from rewardsvc.safety.tamper import TAMPER_PENALTIES
from rewardsvc.server.app import create_app
from rewardsvc.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
RECIPE_ID = "code-corpus"
COMPONENT = "tests"


def recipe(**limits: float) -> dict[str, Any]:
    """The inline recipe: the hidden tests (the item's reference) by ``unit_tests``, with
    ``limits`` (``wall_s``, ``cpu_s``, ...) over the grader's defaults, and every tamper
    flag's penalty written out (the defaults, so the recipe says what it costs). The
    workspace items stand for agents given the tests (``tests_shown``): one that lacks them
    deleted them."""
    grader = {"type": "unit_tests", "tests_shown": True, **limits}
    return {
        "kind": "recipe",
        "id": RECIPE_ID,
        "components": [{"id": COMPONENT, "grader": grader}],
        "flag_penalties": dict(TAMPER_PENALTIES),
    }


def settings(folder: Path, lanes: int = 2, **overrides: Any) -> Settings:
    """The service's settings: an empty library in ``folder``, no verdict cache, ``lanes``
    sandbox lanes, ``overrides`` over the rest."""
    values: dict[str, Any] = {
        "rubrics_dir": folder,
        "judge_pool": ROOT / "deploy" / "cpu-judge" / "judges.serve.yaml",
        "reload": False,
        "cache_size": 0,
        "sandbox_lanes": lanes,
        **overrides,
    }
    return Settings(**values)


@contextlib.asynccontextmanager
async def serving(lanes: int = 2, **overrides: Any) -> AsyncIterator[httpx.AsyncClient]:
    """The app in this process (:func:`settings`), behind an httpx client."""
    with tempfile.TemporaryDirectory(prefix="rewardsvc-code-bench-") as folder:
        app = create_app(settings(Path(folder), lanes, **overrides))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://rewardsvc.bench", timeout=600
            ) as client:
                yield client


async def grade(client: httpx.AsyncClient, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The results of ``items`` under :func:`recipe`, in order (raises on a non-200)."""
    reply = await client.post("/v1/rewards", json={"rubric": recipe(), "items": items})
    if reply.status_code != 200:
        raise RuntimeError(f"POST /v1/rewards: {reply.status_code} {reply.text[:500]}")
    results: list[dict[str, Any]] = reply.json()["results"]
    return results


def null_kind(result: dict[str, Any]) -> str:
    """Why a result has no reward: its grader's error kind, else its status."""
    component = (result.get("components") or {}).get(COMPONENT) or {}
    return str(component.get("error_kind") or result.get("status"))


def null_error(result: dict[str, Any]) -> str:
    """What a result without a reward says of why (its grader's error, else its own)."""
    component = (result.get("components") or {}).get(COMPONENT) or {}
    return str(component.get("error") or result.get("error"))[:300]
