"""The application room's composition root, as the server, the CLI and ``rewardsvc eval``
use it: grader criteria scored in-process, everything closed, limits checked once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_api_support import app_client, settings_for

from rewardsvc.application.root import compose_local
from rewardsvc.core.rubric import Rubric
from rewardsvc.evaluation.scorers import LocalScorer
from rewardsvc.library.registry import Registry, load_pool
from rewardsvc.server import routes, service
from rewardsvc.server.service import start_service

ROOT = Path(__file__).resolve().parent.parent
POOL = load_pool(ROOT / "deploy" / "cpu-judge" / "judges.yaml")

REGEX_RECIPE = """\
kind: recipe
id: polite
components:
  - id: thanks
    grader: {type: regex, pattern: '(?i)thank', mode: must_match}
"""


async def test_eval_scores_a_rubric_grader_criterion(tmp_path: Path) -> None:
    """``rewardsvc eval``'s in-process scorer has graders (it used to build a bare engine,
    and every grader criterion came back ``internal``)."""
    rubric = Rubric.model_validate(
        {
            "id": "polite",
            "criteria": [
                {
                    "id": "thanks",
                    "grader": {"type": "regex", "pattern": "(?i)thank", "mode": "must_match"},
                }
            ],
            "judges": ["primary"],
            "combine": "worst",
        }
    )
    # The pool's judges are built (the rubric names one) but never asked: all is graded.
    app = await compose_local(settings_for(tmp_path), Registry(tmp_path, POOL))
    scorer = LocalScorer(rubric, app)
    try:
        answer = await scorer.rewards(
            [
                {"id": "yes", "prompt": "p", "completion": "Thank you!"},
                {"id": "no", "prompt": "p", "completion": "Go away."},
            ]
        )
    finally:
        await scorer.aclose()
    results = {r["id"]: r for r in answer["results"]}
    assert [results[i]["status"] for i in ("yes", "no")] == ["ok", "ok"], answer
    assert (results["yes"]["reward"], results["no"]["reward"]) == (1.0, 0.0), answer


async def test_closing_the_service_closes_its_webhook(tmp_path: Path) -> None:
    """The webhook the root built is closed with the service (its HTTP client leaked)."""
    settings = settings_for(tmp_path, monitor_webhook="http://127.0.0.1:9/alerts")
    running = await start_service(settings, Registry(tmp_path, POOL), judges={})
    webhook = running.app.webhook if hasattr(running, "app") else running.webhook
    assert webhook is not None
    await running.aclose()
    assert webhook.http.is_closed


async def test_a_request_checks_its_batch_size_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check_batch`` runs once per request (the route and the service both ran it)."""
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "polite.yaml").write_text(REGEX_RECIPE)
    calls: list[int] = []
    real = service.check_batch

    def counting(count: int, max_items: int, field: str = "items") -> None:
        calls.append(count)
        real(count, max_items, field)

    for module in (routes, service):
        if hasattr(module, "check_batch"):
            monkeypatch.setattr(module, "check_batch", counting)
    items: list[dict[str, Any]] = [{"id": "a", "prompt": "p", "completion": "thanks"}]
    async with app_client(settings_for(tmp_path), POOL) as (client, _, _):
        reply = await client.post("/v1/rewards", json={"rubric": "polite", "items": items})
    assert reply.status_code == 200, reply.text
    assert calls == [1]
