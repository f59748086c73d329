"""The client's shared machinery: logic written once as steps and driven blocking or in asyncio,
clients shared per service, and the group adapters' re-sending built on it."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Generator
from typing import Any

import pytest

from rewardsvc_client._adapt import LoopClients, Settings, ThreadClients
from rewardsvc_client._retrying import drive, drive_sync, resending
from rewardsvc_client._steps import run_async, run_sync
from rewardsvc_client.client import RewardServiceError
from rewardsvc_client.groups import GroupScoring
from rewardsvc_client.types import GroupResponse, RewardResponse


def _logic(log: list[str]) -> Generator[Any, Any, list[Any]]:
    """Waits, asks twice; the first answer is an error that the logic handles itself."""
    yield 0.0
    log.append("waited")
    try:
        yield "boom"
    except ValueError as exc:
        log.append(f"caught {exc}")
    answer = yield "hello"
    return [answer, len(log)]


def _perform(step: str) -> str:
    if step == "boom":
        raise ValueError("boom")
    return step.upper()


async def _perform_async(step: str) -> str:
    await asyncio.sleep(0)
    return _perform(step)


def test_both_drivers_wait_perform_and_hand_errors_back() -> None:
    blocking: list[str] = []
    in_loop: list[str] = []
    assert run_sync(_logic(blocking), _perform) == ["HELLO", 2]
    assert asyncio.run(run_async(_logic(in_loop), _perform_async)) == ["HELLO", 2]
    assert blocking == in_loop == ["waited", "caught boom"]


def _unhandled() -> Generator[Any, Any, None]:
    yield "boom"


def test_an_error_the_logic_does_not_handle_reaches_the_caller() -> None:
    with pytest.raises(ValueError, match="boom"):
        run_sync(_unhandled(), _perform)
    with pytest.raises(ValueError, match="boom"):
        asyncio.run(run_async(_unhandled(), _perform_async))


SETTINGS = Settings(url="http://127.0.0.1:9", rubric="r", timeout=5.0)


def test_shared_clients_are_one_per_service_and_run_and_kind() -> None:
    shared = LoopClients.shared(SETTINGS)
    assert LoopClients.shared(dataclasses.replace(SETTINGS, rubric="other")) is shared
    assert LoopClients.shared(dataclasses.replace(SETTINGS, run="exp")) is not shared
    assert LoopClients.shared(dataclasses.replace(SETTINGS, api_key="k")) is not shared
    assert ThreadClients.shared(SETTINGS) is not shared
    assert isinstance(ThreadClients.shared(SETTINGS), ThreadClients)


def _group_result(rewards: list[float | None], status: str) -> dict[str, Any]:
    return {"id": "0", "rewards": rewards, "status": status}


class _ScriptedClient:
    """Answers ``groups`` (or ``rewards``) from a script; records what it was asked."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, list[dict[str, Any]], Any]] = []

    def _next(self, kind: str, entries: list[dict[str, Any]], options: Any) -> Any:
        self.asked.append((kind, entries, options))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def groups(self, rubric: str, entries: Any, options: Any, *, run: Any) -> Any:
        return self._next("groups", entries, options)

    def rewards(self, rubric: str, entries: Any, options: Any, *, run: Any) -> Any:
        return self._next("rewards", entries, options)


def _groups(*results: dict[str, Any]) -> GroupResponse:
    return GroupResponse.from_json({"results": list(results)})


async def test_group_scoring_resends_judge_error_groups_with_its_method() -> None:
    scoring = GroupScoring(SETTINGS, "pairwise", judge_error_wait=30.0)
    client = _ScriptedClient(
        [
            _groups(_group_result([0.2, 0.8], "ok"), _group_result([None, None], "judge_error")),
            _groups(_group_result([0.6, 0.4], "ok")),
        ]
    )
    scoring.clients.get = lambda: client  # type: ignore[method-assign]
    groups = [{"id": "a", "completions": ["x", "y"]}, {"id": "b", "completions": ["u", "v"]}]
    results = await scoring.score(groups)
    assert [r.rewards for r in results] == [[0.2, 0.8], [0.6, 0.4]]
    assert [(kind, [g["id"] for g in sent]) for kind, sent, _ in client.asked] == [
        ("groups", ["a", "b"]),
        ("groups", ["b"]),
    ]
    assert all(options == {"method": "pairwise"} for _, _, options in client.asked)


async def test_group_scoring_keeps_results_when_a_resend_fails() -> None:
    scoring = GroupScoring(SETTINGS, "listwise", judge_error_wait=30.0)
    client = _ScriptedClient(
        [
            _groups(_group_result([None], "judge_error")),
            RewardServiceError("down", status_code=502),
        ]
    )
    scoring.clients.get = lambda: client  # type: ignore[method-assign]
    (result,) = await scoring.score([{"id": "a", "completions": ["x"]}])
    assert result.status == "judge_error" and len(client.asked) == 2


def test_saturated_service_is_waited_for_then_answers() -> None:
    items = [{"id": "0", "prompt": "p", "completion": "c"}]
    ok = RewardResponse.from_json({"results": [{"id": "0", "reward": 0.5, "status": "ok"}]})
    saturated = RewardServiceError("busy", status_code=429, retry_after=0.0)
    client = _ScriptedClient([saturated, ok])
    results = drive_sync(client, resending(SETTINGS, items, 0))  # type: ignore[arg-type]
    assert [r.reward for r in results] == [0.5]
    assert [kind for kind, _, _ in client.asked] == ["rewards", "rewards"]


async def test_async_drive_raises_what_waiting_cannot_fix() -> None:
    items = [{"id": "0", "prompt": "p", "completion": "c"}]
    unknown = RewardServiceError("unknown rubric", status_code=404)

    class _AsyncRewards(_ScriptedClient):
        async def rewards(self, rubric: str, entries: Any, options: Any, *, run: Any) -> Any:  # type: ignore[override]
            return self._next("rewards", entries, options)

    client = _AsyncRewards([unknown])
    with pytest.raises(RewardServiceError, match="unknown rubric"):
        await drive(client, resending(SETTINGS, items, 2))  # type: ignore[arg-type]
    assert len(client.asked) == 1
