"""An ORS episode run by the ``openreward`` client (in its own venv) against rewardsvc.

Usage: ``python ors_episode.py URL ENV SPLIT INDEX ANSWER [ANSWER...] OUT``. Lists the
environment's splits, tasks and tools, opens a session on task INDEX of SPLIT, reads its
prompt and calls the answer tool with each ANSWER in turn (a later one after the episode
finished is refused), and writes what the client returned to OUT as JSON: for every call
either the tool output (reward, finished, metadata) or the client's exception (its class
and message).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from openreward import OpenReward


def outcome(session: Any, tool: str, answer: str) -> dict[str, Any]:
    """One answer tool call as the client returned it."""
    try:
        out = session.call_tool(tool, {"answer": answer})
    except Exception as exc:  # the client's own classes: ToolCallError, ToolFailed, ...
        return {"exception": type(exc).__name__, "message": str(exc)}
    text = "\n".join(b.text for b in out.blocks)
    return {"reward": out.reward, "finished": out.finished, "metadata": out.metadata, "text": text}


def main() -> None:
    url, env_name, split, index, *answers, out = sys.argv[1:]
    # The client's sessions host: a self-hosted ORS server's own URL.
    os.environ["OPENREWARD_SESSION_URL"] = url
    client = OpenReward(api_key=os.environ.get("ORS_API_KEY", ""))
    env = client.environments.get(env_name, variant=env_name if env_name != "-" else None)
    found: dict[str, Any] = {
        "splits": env.list_splits(),
        "tasks": [t.task_spec for t in env.list_tasks(split)],
        "num_tasks": env.num_tasks(split),
        "tools": [t.name for t in env.list_tools()],
    }
    with env.session(split=split, index=int(index)) as session:
        found["prompt"] = [b.text for b in session.get_prompt()]
        tool = session.list_tools()[0].name
        found["calls"] = [outcome(session, tool, a) for a in answers]
    client.close()
    with open(out, "w") as f:
        json.dump(found, f)


if __name__ == "__main__":
    main()
