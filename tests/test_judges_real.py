"""Judges against the real CPU judges: vLLM's context-overflow 400, its tokenizers, readiness.

The token lower bound of ``rewardsvc.judges.limits`` is checked against vLLM's own
``/tokenize`` for both model families, on ordinary prompts and on the degenerate inputs
a collapsing policy produces (runs of spaces, newlines, backticks, digits, one letter).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges import prompts
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.limits import least_tokens
from rewardsvc.judges.methods import method_for
from rewardsvc.judges.shapes import prompt_text, shape_for

pytestmark = pytest.mark.judges

RUBRIC = Rubric(
    id="real",
    criteria=[{"id": "correct", "text": "The final answer is correct."}],
    judges=["primary"],
)
CRITERION = RUBRIC.criteria[0]
ROLLOUT = Rollout("What is 2 + 2?", "2 + 2 = 4. The answer is 4.", "4")
# Far more than the CPU judges' 2048-token context (about 3000 tokens for both).
OVERLONG = Rollout("Summarize the text.", "The cat sat on the mat. " * 500)

DEGENERATE = {
    "spaces": " " * 20000,
    "newlines": "\n" * 20000,
    "backticks": "`" * 20000,
    "dashes": "-" * 20000,
    "tabs": "\t" * 20000,
    "letter": "a" * 20000,
    "digits": "1234567890" * 2000,
    "long words": " ".join(["internationalization", "responsibilities", "the"] * 800),
    "mixed": "Rating: 10/10 !!!   \n\n" * 800,
    "unicode": "数学の答えは四です。" * 800,
    "code": "def f(x):\n    return x * 2  # double\n" * 400,
}


def real(pool: JudgePool, api: str, made: list[Judge], limited: bool = False) -> Judge:
    """The pool's judge that speaks ``api`` (chat: SmolLM2; completion: Gemma 3 base), with
    its context length known (``limited``: refused before the call) or not (vLLM's own
    400 then tells)."""
    name, cfg = next((n, c) for n, c in pool.judges.items() if c.api == api)
    cfg = cfg.model_copy(update={"max_context_tokens": 2048 if limited else None})
    j = Judge(name, cfg)
    made.append(j)
    return j


def tokenize(cfg: JudgeConfig, text: str) -> int:
    """Tokens of ``text`` by the judge's own tokenizer (vLLM's /tokenize)."""
    root = str(cfg.base_urls[0]).rstrip("/").removesuffix("/v1")
    body: dict[str, Any] = {"model": cfg.model, "prompt": text, "add_special_tokens": False}
    reply = httpx.post(f"{root}/tokenize", json=body, timeout=60)
    reply.raise_for_status()
    return int(reply.json()["count"])


@pytest.mark.parametrize("api", ["chat", "completion"])
async def test_real_context_overflow_400_is_typed_not_retried_and_spares_the_breaker(
    cpu_pool: JudgePool, judges: list[Judge], api: str
) -> None:
    j = real(cpu_pool, api, judges)
    assert j.config.retries > 0
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, OVERLONG))
    assert v.score is None and v.error_kind == "context_overflow", v.error
    assert v.error is not None and v.error.startswith("client_error: HTTP 400")
    endpoint = j.backend.endpoints[0]
    assert endpoint.calls == 1  # a prompt that cannot fit is not sent again
    assert endpoint.breaker.state == "closed"
    assert (await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))).ok


@pytest.mark.parametrize("api", ["chat", "completion"])
async def test_real_overlong_item_is_refused_before_the_call_and_short_ones_score(
    cpu_pool: JudgePool, judges: list[Judge], api: str
) -> None:
    j = real(cpu_pool, api, judges, limited=True)
    endpoint = j.backend.endpoints[0]
    degenerate = Rollout("Answer.", " " * 100 + "x" * 100_000)
    for rollout in (OVERLONG, degenerate):
        v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, rollout))
        assert v.error_kind == "context_overflow" and v.error is not None
        assert v.error.startswith("context_overflow: the prompt")
    assert endpoint.calls == 0
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))
    assert v.ok and endpoint.calls == 1


@pytest.mark.parametrize("api", ["chat", "completion"])
def test_real_token_lower_bound_never_exceeds_the_tokenizer(cpu_pool: JudgePool, api: str) -> None:
    name, cfg = next((n, c) for n, c in cpu_pool.judges.items() if c.api == api)
    texts = dict(DEGENERATE)
    prompt = prompts.criterion_prompt(
        RUBRIC, CRITERION, ROLLOUT, prompts.Asking(method_for("logprob"), shape_for(cfg.api))
    )
    texts["judge prompt"] = prompt_text(prompt)
    for label, text in texts.items():
        exact = tokenize(cfg, text)
        bound = least_tokens(text)
        assert bound <= exact, (name, label, bound, exact)
    # Not vacuous: on prose the bound is a real fraction of the count.
    prose = "The response explains each step and gives the correct final answer. " * 50
    assert least_tokens(prose) >= 0.5 * tokenize(cfg, prose)


async def test_real_judges_are_reachable_through_their_backends(
    cpu_pool: JudgePool, judges: list[Judge]
) -> None:
    for api in ("chat", "completion"):
        assert await real(cpu_pool, api, judges).reachable()


# What each scoring method puts on the wire besides the prompt, per API: the fields vLLM
# must accept (and the transport must send as they are) for the method's reply to parse.
WIRE_FIELDS = {
    ("chat", "logprob"): {"max_tokens", "temperature", "logprobs", "top_logprobs"},
    ("completion", "logprob"): {"max_tokens", "temperature", "logprobs"},
    ("chat", "structured"): {"max_tokens", "temperature", "response_format"},
    ("completion", "structured"): {"max_tokens", "temperature", "response_format"},
    ("chat", "sampled"): {"max_tokens", "temperature", "n"},
    ("completion", "sampled"): {"max_tokens", "temperature", "n"},
}


@pytest.mark.parametrize("method", ["logprob", "structured", "sampled"])
@pytest.mark.parametrize("api", ["chat", "completion"])
async def test_real_wire_format_of_every_shape_and_method(
    cpu_pool: JudgePool, judges: list[Judge], api: str, method: str
) -> None:
    """The bodies the lean transport sends are vLLM's, and its plain-JSON replies carry
    the fields the methods read: top logprobs, usage tokens, structured content."""
    name, cfg = next((n, c) for n, c in cpu_pool.judges.items() if c.api == api)
    sampling = cfg.sampling.model_copy(update={"max_tokens": 120, "n": 3, "seed": 7})
    j = Judge(name, cfg.model_copy(update={"method": method, "sampling": sampling}))
    judges.append(j)
    sent: list[tuple[str, dict[str, Any], Any]] = []
    for endpoint in j.backend.endpoints:
        post = endpoint.client.post

        async def spy(
            path: str, body: Any, auth: str, *rest: Any, post: Any = post, **kw: Any
        ) -> Any:
            reply = await post(path, body, auth, *rest, **kw)
            sent.append((path, body, reply))
            return reply

        endpoint.client.post = spy  # type: ignore[method-assign]
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))
    assert v.ok, (api, method, v.error, v.raw)
    assert sent, "no call went through the transport"
    path, body, reply = sent[-1]
    assert path == j.shape.path == ("/chat/completions" if api == "chat" else "/completions")
    prompt_field = "messages" if api == "chat" else "prompt"
    assert body["model"] == cfg.model and prompt_field in body
    assert WIRE_FIELDS[(api, method)] <= set(body), sorted(body)
    # A plain JSON value, not an SDK model.
    assert type(reply) is dict and type(reply["choices"]) is list
    usage = reply["usage"]
    assert usage["prompt_tokens"] > 100 and usage["completion_tokens"] >= 1
    assert (v.prompt_tokens, v.completion_tokens) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )
    choice = reply["choices"][0]
    if method == "logprob":
        assert body["max_tokens"] == 1
        assert body["structured_outputs"]["choice"] == list(v.probs or {})
        if api == "chat":
            first = choice["logprobs"]["content"][0]
            assert {"token", "logprob"} <= set(first["top_logprobs"][0])
        else:
            first_top = choice["logprobs"]["top_logprobs"][0]
            assert type(first_top) is dict and all(type(lp) is float for lp in first_top.values())
        pairs = j.shape.first_top_logprobs(choice)
        assert any(t.strip().lower() in (v.probs or {}) for t, _ in pairs), pairs
    elif method == "structured":
        schema = body["response_format"]["json_schema"]
        assert body["response_format"]["type"] == "json_schema" and schema["strict"] is True
        answer = json.loads(j.shape.text(choice))
        assert "answer" in answer
    else:
        assert body["n"] == 3 and len(reply["choices"]) == 3
        assert body["structured_outputs"]["choice"] == list(v.probs or {})
        assert all(j.shape.text(c) for c in reply["choices"])
