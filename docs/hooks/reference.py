"""MkDocs hook: the reference pages, generated from the code at every build.

A page under ``docs/`` holds a marker such as ``<!-- reference:settings -->``; the hook
replaces it with Markdown generated from the code it documents, so a reference page can
never drift from the code:

- ``settings``: the fields and descriptions of ``rewardsvc.settings.Settings``;
- ``schemas``: the JSON Schemas of rubric, judge pool, recipe and routing files, from the
  pydantic models (what ``rewardsvc schema`` prints);
- ``http-api``: the OpenAPI document of the app ``rewardsvc.server.app.create_app`` builds
  (no judge is started: the document is built without running the app's lifespan);
- ``cli``: the ``rewardsvc`` command's argparse parser (``rewardsvc.cli.build_parser``);
- ``layers``: the layers contract of import-linter in ``pyproject.toml``;
- ``client-errors``: the exception classes of the client, ``rewardsvc_client.errors``.

The hook also checks links that leave ``docs/`` for a file of the repository (a rubric, a
results file, ``deploy/README.md``): the file must exist, else the build fails; the link
is shown as the repository path. ``tests/test_docs.py`` drives these functions directly.
"""

from __future__ import annotations

import argparse
import inspect
import json
import logging
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

log = logging.getLogger("mkdocs.hooks.reference")

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!-- reference:([a-z-]+) -->")
# A Markdown link whose target is relative (no scheme, no anchor-only link).
LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s]+)\)")


class UndocumentedError(ValueError):
    """Something the reference must describe has no description in the code."""


def _cell(text: str) -> str:
    """One Markdown table cell: a single line with its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _shown_default(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def _annotation(field: FieldInfo) -> str:
    text = str(field.annotation).replace("typing.", "").replace("pathlib.", "")
    text = re.sub(r"<class '([\w.]+)'>", r"\1", text)
    return text.replace("pydantic.types.", "")


def settings_markdown(settings_cls: type[BaseModel] | None = None) -> str:
    """The settings table: every field of ``settings_cls`` (default ``Settings``) as its
    ``REWARDSVC_*`` variable, with type, default and description. A field without a
    description raises ``UndocumentedError``: a setting is documented where it is defined."""
    if settings_cls is None:
        from rewardsvc.settings import Settings

        settings_cls = Settings
    prefix = str(settings_cls.model_config.get("env_prefix", ""))
    rows = ["| variable | type | default | meaning |", "|---|---|---|---|"]
    missing = []
    for name, field in settings_cls.model_fields.items():
        if not (field.description or "").strip():
            missing.append(name)
            continue
        variable = f"{prefix}{name}".upper()
        default = "required" if field.is_required() else _shown_default(field.default)
        rows.append(
            f"| `{variable}` | `{_cell(_annotation(field))}` | {default} | "
            f"{_cell(field.description or '')} |"
        )
    if missing:
        raise UndocumentedError(f"settings without a description: {', '.join(missing)}")
    return "\n".join(rows) + "\n"


def _anchor(prefix: str, name: str) -> str:
    return f"{prefix}{name}".lower()


def _type_of(schema: Mapping[str, Any], prefix: str = "") -> str:
    """A short type name for a JSON Schema node; a ``$ref`` links to the section of its
    definition (``prefix`` keeps the anchors of two schemas with a same-named type apart)."""
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(prefix, name)})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_type_of(s, prefix) for s in schema[key])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " | ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        if isinstance(items, Mapping):
            return f"list of {_type_of(items, prefix)}"
        return "list"
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        return f"map of {_type_of(schema['additionalProperties'], prefix)}"
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    return str(kind or "any")


def _object_table(name: str, schema: Mapping[str, Any], level: int, prefix: str = "") -> list[str]:
    """A definition's section: its description and a table of its properties."""
    lines = [f"{'#' * level} {name} {{#{_anchor(prefix, name)}}}", ""]
    if schema.get("description"):
        lines += [" ".join(str(schema["description"]).split()), ""]
    properties = schema.get("properties") or {}
    if not properties:
        lines += [f"Type: {_type_of(schema, prefix)}.", ""]
        return lines
    required = set(schema.get("required") or ())
    lines += ["| field | type | default | description |", "|---|---|---|---|"]
    for key, prop in properties.items():
        default = "required" if key in required else "–"
        if "default" in prop:
            default = f"`{_cell(json.dumps(prop['default']))}`"
        lines.append(
            f"| `{key}` | {_cell(_type_of(prop, prefix))} | {default} | "
            f"{_cell(str(prop.get('description', '')))} |"
        )
    return [*lines, ""]


def _file_models() -> list[tuple[str, str, type[BaseModel]]]:
    from rewardsvc.core.pool import JudgePool
    from rewardsvc.core.recipe import Recipe, RoutingTable
    from rewardsvc.core.rubric import Rubric

    return [
        ("Rubric", "rewardsvc schema", Rubric),
        ("Judge pool", "rewardsvc schema --pool", JudgePool),
        ("Recipe", "rewardsvc schema --recipe", Recipe),
        ("Routing table", "rewardsvc schema --routing", RoutingTable),
    ]


def schemas_markdown() -> str:
    """Every file kind's JSON Schema as field tables, one section per model."""
    lines: list[str] = []
    for title, command, model in _file_models():
        schema = model.model_json_schema()
        prefix = title.lower().replace(" ", "-") + "-"
        lines += [f"## {title} file", "", f"`{command}` prints this schema as JSON.", ""]
        root = {k: v for k, v in schema.items() if k != "$defs"}
        lines += _object_table(f"The {title.lower()} file", root, 3, prefix)
        definitions = schema.get("$defs", {})
        if definitions:
            lines += [f"### Types of the {title.lower()} file", ""]
        for name in sorted(definitions):
            lines += _object_table(name, definitions[name], 4, prefix)
    return "\n".join(lines)


def openapi_document() -> dict[str, Any]:
    """The service's OpenAPI document, as ``/openapi.json`` serves it with API keys set."""
    from rewardsvc.server.app import create_app
    from rewardsvc.settings import Settings

    # A key makes the document show which routes need one; the lifespan (which starts
    # the judges) never runs, since the document is built from the routes alone.
    settings = Settings(api_keys="docs-build", api_keys_file=None, api_key_scopes=None)
    return create_app(settings).openapi()


def http_api_markdown(document: Mapping[str, Any] | None = None) -> str:
    """Every operation of the OpenAPI document (parameters, body, responses), then every
    schema it names. An operation without a summary raises ``UndocumentedError``."""
    document = document or openapi_document()
    lines = ["## Operations", ""]
    for path, operations in document["paths"].items():
        for method, op in operations.items():
            if not op.get("summary"):
                raise UndocumentedError(f"{method.upper()} {path} has no summary")
            lines += [f"### `{method.upper()} {path}`", "", f"**{op['summary']}.**", ""]
            if op.get("description"):
                lines += [op["description"].replace("``", "`"), ""]
            if op.get("security"):
                lines += ["Needs an API key when the service has keys.", ""]
            params = op.get("parameters") or []
            if params:
                lines += ["| parameter | in | type | description |", "|---|---|---|---|"]
                for p in params:
                    lines.append(
                        f"| `{p['name']}` | {p['in']} | {_cell(_type_of(p.get('schema', {})))} | "
                        f"{_cell(str(p.get('description', '')))} |"
                    )
                lines.append("")
            body = op.get("requestBody", {}).get("content", {})
            for media, content in body.items():
                lines += [f"Body (`{media}`): {_type_of(content.get('schema', {}))}.", ""]
            lines += ["| status | meaning | body |", "|---|---|---|"]
            for status, response in op.get("responses", {}).items():
                schemas = [
                    _type_of(c["schema"])
                    for c in response.get("content", {}).values()
                    if c.get("schema")
                ]
                lines.append(
                    f"| {status} | {_cell(response.get('description', ''))} | "
                    f"{_cell(', '.join(schemas))} |"
                )
            lines.append("")
    lines += ["## Schemas", ""]
    for name, schema in sorted(document.get("components", {}).get("schemas", {}).items()):
        lines += _object_table(name, schema, 3)
    return "\n".join(lines)


def _subcommands(parser: argparse.ArgumentParser) -> Iterable[tuple[str, str, Any]]:
    # argparse has no public way to list subcommands: read its subparsers action.
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def cli_markdown(parser: argparse.ArgumentParser | None = None) -> str:
    """Every subcommand of the ``rewardsvc`` parser with its usage and arguments."""
    if parser is None:
        from rewardsvc.cli import build_parser

        parser = build_parser()
    lines: list[str] = []
    for name, summary, sub in _subcommands(parser):
        if not summary:
            raise UndocumentedError(f"subcommand {name} has no help")
        usage = " ".join(sub.format_usage().removeprefix("usage: ").split())
        lines += [f"## `rewardsvc {name}`", "", summary[0].upper() + summary[1:] + ".", ""]
        lines += ["```", usage, "```", ""]
        rows = []
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            flag = ", ".join(action.option_strings) or action.dest
            default = action.default
            shown = "–" if default in (None, False, argparse.SUPPRESS) else f"`{default}`"
            rows.append(f"| `{flag}` | {shown} | {_cell(action.help or '')} |")
        if rows:
            lines += ["| argument | default | help |", "|---|---|---|", *rows, ""]
    return "\n".join(lines)


def import_contracts(pyproject: Path = ROOT / "pyproject.toml") -> list[dict[str, Any]]:
    """Every import-linter contract of ``pyproject.toml``, in the order it lists them."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def layers_contract(pyproject: Path = ROOT / "pyproject.toml") -> list[list[str]]:
    """The layers of the import-linter ``layers`` contract, top first, each a list of the
    modules that share the layer (the parentheses that mark an optional layer dropped)."""
    layered = next(c for c in import_contracts(pyproject) if c["type"] == "layers")
    return [[module.strip(" ()") for module in layer.split("|")] for layer in layered["layers"]]


def layers_markdown() -> str:
    """The layers contract as a numbered list, top layer (may import every other) first,
    then the forbidden-import contracts that hold across the layers (pure rooms, the edges
    that alone see wire models), each with what it forbids to whom."""
    lines = []
    for number, layer in enumerate(layers_contract(), 1):
        lines.append(f"{number}. " + ", ".join(f"`{module}`" for module in layer))
    lines += ["", "Across the layers:", ""]
    for contract in import_contracts():
        if contract["type"] == "forbidden":
            sources = ", ".join(f"`{module}`" for module in contract["source_modules"])
            forbidden = ", ".join(f"`{module}`" for module in contract["forbidden_modules"])
            lines.append(f"- **{contract['name']}**: {sources} may not import {forbidden}.")
    return "\n".join(lines) + "\n"


def client_errors_markdown(module: ModuleType | None = None) -> str:
    """The exception classes of the client (``rewardsvc_client.errors``), each with its
    bases and docstring, base first."""
    if module is None:
        import rewardsvc_client.errors as module
    classes = [getattr(module, name) for name in module.__all__]
    # Fewer ancestors first: the base, then what derives from it.
    classes = sorted((c for c in classes if isinstance(c, type)), key=lambda c: len(c.__mro__))
    rows = ["| exception | is a | what it means |", "|---|---|---|"]
    for cls in classes:
        if not cls.__doc__:
            raise UndocumentedError(f"exception {cls.__name__} has no docstring")
        bases = ", ".join(f"`{base.__name__}`" for base in cls.__bases__)
        rows.append(f"| `{cls.__name__}` | {bases} | {_cell(inspect.getdoc(cls) or '')} |")
    return "\n".join(rows) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "settings": settings_markdown,
    "schemas": schemas_markdown,
    "http-api": http_api_markdown,
    "cli": cli_markdown,
    "layers": layers_markdown,
    "client-errors": client_errors_markdown,
}


def render_markers(markdown: str) -> str:
    """Replace every reference marker in a page with its generated Markdown."""

    def generated(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise KeyError(f"unknown reference marker {name!r}")
        return GENERATORS[name]()

    return MARKER.sub(generated, markdown)


def repository_links(markdown: str, page_path: str, docs_dir: Path) -> str:
    """Links from a page to repository files outside ``docs/``, checked and shown as paths.

    ``page_path`` is the page's path inside ``docs_dir``; a link that resolves inside it is
    left for MkDocs to check. A missing repository file raises ``FileNotFoundError``."""
    root = docs_dir.parent

    def rewrite(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2)
        path = target.split("#", 1)[0]
        if not path:
            return match.group(0)
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(page_path), path))
        if not resolved.startswith("../"):
            return match.group(0)
        repo_path = resolved.removeprefix("../")
        if not (root / repo_path).exists():
            raise FileNotFoundError(f"{page_path}: link to {target}: no {repo_path} in the repo")
        shown = f"`{repo_path}`"
        return text if text in (shown, repo_path) else f"{text} ({shown})"

    return LINK.sub(rewrite, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs event: generate the reference sections and check repository links."""
    markdown = render_markers(markdown)
    return repository_links(markdown, page.file.src_uri, Path(config["docs_dir"]))
