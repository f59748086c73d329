"""Service settings, read from ``REWARDSVC_*`` environment variables (or keyword arguments).

Each field's description is the documentation of its variable: the settings list in
the docs is generated from this model, so keep the descriptions complete. The secrets the
fields name are read by ``rewardsvc.credentials``. :class:`Settings` is composed of its
parts, in this order: :class:`Access` (where it listens, what it serves, who may call),
:class:`~rewardsvc.settings_limits.WorkLimits` (the bounds of its work) and its own
fields (cache, shared state, logs, monitor, budgets).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings

from rewardsvc.core.access import KeyScope
from rewardsvc.credentials import parse_scopes, read_api_keys, read_password
from rewardsvc.settings_limits import CONFIG, WorkLimits

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


class Access(BaseSettings):
    """Where the service listens, what it serves, and who may call it."""

    model_config = CONFIG

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

    @field_validator("api_key_scopes")
    @classmethod
    def _check_scopes(cls, value: SecretStr | None) -> SecretStr | None:
        # The CLI shows only the message of a settings error, never the secret input.
        if value is not None:
            parse_scopes(value.get_secret_value())
        return value

    def api_key_list(self) -> list[str]:
        """All configured API keys (from api_keys and api_keys_file); empty means no auth."""
        return read_api_keys(self.api_keys, self.api_keys_file)

    def api_key_scope_list(self) -> list[KeyScope]:
        """The scoped API keys of api_key_scopes (validated when the settings were read)."""
        if self.api_key_scopes is None:
            return []
        return parse_scopes(self.api_key_scopes.get_secret_value())


class Settings(WorkLimits, Access):
    """rewardsvc settings. Each field is the environment variable ``REWARDSVC_<FIELD>``."""

    model_config = CONFIG

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
    golden_interval_s: float = Field(
        default=900.0,
        gt=0,
        description="How often each rubric's golden set is re-scored by each of its judges "
        "(cache bypassed); also at start-up, which sets the judges' baselines.",
    )
    golden_every_batches: int = Field(
        default=0,
        ge=0,
        description="Also re-score a (rubric, judge) pair's golden set once this many batches "
        "were scored since its last re-score (0: by time only).",
    )
    golden_budget: int = Field(
        default=128,
        ge=0,
        description="Most golden items re-scored per round, on schedule or on demand (0 turns "
        "golden sets off); pairs beyond it wait for the next round.",
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
