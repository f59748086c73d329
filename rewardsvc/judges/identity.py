"""What a judge's verdicts are keyed by, and what it defuses, from its pool entry.

``identity_text`` is the judge's part of every verdict-cache key: a change to anything that
can change a verdict (model, revision, API, method, sampling, prompts, reasoning, a reward
model's settings, an agentic judge's tools and loop bounds, the defusing of the model's own
tokens, whether it sees images) must make new keys.

``served_identity`` is what the judge is as the golden monitor watches it: the configured
model and ``revision`` and what its endpoint reports (``GET /v1/models``: the model's id,
``root`` and ``max_model_len``, as vLLM gives them). A change of any of them while the
service runs is a change of judge under the same name.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from rewardsvc.core.pool import JudgeConfig
from rewardsvc.judges import prompts
from rewardsvc.judges.reasoning import reasoning_identity
from rewardsvc.safety.defuse import DEFAULT_DEFUSER, Defuser


def identity_text(
    name: str, config: JudgeConfig, defuser: Defuser, reward_model: BaseModel | None = None
) -> str:
    """The cache identity of judge ``name``: its name, model and ``revision``, API, method,
    sampling, prompt version, reasoning, the ``reward_model`` settings in force and the
    defusing of the model's own special tokens, as canonical JSON."""
    identity = {
        "judge": name,
        "model": config.model,
        "api": config.api,
        "method": config.method,
        "sampling": config.sampling.model_dump(mode="json"),
        "prompts": prompts.PROMPT_VERSION,
    }
    if config.revision is not None:
        identity["revision"] = config.revision
    if reward_model is not None:
        identity["reward_model"] = reward_model.model_dump(mode="json")
    if config.tools is not None:  # an agentic judge's tools and loop bounds
        identity["tools"] = config.tools.model_dump(mode="json")
    if defuser.extra_tokens:
        identity["defuser"] = defuser.fingerprint
    if config.capabilities.vision:  # it sees the images a text-only judge reads as placeholders
        identity["sees"] = "images"
    return json.dumps(
        {**identity, **reasoning_identity(config)}, sort_keys=True, separators=(",", ":")
    )


def defuser_for(config: JudgeConfig) -> Defuser:
    """The defuser of a judge: the shared default, or one that also breaks the judge
    model's own ``special_tokens`` (and a process reward model's step separator)."""
    tokens = list(getattr(config, "special_tokens", ()))
    settings = getattr(config, "reward_model", None)
    if settings is not None and settings.step_separator:  # no completion adds or moves steps
        tokens.append(settings.step_separator)
    return Defuser(extra_tokens=tokens) if tokens else DEFAULT_DEFUSER


SERVED_FIELDS = ("root", "max_model_len", "owned_by")
"""What a ``GET /v1/models`` entry tells of the weights behind a name (vLLM: ``root`` is the
model path or repository the server loaded)."""


def served_identity(config: JudgeConfig, models: dict[str, Any]) -> dict[str, str]:
    """The judge's identity from its pool entry and its endpoint's ``GET /models`` reply:
    ``model`` and ``revision`` as configured; ``served`` the ids the endpoint lists; and,
    for the entry whose id is the configured model (else the first), its ``root``,
    ``max_model_len`` and ``owned_by``. Values are text, fields absent when unknown."""
    entries = [e for e in models.get("data") or () if isinstance(e, dict)]
    identity = {"model": config.model}
    if config.revision is not None:
        identity["revision"] = config.revision
    identity["served"] = ",".join(sorted(str(e.get("id")) for e in entries))
    chosen = next((e for e in entries if e.get("id") == config.model), None)
    if chosen is None and entries:
        chosen = entries[0]
    for name in SERVED_FIELDS:
        value = (chosen or {}).get(name)
        if value is not None:
            identity[name] = str(value)
    return identity
