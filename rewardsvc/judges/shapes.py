"""API shapes: how a judge call looks on the wire for a chat or a completion endpoint.

A shape is chosen once per judge from its ``api`` setting. It knows the path and the
response type of its endpoint, how a rendered :class:`~rewardsvc.judges.prompts.Prompt`
becomes the request body, how logprobs are asked for, and how the answer text and the
top logprobs are read back. Scoring methods (``rewardsvc.judges.methods``) speak only to
this interface, so neither side dispatches on the strings ``"chat"`` and ``"completion"``.
"""

from __future__ import annotations

from typing import Any, Protocol

from openai.types import Completion
from openai.types.chat import ChatCompletion

from rewardsvc.judges.prompts import Api, Prompt


class ApiShape(Protocol):
    """One OpenAI-compatible endpoint family (chat or completion)."""

    name: Api
    path: str
    response_type: type[ChatCompletion] | type[Completion]

    def body(self, prompt: Prompt) -> dict[str, Any]:
        """The prompt's part of the request body (``messages`` or ``prompt``)."""
        ...

    def logprob_fields(self, alternatives: int) -> dict[str, Any]:
        """Request fields asking for ``alternatives`` top logprobs at each position."""
        ...

    def text(self, choice: Any) -> str:
        """The answer text of one response choice."""
        ...

    def first_top_logprobs(self, choice: Any) -> list[tuple[str, float]]:
        """``(token, logprob)`` alternatives at the first decoded position, the sampled
        token included; empty when the response has none."""
        ...

    def well_formed(self, response: Any) -> bool:
        """Whether ``response`` is this endpoint's JSON answer with at least one choice."""
        ...


def _has_choices(response: Any, response_type: type) -> bool:
    choices = getattr(response, "choices", None)
    return isinstance(response, response_type) and isinstance(choices, list) and bool(choices)


class ChatShape:
    """``POST /chat/completions`` with messages; logprobs as ``logprobs.content[i]``."""

    name: Api = "chat"
    path = "/chat/completions"
    response_type = ChatCompletion

    def body(self, prompt: Prompt) -> dict[str, Any]:
        """``{"messages": [...]}``."""
        return {"messages": prompt.messages}

    def logprob_fields(self, alternatives: int) -> dict[str, Any]:
        """``logprobs: true`` and ``top_logprobs: N``."""
        return {"logprobs": True, "top_logprobs": alternatives}

    def text(self, choice: Any) -> str:
        """The message content."""
        message = getattr(choice, "message", None)
        return (getattr(message, "content", None) or "") if message is not None else ""

    def first_top_logprobs(self, choice: Any) -> list[tuple[str, float]]:
        """Alternatives of ``logprobs.content[0]`` plus the decoded token."""
        content = choice.logprobs.content if choice.logprobs is not None else None
        if not content:
            return []
        first = content[0]
        top = [(t.token, t.logprob) for t in first.top_logprobs or []]
        top.append((first.token, first.logprob))
        return top

    def well_formed(self, response: Any) -> bool:
        """A ``ChatCompletion`` whose choices carry messages."""
        return _has_choices(response, ChatCompletion) and all(
            getattr(c, "message", None) is not None for c in response.choices
        )


class CompletionShape:
    """``POST /completions`` with a plain-text prompt; logprobs as ``logprobs.top_logprobs``."""

    name: Api = "completion"
    path = "/completions"
    response_type = Completion

    def body(self, prompt: Prompt) -> dict[str, Any]:
        """``{"prompt": "..."}``."""
        return {"prompt": prompt.text}

    def logprob_fields(self, alternatives: int) -> dict[str, Any]:
        """``logprobs: N`` (the legacy completions field is the count)."""
        return {"logprobs": alternatives}

    def text(self, choice: Any) -> str:
        """The choice's text."""
        return getattr(choice, "text", None) or ""

    def first_top_logprobs(self, choice: Any) -> list[tuple[str, float]]:
        """Items of ``top_logprobs[0]`` (a dict keyed by token text) plus the decoded token."""
        logprobs = choice.logprobs
        if logprobs is None or not logprobs.top_logprobs:
            return []
        top = list((logprobs.top_logprobs[0] or {}).items())
        if logprobs.tokens and logprobs.token_logprobs:
            top.append((logprobs.tokens[0], logprobs.token_logprobs[0]))
        return top

    def well_formed(self, response: Any) -> bool:
        """A ``Completion`` with at least one choice."""
        return _has_choices(response, Completion)


CHAT: ApiShape = ChatShape()
COMPLETION: ApiShape = CompletionShape()
_SHAPES: dict[str, ApiShape] = {"chat": CHAT, "completion": COMPLETION}


def shape_for(api: Api) -> ApiShape:
    """The shape of a judge's ``api`` setting."""
    return _SHAPES[api]


def prompt_text(prompt: Prompt) -> str:
    """The text the judge reads for ``prompt`` (messages' contents, or the text)."""
    if prompt.messages is not None:
        return "\n".join(m.get("content") or "" for m in prompt.messages)
    return prompt.text or ""
