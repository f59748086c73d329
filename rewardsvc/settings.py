"""Service settings, read from ``REWARDSVC_*`` environment variables (or keyword arguments).

Each field's description is the documentation of its variable: the settings list in
the docs is generated from this model, so keep the descriptions complete. The secrets the
fields name are read by ``rewardsvc.credentials``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, NonNegativeInt, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from rewardsvc.core.access import KeyScope
from rewardsvc.credentials import parse_scopes, read_api_keys, read_password

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


class Settings(BaseSettings):
    """rewardsvc settings. Each field is the environment variable ``REWARDSVC_<FIELD>``."""

    model_config = SettingsConfigDict(env_prefix="REWARDSVC_", extra="ignore")

    host: str = Field(default="127.0.0.1", description="Address to listen on.")
    port: int = Field(default=8000, ge=1, le=65535, description="TCP port to listen on.")
    workers: int = Field(
        default=1,
        ge=1,
        le=64,
        description="uvicorn worker processes serving the port. More than one needs "
        "redis_url: each worker is a replica with its own memory, and only shared state keeps "
        "their cache, calibration and monitor statistics one. Measure before raising it "
        "(bench/workers.py): the judges, not the service, are usually the limit.",
    )
    rubrics_dir: Path = Field(
        default=Path("rubrics"),
        description="Folder of the rubric library: one YAML file per rubric, named by its id.",
    )
    judge_pool: Path = Field(
        default=Path("deploy/cpu-judge/judges.serve.yaml"),
        description="Judge pool YAML file binding the judge names rubrics use to models and URLs.",
    )
    api_keys: SecretStr | None = Field(
        default=None,
        description="Comma-separated API keys. When any key is set (here or in api_keys_file), "
        "every route except /healthz and /readyz needs one, as 'Authorization: Bearer KEY' "
        "(or HTTP Basic auth with the key as password, for clients that only take a URL).",
    )
    api_keys_file: Path | None = Field(
        default=None,
        description="File of API keys, one per line; blank lines and lines starting with # are "
        "ignored. Combined with api_keys.",
    )
    api_key_scopes: SecretStr | None = Field(
        default=None,
        description='Scoped API keys, as a JSON list: [{"key": "KEY", "name": "team-a", '
        '"runs": ["team-a-*"], "rubrics": ["math-*", "inline:*"], "max_runs": 8}]. '
        "A scoped key writes only to the runs and scores only with the rubrics it lists "
        "(others get 403 naming them), creates at most max_runs runs, sees only its own runs "
        "and rubrics in GET /v1/monitor, the dashboard and GET /v1/rubrics, and gets 403 on "
        "/metrics. Inline rubrics are named 'inline:<id>@<version>'; an item's own criteria "
        "(items[].criteria, a label's, a NeMo Gym sample's, ROLL's reward_info.criteria, an "
        "ORS task's) make such a rubric from the route's, so they need the same right: "
        "'inline:*', or 'inline:<rubric id>@*' for one rubric. A field left out does not "
        "restrict; keys of api_keys stay unrestricted. Checked at start.",
    )
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
        "(/v1/preferences). A request planning more gets 413 naming it, before any run starts.",
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
        "call carries its item's texts and the rubric): a request planning more gets 413 "
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
    max_explain_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=1024,
        description="Most prompt bytes one request with options.explain may ask to see (every "
        "prompt of every item is returned); beyond it: 413 naming options.explain.",
    )
    cache_size: int = Field(
        default=100_000,
        ge=0,
        description="Verdicts kept in the in-memory LRU cache (0 disables caching, not the "
        "deduplication of identical calls in flight).",
    )
    cache_path: Path | None = Field(
        default=None,
        description="SQLite file that persists the verdict cache across restarts; unset keeps "
        "the cache in memory only.",
    )
    cache_max_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=0,
        description="Most bytes of encoded verdicts in the in-memory cache.",
    )
    cache_file_max_entries: int = Field(
        default=2_000_000,
        ge=1,
        description="Most verdicts in the cache_path SQLite file; the least recently used "
        "are evicted.",
    )
    cache_file_max_bytes: int = Field(
        default=512 * 1024 * 1024,
        ge=1024 * 1024,
        description="Most bytes of pages in use in the cache_path file (its write-ahead log "
        "adds at most 4 MiB), so that it fits the volume it lives on.",
    )
    redis_url: SecretStr | None = Field(
        default=None,
        description="Redis or Valkey URL for the state replicas share (verdicts, calibration "
        "windows, monitor statistics and alerts); unset: local state only. Credentials go in "
        "it (redis://:PASSWORD@host:6379/0), rediss:// for TLS. When it does not "
        "answer, the service scores on its local state and catches up when it returns.",
    )
    redis_password_file: Path | None = Field(
        default=None,
        description="File holding the Redis password (a mounted Secret), for a redis_url "
        "without one; read at start-up.",
    )
    redis_timeout_s: float = Field(
        default=0.25, gt=0, description="Deadline of one Redis operation."
    )
    redis_prefix: str = Field(
        default="rewardsvc", min_length=1, description="Namespace of this deployment's keys."
    )
    redis_verdict_ttl_s: int = Field(
        default=7 * 86400, ge=60, description="Expiry of shared verdicts in Redis, in seconds."
    )
    reward_log: Path | None = Field(
        default=None,
        description="JSON Lines file to append one line per scored item to (time, rubric id and "
        "version, item id, reward, status, uncertainty, flags, metadata, run; one per group "
        "or pair, with kind, for /v1/groups and /v1/preferences); unset: no log.",
    )
    reward_log_max_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=1024,
        description="Size at which the reward log rotates (the file is renamed to .1, .2, ...).",
    )
    reward_log_backups: int = Field(default=5, ge=0, description="Rotated reward log files kept.")
    ors_environments: list[Path] = Field(
        default_factory=list,
        description="Open Reward Standard environment files, as a JSON list of paths "
        '(["envs/math.yaml"]). Each names an environment, the library rubric, recipe or '
        "routing table that scores it and its task file; the service then serves them over "
        "ORS at its root (/create_session, /{env}/tasks, /{env}/call, ...; see the ORS "
        "how-to). Read at start only; a file that does not validate stops the start.",
    )
    monitor_max_runs: int = Field(
        default=256,
        ge=1,
        description="(rubric, run) pairs the reward monitor keeps; beyond it the least recently "
        "seen run with fewer samples than a window is dropped first, a run past its first "
        "window only after a day without samples (so that run-name churn cannot evict it).",
    )
    monitor_metric_runs: int = Field(
        default=16,
        ge=0,
        description="Most recent runs whose monitor signals are exported as Prometheus gauges.",
    )
    monitor_webhook: str | None = Field(
        default=None, description="URL that every monitor alert event is POSTed to as JSON."
    )
    run_budget: float | None = Field(
        default=None,
        gt=0,
        description="Budget of every run, in the currency of the judges' prices (their "
        "prices per million tokens): once a run's cost (usage.cost summed over its requests, "
        "every rubric and replica) reaches it, new scoring for the run is refused with 402 "
        "budget_exceeded and the budget_exceeded alert fires. Unset: no budget.",
    )
    run_budgets: dict[str, float] = Field(
        default_factory=dict,
        description="Budgets of named runs, as a JSON object {run: budget} (a request without "
        "a run counts as 'default'); a run listed here has this budget instead of run_budget.",
    )
    canary_interval_s: float = Field(
        default=900.0,
        gt=0,
        description="How often each rubric's canaries are scored by each of its judges.",
    )
    canary_budget: int = Field(
        default=64,
        ge=0,
        description="Most canary items scored per round (0 turns canaries off).",
    )
    log_level: str = Field(
        default="info", description="Log level: critical, error, warning, info or debug."
    )
    reload: bool = Field(
        default=True,
        description="Watch the rubric folder and hot-reload edited rubrics (an edit that does not "
        "validate is refused and the last good version keeps serving).",
    )

    @field_validator("log_level")
    @classmethod
    def _check_level(cls, value: str) -> str:
        level = value.strip().lower()
        if level not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
        return level

    @field_validator("api_key_scopes")
    @classmethod
    def _check_scopes(cls, value: SecretStr | None) -> SecretStr | None:
        # The CLI shows only the message of a settings error, never the secret input.
        if value is not None:
            parse_scopes(value.get_secret_value())
        return value

    @model_validator(mode="after")
    def _check_limits(self) -> Settings:
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

    @field_validator("run_budgets")
    @classmethod
    def _check_budgets(cls, value: dict[str, float]) -> dict[str, float]:
        for run, budget in value.items():
            if budget <= 0:
                raise ValueError(f"{run}: a budget must be more than 0")
        return value

    def run_budget_of(self, run: str) -> float | None:
        """The budget of ``run``: its own in run_budgets, else run_budget (None: none)."""
        return self.run_budgets.get(run, self.run_budget)

    def redis_password(self) -> str | None:
        """The password in redis_password_file (surrounding whitespace dropped), or None."""
        return read_password(self.redis_password_file)

    def api_key_list(self) -> list[str]:
        """All configured API keys (from api_keys and api_keys_file); empty means no auth."""
        return read_api_keys(self.api_keys, self.api_keys_file)

    def api_key_scope_list(self) -> list[KeyScope]:
        """The scoped API keys of api_key_scopes (validated when the settings were read)."""
        if self.api_key_scopes is None:
            return []
        return parse_scopes(self.api_key_scopes.get_secret_value())
