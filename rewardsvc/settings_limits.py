"""The bounds of the service's work, as settings: request and batch sizes, work in flight,
deadlines, the grader workers and the sandbox, the work a request may plan or hold, and the
images an item may carry.

:class:`WorkLimits` is composed into :class:`rewardsvc.settings.Settings` (its fields are
``REWARDSVC_*`` variables like the others, in this order); each description documents its
variable, as the settings list in the docs is generated from them.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, NonNegativeInt, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from rewardsvc.media.rules import (
    DEFAULT_MAX_IMAGE_BYTES,
    DEFAULT_MAX_IMAGE_PIXELS,
    DEFAULT_MAX_IMAGE_SIDE,
    DEFAULT_MAX_IMAGES_PER_ITEM,
)

CONFIG = SettingsConfigDict(env_prefix="REWARDSVC_", extra="ignore")
"""Where every part of the settings reads its fields from: ``REWARDSVC_<FIELD>``."""


class WorkLimits(BaseSettings):
    """How much work the service takes on, and how long it waits for it."""

    model_config = CONFIG

    max_body_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=1024,
        description="Largest request body accepted, in bytes; larger bodies get 413.",
    )
    max_items: int = Field(
        default=1024, ge=1, description="Most items in one request; more get 413."
    )
    max_text_chars: int = Field(
        default=100_000,
        ge=1,
        description="Longest prompt, completion or reference of one item, in characters; a longer "
        "item is returned with status rejected (the rest of the batch is scored).",
    )
    max_inflight: int = Field(
        default=4096,
        ge=1,
        description="Most items being scored at once across all requests; a request that would "
        "exceed it gets 429 with Retry-After instead of queueing without bound.",
    )
    max_inflight_calls: int = Field(
        default=200_000,
        ge=1,
        description="Most judge calls planned at once across all requests (each plan's calls: "
        "a batched call once, graders none); a request whose calls would exceed it gets 429 "
        "with Retry-After, and one that alone exceeds it gets 413.",
    )
    max_criteria: int = Field(
        default=64,
        ge=1,
        description="Most criteria in one rubric (inline rubrics beyond it get 413).",
    )
    max_judges: int = Field(
        default=8, ge=1, description="Most judges scoring one rubric (beyond it: 413)."
    )
    request_timeout_s: float = Field(
        default=170.0,
        gt=0,
        description="Deadline of one scoring request, from admission to answer: judge work "
        "still running then ends as judge errors (the items get status judge_error). Below "
        "OpenRLHF's 180 s client timeout, so the trainer sees an answer, not a timeout.",
    )
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Time a client has to send a request's headers once it connected.",
    )
    body_timeout_s: float = Field(
        default=30.0, gt=0, description="Time a client has to send a request's whole body."
    )
    max_connections: int = Field(
        default=1024,
        ge=1,
        description="Most open client connections; beyond it new connections get 503.",
    )
    shutdown_timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="On SIGTERM, how long requests already accepted may take to finish; new "
        "requests get 503 meanwhile. Keep it below Kubernetes' terminationGracePeriodSeconds.",
    )
    retry_after_s: tuple[NonNegativeInt, NonNegativeInt] = Field(
        default=(1, 4),
        description="Bounds, in whole seconds, of the Retry-After of a refusal that asks the "
        "client to come back (429 while the in-flight or held-work bounds are full, 503 while "
        "the service drains): each refusal draws one anew between them, so refused clients "
        'do not all return at once. As a variable: REWARDSVC_RETRY_AFTER_S="[1, 4]".',
    )

    @field_validator("retry_after_s")
    @classmethod
    def _check_retry_after(cls, value: tuple[int, int]) -> tuple[int, int]:
        if value[0] > value[1]:
            raise ValueError(f"the lower bound {value[0]} is above the upper {value[1]}")
        return value

    grader_workers: int | None = Field(
        default=None,
        ge=1,
        description="Worker processes that run the deterministic graders (each call killed "
        "at its time limit), per service process; unset: one per CPU the process may use. "
        "The request that has used the least worker time goes next, so one request's slow "
        "items cannot starve another's.",
    )
    grader_timeout_s: float = Field(
        default=2.0,
        gt=0,
        le=60,
        description="Time limit of one grader call (a math grader's timeout_s replaces it), "
        "counted from when a worker takes the call, not while it waits its turn; past it "
        "the criterion gets no score, with error_kind grader_timeout.",
    )
    sandbox_backend: Literal["bubblewrap", "none"] = Field(
        default="bubblewrap",
        description="Where the code graders (io_cases, check_program, unit_tests) run programs: "
        "bubblewrap (the 'bwrap' binary of the Debian package bubblewrap, with user "
        "namespaces allowed) or none (every code grader gives no score, "
        "sandbox_unavailable). Never unsandboxed: without a working backend /readyz says so "
        "when the library uses a code grader.",
    )
    sandbox_lanes: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Sandboxed runs at once, per service process (each a lane thread waiting "
        "on one sandbox); keep it near the CPUs the programs may use.",
    )
    sandbox_queue: int = Field(
        default=1024,
        ge=0,
        description="Sandboxed runs that may wait for a lane (queued fairly between requests; "
        "an item queues at most 4 of its cases at once); a run beyond it is not run and its "
        "item gets no score (sandbox_busy).",
    )
    max_sandbox_seconds: float = Field(
        default=100_000.0,
        gt=0,
        description="Most sandbox seconds one request may plan: each code grader run counts its "
        "wall_s (io_cases: a run per case; unit_tests: pytest, and a collect run without "
        "expected_tests) on every item, group completion (/v1/groups) or pair side "
        "(/v1/preferences), and an agentic judge's loop its max_sandbox_s, all times 3 (a run "
        "starved of CPU on a busy host may run up to 3 times its wall_s). A request planning "
        "more gets 413 naming it, before any run starts.",
    )
    max_rubric_bytes: int = Field(
        default=64 * 1024,
        ge=1024,
        description="Largest rubric YAML accepted, in bytes, from a library file or POST "
        "/v1/rubrics/validate (parsing YAML with line numbers costs about 1.5 s of CPU "
        "for 60 KB); also the largest inline rubric or recipe of a request, as JSON (413 "
        "naming its largest field), and the largest criteria one item brings of its own, as "
        "JSON (that item alone is rejected, naming its criteria).",
    )
    max_prompt_bytes_per_request: int = Field(
        default=256 * 1024 * 1024,
        ge=1024 * 1024,
        description="Most prompt bytes one request may plan, over all its judge calls (each "
        "call carries its item's texts and the rubric, and, to a judge that sees images, every "
        "image's URL, a data: URL being the whole image): a request planning more gets 413 "
        "before any prompt is rendered. Applies to /v1/rewards, /v1/groups, /v1/preferences "
        "and the trainer routes.",
    )
    max_held_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=1024 * 1024,
        description="Most bytes held at once for work that outlives its request or waits "
        "outside the in-flight limits: ROLL jobs, ORS sessions and tool calls, OpenRLHF and "
        "slime requests held through an outage, explain output being built. Each counts its "
        "request text (plus 16 KiB for its task) from admission until it ends; one larger "
        "than this gets 413, one that does not fit now 429 with Retry-After.",
    )
    max_held_per_key: int = Field(
        default=4096,
        ge=1,
        description="Most jobs, ORS sessions and calls and held trainer requests one API key "
        "(or, without keys, everyone) holds at once; beyond it: 429 with Retry-After.",
    )
    max_image_bytes: int = Field(
        default=DEFAULT_MAX_IMAGE_BYTES,
        ge=1024,
        description="Largest image an item may carry, in bytes of its file (a data: URL's "
        "decoded base64); a larger one rejects its item, naming the image's part.",
    )
    max_images_per_item: int = Field(
        default=DEFAULT_MAX_IMAGES_PER_ITEM,
        ge=0,
        description="Most images one item (its prompt and completion together) may carry; "
        "an item with more is rejected, naming the first image beyond it.",
    )
    max_image_pixels: int = Field(
        default=DEFAULT_MAX_IMAGE_PIXELS,
        ge=1,
        description="Most pixels (width x height, read from the image's header before it is "
        "decoded) of one image; a larger one rejects its item. Decoding holds about 4 bytes "
        "per pixel, one image at a time per service process.",
    )
    max_image_side: int = Field(
        default=DEFAULT_MAX_IMAGE_SIDE,
        ge=1,
        description="Longest width or height of one image, in pixels; a longer one rejects "
        "its item.",
    )
    max_explain_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=1024,
        description="Most prompt bytes one request with options.explain may ask to see (every "
        "prompt of every item is returned, an image sent as a data: URL shown by its sha256 "
        "and size, not counted at its URL's length); beyond it: 413 naming options.explain.",
    )

    @model_validator(mode="after")
    def _check_limits(self) -> Self:
        if self.max_inflight < self.max_items:
            raise ValueError(
                f"max_inflight ({self.max_inflight}) must be at least max_items "
                f"({self.max_items}), or a full batch could never be admitted"
            )
        if self.max_held_bytes <= self.max_body_bytes:
            raise ValueError(
                f"max_held_bytes ({self.max_held_bytes}) must be more than max_body_bytes "
                f"({self.max_body_bytes}), or a held request of a full body could never start"
            )
        return self
