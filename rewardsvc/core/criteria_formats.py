"""The formats rubric datasets ship their per-prompt rubrics in, read as rewardsvc criteria.

In rubric-based RL the rubric is a column of the dataset. Each :class:`CriteriaFormat`
reads one dataset's rubric value (a row's ``rubrics``, ``rubric``, ``rubric_items`` ...)
into criterion dicts as :class:`rewardsvc.core.rubric.Criterion` accepts them, and says
where its dataset rows keep prompt, reference and id (:class:`DatasetRow`).
:data:`FORMATS` is the one table of them (a new format is one entry); the mapping of each
and the score it reproduces are in ``docs/how-to/rubric-datasets.md``.

Ids: where the format has none, ``c1``, ``c2``, ... by position. A dataset format ignores
keys it does not name (datasets add their own); the ``rewardsvc`` format is strict, as a
rubric file is. Invalid input raises :class:`CriteriaFormatError`, whose problems are
located relative to the value read (``(3, "points")``), so that a caller can prefix its
own place (``items[3].criteria``); an entry's objects, texts and numbers are read by
``criteria_entries``. Pure: no I/O.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, NamedTuple, get_args

from pydantic import ValidationError

from rewardsvc.core.criteria_entries import (
    ID_MAX,
    EntryProblem,
    entry_number,
    entry_object,
    entry_text,
    kind_of,
    unique_id,
)
from rewardsvc.core.errors import FieldProblem, Loc, field_problems
from rewardsvc.core.rubric import Category, Criterion

MAX_CRITERIA = 256
"""The most criteria one rubric value may hold: each is a judge question per item, so
the bound caps the work one dataset row or request item can ask for."""


class CriteriaFormatError(ValueError):
    """A rubric value that its format cannot read: every problem, located relative to it."""

    def __init__(self, problems: Sequence[FieldProblem]):
        self.problems = list(problems)
        super().__init__("; ".join(str(p) for p in self.problems))

    def prefixed(self, prefix: Loc) -> list[FieldProblem]:
        """The problems located under ``prefix`` (``("items", 3, "criteria")``)."""
        return [FieldProblem((*prefix, *p.loc), p.message) for p in self.problems]


@dataclass(frozen=True)
class DatasetRow:
    """Where a dataset row of this format keeps its parts (the first present key wins)."""

    rubric: str
    prompt: tuple[str, ...]
    reference: tuple[str, ...] = ()
    id: tuple[str, ...] = ("id",)


class _Entry(NamedTuple):
    """A criterion's source, its place in the whole, a label if the place is coarser."""

    value: Any
    loc: Loc
    label: str = ""


class CriteriaFormat(ABC):
    """One dataset format of rubrics: its name, where its rows keep the parts, and how
    one rubric value becomes criteria."""

    name: ClassVar[str]
    description: ClassVar[str]
    row: ClassVar[DatasetRow]
    whole_rubric: ClassVar[bool] = True
    """A prompt's whole rubric: it needs a criterion with a positive weight (the normalizer)."""
    fields: ClassVar[Mapping[str, Loc] | None] = None
    """Criterion field → its source in an entry, to place errors (None: the same places)."""
    expects: ClassVar[str]
    """What an entry is, for messages."""

    @abstractmethod
    def convert(self, entry: Any) -> dict[str, Any]:
        """One entry as a criterion dict (``id`` only when the entry gives one); raises
        ``EntryProblem`` located relative to the entry."""

    def suggest_id(self, entry: Any) -> str | None:
        """An id made from the entry (used when free), or None for the positional one."""
        return None

    def entries(self, raw: Any) -> list[_Entry]:
        """The entries of a rubric value: a list, each at its index."""
        if not isinstance(raw, list):
            raise CriteriaFormatError(
                [FieldProblem((), f"expected a list of {self.expects}, got {kind_of(raw)}")]
            )
        return [_Entry(value, (i,)) for i, value in enumerate(raw)]

    def read(self, raw: Any) -> list[dict[str, Any]]:
        """A dataset's rubric value as rewardsvc criterion dicts, ids assigned; raises
        :class:`CriteriaFormatError` with every problem, located relative to ``raw``."""
        entries = self.entries(raw)
        if len(entries) > MAX_CRITERIA:
            raise CriteriaFormatError(
                [FieldProblem((), f"{len(entries)} criteria; at most {MAX_CRITERIA} are allowed")]
            )
        problems: list[FieldProblem] = []
        converted: list[tuple[_Entry, dict[str, Any]]] = []
        for entry in entries:
            try:
                converted.append((entry, self.convert(entry.value)))
            except EntryProblem as p:
                problems.append(_located(entry, p.loc, p.message))
        criteria = self._with_ids(converted, problems)
        for entry, criterion in zip((e for e, _ in converted), criteria, strict=True):
            problems += self._validate(entry, criterion)
        if not problems and self.whole_rubric:
            problems += _whole(criteria)
        if problems:
            raise CriteriaFormatError(problems)
        return criteria

    def _with_ids(
        self, converted: list[tuple[_Entry, dict[str, Any]]], problems: list[FieldProblem]
    ) -> list[dict[str, Any]]:
        """The criteria with ids: given ones kept (a repeat is a problem), the others from
        ``suggest_id`` or ``c<position>``, made unique against every id of the rubric."""
        given: dict[str, _Entry] = {}
        for entry, criterion in converted:
            cid = criterion.get("id")
            if isinstance(cid, str):
                if cid in given:
                    problems.append(_located(entry, ("id",), f"duplicate criterion id {cid!r}"))
                given.setdefault(cid, entry)
        used = set(given)
        out = []
        for position, (entry, criterion) in enumerate(converted, start=1):
            if "id" not in criterion:
                base = self.suggest_id(entry.value) or f"c{position}"
                criterion = {"id": unique_id(base, used), **criterion}
                used.add(criterion["id"])
            out.append(criterion)
        return out

    def _validate(self, entry: _Entry, criterion: dict[str, Any]) -> list[FieldProblem]:
        """The criterion's own validation, its errors placed in the entry's fields."""
        try:
            Criterion.model_validate(criterion)
        except ValidationError as exc:
            return [
                _located(entry, self._place(p.loc), p.message)
                for p in field_problems(exc.errors(), criterion)
            ]
        return []

    def _place(self, loc: Loc) -> Loc:
        if self.fields is None:
            return loc
        return self.fields.get(str(loc[0]), ()) if loc else ()


def _located(entry: _Entry, loc: Loc, message: str) -> FieldProblem:
    return FieldProblem((*entry.loc, *loc), f"{entry.label}{message}")


def _whole(criteria: list[dict[str, Any]]) -> list[FieldProblem]:
    if not criteria:
        return [FieldProblem((), "no criteria: a rubric needs at least one")]
    if not any(c["weight"] > 0 for c in criteria):
        return [FieldProblem((), "no criterion has a positive weight (the score's normalizer)")]
    return []


class RewardsvcFormat(CriteriaFormat):
    """rewardsvc's own criterion objects, as in a rubric file; ids optional."""

    name = "rewardsvc"
    description = "rewardsvc criterion objects (id, text, category, weight, ...); id optional"
    row = DatasetRow(rubric="criteria", prompt=("prompt",), reference=("reference",))
    whole_rubric = False  # they may extend a template rubric: checked where merged
    expects = "criterion objects"

    def convert(self, entry: Any) -> dict[str, Any]:
        """The criterion object itself (a copy; a null id counts as none)."""
        criterion = dict(entry_object(entry, "a criterion object"))
        if criterion.get("id", "") is None:
            del criterion["id"]
        return criterion


class HealthBenchFormat(CriteriaFormat):
    """HealthBench's ``rubrics``: positive points → ``important`` weighing the points,
    negative → ``pitfall`` (the text names the undesirable behaviour: "yes" means present),
    so that ``combine: explicit`` gives HealthBench's score of a response, clipped to [0, 1].
    Not ``essential``: it has no gates. Points 0 are refused; ``tags`` are dropped."""

    name = "healthbench"
    description = "HealthBench rubrics [{criterion, points, tags}]: signed points, tags dropped"
    row = DatasetRow(rubric="rubrics", prompt=("prompt",), id=("prompt_id", "id"))
    fields: ClassVar[Mapping[str, Loc]] = {
        "text": ("criterion",),
        "weight": ("points",),
        "category": ("points",),
    }
    expects = "{criterion, points, tags} objects"

    def convert(self, entry: Any) -> dict[str, Any]:
        """``criterion`` → text; ``points`` → weight, and its sign → important or pitfall."""
        item = entry_object(entry, "a {criterion, points, tags} object")
        text = entry_text(item, "criterion")
        points = entry_number(item, "points")
        category: Category = "pitfall" if points < 0 else "important"
        return {"text": text, "category": category, "weight": points}


_RAR_PREFIX = re.compile(
    r"^\s*(essential|important|optional|pitfall)\s+criteri(?:a|on)\s*:\s*", re.IGNORECASE
)
_RAR_CATEGORIES: Mapping[str, Category] = {c: c for c in get_args(Category)}


class RaRFormat(CriteriaFormat):
    """Rubrics as Rewards: ``{title, description, weight}``; the description's
    ``<Category> Criteria:`` prefix sets the category and is stripped (no prefix: a negative
    weight means pitfall, else important); a pitfall's weight is made negative (RaR data
    often writes it positive); the id is a slug of the title."""

    name = "rar"
    description = "Rubrics as Rewards [{title, description, weight}], 'Essential Criteria:' etc."
    row = DatasetRow(
        rubric="rubric",
        prompt=("question", "prompt"),
        reference=("reference_answer", "reference"),
    )
    fields: ClassVar[Mapping[str, Loc]] = {
        "id": ("title",),
        "text": ("description",),
        "category": ("description",),
        "weight": ("weight",),
    }
    expects = "{title, description, weight} objects"

    def convert(self, entry: Any) -> dict[str, Any]:
        """The prefix → category (stripped from the text); a pitfall's weight negative."""
        item = entry_object(entry, "a {title, description, weight} object")
        description = entry_text(item, "description")
        weight = entry_number(item, "weight")
        title = item.get("title")
        if title is not None and not isinstance(title, str):
            raise EntryProblem(("title",), f"must be text, got {kind_of(title)}")
        match = _RAR_PREFIX.match(description)
        if match is None:
            category: Category = "pitfall" if weight < 0 else "important"
            text = description
        else:
            category = _RAR_CATEGORIES[match.group(1).lower()]
            text = description[match.end() :].strip()
            if len(text) < 3:
                raise EntryProblem(("description",), "no criterion text after its prefix")
            if category != "pitfall" and weight < 0:
                raise EntryProblem(
                    ("weight",),
                    f"negative, but the description says {match.group(1).capitalize()} "
                    "Criteria: only a Pitfall Criteria item may weigh against the score",
                )
        if category == "pitfall":
            weight = -abs(weight)
        return {"text": text, "category": category, "weight": weight}

    def suggest_id(self, entry: Any) -> str | None:
        """A slug of the title (``Correct Dose`` → ``correct-dose``), if it has letters."""
        title = entry.get("title") if isinstance(entry, dict) else None
        if not isinstance(title, str):
            return None
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[: ID_MAX - 4].strip("-")
        return slug or None


_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


class StringsFormat(CriteriaFormat):
    """Plain criterion texts: a list of strings, or one string with one per line (blank
    lines skipped, list bullets stripped); each ``important``, weight 1."""

    name = "strings"
    description = "a list of criterion texts, or one text with one criterion per line"
    row = DatasetRow(rubric="criteria", prompt=("prompt",), reference=("reference",))
    fields: ClassVar[Mapping[str, Loc]] = {}
    expects = "criterion texts"

    def entries(self, raw: Any) -> list[_Entry]:
        """A list's items; or a string's non-blank lines, bullets stripped, each located
        at the whole string and labelled with its line number."""
        if not isinstance(raw, str):
            return super().entries(raw)
        return [
            _Entry(_BULLET.sub("", line), (), f"line {n}: ")
            for n, line in enumerate(raw.splitlines(), start=1)
            if line.strip()
        ]

    def convert(self, entry: Any) -> dict[str, Any]:
        """The text as an important criterion of weight 1."""
        if not isinstance(entry, str):
            raise EntryProblem((), f"expected a criterion text, got {kind_of(entry)}")
        if len(entry.strip()) < 3:
            raise EntryProblem((), "must be text of at least 3 characters")
        return {"text": entry.strip(), "category": "important", "weight": 1.0}


class TinkerFormat(CriteriaFormat):
    """The Tinker cookbook's rubric recipe: ``rubric_items``, each graded on its own and
    the reward their mean, so each ``rubric_str`` is ``important`` with weight 1; its
    ``extraction_regex`` and output instruction are dropped (rewardsvc's judges answer in
    their own constrained format)."""

    name = "tinker"
    description = "Tinker cookbook rubric_items [{rubric_str, ...}]: equal weights, as its mean"
    row = DatasetRow(rubric="rubric_items", prompt=("convo",))
    fields: ClassVar[Mapping[str, Loc]] = {"text": ("rubric_str",)}
    expects = "{rubric_str, ...} objects"

    def convert(self, entry: Any) -> dict[str, Any]:
        """``rubric_str`` as an important criterion of weight 1."""
        item = entry_object(entry, "a {rubric_str, ...} object")
        return {"text": entry_text(item, "rubric_str"), "category": "important", "weight": 1.0}


CriteriaFormatName = Literal["rewardsvc", "healthbench", "rar", "strings", "tinker"]
"""The names of :data:`FORMATS` (a test keeps the two equal)."""

FORMATS: Mapping[str, CriteriaFormat] = {
    f.name: f
    for f in (RewardsvcFormat(), HealthBenchFormat(), RaRFormat(), StringsFormat(), TinkerFormat())
}
"""Every criteria format, by name: the one registry."""


def read_criteria(name: CriteriaFormatName, raw: Any) -> list[dict[str, Any]]:
    """``raw`` read in format ``name`` as rewardsvc criterion dicts (see
    :meth:`CriteriaFormat.read`); raises :class:`CriteriaFormatError`."""
    return FORMATS[name].read(raw)
