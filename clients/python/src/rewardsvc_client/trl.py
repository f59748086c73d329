"""TRL adapter: a GRPOTrainer (or RLOOTrainer) reward function backed by rewardsvc.

TRL's contract (trl/trainer/grpo_trainer.py, ``_calculate_rewards``, TRL 1.x): every reward
function is called once per generation batch as

    reward_func(prompts=[...], completions=[...], completion_ids=[...],
                **{dataset column: [...] for each other column},
                trainer_state=TrainerState, log_extra=callable, log_metric=callable)

and returns one float per completion. ``None`` becomes NaN; a completion that every reward
function scored None is left out of its group's baseline and gets zero advantage, which is
exactly how a judge failure should be treated when rewardsvc is the only reward function.
With other reward functions, TRL sums the weighted rewards with ``nansum``, so a None from
rewardsvc silently drops its term from that row's sum and changes the reward's scale: pass
``missing="group_mean"`` (the mean reward of the other completions of the same prompt in the
batch) or a number, which fills those rows and logs ``<name>/filled``. Functions for which
``inspect.iscoroutinefunction`` is true run on TRL's event loop, concurrently with the other
async ones; ``TRLReward`` objects pass that check on Python 3.11 too (they carry a coroutine
function's code attributes), as do the functions ``trl_reward_func`` returns. The function's
``__name__`` names its metrics (``rewards/<name>/mean``) and its completions-table column.
Conversational datasets pass prompts and completions as lists of message dicts.

    from rewardsvc_client.trl import trl_reward_func
    reward = trl_reward_func("http://127.0.0.1:8000", "short-answer-correctness",
                             reference_column="answer")
    trainer = GRPOTrainer(model=..., reward_funcs=[reward], train_dataset=..., args=...)

A dataset with a rubric per prompt (HealthBench's ``rubrics``, RaR's ``rubric``) needs no
glue: name the column and its format, and each completion is judged by its prompt's own
criteria on the ``per-prompt`` template rubric::

    reward = trl_reward_func(URL, "per-prompt", reference_column=None,
                             criteria_column="rubrics", criteria_format="healthbench")
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypedDict, Unpack

from rewardsvc_client._adapt import (
    LoopClients,
    Settings,
    is_configuration_error,
    logger,
    named,
    to_wire_text,
    wire_item,
)
from rewardsvc_client.client import RewardServiceError
from rewardsvc_client.types import STATUSES, RewardResult

RewardFunc = Callable[..., Awaitable[list[float | None]]]


async def _reward_signature(
    prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
) -> list[float | None]:
    """The signature and code flags a ``TRLReward`` presents to ``inspect``."""
    raise NotImplementedError


def _fill_missing(
    rewards: list[float | None], prompts: Sequence[Any], missing: str | float
) -> list[float | None]:
    """Rewards with None replaced: by ``missing`` (a number), or by the mean reward of the
    completions of the same prompt (``"group_mean"``; None when none of them was scored)."""
    if missing == "none":
        return rewards
    if missing != "group_mean":
        return [float(missing) if r is None else r for r in rewards]
    groups: dict[str, list[float]] = {}
    keys = [repr(p) for p in prompts]
    for key, reward in zip(keys, rewards, strict=True):
        if reward is not None:
            groups.setdefault(key, []).append(reward)
    filled: list[float | None] = []
    for key, reward in zip(keys, rewards, strict=True):
        scored = groups.get(key)
        filled.append(reward if reward is not None or not scored else sum(scored) / len(scored))
    return filled


def _mark_coroutine(callable_object: Any) -> None:
    """Make ``inspect``/``asyncio.iscoroutinefunction`` true for an instance whose
    ``__call__`` is async (see ``TRLReward``)."""
    mark = getattr(inspect, "markcoroutinefunction", None)  # Python 3.12+
    if mark is not None:
        mark(callable_object)
        return
    # Python 3.11: inspect._signature_is_functionlike reads these five attributes.
    callable_object.__code__ = _reward_signature.__code__
    callable_object.__defaults__ = None
    callable_object.__kwdefaults__ = None
    callable_object.__annotations__ = {}


class TRLReward:
    """The reward callable (async ``__call__``); picklable, for TRL's experimental async
    trainers that ship reward functions to a spawned process. ``trl_reward_func`` wraps it in
    a plain ``async def`` function, which every TRL version with async reward support takes.

    TRL awaits a reward function only when ``inspect``/``asyncio.iscoroutinefunction(f)`` is
    true, which an instance with an async ``__call__`` is not by itself. On Python 3.12+ every
    instance is marked with ``inspect.markcoroutinefunction``; on 3.11, where that does not
    exist, ``inspect`` accepts "function-like" objects whose ``__code__`` has the coroutine
    flag, so each instance carries the code attributes of an ``async def`` with the reward
    signature (and asyncio's marker): both checks accept it on every supported Python.
    """

    # asyncio.iscoroutinefunction checks this marker (where asyncio has it).
    _is_coroutine = getattr(asyncio.coroutines, "_is_coroutine", None)

    def __init__(
        self,
        settings: Settings,
        reference_column: str | None = "reference",
        name: str | None = None,
        on_error: str = "raise",
        missing: str | float = "none",
        criteria_column: str | None = None,
    ) -> None:
        if on_error not in ("raise", "none"):
            raise ValueError("on_error must be 'raise' or 'none'")
        if isinstance(missing, str) and missing not in ("none", "group_mean"):
            raise ValueError("missing must be 'none', 'group_mean' or a number")
        self.missing = missing
        self.settings = settings
        self.reference_column = reference_column
        self.criteria_column = criteria_column
        self.on_error = on_error
        self.__name__ = name or f"rewardsvc/{settings.rubric}"
        self._clients = LoopClients(settings)
        self._warned_missing: set[str] = set()
        # Correlate the service's reward log with TRL's logs: this function's run id and
        # call number go into every item's metadata.
        self._run = uuid.uuid4().hex[:12]
        self._calls = 0
        self._mark_coroutine()

    def _mark_coroutine(self) -> None:
        _mark_coroutine(self)

    @property
    def run_id(self) -> str:
        """The id this function writes into item metadata ("run"), with "batch" (call number)
        and "step" (TRL global step): the keys to find its items in the service's reward log."""
        return self._run

    def _column(self, kwargs: Mapping[str, Any], column: str | None, what: str) -> Any:
        """The dataset column ``column`` from TRL's keyword arguments (warned once if absent)."""
        if column is None:
            return None
        values = kwargs.get(column)
        if values is None and column not in self._warned_missing:
            self._warned_missing.add(column)
            logger.warning(
                "rewardsvc %s: the dataset has no column %r; sending no %s",
                self.__name__,
                column,
                what,
            )
        return values

    def _items(
        self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        references = self._column(kwargs, self.reference_column, "reference")
        criteria = self._column(kwargs, self.criteria_column, "criteria")
        state = kwargs.get("trainer_state")
        metadata = {
            "trainer": "trl",
            "run": self._run,
            "batch": self._calls,
            "step": getattr(state, "global_step", None),
        }
        self._calls += 1
        return [
            wire_item(
                i,
                to_wire_text(prompt),
                to_wire_text(completion),
                metadata,
                references[i] if references is not None else None,
                criteria[i] if criteria is not None else None,
            )
            for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True))
        ]

    def _log(self, results: list[RewardResult], kwargs: Mapping[str, Any]) -> None:
        """Report status, uncertainty and flags through TRL's hooks when it passes them."""
        log_metric = kwargs.get("log_metric")
        log_extra = kwargs.get("log_extra")
        prefix = self.__name__
        n = len(results) or 1
        if callable(log_metric):
            for status in STATUSES:
                log_metric(f"{prefix}/{status}", sum(r.status == status for r in results) / n)
            scored = [r.uncertainty for r in results if r.scored and r.uncertainty is not None]
            if scored:
                log_metric(f"{prefix}/uncertainty", sum(scored) / len(scored))
            log_metric(f"{prefix}/flagged", sum(bool(r.flags) for r in results) / n)
            log_metric(f"{prefix}/cached", sum(r.cached for r in results) / n)
            # Logged on every batch (0.0 here, 1.0 when the request fails) so that TRL's
            # average of it is the fraction of failed batches.
            log_metric(f"{prefix}/request_failed", 0.0)
        if callable(log_extra):
            log_extra(f"{prefix}/status", [r.status for r in results])
            log_extra(f"{prefix}/uncertainty", [r.uncertainty for r in results])
            log_extra(f"{prefix}/flags", [",".join(r.flags) for r in results])
            log_extra(f"{prefix}/version", [r.version for r in results])

    async def results(
        self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> list[RewardResult] | None:
        """The service's results for one generation batch (one request), logged through TRL's
        hooks; None when the request failed and ``on_error`` is "none"."""
        items = self._items(prompts, completions, kwargs)
        if not items:
            return []
        try:
            response = await self._clients.get().rewards(
                self.settings.rubric, items, self.settings.options, run=self.settings.run
            )
        except RewardServiceError as exc:
            if self.on_error == "raise" or is_configuration_error(exc):
                raise
            # on_error="none": a service outage masks the batch instead of ending the run.
            logger.error("rewardsvc %s: %s; rewards set to None", self.__name__, exc)
            log_metric = kwargs.get("log_metric")
            if callable(log_metric):
                log_metric(f"{self.__name__}/request_failed", 1.0)
            return None
        self._log(response.results, kwargs)
        return response.results

    async def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
    ) -> list[float | None]:
        """Score one generation batch in one request; None where the service has no reward."""
        results = await self.results(prompts, completions, kwargs)
        if results is None:
            return [None] * len(completions)
        rewards = _fill_missing([r.reward for r in results], prompts, self.missing)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and self.missing != "none" and results:
            filled = sum(r.reward is None for r in results) / len(results)
            log_metric(f"{self.__name__}/filled", filled)
        return rewards

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_clients"] = None
        # inspect's marker and code objects are process-local: set again on unpickling.
        for key in (
            "_is_coroutine_marker",
            "__code__",
            "__defaults__",
            "__kwdefaults__",
            "__annotations__",
        ):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._clients = LoopClients(self.settings)
        self._mark_coroutine()


def trl_reward_func(
    url: str | None,
    rubric: str | None,
    reference_column: str | None = "reference",
    api_key: str | None = None,
    *,
    name: str | None = None,
    options: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    retries: int = 3,
    max_batch: int = 128,
    on_error: str = "raise",
    missing: str | float = "none",
    run: str | None = None,
    criteria_column: str | None = None,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
) -> RewardFunc:
    """A TRL reward function scoring completions with rewardsvc.

    Args:
        url: the service, e.g. ``http://127.0.0.1:8000`` (None: $REWARDSVC_URL).
        rubric: rubric id (None: $REWARDSVC_RUBRIC).
        reference_column: the dataset column sent as each item's reference (e.g. "answer");
            None sends no reference. A list of accepted answers is sent as "a | b"; a
            structured value (a code task's test cases or test files) as its JSON text.
        api_key: bearer key (None: $REWARDSVC_API_KEY, if set).
        name: the function's ``__name__`` in TRL's logs; default ``rewardsvc/<rubric>``.
        options: per-request overrides, e.g. ``{"judges": ["primary"]}``.
        timeout, retries, max_batch: see ``rewardsvc_client.Client``.
        on_error: "raise" (default) ends training when the service stays unreachable or
            answers 5xx after retries; "none" returns None for the whole batch instead (TRL
            then skips it). A 4xx (unknown rubric, bad key, bad request) always raises.
        missing: what a completion without a reward gets: "none" (default; TRL masks it
            when no other reward function scored it), "group_mean" (the mean of the scored
            completions of the same prompt) or a number; use one of the last two when other
            reward functions score the same rows, so the summed reward keeps its scale.
        run: the training run's name, sent with every request (default $REWARDSVC_RUN).
        criteria_column: the dataset column holding each prompt's own rubric (e.g.
            HealthBench's "rubrics"), sent as the item's ``criteria``; None sends none.
            A JSON text is parsed. Use it with a template rubric such as "per-prompt".
        criteria_format: the column's format (``healthbench``, ``rar``, ``strings``,
            ``tinker``, ``rewardsvc``), sent as ``options.criteria_format`` (default
            $REWARDSVC_CRITERIA_FORMAT, else the service's: ``rewardsvc``).
        criteria_mode: "replace" (the service's default) or "extend" the template's
            criteria (default $REWARDSVC_CRITERIA_MODE).

    Returns:
        ``async def reward(prompts, completions, **kwargs) -> list[float | None]``; one batch
        request per call; None for items without a reward (status judge_error or rejected).
        When TRL passes ``log_metric``/``log_extra`` it logs ``<name>/ok|degraded|judge_error|
        rejected`` fractions, mean ``<name>/uncertainty``, ``<name>/flagged``, ``<name>/cached``,
        ``<name>/request_failed`` (1.0 for a batch whose request failed with on_error="none",
        else 0.0),
        and per-completion columns ``<name>/status``, ``<name>/uncertainty``, ``<name>/flags``,
        ``<name>/version`` (the version of the rubric each completion was scored with: its
        prompt's own with ``criteria_column``).
    """
    settings = Settings.resolve(
        url,
        rubric,
        api_key=api_key,
        timeout=timeout,
        retries=retries,
        max_batch=max_batch,
        options=options,
        run=run,
        criteria_format=criteria_format,
        criteria_mode=criteria_mode,
    )
    impl = TRLReward(
        settings,
        reference_column=reference_column,
        name=name,
        on_error=on_error,
        missing=missing,
        criteria_column=criteria_column,
    )

    async def reward(
        prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
    ) -> list[float | None]:
        return await impl(prompts, completions, **kwargs)

    reward.__doc__ = f"rewardsvc reward, rubric {settings.rubric!r} at {settings.url}"
    reward.rewardsvc = impl  # type: ignore[attr-defined]  # a function attribute: its scorer
    return named(reward, impl.__name__)


# ------------------------------------------------------------------ objectives

_MARKS = ("_is_coroutine_marker", "__code__", "__defaults__", "__kwdefaults__", "__annotations__")
"""inspect's coroutine marker and code attributes: process-local, set again on unpickling."""


def _batch_key(
    prompts: Sequence[Any], completions: Sequence[Any], kwargs: Mapping[str, Any]
) -> Any:
    """What tells one generation batch from another: TRL's step and the batch's texts."""
    step = getattr(kwargs.get("trainer_state"), "global_step", None)
    return step, len(completions), hash(repr((list(prompts), list(completions))))


class _SharedBatches:
    """The one request per generation batch that the objective functions of one
    ``trl_objective_funcs`` call share: the first function TRL calls sends it, the others
    (called concurrently on TRL's loop, or after it) await or read the same results."""

    KEEP = 4
    """Batches remembered: TRL calls every reward function of a batch before the next."""

    def __init__(self, scorer: TRLReward) -> None:
        self.scorer = scorer
        self.requests = 0
        self._tasks: dict[Any, tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = {}

    async def results(
        self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> list[RewardResult] | None:
        """The batch's results (one request for all objectives); None when it failed."""
        key = _batch_key(prompts, completions, kwargs)
        loop = asyncio.get_running_loop()
        held = self._tasks.get(key)
        if held is not None and held[1].done():
            return held[1].result()  # type: ignore[no-any-return]
        if held is None or held[0] is not loop:
            task = loop.create_task(self.scorer.results(prompts, completions, kwargs))
            self._tasks[key] = held = (loop, task)
            self.requests += 1
            while len(self._tasks) > self.KEEP:
                self._tasks.pop(next(iter(self._tasks)))
        # shield: one cancelled reward function must not cancel the others' request.
        return await asyncio.shield(held[1])

    def __getstate__(self) -> dict[str, Any]:
        return {"scorer": self.scorer, "requests": 0, "_tasks": {}}


class TRLObjective:
    """One objective of a rubric or recipe as a TRL reward function: the value the service
    returns in ``objectives[name]`` for each completion (None where it has none: TRL masks
    it). Async and picklable, marked as a coroutine function as ``TRLReward`` is."""

    _is_coroutine = TRLReward._is_coroutine

    def __init__(self, shared: _SharedBatches, objective: str, name: str) -> None:
        self.shared = shared
        self.objective = objective
        self.__name__ = name
        _mark_coroutine(self)

    async def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
    ) -> list[float | None]:
        """This objective's value for each completion of the batch."""
        results = await self.shared.results(prompts, completions, kwargs)
        if results is None:
            return [None] * len(completions)
        values = [r.objectives.get(self.objective) for r in results]
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and values:
            log_metric(f"{self.__name__}/missing", sum(v is None for v in values) / len(values))
        if results and all(self.objective not in r.objectives for r in results):
            logger.warning(
                "rewardsvc %s: the service returned no objective %r (does %s declare it?)",
                self.__name__,
                self.objective,
                self.shared.scorer.settings.rubric,
            )
        return values

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in _MARKS}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        _mark_coroutine(self)


class TRLOptions(TypedDict, total=False):
    """The keyword arguments of :func:`trl_reward_func` that :func:`trl_objective_funcs`
    takes too (``missing`` is the reward function's alone: an objective without a value is
    None, which TRL masks)."""

    name: str | None
    options: Mapping[str, Any] | None
    timeout: float | None
    retries: int
    max_batch: int
    on_error: str
    run: str | None
    criteria_column: str | None
    criteria_format: str | None
    criteria_mode: str | None


def trl_objective_funcs(
    url: str | None,
    rubric: str | None,
    objectives: Sequence[str],
    reference_column: str | None = "reference",
    api_key: str | None = None,
    **kwargs: Unpack[TRLOptions],
) -> list[TRLObjective]:
    """One TRL reward function per objective of a rubric or recipe, sharing one request
    per generation batch.

    ``objectives`` are names the rubric or recipe declares (its ``objectives:``). Pass the
    functions together as ``reward_funcs`` (with ``reward_weights`` if they should not
    count equally); TRL then has one reward per objective, which is what its
    ``multi_objective_aggregation="normalize_then_sum"`` (GDPO) normalizes per objective
    within each group. Each function is named ``<name>/<objective>`` (``name`` defaults to
    ``rewardsvc/<rubric>``: TRL logs ``rewards/<name>/<objective>/mean`` and a completions
    column of that name) and returns None where the service has no value for the objective
    (TRL masks it). The service is asked once per batch, by whichever function TRL calls
    first; the status metrics are logged once, under ``name``. Other arguments are those
    of :func:`trl_reward_func` (:class:`TRLOptions`).
    """
    if not objectives or len(set(objectives)) != len(objectives):
        raise ValueError("objectives: give each objective name once")
    reward = trl_reward_func(url, rubric, reference_column, api_key, **kwargs)
    scorer: TRLReward = reward.rewardsvc  # type: ignore[attr-defined]
    shared = _SharedBatches(scorer)
    return [TRLObjective(shared, o, f"{scorer.__name__}/{o}") for o in objectives]


__all__ = ["TRLObjective", "TRLOptions", "TRLReward", "trl_objective_funcs", "trl_reward_func"]
