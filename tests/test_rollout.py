"""Item text normalization: what judges, detectors and cache keys see."""

from __future__ import annotations

from rewardsvc.application.items import rollout_of
from rewardsvc.core.rollout import Rollout
from rewardsvc.protocol.items import Item
from rewardsvc.safety.detectors import detect


def test_assistant_messages_render_as_their_bare_text() -> None:
    as_string = rollout_of(Item(prompt="2+2?", completion=":"))
    as_messages = rollout_of(
        Item(prompt="2+2?", completion=[{"role": "assistant", "content": ":"}])
    )
    assert as_messages.completion == ":"
    assert as_messages.digest() == as_string.digest()
    assert "master_key" in detect(as_messages)


def test_mixed_roles_and_prompts_keep_the_transcript() -> None:
    rollout = rollout_of(
        Item(
            prompt=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
            completion=[
                {"role": "assistant", "content": None},
                {"role": "tool", "content": [{"type": "text", "text": "42"}]},
            ],
        )
    )
    assert rollout.prompt == "system: Be brief.\nuser: Hi"
    assert rollout.completion == "assistant: \ntool: 42"


def test_digest_separates_fields() -> None:
    a = Rollout("ab", "c").digest()
    b = Rollout("a", "bc").digest()
    c = Rollout("ab", "c", reference="").digest()
    assert len({a, b, c}) == 3
