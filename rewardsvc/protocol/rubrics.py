"""Wire models of the rubric library routes: ``GET /v1/rubrics``, ``GET /v1/rubrics/{id}``
and ``POST /v1/rubrics/validate``."""

from __future__ import annotations

from pydantic import BaseModel, Field

from rewardsvc.core.rubric import Rubric


class ProblemOut(BaseModel):
    """One validation problem of a rubric: its line, the key path, and what is wrong."""

    line: int
    path: str = Field(description="Key path inside the rubric, e.g. criteria[2].weight.")
    message: str


class FileProblem(ProblemOut):
    """A validation problem of a rubric file of the library."""

    file: str = Field(description="File name inside the rubric folder.")


class RubricSummary(BaseModel):
    """A served rubric of the library."""

    id: str
    version: str = Field(description="Hash of the rubric's normalized content.")
    kind: str
    description: str
    file: str = Field(description="Source file name inside the rubric folder.")
    criteria: list[str] = Field(description="Criterion ids.")
    judges: list[str] = Field(description="Judge names that score it.")
    refused_edit: bool = Field(
        description="The file's latest edit did not validate; the last good version serves."
    )


class RubricList(BaseModel):
    """The rubric library: served rubrics and the problems of refused files."""

    rubrics: list[RubricSummary]
    errors: list[FileProblem] = Field(
        description="Problems of files whose latest edit was refused (or never validated)."
    )


class RubricDetail(BaseModel):
    """One served rubric: version, source file and text, and any refused edit's problems."""

    id: str
    version: str
    file: str = Field(description="Source file name inside the rubric folder.")
    yaml: str = Field(description="The YAML text of the served version.")
    rubric: Rubric = Field(description="The served rubric, with defaults filled in.")
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
