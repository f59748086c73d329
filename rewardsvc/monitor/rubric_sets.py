"""Files of items written for one rubric, one file a rubric in a folder of the library: its
canaries (:mod:`.canaries`) and its golden set (:mod:`.golden_set`).

Every such kind is a :class:`RubricSet` and is checked one way: ``rewardsvc validate``
knows a document of it by :meth:`RubricSet.describes`, validates it as the kind (errors at
their file and line) and then checks it against its rubric with
:meth:`RubricSet.rubric_problems`; the service reads a folder of them with :func:`load_sets`.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from rewardsvc.core.base import StrictModel
from rewardsvc.library.yamlfile import Problem, load_folder


class RubricSet(StrictModel):
    """Items of one kind written for one rubric."""

    ENTRIES: ClassVar[str]
    """The document's key of its list of entries."""

    rubric: str

    @classmethod
    def describes(cls, doc: Any) -> bool:
        """Whether a parsed YAML document is of this kind: its list of entries and no ``id``
        (a rubric's file has one)."""
        return isinstance(doc, dict) and cls.ENTRIES in doc and "id" not in doc

    def rubric_problems(
        self, doc: Any, name: str, criteria: Collection[str] | None
    ) -> list[Problem]:
        """What this set (parsed from ``doc``, file ``name``) names that its rubric, whose
        criterion ids are ``criteria``, does not have (None: the rubric is not known here,
        nothing to check). A kind that names nothing of its rubric has nothing to say."""
        return []


S = TypeVar("S", bound=RubricSet)


def load_sets(folder: Path, model: type[S]) -> dict[str, S]:
    """Every ``*.yaml`` file of ``folder`` as ``model``, by rubric id (raises ``InvalidFile``)."""
    return {found.rubric: found for found in load_folder(folder, model)}
