"""``POST /v1/monitor/golden``: re-score golden sets now (the records' wire view is
``rewardsvc.server.monitor_views.golden_out``, as ``GET /v1/monitor`` reports them).

The re-score runs as the schedule's does (cache bypassed, the judges' turns, the golden
budget), one at a time: a request while another re-score runs is refused with 429
``overloaded``. Only an unrestricted API key may ask for one (it spends judge calls of
every run).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from rewardsvc.core.errors import ErrorKind, Refused, RequestError, Unavailable
from rewardsvc.monitor.golden_runner import GoldenBusy, GoldenRunner
from rewardsvc.protocol.monitor import GoldenReport, GoldenRequest
from rewardsvc.server.access import GRANT
from rewardsvc.server.errors import error_responses
from rewardsvc.server.monitor_views import golden_out


async def get_golden(request: Request) -> GoldenRunner:
    """The app's golden runner: ``app.state.service.app.golden``, else ``app.state.golden``."""
    service = getattr(request.app.state, "service", None)
    application = getattr(service, "app", None)
    runner: GoldenRunner | None = getattr(application, "golden", None) or getattr(
        request.app.state, "golden", None
    )
    if runner is None:
        # Nothing to re-score is the deployment's choice, not a fault: a 404, never a 5xx.
        raise RequestError(
            "no golden sets are re-scored (none in the library, or REWARDSVC_GOLDEN_BUDGET=0)",
            kind=ErrorKind.NOT_FOUND,
        )
    return runner


router = APIRouter()


@router.post(
    "/v1/monitor/golden",
    tags=["monitor"],
    responses=error_responses(
        ErrorKind.INVALID_REQUEST, ErrorKind.FORBIDDEN, ErrorKind.NOT_FOUND, ErrorKind.OVERLOADED
    ),
)
async def post_golden(
    runner: Annotated[GoldenRunner, Depends(get_golden)], body: GoldenRequest | None = None
) -> GoldenReport:
    """Re-score golden sets now, cache bypassed: every (rubric, judge) pair, or those of
    ``rubric`` and ``judge``, within the golden budget (the rest is ``deferred``). With
    ``rebaseline`` this re-score becomes the judges' new baseline."""
    if GRANT.get() is not None:
        raise Refused("a scoped API key may not ask for golden re-scores", kind=ErrorKind.FORBIDDEN)
    body = body or GoldenRequest()
    if body.rubric is not None and body.rubric not in runner.sets:
        raise RequestError.at(("rubric",), f"no golden set for rubric {body.rubric!r}")
    judges = {j for js in runner.judges.values() for j in js}
    if body.judge is not None and body.judge not in judges:
        raise RequestError.at(("judge",), f"no rubric with a golden set uses judge {body.judge!r}")
    try:
        records, deferred = await runner.rescore(body.rubric, body.judge, body.rebaseline)
    except GoldenBusy as exc:
        raise Unavailable(str(exc), kind=ErrorKind.OVERLOADED, retry_after=5) from exc
    return GoldenReport(golden=[golden_out(r, False) for r in records], deferred=deferred)
