"""Recipe and routing files of the library: ``recipes/*.yaml`` beside the rubrics.

A file there is a recipe (``kind: recipe``) or a routing table (``kind: routing``), whose
``id`` matches its file name. Loading is in two steps: each file is validated on its own
(:func:`validate_recipe_file`), then, once the rubrics are loaded, linked to them
(:func:`link_recipe`, :func:`link_routing`): every rubric or constitution a recipe names,
and every target of a routing table, must be served. A failure at either step is a
``file:line`` problem, like a rubric's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from rewardsvc.core.errors import RequestError
from rewardsvc.core.recipe import Recipe, RoutingTable, resolve_components
from rewardsvc.core.rubric import Rubric
from rewardsvc.library.taskfiles import with_task_files
from rewardsvc.library.yamlfile import InvalidFile, Problem, line_of, validate_document

RECIPES_DIR = "recipes"
"""The folder of recipe and routing files, inside the rubric library directory."""


@dataclass(frozen=True)
class RecipeEntry:
    """A served recipe, with the rubric of each judged component as it was when linked."""

    kind: ClassVar[Literal["recipe"]] = "recipe"
    recipe: Recipe
    rubrics: dict[str, Rubric]
    version: str
    path: Path
    text: str

    @property
    def document(self) -> Recipe:
        """The served recipe."""
        return self.recipe


@dataclass(frozen=True)
class RoutingEntry:
    """A served routing table."""

    kind: ClassVar[Literal["routing"]] = "routing"
    table: RoutingTable
    version: str
    path: Path
    text: str

    @property
    def document(self) -> RoutingTable:
        """The served routing table."""
        return self.table


def validate_recipe_file(
    doc: Any, path: Path, context: dict[str, Any] | None
) -> Recipe | RoutingTable:
    """Validate a parsed recipe or routing file (chosen by its ``kind``); its id must match
    its file name. Raises InvalidFile."""
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if kind not in ("recipe", "routing"):
        line = line_of(doc, ("kind",))
        raise InvalidFile(
            [Problem(str(path), line, "kind", f"must be recipe or routing, not {kind!r}")]
        )
    model: type[Recipe | RoutingTable] = Recipe if kind == "recipe" else RoutingTable
    document = validate_document(doc, model, str(path), with_task_files(context, path))
    if document.id != path.stem:
        line = line_of(doc, ("id",))
        raise InvalidFile(
            [Problem(str(path), line, "id", f"must match the file name {path.stem!r}")]
        )
    return document


def link_recipe(
    recipe: Recipe, doc: Any, path: Path, text: str, lookup: Callable[[str], Rubric | None]
) -> RecipeEntry:
    """The served entry of ``recipe``, its library references looked up with ``lookup``
    (raises InvalidFile at the component's line when one is not served)."""
    try:
        rubrics = resolve_components(recipe, lookup)
    except RequestError as exc:
        raise InvalidFile(
            [Problem(str(path), line_of(doc, p.loc), p.path, p.message) for p in exc.problems]
        ) from exc
    versions = {
        ref: rubrics[c.id].version()
        for c in recipe.components
        if isinstance(ref := c.reference, str)
    }
    return RecipeEntry(recipe, rubrics, recipe.version(versions), path, text)


def link_routing(
    table: RoutingTable, doc: Any, path: Path, text: str, versions: Mapping[str, str]
) -> RoutingEntry:
    """The served entry of ``table``; ``versions`` are those of the rubrics and recipes it
    may route to (raises InvalidFile at the route's line when a target is not served).
    Its version follows the versions of its targets."""
    targets: list[tuple[tuple[str, ...], str]] = [
        (("routes", source), target) for source, target in table.routes.items()
    ]
    if table.default is not None:
        targets.append((("default",), table.default))
    problems = [
        Problem(
            str(path),
            line_of(doc, loc),
            ".".join(str(part) for part in loc),
            f"no rubric or recipe {target!r} is served",
        )
        for loc, target in targets
        if target not in versions
    ]
    if problems:
        raise InvalidFile(problems)
    content = {
        "table": table.model_dump(mode="json"),
        "targets": {t: versions[t] for _, t in sorted(targets, key=lambda x: x[1])},
    }
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
    version = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()[:16]
    return RoutingEntry(table, version, path, text)
