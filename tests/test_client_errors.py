"""The client's exception tree (``rewardsvc_client.errors``): each class raised in its real
situation, against a scripted local service (``test_client_adapters.FakeService``) or a
port where nothing listens, and no adapter raising anything outside the tree."""

from __future__ import annotations

import ast
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_client_adapters import FakeService, by_completion
from test_client_trainers import Trajectory, TrajectoryGroup

import rewardsvc_client
from rewardsvc_client import areal, art, errors, tinker
from rewardsvc_client._adapt import Settings
from rewardsvc_client._retrying import drive_sync, patient
from rewardsvc_client.areal import make_reward_fn
from rewardsvc_client.client import Client
from rewardsvc_client.errors import (
    BudgetExceededError,
    DeadlineExceededError,
    ExhaustedError,
    RefusedError,
    RewardServiceError,
    RewardsvcNoReward,
    TransportError,
)
from rewardsvc_client.trl import trl_reward_func

CLIENT_SRC = Path(__file__).resolve().parents[1] / "clients" / "python" / "src"
DEAD = "http://127.0.0.1:9"  # nothing listens: every request fails
ITEM = {"prompt": "What is 2 + 3?", "completion": "5", "reference": "5"}


@pytest.fixture
def fake() -> Iterator[FakeService]:
    service = FakeService()
    yield service
    service.close()


def refusal(status: int, kind: str, field: str | None = None) -> tuple[int, dict[str, Any]]:
    """The service's ErrorDetail answer (rewardsvc/server/errors.py)."""
    return status, {"error": kind, "message": f"{kind} here", "field": field}


def test_one_tree_under_the_public_base() -> None:
    classes = [getattr(errors, name) for name in errors.__all__ if name[0].isupper()]
    assert all(issubclass(c, RewardServiceError) for c in classes)
    assert issubclass(BudgetExceededError, RefusedError)
    assert issubclass(BudgetExceededError, ExhaustedError)
    assert issubclass(DeadlineExceededError, ExhaustedError)
    # Users' code keeps working: the old names are the tree's classes.
    assert rewardsvc_client.RewardServiceError is RewardServiceError
    assert rewardsvc_client.client.RewardServiceError is RewardServiceError
    assert issubclass(RewardsvcNoReward, RuntimeError)
    assert areal.RewardsvcNoReward is tinker.RewardsvcNoReward is RewardsvcNoReward
    assert art.RewardsvcScoreError is RewardsvcNoReward
    assert all(getattr(rewardsvc_client, c.__name__) is c for c in classes)


def test_every_exception_crosses_a_process_boundary() -> None:
    """AReaL runs the reward function in a process pool: what it raises is pickled."""
    for cls in [getattr(errors, name) for name in errors.__all__ if name[0].isupper()]:
        if cls is RewardsvcNoReward:
            raised = cls("no reward (status rejected)", status="rejected")
        else:
            raised = cls("refused", status_code=404, error="unknown_rubric", field="rubric")
        copy = pickle.loads(pickle.dumps(raised))
        assert type(copy) is cls and str(copy) == str(raised)
        assert copy.__dict__ == raised.__dict__


def _raised_names(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name):
                yield node.lineno, target.id


# Argument errors of the Python API (a bad keyword, an empty URL) are Python's own, raised
# before anything is sent; the rest builds or re-raises the tree's classes.
ARGUMENT_ERRORS = {"ValueError", "TypeError"}
BUILDERS = {"no_reward", "_unreachable", "_error_from_response", "exc"}
NOT_RAISED = {"NotImplementedError", "AssertionError"}  # a signature stub, an unreachable line


def test_adapters_define_and_raise_only_the_tree() -> None:
    allowed = set(errors.__all__) | ARGUMENT_ERRORS | BUILDERS | NOT_RAISED
    stray = []
    for path in sorted(CLIENT_SRC.glob("rewardsvc_*/*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(CLIENT_SRC).as_posix()
        stray += [f"{where}:{line} raises {name}" for line, name in _raised_names(tree)]
        stray = [s for s in stray if s.rsplit(" ", 1)[1] not in allowed]
        if path.name != "errors.py":
            classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
            stray += [
                f"{where}:{c.lineno} defines {c.name}({ast.unparse(base)})"
                for c in classes
                for base in c.bases
                if ast.unparse(base).endswith(("Error", "Exception"))
            ]
    assert not stray, stray


async def test_transport_failure_unreachable_and_unreadable(fake: FakeService) -> None:
    with Client(DEAD, retries=0) as client, pytest.raises(TransportError) as info:
        client.rewards("r", [ITEM])
    assert info.value.status_code is None
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    fake.script = lambda body: (200, {"rubric": {"id": "r"}, "results": []})
    with Client(fake.url) as client, pytest.raises(TransportError, match="0 results for 1"):
        client.rewards("r", [ITEM])
    # An adapter that raises on a failed request raises the same class (TRL, on_error="raise").
    reward = trl_reward_func(DEAD, "r", retries=0)
    with pytest.raises(TransportError):
        await reward(prompts=["p"], completions=["c"])


async def test_refusal_carries_its_kind_status_and_field(fake: FakeService) -> None:
    fake.script = lambda body: refusal(404, "unknown_rubric", "rubric")
    with Client(fake.url) as client, pytest.raises(RefusedError) as info:
        client.rewards("nope", [ITEM])
    refused = info.value
    assert (refused.status_code, refused.kind, refused.field) == (404, "unknown_rubric", "rubric")
    assert not isinstance(refused, ExhaustedError)
    # 503 is retried by the client (Retry-After: 0), then refused with the service's kind.
    fake.script = lambda body: refusal(503, "unavailable")
    with Client(fake.url, retries=1) as client, pytest.raises(RefusedError) as info:
        client.rewards("r", [ITEM])
    assert (info.value.status_code, info.value.kind, info.value.retry_after) == (
        503,
        "unavailable",
        0.0,
    )
    assert len(fake.requests) == 1 + 2
    fake.script = lambda body: refusal(422, "invalid_request", "items[0].completion")
    with pytest.raises(RefusedError) as info:
        await trl_reward_func(fake.url, "r", on_error="none")(prompts=["p"], completions=["c"])
    assert info.value.field == "items[0].completion"  # a configuration error: always raised


def test_budget_exhausted_is_a_refusal_every_adapter_raises(fake: FakeService) -> None:
    fake.script = lambda body: refusal(402, "budget_exceeded", "run")
    reward_fn = make_reward_fn(fake.url, "r", budget=5.0, run="spent")
    with pytest.raises(BudgetExceededError) as info:
        reward_fn("p", "c", [1], [2], answer="5")
    assert (info.value.status_code, info.value.kind) == (402, "budget_exceeded")
    assert len(fake.requests) == 1  # never retried


def test_deadline_exhausted_while_saturated_and_without_an_answer(fake: FakeService) -> None:
    fake.script = lambda body: refusal(429, "overloaded")
    settings = Settings.resolve(fake.url, "r", timeout=0.5, retries=0)
    with settings.client() as client, pytest.raises(DeadlineExceededError) as info:
        drive_sync(client, patient(settings, [dict(ITEM, id="0")]))
    assert (info.value.status_code, info.value.kind) == (429, "overloaded")
    assert isinstance(info.value.__cause__, RefusedError)
    assert len(fake.requests) > 1  # asked again while the wait lasted
    # AReaL: no request got through within the attempt's budget.
    with pytest.raises(DeadlineExceededError) as info:
        make_reward_fn(DEAD, "r", budget=1.0)("p", "c", [1], [2], answer="5")
    assert isinstance(info.value.__cause__, TransportError)


@pytest.mark.parametrize(
    ("completion", "status"), [("fail", "judge_error"), ("reject", "rejected")]
)
def test_no_reward_for_an_answer_with_reward_null(
    fake: FakeService, completion: str, status: str
) -> None:
    reward_fn = make_reward_fn(fake.url, "r", budget=1.0)
    with pytest.raises(RewardsvcNoReward) as info:
        reward_fn("p", completion, [1], [2], answer="5")
    assert info.value.status == status and status in str(info.value)


class Env:
    """What ``compute_group_rewards`` reads of a Tinker env: its item."""

    def __init__(self, completion: str) -> None:
        self.completion = completion

    def item(self, index: int) -> dict[str, Any]:
        return dict(ITEM, id=str(index), completion=self.completion)


async def test_no_reward_in_tinker_and_art(fake: FakeService) -> None:
    scorer = tinker.make_scorer(fake.url, "r", judge_error_wait=0)
    builder = tinker.RewardsvcEnvGroupBuilder(None, [], scorer, 2, reward_at="group")
    with pytest.raises(RewardsvcNoReward) as info:
        await builder.compute_group_rewards([None, None], [Env("0.5"), Env("reject")])
    assert info.value.status == "rejected"

    def last_message(item: dict[str, Any]) -> dict[str, Any]:
        return by_completion({"completion": item["completion"][-1]["content"]})

    fake.script = lambda body: [last_message(i) for i in body["items"]]
    trajectories = [Trajectory("0.5"), Trajectory("fail"), Trajectory("0.25")]
    scored = await art.make_group_scorer(fake.url, "r", judge_error_wait=0)(
        TrajectoryGroup(trajectories)
    )
    (failed,) = scored.exceptions
    assert isinstance(failed, RewardsvcNoReward) and failed.status == "judge_error"


def test_the_tree_is_documented_where_users_read() -> None:
    """The hand-drawn trees of the client README and the reference page name every class
    (the reference table below the tree is generated: tests/test_docs.py)."""
    root = CLIENT_SRC.parents[2]
    pages = [root / "clients" / "python" / "README.md", root / "docs" / "reference" / "client.md"]
    classes = [name for name in errors.__all__ if name[0].isupper()]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        tree = text[text.index("RewardServiceError  ") :].split("```")[0]
        assert [n for n in classes if n not in tree] == [], page.name
