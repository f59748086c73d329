"""Python client of rewardsvc, the LLM-judge reward service, and its trainer adapters.

    from rewardsvc_client import Client
    with Client("http://127.0.0.1:8000") as client:
        response = client.rewards("helpful-answer", [{"prompt": "...", "completion": "..."}])
        print(response.rewards)

Adapters (imported on demand, none needs the trainer installed):
``rewardsvc_client.trl``, ``rewardsvc_client.verl``, ``rewardsvc_client.openrlhf``,
``rewardsvc_client.slime``, ``rewardsvc_client.verifiers``, ``rewardsvc_client.art``,
``rewardsvc_client.skyrl``, ``rewardsvc_client.areal``, ``rewardsvc_client.trl_async``, the
group adapters ``rewardsvc_client.groups``, the OpenRLHF agent helper
``rewardsvc_client.agent``; and the
verifiers 0.4 judge plugin, the top-level module ``rewardsvc_judge``. Per-prompt rubrics
(a dataset's rubric column sent with each item) go through ``rewardsvc_client.criteria``.

Errors: the client and every adapter raise only the tree of ``rewardsvc_client.errors``,
under ``RewardServiceError`` (transport failure, refusal with its kind, budget or deadline
exhausted, no reward).
"""

from rewardsvc_client.client import AsyncClient, Client
from rewardsvc_client.errors import (
    BudgetExceededError,
    DeadlineExceededError,
    ExhaustedError,
    RefusedError,
    RewardServiceError,
    RewardsvcNoReward,
    TransportError,
)
from rewardsvc_client.types import (
    ComparativeUsage,
    GroupResponse,
    GroupResult,
    Item,
    Message,
    Options,
    PreferenceResponse,
    PreferenceResult,
    RewardResponse,
    RewardResult,
    RubricRef,
    StageUsage,
    Status,
    Usage,
)

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "BudgetExceededError",
    "Client",
    "ComparativeUsage",
    "DeadlineExceededError",
    "ExhaustedError",
    "GroupResponse",
    "GroupResult",
    "Item",
    "Message",
    "Options",
    "PreferenceResponse",
    "PreferenceResult",
    "RefusedError",
    "RewardResponse",
    "RewardResult",
    "RewardServiceError",
    "RewardsvcNoReward",
    "RubricRef",
    "StageUsage",
    "Status",
    "TransportError",
    "Usage",
    "__version__",
]
