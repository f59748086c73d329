"""The rubric library on disk: loading, versions, hot reload with last-good fallback.

Every ``*.yaml``/``*.yml`` file at the top of the library directory is one rubric
whose ``id`` matches the file name; those of its ``recipes/`` folder are recipes and
routing tables (``rewardsvc.library.recipes``), which must name served rubrics and
recipes. Rubrics, recipes and routing tables share one id space. An edit that
validates replaces the served version; an edit that does not (bad YAML, bad bytes,
too large, invalid) is refused, its problems are kept for ``errors()`` and reported to
the observer, and the last good version of that file keeps serving.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import watchfiles

from rewardsvc.core.observe import NULL_OBSERVER, Observer
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.recipe import Recipe, RoutingTable
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.trajectory import NOTE_FLAGS
from rewardsvc.library.recipes import (
    RECIPES_DIR,
    RecipeEntry,
    RoutingEntry,
    link_recipe,
    link_routing,
    validate_recipe_file,
)
from rewardsvc.library.taskfiles import with_task_files
from rewardsvc.library.yamlfile import (
    DEFAULT_MAX_BYTES,
    InvalidFile,
    Problem,
    load_file,
    load_text,
    parse_yaml,
    read_text,
    validate_document,
)
from rewardsvc.safety.detectors import FLAGS
from rewardsvc.safety.tamper import TAMPER_FLAGS

log = logging.getLogger(__name__)

RUBRIC_SUFFIXES = (".yaml", ".yml")


class UnknownRubric(KeyError):
    """No rubric, recipe or routing table of the library has this id; the message names
    the served ids (the first 20) and the refused files that might have held it."""

    def __init__(self, rubric_id: str, message: str):
        super().__init__(rubric_id)
        self.rubric_id = rubric_id
        self.message = message

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Entry:
    """A served rubric: the model, its content version, and where it came from."""

    rubric: Rubric
    version: str
    path: Path
    text: str

    @property
    def document(self) -> Rubric:
        """The served rubric (as :class:`RecipeEntry` and :class:`RoutingEntry` name theirs)."""
        return self.rubric

    @property
    def kind(self) -> Literal["rubric", "constitution"]:
        """``rubric`` or ``constitution``."""
        return self.rubric.kind


Served = Entry | RecipeEntry | RoutingEntry
"""A file the library serves: a rubric, a recipe or a routing table."""


def _versions(*tables: Mapping[str, Served]) -> dict[str, str]:
    """The version of each served id of ``tables`` (a later table's id wins)."""
    return {k: e.version for table in tables for k, e in table.items()}


def validation_context(pool: JudgePool | None) -> dict[str, Any]:
    """What a rubric or recipe is validated against: the detectors' flag names (a
    rubric's ``flag_penalties``), the graders' (the tamper flags: a recipe's), and the judge
    names of ``pool`` with the judges that cannot score, those that see images (unchecked
    when there is no pool) and each judge's weight (bound to the rubric, see
    ``Rubric.judge_weights``)."""
    context: dict[str, Any] = {
        "flag_names": frozenset(FLAGS) | frozenset(NOTE_FLAGS),
        "grader_flag_names": frozenset(TAMPER_FLAGS),
    }
    if pool is not None:
        context["judge_names"] = frozenset(pool.judges)
        context["judge_unable"] = unable_judges(pool)
        context["judge_vision"] = frozenset(
            name for name, j in pool.judges.items() if j.capabilities.vision
        )
        context["judge_weights"] = {name: j.weight for name, j in pool.judges.items()}
    return context


def unable_judges(pool: JudgePool) -> dict[str, str]:
    """Why each pool judge that cannot score can not: its method needs a capability its
    endpoint lacks (a rubric that lists it is refused with this text)."""
    out: dict[str, str] = {}
    for name, config in pool.judges.items():
        lacking = config.lacking()
        if lacking:
            said = ", ".join(f"{c}: false" for c in lacking)
            out[name] = (
                f"judge {name!r} cannot score with method {config.method}: it needs "
                f"{' and '.join(lacking)}, and the judge pool says capabilities {{{said}}} "
                "(give the judge a method its endpoint can do, e.g. sampled, or list another "
                "judge)"
            )
    return out


def load_pool(path: Path) -> JudgePool:
    """Load and validate a judge pool file (raises InvalidFile with file:line problems)."""
    return load_file(path, JudgePool)


def validate_rubric_file(doc: Any, path: Path, context: dict[str, Any] | None) -> Rubric:
    """Validate a parsed rubric file; its id must match its file name so either finds the other."""
    rubric = validate_document(doc, Rubric, str(path), with_task_files(context, path))
    if rubric.id != path.stem:
        line = doc.lc.key("id")[0] + 1
        raise InvalidFile(
            [Problem(str(path), line, "id", f"must match the file name {path.stem!r}")]
        )
    return rubric


def is_pool_document(doc: Any) -> bool:
    """A judge pool file is a mapping with ``judges`` as a mapping and no rubric ``id``."""
    return isinstance(doc, dict) and "id" not in doc and isinstance(doc.get("judges"), dict)


class Registry:
    """The rubrics of one library directory, validated against one judge pool.

    ``max_bytes`` bounds each rubric file and each text given to :meth:`validate_text`;
    ``observer`` hears, on each reload, which files were refused or recovered.
    """

    def __init__(
        self,
        rubrics_dir: Path,
        pool: JudgePool,
        observer: Observer = NULL_OBSERVER,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ):
        self.rubrics_dir = Path(rubrics_dir)
        self.pool = pool
        self.observer = observer
        self.max_bytes = max_bytes
        self._entries: dict[str, Entry] = {}
        self._errors: dict[str, list[Problem]] = {}
        self._recipes: dict[str, RecipeEntry] = {}
        self._routing: dict[str, RoutingEntry] = {}
        if not self.rubrics_dir.is_dir():
            raise FileNotFoundError(
                errno.ENOENT, "no such rubrics directory", str(self.rubrics_dir)
            )
        self.reload()

    @property
    def context(self) -> dict[str, Any]:
        """Validation context: the judge and flag names a rubric may refer to."""
        return validation_context(self.pool)

    def rubric_files(self) -> list[Path]:
        """The rubric files of the library, in a stable order."""
        return sorted(
            p for p in self.rubrics_dir.iterdir() if p.suffix in RUBRIC_SUFFIXES and p.is_file()
        )

    def recipe_files(self) -> list[Path]:
        """The recipe and routing files of the library, in a stable order."""
        folder = self.rubrics_dir / RECIPES_DIR
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if p.suffix in RUBRIC_SUFFIXES and p.is_file())

    def validate_text(self, text: str, name: str = "<request>") -> Rubric:
        """Validate rubric YAML without installing it (raises InvalidFile, also for
        text above ``max_bytes``)."""
        return load_text(text, Rubric, name, self.context, self.max_bytes)

    def load(self, path: Path) -> Entry:
        """Validate one rubric file into an Entry (raises InvalidFile)."""
        text = read_text(path, self.max_bytes)
        rubric = validate_rubric_file(parse_yaml(text, str(path)), path, self.context)
        return Entry(rubric, rubric.version(), path, text)

    def reload(self) -> bool:
        """Re-read the library; return True when any served version changed."""
        entries: dict[str, Entry] = {}
        errors: dict[str, list[Problem]] = {}
        last_good = {e.path: e for e in self._entries.values()}
        for path in self.rubric_files():
            try:
                entry = self.load(path)
            except InvalidFile as exc:
                errors[str(path)] = exc.problems
                for problem in exc.problems:
                    log.error("refused rubric edit: %s", problem)
                kept = last_good.get(path)
                if kept is not None:
                    entries[kept.rubric.id] = kept
                continue
            if entry.rubric.id in entries:
                other = entries[entry.rubric.id].path
                errors[str(path)] = [Problem(str(path), 1, "id", f"already defined in {other}")]
                continue
            entries[entry.rubric.id] = entry
        recipes, routing = self._load_recipes(entries, errors)
        served = _versions(entries, recipes, routing)
        changed = served != _versions(self._entries, self._recipes, self._routing)
        for file in sorted(set(self._errors) | set(errors)):
            self.observer.rubric_file(file, file in errors)
        self._entries, self._errors = entries, errors
        self._recipes, self._routing = recipes, routing
        if changed:
            log.info("rubric library: %s", served)
        return changed

    def _load_recipes(
        self, rubrics: dict[str, Entry], errors: dict[str, list[Problem]]
    ) -> tuple[dict[str, RecipeEntry], dict[str, RoutingEntry]]:
        """Validate the recipe and routing files, then link them to the served rubrics
        (and the tables to the recipes); a refused file keeps its last good version."""
        recipes: dict[str, RecipeEntry] = {}
        routing: dict[str, RoutingEntry] = {}
        kept_before: list[RecipeEntry | RoutingEntry] = [
            *self._recipes.values(),
            *self._routing.values(),
        ]
        last_good = {e.path: e for e in kept_before}

        def refuse(path: Path, problems: list[Problem]) -> None:
            errors[str(path)] = problems
            for problem in problems:
                log.error("refused recipe edit: %s", problem)
            kept = last_good.get(path)
            if isinstance(kept, RecipeEntry):
                recipes.setdefault(kept.recipe.id, kept)
            elif isinstance(kept, RoutingEntry):
                routing.setdefault(kept.table.id, kept)

        served = {k: e.rubric for k, e in rubrics.items()}
        parsed: list[tuple[Path, str, Any, Recipe | RoutingTable]] = []
        for path in self.recipe_files():
            try:
                text = read_text(path, self.max_bytes)
                doc = parse_yaml(text, str(path))
                parsed.append((path, text, doc, validate_recipe_file(doc, path, self.context)))
            except InvalidFile as exc:
                refuse(path, exc.problems)
        # Recipes first: a routing table may route to them.
        parsed.sort(key=lambda p: isinstance(p[3], RoutingTable))
        for path, text, doc, document in parsed:
            taken: Served | None = rubrics.get(document.id) or recipes.get(document.id)
            taken = taken or routing.get(document.id)
            if taken is not None:
                refuse(path, [Problem(str(path), 1, "id", f"already defined in {taken.path}")])
                continue
            try:
                if isinstance(document, Recipe):
                    recipes[document.id] = link_recipe(document, doc, path, text, served.get)
                else:
                    versions = _versions(rubrics, recipes)
                    routing[document.id] = link_routing(document, doc, path, text, versions)
            except InvalidFile as exc:
                refuse(path, exc.problems)
        return recipes, routing

    def get(self, rubric_id: str) -> Entry:
        """The served entry for a rubric id (:class:`UnknownRubric`, a KeyError, if there
        is none)."""
        try:
            return self._entries[rubric_id]
        except KeyError:
            raise self.unknown(rubric_id) from None

    def unknown(self, rubric_id: str) -> UnknownRubric:
        """The error for an id the library does not serve, naming those it does and any
        refused file of that name."""
        known = [s.document.id for s in self.served()]
        if len(known) > 20:
            known = [*known[:20], "..."]
        refused = [Path(f).name for f in self._errors if Path(f).stem == rubric_id]
        message = f"unknown rubric {rubric_id!r}; known: {', '.join(known) or 'none'}"
        if refused:
            message += f"; its file {refused[0]} does not validate"
        return UnknownRubric(rubric_id, message)

    def recipe(self, recipe_id: str) -> RecipeEntry:
        """The served recipe with this id (KeyError if there is none)."""
        return self._recipes[recipe_id]

    def routing(self, table_id: str) -> RoutingEntry:
        """The served routing table with this id (KeyError if there is none)."""
        return self._routing[table_id]

    def recipe_entries(self) -> list[RecipeEntry | RoutingEntry]:
        """All served recipes and routing tables, by id."""
        both: dict[str, RecipeEntry | RoutingEntry] = {**self._recipes, **self._routing}
        return [both[k] for k in sorted(both)]

    def entries(self) -> list[Entry]:
        """All served entries, by id."""
        return [self._entries[k] for k in sorted(self._entries)]

    def served(self) -> list[Served]:
        """Every served rubric, recipe and routing table (one id space), by id."""
        every: dict[str, Served] = {**self._entries, **self._recipes, **self._routing}
        return [every[k] for k in sorted(every)]

    def find(self, target_id: str) -> Served | None:
        """The served rubric, recipe or routing table with this id (None: none)."""
        return (
            self._entries.get(target_id)
            or self._recipes.get(target_id)
            or (self._routing.get(target_id))
        )

    def errors(self) -> dict[str, list[Problem]]:
        """Problems of refused files, by file path."""
        return dict(self._errors)

    async def watch(self, stop: asyncio.Event | None = None) -> None:
        """Reload whenever a file of the library changes, until ``stop`` is set.

        Set ``WATCHFILES_FORCE_POLLING=1`` where file events do not arrive
        (some network and container volume mounts).
        """
        folders = [self.rubrics_dir]
        if (self.rubrics_dir / RECIPES_DIR).is_dir():
            folders.append(self.rubrics_dir / RECIPES_DIR)
        async for _ in watchfiles.awatch(
            *folders, stop_event=stop, debounce=200, step=50, recursive=False
        ):
            try:
                await asyncio.to_thread(self.reload)
            except Exception:
                # The watcher must outlive any one bad reload, or every later edit is
                # silently ignored while the stale library keeps serving.
                log.exception("rubric library reload failed; the served rubrics are unchanged")
