"""API shapes: how a judge call looks on the wire for a chat or a completion endpoint.

A shape is chosen once per judge from its ``api`` setting. It knows the path of its
endpoint, how the prompt builders' rules and body become a
:class:`~rewardsvc.judges.prompts.Prompt` (messages or one document) and whether it ends
in an answer cue, how a prompt becomes the request body, how logprobs are asked for, and
how the answer text, the top logprobs and every decoded position are read back. Prompt
builders and scoring methods (``rewardsvc.judges.methods``, ``batching``) speak only to
this interface, so none of them dispatches on the strings ``"chat"`` and ``"completion"``.

Replies are the parsed JSON as it came (``rewardsvc.judges.transport``): plain dicts and
lists, no SDK models. :meth:`ApiShape.well_formed` checks the structure the readers rely
on (a dict with a non-empty list of choice dicts) once per reply; the readers then take
optional fields with ``.get`` and treat a missing one as absent, as the SDK's models did.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, TypeGuard

from rewardsvc.judges.imagery import image_count, part_texts
from rewardsvc.judges.prompts import Api, Prompt
from rewardsvc.judges.questions import Question
from rewardsvc.judges.routing import Affinity
from rewardsvc.judges.usage import read_usage

Reply = dict[str, Any]
"""A judge's parsed JSON reply (``choices``, ``usage``, ...)."""
Choice = dict[str, Any]
"""One entry of a reply's ``choices``."""
Position = tuple[str, list[tuple[str, float]]]
"""One decoded token and the ``(token, logprob)`` alternatives at its position."""


class Route(Protocol):
    """Where a call goes and what a good reply looks like: an API shape
    (below) or a pooling route (``rewardsvc.judges.reward_model``)."""

    @property
    def path(self) -> str:
        """The endpoint's path."""
        ...

    @property
    def from_root(self) -> bool:
        """Whether the path is taken from the server root rather than the base URL (vLLM
        mounts its pooling API there)."""
        ...

    def well_formed(self, response: Any) -> TypeGuard[Reply]:
        """Whether ``response`` is this endpoint's JSON answer."""
        ...


class ApiShape(Route, Protocol):
    """One OpenAI-compatible endpoint family (chat or completion)."""

    name: Api
    # Whether the judge continues a plain document (a base model): then a prompt ends in
    # an answer cue ("Answer (...):") rather than an instruction to answer.
    continues_text: bool

    def prompt(
        self, question: Question, rules: str, body: str, affinity: Affinity | None = None
    ) -> Prompt:
        """The call asking ``question`` under grader ``rules``, about ``body``."""
        ...

    def body(self, prompt: Prompt) -> dict[str, Any]:
        """The prompt's part of the request body (``messages`` or ``prompt``)."""
        ...

    def logprob_fields(self, alternatives: int) -> dict[str, Any]:
        """Request fields asking for ``alternatives`` top logprobs at each position."""
        ...

    def text(self, choice: Choice) -> str:
        """The answer text of one response choice."""
        ...

    def first_top_logprobs(self, choice: Choice) -> list[tuple[str, float]]:
        """``(token, logprob)`` alternatives at the first decoded position, the sampled
        token included; empty when the response has none."""
        ...

    def positions(self, choice: Choice) -> list[Position]:
        """Every decoded position of ``choice`` with its alternatives (the decoded token
        included), as far as they can be read."""
        ...


def _choice_dicts(response: Any) -> list[Any] | None:
    """The reply's choices when it is a dict with a non-empty list of dicts."""
    if not isinstance(response, dict):
        return None
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        return None
    return choices if all(isinstance(c, dict) for c in choices) else None


def choices(response: Reply) -> list[Choice]:
    """The choices of a reply that :meth:`ApiShape.well_formed` accepted."""
    found: list[Choice] = response["choices"]
    return found


def usage(response: Reply) -> tuple[int, int]:
    """``(prompt_tokens, completion_tokens)`` of a reply, as
    :func:`~rewardsvc.judges.usage.read_usage` reads them (zeros when it has no usage)."""
    counted = read_usage(response)
    return counted.prompt, counted.completion


DAMAGED = math.nan
"""The logprob of an alternative the reply names but whose logprob (or token) cannot be
read: kept, so that the reading of the answer fails on it
(``rewardsvc.judges.methods.probability``) rather than renormalising what is left."""


def _pair(token: Any, logprob: Any, decoded: bool = False) -> tuple[str, float]:
    """One ``(token, logprob)`` alternative as the reply gave it: a token that is not text
    reads as ``""``, a logprob that is not a number as :data:`DAMAGED`, and so does the
    ``decoded`` token's ``-inf`` (it was sampled, so its probability was not 0)."""
    number = isinstance(logprob, int | float) and not isinstance(logprob, bool)
    value = float(logprob) if number else DAMAGED
    if decoded and value == -math.inf:
        value = DAMAGED
    return (token if isinstance(token, str) else ""), value


def _alternatives(top: dict[Any, Any], decoded: tuple[Any, Any] | None) -> list[tuple[str, float]]:
    """The items of a ``{token: logprob}`` map plus the ``decoded`` ``(token, logprob)``,
    when the reply has one."""
    pairs = [_pair(t, lp) for t, lp in top.items()]
    return pairs if decoded is None else [*pairs, _pair(*decoded, decoded=True)]


def _chat_alternatives(entry: dict[str, Any]) -> list[tuple[str, float]]:
    """A chat ``logprobs.content`` entry's top alternatives plus its decoded token (an
    alternative that is not an object is a damaged one)."""
    top = entry.get("top_logprobs")
    pairs = [
        _pair(e.get("token"), e.get("logprob")) if isinstance(e, dict) else ("", DAMAGED)
        for e in (top if isinstance(top, list) else [])
    ]
    return [*pairs, _pair(entry.get("token"), entry.get("logprob"), decoded=True)]


class ChatShape:
    """``POST /chat/completions`` with messages; logprobs as ``logprobs.content[i]``."""

    name: Api = "chat"
    path = "/chat/completions"
    from_root = False
    continues_text = False

    def prompt(
        self, question: Question, rules: str, body: str, affinity: Affinity | None = None
    ) -> Prompt:
        """The rules as the system message, the body as the user's."""
        messages = [{"role": "system", "content": rules}, {"role": "user", "content": body}]
        return Prompt(question=question, messages=messages, affinity=affinity)

    def body(self, prompt: Prompt) -> dict[str, Any]:
        """``{"messages": [...]}``."""
        return {"messages": prompt.messages}

    def logprob_fields(self, alternatives: int) -> dict[str, Any]:
        """``logprobs: true`` and ``top_logprobs: N``."""
        return {"logprobs": True, "top_logprobs": alternatives}

    def text(self, choice: Choice) -> str:
        """The message content."""
        message = choice.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        return content if isinstance(content, str) else ""

    def first_top_logprobs(self, choice: Choice) -> list[tuple[str, float]]:
        """Alternatives of ``logprobs.content[0]`` plus the decoded token."""
        logprobs = choice.get("logprobs")
        content = logprobs.get("content") if isinstance(logprobs, dict) else None
        if not isinstance(content, list) or not content or not isinstance(content[0], dict):
            return []
        return _chat_alternatives(content[0])

    def positions(self, choice: Choice) -> list[Position]:
        """Each entry of ``logprobs.content``, up to the first whose token is missing (the
        positions after a damaged one cannot be placed in the text)."""
        logprobs = choice.get("logprobs")
        content = logprobs.get("content") if isinstance(logprobs, dict) else None
        out: list[Position] = []
        for entry in content if isinstance(content, list) else []:
            if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
                break
            out.append((entry["token"], _chat_alternatives(entry)))
        return out

    def well_formed(self, response: Any) -> TypeGuard[Reply]:
        """A JSON object whose choices carry messages."""
        found = _choice_dicts(response)
        return found is not None and all(isinstance(c.get("message"), dict) for c in found)


class CompletionShape:
    """``POST /completions`` with a plain-text prompt; logprobs as ``logprobs.top_logprobs``."""

    name: Api = "completion"
    path = "/completions"
    from_root = False
    continues_text = True

    def prompt(
        self, question: Question, rules: str, body: str, affinity: Affinity | None = None
    ) -> Prompt:
        """One document: a base model has no roles, so the rules head it."""
        return Prompt(question=question, text=f"{rules}\n\n{body}", affinity=affinity)

    def body(self, prompt: Prompt) -> dict[str, Any]:
        """``{"prompt": "..."}``."""
        return {"prompt": prompt.text}

    def logprob_fields(self, alternatives: int) -> dict[str, Any]:
        """``logprobs: N`` (the legacy completions field is the count)."""
        return {"logprobs": alternatives}

    def text(self, choice: Choice) -> str:
        """The choice's text."""
        text = choice.get("text")
        return text if isinstance(text, str) else ""

    def first_top_logprobs(self, choice: Choice) -> list[tuple[str, float]]:
        """Items of ``top_logprobs[0]`` (a dict keyed by token text) plus the decoded token."""
        logprobs = choice.get("logprobs")
        if not isinstance(logprobs, dict):
            return []
        top = logprobs.get("top_logprobs")
        if not isinstance(top, list) or not top or not isinstance(top[0], dict):
            return []
        tokens, chosen = logprobs.get("tokens"), logprobs.get("token_logprobs")
        if not isinstance(tokens, list) or not tokens:
            return _alternatives(top[0], None)
        # The decoded token is known: its logprob must be too.
        return _alternatives(
            top[0], (tokens[0], chosen[0] if isinstance(chosen, list) and chosen else None)
        )

    def positions(self, choice: Choice) -> list[Position]:
        """Each of ``logprobs.tokens`` with the items of its ``top_logprobs`` entry, up to
        the first token that is not text."""
        logprobs = choice.get("logprobs")
        if not isinstance(logprobs, dict):
            return []
        tokens = logprobs.get("tokens")
        tops = logprobs.get("top_logprobs")
        chosen = logprobs.get("token_logprobs")
        tops = tops if isinstance(tops, list) else []
        chosen = chosen if isinstance(chosen, list) else []
        out: list[Position] = []
        for i, token in enumerate(tokens if isinstance(tokens, list) else []):
            if not isinstance(token, str):
                break
            top = tops[i] if i < len(tops) and isinstance(tops[i], dict) else {}
            out.append((token, _alternatives(top, (token, chosen[i] if i < len(chosen) else None))))
        return out

    def well_formed(self, response: Any) -> TypeGuard[Reply]:
        """A JSON object with at least one choice."""
        return _choice_dicts(response) is not None


CHAT: ApiShape = ChatShape()
COMPLETION: ApiShape = CompletionShape()
_SHAPES: dict[str, ApiShape] = {"chat": CHAT, "completion": COMPLETION}


def shape_for(api: Api) -> ApiShape:
    """The shape of a judge's ``api`` setting."""
    return _SHAPES[api]


def prompt_text(prompt: Prompt) -> str:
    """The text the judge reads for ``prompt`` (messages' contents, or the text; of a
    message showing images, its text parts)."""
    if prompt.messages is not None:
        return "\n".join(t for m in prompt.messages for t in part_texts(m.get("content")))
    return prompt.text or ""


def prompt_images(prompt: Prompt) -> int:
    """How many images ``prompt`` shows its judge (image parts of its messages)."""
    if prompt.messages is None:
        return 0
    return sum(image_count(m.get("content")) for m in prompt.messages)
