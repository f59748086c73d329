"""Grader specs: the typed parameters of each deterministic grader, as YAML writes them.

A grader spec is pure data (``{type: numeric, rel_tol: 0.001}``); the functions that
apply it live in ``rewardsvc.graders``. The union :data:`GraderSpec` is discriminated by
``type``, so that the JSON Schema tells an editor which parameters each grader takes and
a typo in a parameter name is an error at load time, not a silent default.

User regular expressions are compiled here with RE2 (linear time, no backtracking) and
JSON Schemas are checked against their meta-schema, so that a bad pattern or schema is
refused with its file and line when the rubric or recipe loads. A schema may refer only
to itself (``$ref: "#/$defs/x"``): rubrics and recipes come inline in requests, and a
reference to a URL or a file would have the service fetch or read it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeAlias, Union, get_args

import jsonschema
import re2
from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from rewardsvc.core.code_spec import CheckProgramSpec, IoCasesSpec, UnitTestsSpec
from rewardsvc.core.errors import format_path
from rewardsvc.core.spec_base import Extract, SpecModel

_EXTRACT_FIELD: Extract = Field(
    default="auto",
    description="Part of the completion to compare: none (whole text), auto (last \\boxed{}, "
    "else last 'final answer:' line, else whole text), boxed, final_line, last_number, "
    "code_block. The reference goes through the same extraction, falling back to its whole text.",
)


class ExactSpec(SpecModel):
    """Normalized exact match of the extracted answer against the reference."""

    type: Literal["exact"]
    needs_reference: ClassVar[bool] = True
    extract: Extract = _EXTRACT_FIELD
    case_sensitive: bool = Field(default=False, description="Compare letter case too.")
    ignore_punctuation: bool = Field(
        default=True, description="Drop punctuation before comparing ('Paris.' == 'paris')."
    )
    ignore_articles: bool = Field(
        default=False, description="Drop the English articles a, an, the (SQuAD-style)."
    )


class NumericSpec(SpecModel):
    """Numeric match within a tolerance; thousands separators, currency, percent signs,
    LaTeX fractions and trailing units are normalized away."""

    type: Literal["numeric"]
    needs_reference: ClassVar[bool] = True
    extract: Extract = Field(
        default="auto",
        description="As for exact. A boxed or final-line answer must hold one number ('50 or "
        "51' scores 0); the whole text (auto's fallback) is read by its last number. A "
        "negated answer ('not 51') or a number that is an operand ('2^{51}') scores 0.",
    )
    rel_tol: float = Field(
        default=1e-12,
        ge=0,
        le=1,
        description="Relative tolerance; the default only absorbs float rounding, so that "
        "integers up to 10**11 must match exactly.",
    )
    abs_tol: float = Field(default=1e-9, ge=0, description="Absolute tolerance.")


class MathSpec(SpecModel):
    """Mathematical equivalence of final answers (math-verify), parsed in a worker process
    under a deadline."""

    type: Literal["math"]
    needs_reference: ClassVar[bool] = True
    extract: Extract = Field(
        default="auto",
        description="As for exact; with none, math-verify finds the answer in the whole text.",
    )
    timeout_s: float = Field(
        default=5.0,
        gt=0,
        le=60,
        description="Time limit for parsing and comparing one item, counted from when a "
        "grader worker takes it; past it the item gets no score (grader_timeout).",
    )
    float_rounding: int = Field(
        default=6, ge=0, le=15, description="Decimal places kept when comparing floats."
    )

    @property
    def time_limit_s(self) -> float | None:
        """The spec's own ``timeout_s``."""
        return self.timeout_s


class RegexSpec(SpecModel):
    """A regular expression (RE2 syntax, linear time) that must match, or must not."""

    type: Literal["regex"]
    pattern: str = Field(min_length=1, max_length=2000, description="RE2 pattern, searched.")
    mode: Literal["must_match", "must_not_match"] = Field(
        default="must_match", description="must_not_match scores 1 when the pattern is absent."
    )
    extract: Extract = Field(default="none", description="Part of the completion searched.")
    case_insensitive: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        options = re2.Options()
        options.log_errors = False
        try:
            re2.compile(value, options)
        except re2.error as exc:
            reason = exc.args[0] if exc.args else exc
            if isinstance(reason, bytes):
                reason = reason.decode("utf-8", "replace")
            raise ValueError(f"not a valid RE2 pattern: {reason}") from None
        return value


_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_REFERENCES = ("$ref", "$dynamicRef")


def outside_reference(schema: Any) -> str | None:
    """What first makes ``schema`` reach outside itself, as ``"path: problem"``: a
    ``$ref`` or ``$dynamicRef`` that is not a fragment of this schema (``#...``), or a
    ``$schema`` other than draft 2020-12; None when there is none."""
    stack: list[tuple[tuple[int | str, ...], Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            for key in _REFERENCES:
                ref = node.get(key)
                if isinstance(ref, str) and not ref.startswith("#"):
                    return (
                        f"{format_path((*path, key))}: {ref[:200]!r} is not a reference inside "
                        "this schema; only '#...' references are allowed (a grader never "
                        "fetches a URL or reads a file)"
                    )
            dialect = node.get("$schema")
            if isinstance(dialect, str) and dialect.rstrip("#") != _DIALECT:
                return (
                    f"{format_path((*path, '$schema'))}: {dialect[:200]!r}: only draft 2020-12 "
                    f"({_DIALECT}) is supported"
                )
            stack.extend(((*path, k), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend(((*path, n), v) for n, v in enumerate(node))
    return None


class JsonSpec(SpecModel):
    """JSON validity, and conformance to a JSON Schema when one is given."""

    type: Literal["json"]
    extract: Literal["none", "code_block", "auto"] = Field(
        default="auto",
        description="auto: the last fenced code block if there is one, else the whole text.",
    )
    json_schema: dict[str, Any] | None = Field(
        default=None,
        alias="schema",
        description="A JSON Schema (draft 2020-12) the value must conform to; its $ref "
        "may only point inside it ('#/$defs/x').",
    )
    partial_credit: bool = Field(
        default=False,
        description="Score valid JSON that breaks the schema at 0.5 instead of 0.",
    )

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        allow_inf_nan=False,
        validate_by_name=True,
        validate_by_alias=True,
    )

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            try:
                jsonschema.Draft202012Validator.check_schema(value)
            except jsonschema.SchemaError as exc:
                raise ValueError(f"not a valid JSON Schema: {exc.message}") from None
            outside = outside_reference(value)
            if outside is not None:
                raise ValueError(outside)
        return value


class LengthSpec(SpecModel):
    """Word and approximate token budgets."""

    type: Literal["length"]
    min_words: int | None = Field(default=None, ge=0)
    max_words: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(
        default=None, ge=1, description="Approximate tokens: characters / 4, rounded up."
    )
    mode: Literal["hard", "soft"] = Field(
        default="hard",
        description="hard: 0 outside a budget; soft: the ratio budget / length (or length / "
        "minimum), so that a small overshoot costs little.",
    )

    @model_validator(mode="after")
    def _some_budget(self) -> LengthSpec:
        if self.min_words is None and self.max_words is None and self.max_tokens is None:
            raise ValueError("give at least one of min_words, max_words, max_tokens")
        if (
            self.min_words is not None
            and self.max_words is not None
            and self.min_words > self.max_words
        ):
            raise ValueError("min_words: more than max_words")
        return self


class SectionsSpec(SpecModel):
    """Required sections: each name must appear as a heading (``## Name``, ``**Name**`` or
    ``Name:`` on a line of its own); the score is the fraction present."""

    type: Literal["sections"]
    required: list[str] = Field(min_length=1, description="Section names, case-insensitive.")


class SimilaritySpec(SpecModel):
    """String similarity to the reference (rapidfuzz), in [0, 1]."""

    type: Literal["similarity"]
    needs_reference: ClassVar[bool] = True
    extract: Extract = Field(default="none", description="As for exact.")
    method: Literal["ratio", "token_sort", "token_set", "partial"] = Field(
        default="ratio",
        description="ratio: normalized Indel similarity; token_sort / token_set: word order "
        "ignored; partial: best matching substring.",
    )
    max_chars: int = Field(
        default=20_000, ge=1, le=200_000, description="Longer texts are cut to this length."
    )


class EmbeddingSpec(SpecModel):
    """Cosine similarity of sentence embeddings (all-MiniLM-L6-v2, the ``embeddings``
    extra), mapped linearly from [low, high] to [0, 1]."""

    type: Literal["embedding"]
    needs_reference: ClassVar[bool] = True
    in_workers: ClassVar[bool] = False
    extract: Extract = Field(default="none", description="As for exact.")
    low: float = Field(default=0.0, ge=-1, lt=1, description="Cosine that scores 0.")
    high: float = Field(default=1.0, gt=-1, le=1, description="Cosine that scores 1.")

    @model_validator(mode="after")
    def _ordered(self) -> EmbeddingSpec:
        if self.low >= self.high:
            raise ValueError("low: must be below high")
        return self


GRADERS: tuple[type[SpecModel], ...] = (
    ExactSpec,
    NumericSpec,
    MathSpec,
    RegexSpec,
    JsonSpec,
    LengthSpec,
    SectionsSpec,
    SimilaritySpec,
    EmbeddingSpec,
    IoCasesSpec,
    CheckProgramSpec,
    UnitTestsSpec,
)
"""Every grader's spec, in the order the JSON Schema lists them. Each spec class says what
its grader needs; ``rewardsvc.graders.registry`` binds its function (one entry each)."""


def spec_type(spec: type[SpecModel]) -> str:
    """The ``type`` a spec model answers to (its field's single literal)."""
    (name,) = get_args(spec.model_fields["type"].annotation)
    return str(name)


def grader_for(name: str) -> type[SpecModel] | None:
    """The spec class of grader type ``name``, None when there is none (read at call time,
    so that a grader added to :data:`GRADERS` is found)."""
    return next((g for g in GRADERS if spec_type(g) == name), None)


def _spec_tag(value: Any) -> str | None:
    """The union member for ``value``, named by class so that error locations (which
    carry the tag) read as a union choice, not as a document key."""
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    spec = grader_for(kind) if isinstance(kind, str) else None
    return spec.__name__ if spec is not None else None


def _union(graders: tuple[type[SpecModel], ...]) -> Any:
    """The discriminated union of the spec models, each tagged by class name."""
    members = tuple(Annotated[g, Tag(g.__name__)] for g in graders)
    return Annotated[
        Union[members],  # noqa: UP007 -- a union built from a tuple has no | spelling
        Discriminator(
            _spec_tag,
            custom_error_type="grader_type",
            custom_error_message=f"type: must be one of {', '.join(map(spec_type, graders))}",
        ),
    ]


if TYPE_CHECKING:
    # The checker sees the common base; at run time the field is the table's union, whose
    # JSON Schema names each grader's parameters.
    GraderSpec: TypeAlias = SpecModel
else:
    GraderSpec = _union(GRADERS)
"""Any grader's spec, chosen by its ``type``."""
