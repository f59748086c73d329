"""The floor of bench part 2: a bare uvicorn + FastAPI ``POST /v1/rewards`` that calls no judge.

It parses the request body into the service's own wire model (``RewardRequest``) and answers
a ``RewardResponse`` of the shape the service gives for the bench's rubric (one judge, one
verdict per criterion with its answer probabilities, per item), serialized the way the
service's route does. Its CPU per request is the least any HTTP reward service on this stack
spends before making a judge call; with the raw client's own calls it gives the floor per
judge call that ``bench.overhead`` reports beside the service's CPU ratio.

Run by ``bench.overhead`` as its own process:
``python -m bench.overhead_floor --port P --judge primary --criteria a,b,c,d,e``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import uvicorn
from fastapi import FastAPI, Response

from bench.harness import Process, _python_env, free_port
from rewardsvc.protocol.rewards import (
    CriterionScore,
    JudgeResult,
    RewardRequest,
    RewardResponse,
    RewardResult,
    RubricRef,
    Usage,
)


def floor_app(judge: str, criteria: list[str]) -> FastAPI:
    """The floor endpoint: ``RewardRequest`` in, a fixed-score ``RewardResponse`` out."""
    app = FastAPI()

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/rewards", response_model=RewardResponse)
    async def rewards(body: RewardRequest) -> Response:
        results = []
        for item in body.items:
            verdicts = {c: CriterionScore(score=0.5, p={"Yes": 0.5, "No": 0.5}) for c in criteria}
            judged = JudgeResult(score=0.5, raw_score=0.5, criteria=verdicts)
            item_id = item.get("id", "") if isinstance(item, dict) else ""
            results.append(
                RewardResult(id=str(item_id), reward=0.5, status="ok", judges={judge: judged})
            )
        rubric = body.rubric if isinstance(body.rubric, str) else "inline"
        response = RewardResponse(
            rubric=RubricRef(id=rubric, version="floor"),
            results=results,
            usage=Usage(judge_calls=len(results) * len(criteria)),
        )
        return Response(response.model_dump_json(), media_type="application/json")

    return app


def start_floor(logs: Path, judge: str, criteria: list[str]) -> tuple[Process, str]:
    """The floor endpoint in its own process; returns it and its base URL."""
    port = free_port()
    argv = [sys.executable, "-m", "bench.overhead_floor", "--port", str(port), "--judge", judge]
    argv += ["--criteria", ",".join(criteria)]
    proc = Process(f"floor-{port}", argv, _python_env(), logs)
    url = f"http://127.0.0.1:{port}"
    proc.wait_http(f"{url}/healthz", timeout=30)
    return proc, url


def main() -> None:
    """Serve the floor endpoint on 127.0.0.1 until killed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--judge", default="primary")
    parser.add_argument("--criteria", required=True, help="comma-separated criterion ids")
    args = parser.parse_args()
    app = floor_app(args.judge, args.criteria.split(","))
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
