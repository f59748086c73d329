"""What every grader spec is: :class:`SpecModel`, and the :data:`Extract` methods that
graders share (the specs themselves are in ``rewardsvc.core.graders_spec`` and
``rewardsvc.core.code_spec``)."""

from __future__ import annotations

from typing import ClassVar, Literal

from rewardsvc.core.base import StrictModel

Extract = Literal["none", "auto", "boxed", "final_line", "last_number", "code_block"]
"""Which part of the completion a grader compares (see ``rewardsvc.graders.extract``):
``none`` the whole text; ``auto`` the last boxed expression, else the last "final answer:"
line, else the whole text; the others one method each."""


class SpecModel(StrictModel):
    """What every grader spec has: the ``type`` that names its grader (each spec narrows
    it to its own literal), and what its grader needs to run, declared by the spec class.

    A grader is one spec class, listed in ``rewardsvc.core.graders_spec.GRADERS``, and one
    function bound to it in ``rewardsvc.graders.registry`` (a test checks every spec has
    exactly one)."""

    type: str
    needs_reference: ClassVar[bool] = False
    """Whether the grader compares against the item's reference answer."""
    in_workers: ClassVar[bool] = True
    """Whether the grader runs in the graders' worker processes (else on a thread of the
    service: a model too large to load in every worker)."""
    in_sandbox: ClassVar[bool] = False
    """Whether the grader runs code of the completion or of the spec, which it does only
    through the sandbox's lanes (``rewardsvc.sandbox``), never in a worker or the service."""

    @property
    def time_limit_s(self) -> float | None:
        """The time limit of one call this spec sets, None for the graders' own."""
        return None
