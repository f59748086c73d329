"""A stub judge with a fixed latency per call, for the cost-growth part of the benchmark.

It is ``tests/fakejudge.py``'s server with every request delayed by ``--delay-ms`` (the
fake's ``timeout`` behaviour sleeps ``delay_s`` and then answers normally), so it speaks
exactly the shapes the fake does. Run: ``python -m bench.stub --port 9101 --delay-ms 5``.
"""

from __future__ import annotations

import argparse
import sys

import uvicorn

from bench.harness import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tests"))
from fakejudge import Script, make_app


def main() -> None:
    """Serve the delayed stub in the foreground."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, default=5.0)
    args = parser.parse_args()
    script = Script(default="timeout", delay_s=args.delay_ms / 1000.0, record_bodies=False)
    uvicorn.run(make_app(script), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
