"""Wire models of the rubric library routes: ``GET /v1/rubrics``, ``GET /v1/rubrics/{id}``
and ``POST /v1/rubrics/validate``.

Rubrics, constitutions, recipes and routing tables share one id space: the library routes
list and show all four, each with its ``kind``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from rewardsvc.core.recipe import Recipe, RoutingTable
from rewardsvc.core.rubric import Rubric

LibraryKind = Literal["rubric", "constitution", "recipe", "routing"]


class ProblemOut(BaseModel):
    """One validation problem of a rubric: its line, the key path, and what is wrong."""

    line: int
    path: str = Field(description="Key path inside the rubric, e.g. criteria[2].weight.")
    message: str


class FileProblem(ProblemOut):
    """A validation problem of a rubric file of the library."""

    file: str = Field(description="File name inside the rubric folder.")


class RubricSummary(BaseModel):
    """A served rubric, constitution, recipe or routing table of the library."""

    id: str
    version: str = Field(
        description="Hash of the normalized content (a recipe's and a routing table's also "
        "cover the rubrics and recipes they name)."
    )
    kind: LibraryKind = Field(
        description="rubric or constitution (a rubric file), recipe or routing (a file of "
        "the library's recipes/ folder)."
    )
    description: str
    file: str = Field(
        description="Source file inside the rubric folder (recipes/<id>.yaml for a recipe "
        "or routing table)."
    )
    criteria: list[str] = Field(description="Criterion ids (empty for a recipe or a table).")
    components: list[str] = Field(
        default_factory=list,
        description="A recipe: its component ids. A routing table: the ids it routes to "
        "(its default last). Empty for a rubric.",
    )
    judges: list[str] = Field(
        description="Judge names that score it (a recipe: those of its judged components; "
        "a routing table: those of its targets)."
    )
    refused_edit: bool = Field(
        description="The file's latest edit did not validate; the last good version serves."
    )


class RubricList(BaseModel):
    """The rubric library: served rubrics, constitutions, recipes and routing tables (by
    id), and the problems of refused files."""

    rubrics: list[RubricSummary]
    errors: list[FileProblem] = Field(
        description="Problems of files whose latest edit was refused (or never validated)."
    )


class RubricDetail(BaseModel):
    """One served rubric, constitution, recipe or routing table: version, source file and
    text, and any refused edit's problems."""

    id: str
    version: str
    kind: LibraryKind = Field(default="rubric", description="What ``id`` names.")
    file: str = Field(
        description="Source file inside the rubric folder (recipes/<id>.yaml for a recipe "
        "or routing table)."
    )
    yaml: str = Field(description="The YAML text of the served version.")
    rubric: Rubric | Recipe | RoutingTable = Field(
        description="The served rubric, recipe or routing table, with defaults filled in."
    )
    errors: list[ProblemOut] = Field(
        description="Problems of the file's latest edit when it was refused (the served "
        "version is then the last good one); empty otherwise."
    )


class ValidateRequest(BaseModel):
    """Rubric YAML to check (the JSON form of ``POST /v1/rubrics/validate``)."""

    yaml: str = Field(description="The rubric as YAML text.")


class ValidationReport(BaseModel):
    """Whether rubric YAML is valid against the schema and this service's judge pool."""

    valid: bool
    id: str | None = Field(default=None, description="The rubric id, when valid.")
    version: str | None = Field(default=None, description="The version it would have.")
    errors: list[ProblemOut] = Field(default_factory=list)
