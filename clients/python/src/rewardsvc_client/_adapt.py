"""Pieces shared by the trainer adapters: configuration, text conversion, client reuse."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

from rewardsvc_client._media import wire_content
from rewardsvc_client.client import (
    DEFAULT_MAX_BATCH,
    DEFAULT_TIMEOUT,
    AsyncClient,
    Client,
    RewardServiceError,
)
from rewardsvc_client.criteria import CriteriaOptions, with_criteria
from rewardsvc_client.types import RewardResult

logger = logging.getLogger("rewardsvc_client")

ENV_URL = "REWARDSVC_URL"
ENV_RUBRIC = "REWARDSVC_RUBRIC"
ENV_API_KEY = "REWARDSVC_API_KEY"
ENV_TIMEOUT = "REWARDSVC_TIMEOUT"
ENV_FAILURE_SCORE = "REWARDSVC_FAILURE_SCORE"
ENV_RUN = "REWARDSVC_RUN"


@dataclass(frozen=True)
class Settings:
    """Where and how an adapter reaches the service. Picklable (no live connections)."""

    url: str
    rubric: str
    api_key: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    retries: int = 3
    max_batch: int = DEFAULT_MAX_BATCH
    options: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    run: str | None = None

    @classmethod
    def resolve(
        cls,
        url: str | None,
        rubric: str | None,
        api_key: str | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> Settings:
        """Fill what the caller left out from REWARDSVC_URL, REWARDSVC_RUBRIC,
        REWARDSVC_API_KEY, REWARDSVC_TIMEOUT and REWARDSVC_RUN; ``criteria_format`` and
        ``criteria_mode`` (else REWARDSVC_CRITERIA_FORMAT / _MODE) go into the options."""
        url = url or os.environ.get(ENV_URL)
        rubric = rubric or os.environ.get(ENV_RUBRIC)
        if not url:
            raise ValueError(f"no rewardsvc URL: pass url=... or set {ENV_URL}")
        if not rubric:
            raise ValueError(f"no rubric: pass rubric=... or set {ENV_RUBRIC}")
        if api_key is None:
            api_key = os.environ.get(ENV_API_KEY) or None
        if timeout is None:
            timeout = float(os.environ.get(ENV_TIMEOUT) or DEFAULT_TIMEOUT)
        if kwargs.get("run") is None:
            kwargs["run"] = os.environ.get(ENV_RUN) or None
        criteria = CriteriaOptions.resolve(
            kwargs.pop("criteria_format", None), kwargs.pop("criteria_mode", None)
        )
        kwargs["options"] = criteria.merged(kwargs.get("options"))
        return cls(url=url, rubric=rubric, api_key=api_key, timeout=timeout, **kwargs)

    def async_client(self) -> AsyncClient:
        """A new AsyncClient; it must be used in the event loop that runs this call."""
        return AsyncClient(self.url, **self._client_args())

    def client(self) -> Client:
        """A new blocking Client."""
        return Client(self.url, **self._client_args())

    def _client_args(self) -> dict[str, Any]:
        return {
            "api_key": self.api_key,
            "timeout": self.timeout,
            "retries": self.retries,
            "max_batch": self.max_batch,
            "headers": self.headers,
        }


def is_configuration_error(exc: RewardServiceError) -> bool:
    """A 4xx other than 408/429: the request itself is wrong (unknown rubric, bad key,
    invalid options). Retrying or masking cannot fix it, so adapters always raise it."""
    return (
        exc.status_code is not None
        and 400 <= exc.status_code < 500
        and (exc.status_code not in (408, 429))
    )


def failure_score_default(given: float | None = None) -> float:
    """``given`` as a float, or when None REWARDSVC_FAILURE_SCORE or 0.0 (see the veRL adapter
    for why 0.0)."""
    if given is not None:
        return float(given)
    return float(os.environ.get(ENV_FAILURE_SCORE) or 0.0)


class _PerContext:
    """Clients kept per context (event loop, thread); pickles as its settings alone, since
    live connections do not travel to another process."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @classmethod
    def shared(cls, settings: Settings) -> Self:
        """The one instance of this process for the service and run of ``settings``: hooks
        configured anew on every call (veRL's ``reward_kwargs``, a verifiers judge config)
        still reuse their connections."""
        key = (cls, settings.url, settings.api_key, settings.timeout, settings.run)
        found = _shared.setdefault(key, cls(settings))
        assert isinstance(found, cls)
        return found

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self.settings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # The subclass's own __init__: it builds the per-context state that did not travel.
        type(self).__init__(self, state["settings"])


_shared: dict[tuple[Any, ...], _PerContext] = {}


class LoopClients(_PerContext):
    """One AsyncClient per running event loop, reused across calls.

    Trainers call per-sample reward functions thousands of times from a long-lived loop
    (veRL's reward workers, verifiers' rubric); reusing one connection pool per loop avoids a
    TCP connect per sample, and keying by loop keeps a pool from being used in a loop it
    does not belong to (asyncio.run in tests, several trainer loops in one process).
    """

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> AsyncClient:
        """The client of the running loop (created on first use)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self.settings.async_client()
            self._clients[loop] = client
        return client


class ThreadClients(_PerContext):
    """One blocking Client per thread (trainers call sync hooks from thread pools)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._local = threading.local()

    def get(self) -> Client:
        """The client of the calling thread (created on first use)."""
        client = getattr(self._local, "client", None)
        if client is None:
            client = self.settings.client()
            self._local.client = client
        return client


def _get(obj: Any, key: str) -> Any:
    """Read a key from a dict or an attribute from a message object (pydantic, dataclass)."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content")
"""The chat-message keys sent to the service: it renders tool calls (name, arguments), ties
each tool result to its call, reads reasoning text and flags non-text content parts."""


def _plain(value: Any) -> Any:
    """JSON-ready copy of message parts that may be pydantic models or other objects."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _plain(dump(exclude_none=True))
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if hasattr(value, "tolist"):  # numpy arrays and scalars (veRL's non-tensor batch)
        return _plain(value.tolist())
    if hasattr(value, "__dict__"):
        return {k: _plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


def _message(message: Any) -> dict[str, Any] | None:
    """One chat message (every key the service reads, whole) or Responses-API item (as it
    is); None for anything else."""
    role = _get(message, "role")
    if role is None:
        kind = _get(message, "type")
        return _plain(message) if isinstance(kind, str) else None
    content = _plain(wire_content(_get(message, "content")))
    out: dict[str, Any] = {"role": str(role), "content": content}
    for key in MESSAGE_KEYS[2:]:
        value = _get(message, key)
        if value is not None and value != []:
            out[key] = _plain(value)
    return out


def to_wire_text(value: Any) -> str | list[dict[str, Any]]:
    """A prompt or completion as the service takes it: a string, or a list of chat messages
    or Responses-API items. Messages keep their tool calls, tool_call_id, reasoning and
    content parts, so the judge sees what the agent did, not only what it said; an image
    part reaches the service as an ``image_url`` part (a PIL image or bytes as a data: URL,
    ``_media``)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and ("role" in value or "type" in value):
        value = [value]
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        messages = []
        for message in value:
            converted = _message(message)
            if converted is None:
                return str(value)
            messages.append(converted)
        return messages
    if hasattr(value, "tolist"):  # numpy arrays of messages (veRL keeps non-tensors in numpy)
        return to_wire_text(value.tolist())
    return str(value)


def to_reference(value: Any) -> str | None:
    """A dataset label as the reference string; None, "" and an empty collection mean no
    reference. A list, tuple or array of accepted answers becomes one string,
    ``"a | b | c"``. A structured label (a mapping, or a list holding mappings or lists:
    a code task's hidden test cases or test files) becomes its JSON text, which is what the
    code graders read from the reference."""
    if value is None:
        return None
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
    if isinstance(value, Mapping) or (
        isinstance(value, list | tuple)
        and any(isinstance(v, Mapping | list | tuple) for v in value)
    ):
        return json.dumps(_plain(value), ensure_ascii=False) if value else None
    if isinstance(value, list | tuple):
        answers = [a.strip() if isinstance(a, str) else str(a) for a in value if a is not None]
        text = " | ".join(a for a in answers if a != "")
    else:
        text = value if isinstance(value, str) else str(value)
    return text if text != "" else None


def with_reference(entry: dict[str, Any], label: Any) -> dict[str, Any]:
    """``entry`` (an item, or a group) with the label as its ``reference`` when it has one
    (``to_reference``)."""
    reference = to_reference(label)
    if reference is not None:
        entry["reference"] = reference
    return entry


def wire_item(
    index: int | str,
    prompt: Any,
    completion: Any,
    metadata: dict[str, Any],
    label: Any = None,
    criteria: Any = None,
) -> dict[str, Any]:
    """One item of POST /v1/rewards: id, prompt, completion and metadata as given (already
    converted), the label as the reference when it has one, and the sample's own criteria
    (a dataset's rubric value, ``rewardsvc_client.criteria``) when it has some."""
    item = {"id": str(index), "prompt": prompt, "completion": completion, "metadata": metadata}
    return with_criteria(with_reference(item, label), criteria)


F = TypeVar("F", bound=Callable[..., Any])


def named(function: F, name: str) -> F:
    """``function`` under ``name`` (``__name__`` and ``__qualname__``): trainers name a reward
    function's metrics and log columns after it."""
    function.__name__ = function.__qualname__ = name
    return function


def annotate_state(state: Any, info: dict[str, Any]) -> None:
    """Record the verdict ``info`` in a verifiers rollout state (a dict or dict-like model)."""
    # A state that refuses new keys loses only this annotation, never the reward.
    with contextlib.suppress(TypeError, AttributeError, KeyError):
        state["rewardsvc"] = info


def verdict(result: RewardResult | None) -> dict[str, Any]:
    """The service's verdict on one sample, for the trainer's per-sample record (slime's
    metadata, verifiers' state, the verifiers judge's trace info)."""
    if result is None:
        return {"status": "request_failed", "reward": None}
    return {
        "status": result.status,
        "reward": result.reward,
        "uncertainty": result.uncertainty,
        "flags": list(result.flags),
    }


def fallback_reward(
    result: RewardResult | None, failure_score: float, where: str, sample: str = "0"
) -> float:
    """The result's reward, or ``failure_score`` with a warning when it has none."""
    if result is not None and result.reward is not None:
        return result.reward
    why = "request failed" if result is None else f"status {result.status}: {result.error}"
    logger.warning(
        "rewardsvc %s: sample %s has no reward (%s); using failure_score %s",
        where,
        sample,
        why,
        failure_score,
    )
    return failure_score


def status_numbers(result: RewardResult | None, prefix: str = "rewardsvc_") -> dict[str, float]:
    """Numeric, fixed-key view of one result for trainers that log per-sample numbers
    (veRL reward_extra_info, OpenRLHF extra_logs): the keys are the same for every sample,
    failures included, because those trainers stack them into arrays."""
    if result is None:  # the request itself failed
        return {
            f"{prefix}valid": 0.0,
            f"{prefix}degraded": 0.0,
            f"{prefix}judge_error": 0.0,
            f"{prefix}rejected": 0.0,
            f"{prefix}request_failed": 1.0,
            f"{prefix}uncertainty": 0.0,
            f"{prefix}flagged": 0.0,
        }
    return {
        f"{prefix}valid": 1.0 if result.reward is not None else 0.0,
        f"{prefix}degraded": 1.0 if result.status == "degraded" else 0.0,
        f"{prefix}judge_error": 1.0 if result.status == "judge_error" else 0.0,
        f"{prefix}rejected": 1.0 if result.status == "rejected" else 0.0,
        f"{prefix}request_failed": 0.0,
        f"{prefix}uncertainty": float(result.uncertainty or 0.0),
        f"{prefix}flagged": 1.0 if result.flags else 0.0,
    }


__all__ = [
    "LoopClients",
    "RewardServiceError",
    "Settings",
    "ThreadClients",
    "annotate_state",
    "fallback_reward",
    "is_configuration_error",
    "logger",
    "named",
    "status_numbers",
    "to_reference",
    "to_wire_text",
    "verdict",
    "wire_item",
    "with_reference",
]
