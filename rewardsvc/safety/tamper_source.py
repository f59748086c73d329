"""What the tamper rules read: a parsed module with the names its imports bind, the texts
its expressions are known to hold, and the findings they make. Pure, no I/O."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

EXCERPT_CHARS = 120
"""Longest excerpt of a line kept as a finding's evidence."""
LITERAL_DEPTH = 16
"""How deep :func:`literal` follows ``+``, ``/`` and joins (so a long chain costs little)."""
VALUES_PER_NAME = 16
"""Most values kept of one name (``x = ...``, ``for x in [...]``), so a use costs little."""


@dataclass(frozen=True)
class Finding:
    """One sign of tampering: its flag, the file, the line (0: the file as a whole) and a
    short excerpt or reason."""

    flag: str
    path: str
    line: int
    evidence: str

    def as_evidence(self) -> dict[str, Any]:
        """JSON-ready form, for a grader's evidence."""
        return {"flag": self.flag, "path": self.path, "line": self.line, "evidence": self.evidence}


@dataclass
class Source:
    """A parsed module, its path and lines, the names its imports bind (``names``) and the
    values its plain names are given (``values``)."""

    path: str
    tree: ast.Module
    lines: list[str]
    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, list[ast.expr]] = field(default_factory=dict)

    def candidates(self, node: ast.expr) -> list[ast.expr]:
        """What ``node`` may hold: the values given to a plain name anywhere in the module
        (a name given none, or any other expression: itself)."""
        if isinstance(node, ast.Name) and node.id in self.values:
            return self.values[node.id]
        return [node]

    def finding(self, flag: str, node: ast.AST) -> Finding:
        """A finding of ``flag`` at ``node``, with its line as the excerpt."""
        line = getattr(node, "lineno", 0)
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        if len(text) > EXCERPT_CHARS:
            text = text[: EXCERPT_CHARS - 1] + "…"
        return Finding(flag, self.path, line, text)

    def dotted(self, node: ast.AST) -> str | None:
        """The dotted name ``node`` refers to through the module's imports, if plain."""
        attrs: list[str] = []
        while isinstance(node, ast.Attribute):  # a loop: chains may be deep
            attrs.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = "builtins" if node.id == "__builtins__" else self.names.get(node.id, node.id)
        return ".".join([base, *reversed(attrs)])


def _given(source: Source, target: ast.expr, values: list[ast.expr]) -> None:
    if isinstance(target, ast.Name):
        kept = source.values.setdefault(target.id, [])
        kept.extend(values[: VALUES_PER_NAME - len(kept)])


def bind(source: Source) -> None:
    """Record what each import binds (``import os as o``: o -> os) and the values plain
    names are given: ``x = value``, and ``for x in [a, b]`` (a and b). Not the flow: a
    name may hold any value it is given anywhere."""
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _given(source, target, [node.value])
        elif isinstance(node, ast.For) and isinstance(node.iter, ast.List | ast.Tuple | ast.Set):
            _given(source, node.target, node.iter.elts)
        elif isinstance(node, ast.Import):
            for a in node.names:
                source.names[a.asname or a.name.split(".")[0]] = (
                    a.name if a.asname else a.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                source.names[a.asname or a.name] = f"{node.module}.{a.name}"


def literal(node: ast.AST | None, depth: int = 0) -> str | None:
    """The text a path or command expression is known to hold: string constants, f-strings
    (``{}`` for what is computed), ``+``, ``/`` and ``Path``/``os.path.join`` of them
    (nested at most ``LITERAL_DEPTH`` deep)."""
    if depth > LITERAL_DEPTH:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Div):
        left, right = literal(node.left, depth + 1), literal(node.right, depth + 1)
        if left is None:
            return None
        return left + ("/" if isinstance(node.op, ast.Div) else "") + (right or "{}")
    if isinstance(node, ast.Call) and node.args:
        name = (
            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        )
        if name in ("Path", "PurePath", "PosixPath", "join"):
            parts = [literal(a, depth + 1) for a in node.args]
            return None if parts[0] is None else "/".join(p or "{}" for p in parts)
    return None


def call_texts(node: ast.Call, source: Source) -> list[str]:
    """The texts known (:func:`literal`) of a call's arguments, lists and tuples opened,
    plain names read as the values they are given."""
    args: list[ast.expr] = [*node.args, *(k.value for k in node.keywords)]
    texts: list[str] = []
    for arg in args:
        for value in source.candidates(arg):
            items = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
            texts.extend(t for t in map(literal, items) if t is not None)
    return texts
