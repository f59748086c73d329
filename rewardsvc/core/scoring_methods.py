"""The scoring methods a judge may use, one entry each: its name, what it needs of its
endpoint, whether it asks criteria at all, and how the pool file documents it.

This is the one list of methods: the judge pool's ``method`` field (names, order and
description in the JSON Schema) is derived from it, and ``rewardsvc.judges`` binds each
entry to the strategy object that owns its prompt instruction and its reply reading (a
test checks every entry has exactly one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

Capability = Literal["top_logprobs", "structured_outputs"]
"""What an endpoint may not offer: ``top_logprobs`` (the alternatives' logprobs at each
position) and ``structured_outputs`` (vLLM's constrained decoding: ``structured_outputs``
choice/regex and ``response_format`` JSON schemas)."""


@dataclass(frozen=True)
class MethodEntry:
    """One scoring method as the pool file knows it."""

    name: str
    needs: frozenset[Capability]
    """What the method needs of its endpoint."""
    description: str
    """Its part of the ``method`` field's description."""
    whole_item: bool = False
    """Asked no criteria: a reward model that scores the whole item (and takes the judge's
    ``reward_model`` settings)."""


_LOGITS: frozenset[Capability] = frozenset({"top_logprobs", "structured_outputs"})

METHODS: tuple[MethodEntry, ...] = (
    MethodEntry("logprob", _LOGITS, "one constrained token, expected value over the scale"),
    MethodEntry("structured", frozenset({"structured_outputs"}), "JSON reasoning then score"),
    MethodEntry("sampled", frozenset(), "n samples, mean and variance"),
    MethodEntry(
        "batched",
        _LOGITS,
        "one call per item reads all its criteria and answers each with one constrained "
        "token (expected value per criterion, as logprob), far fewer judge tokens; holistic "
        "and per-step calls are asked as logprob",
    ),
    MethodEntry(
        "reward_model",
        frozenset(),
        "a scalar reward model on vLLM's pooling runner, asked no criteria: it scores the "
        "whole item (settings in reward_model)",
        whole_item=True,
    ),
)
"""Every scoring method, in the order the JSON Schema lists them."""

if TYPE_CHECKING:
    # The checker sees a string; at run time the field is the literal of the entries' names.
    MethodName: TypeAlias = str
else:
    MethodName = Literal[tuple(m.name for m in METHODS)]
"""A scoring method's name, as the pool file writes it."""


def method_entry(name: str) -> MethodEntry:
    """The entry of method ``name`` (a validated config's method always has one)."""
    return next(m for m in METHODS if m.name == name)


def methods_description() -> str:
    """The pool file's description of the ``method`` field: each method's, in order."""
    return "; ".join(f"{m.name}: {m.description}" for m in METHODS) + "."
