"""Rubric and judge pool validation: every rejection names file, line and key path."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest
from ruamel.yaml import YAML

from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rubric import Rubric
from rewardsvc.library.registry import load_pool, validate_rubric_file
from rewardsvc.library.yamlfile import InvalidFile, load_file, parse_yaml

ROOT = Path(__file__).resolve().parent.parent
CONTEXT = {"judge_names": {"primary", "secondary"}}

VALID = """\
id: {id}
description: test rubric
criteria:
  - id: correct
    category: essential
    text: The answer is correct.
    gate: 0.5
  - id: clear
    text: The answer is clear.
  - id: padded
    category: pitfall
    text: The answer is padded.
judges: [primary, secondary]
min_judges: 1
"""


def write(tmp_path: Path, text: str, name: str = "r.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def problems(path: Path) -> list[str]:
    doc = parse_yaml(path.read_text(), str(path))
    with pytest.raises(InvalidFile) as exc:
        validate_rubric_file(doc, path, CONTEXT)
    return [str(p) for p in exc.value.problems]


def test_valid_rubric_loads_with_category_default_weights(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.format(id="r"))
    rubric = validate_rubric_file(parse_yaml(path.read_text(), str(path)), path, CONTEXT)
    assert [c.weight for c in rubric.criteria] == [5.0, 3.0, -3.0]
    assert [j.name for j in rubric.judges] == ["primary", "secondary"]


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        # unknown key
        (
            ("    gate: 0.5\n", "    gate: 0.5\n    colour: red\n"),
            ":8: criteria[0].colour: unknown key",
        ),
        # duplicate criterion id
        (("  - id: clear\n", "  - id: correct\n"), ":8: criteria[1].id: duplicate criterion id"),
        # a pitfall with a positive weight
        (
            (
                "    text: The answer is padded.\n",
                "    text: The answer is padded.\n    weight: 2\n",
            ),
            ":13: criteria[2].weight: a pitfall must have a negative weight",
        ),
        # unknown judge name
        (
            ("judges: [primary, secondary]", "judges: [primary, tertiary]"),
            ":13: judges[1]: unknown judge 'tertiary'",
        ),
        # min_judges larger than the judges listed
        (("min_judges: 1", "min_judges: 3"), ":14: min_judges: 3 is more than the 2 judges"),
        # wrong type
        (
            ("    gate: 0.5\n", "    gate: high\n"),
            ":7: criteria[0].gate: Input should be a valid number",
        ),
        # id that does not match the file name
        (("id: r\n", "id: other\n"), ":1: id: must match the file name 'r'"),
    ],
)
def test_each_rejection_names_file_line_and_path(
    tmp_path: Path, edit: tuple[str, str], expected: str
) -> None:
    text = VALID.format(id="r")
    assert edit[0] in text
    path = write(tmp_path, text.replace(edit[0], edit[1], 1))
    found = problems(path)
    assert any(p.startswith(str(path) + expected) for p in found), found


def test_empty_criteria_and_zero_normalizer_are_refused(tmp_path: Path) -> None:
    empty = write(tmp_path, "id: r\ncriteria: []\njudges: [primary]\n")
    assert any(":2: criteria: List should have at least 1 item" in p for p in problems(empty))
    only_pitfalls = write(
        tmp_path,
        """\
        id: r
        criteria:
          - id: bad
            category: pitfall
            text: Something bad.
        judges: [primary]
        """,
    )
    assert any(
        ":2: criteria: no criterion has a positive weight" in p for p in problems(only_pitfalls)
    )


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "id: r\ncriteria:\n  - id: a\n    text: 'unclosed\njudges: [primary\n")
    (problem,) = problems_of_parse(path)
    assert problem.startswith(f"{path}:")
    assert "YAML syntax error" in problem
    assert int(problem.split(":")[1]) >= 4


def problems_of_parse(path: Path) -> list[str]:
    with pytest.raises(InvalidFile) as exc:
        parse_yaml(path.read_text(), str(path))
    return [str(p) for p in exc.value.problems]


def test_version_ignores_comments_and_key_order_but_not_weights(tmp_path: Path) -> None:
    base = Rubric.model_validate(YAML(typ="safe").load(VALID.format(id="r")), context=CONTEXT)
    reordered = YAML(typ="safe").load("# a comment\n" + VALID.format(id="r"))
    reordered = dict(reversed(list(reordered.items())))
    assert Rubric.model_validate(reordered).version() == base.version()
    changed = VALID.format(id="r").replace("    gate: 0.5\n", "    gate: 0.5\n    weight: 4\n")
    assert Rubric.model_validate(YAML(typ="safe").load(changed)).version() != base.version()


def test_judge_pool_errors_name_the_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        judges:
          primary:
            model: m
            base_urls: ["not a url"]
            api: chat
          secondary:
            model: m
            base_urls: ["http://127.0.0.1:1/v1"]
            api_key: secret
        """,
        "pool.yaml",
    )
    with pytest.raises(InvalidFile) as exc:
        load_pool(path)
    found = [str(p) for p in exc.value.problems]
    assert any(p.startswith(f"{path}:4: judges.primary.base_urls[0]:") for p in found), found
    assert any(p.startswith(f"{path}:9: judges.secondary.api_key: unknown key") for p in found)


def test_shipped_library_is_valid() -> None:
    for pool in [
        ROOT / "deploy/cpu-judge/judges.yaml",
        ROOT / "deploy/cpu-judge/judges.qwen.yaml",
        ROOT / "deploy/cpu-judge/judges.serve.yaml",
        *sorted((ROOT / "rubrics/judges").glob("*.yaml")),
    ]:
        load_pool(pool)
    files = sorted((ROOT / "rubrics").glob("*.yaml"))
    assert len(files) >= 6
    for path in files:
        validate_rubric_file(parse_yaml(path.read_text(), str(path)), path, CONTEXT)


def test_cli_validate_exit_codes(tmp_path: Path) -> None:
    ok = subprocess.run(
        [sys.executable, "-m", "rewardsvc.cli", "validate", str(ROOT / "rubrics")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = write(tmp_path, VALID.format(id="r").replace("    gate: 0.5\n", "    gate: 2\n"))
    failed = subprocess.run(
        [sys.executable, "-m", "rewardsvc.cli", "validate", str(bad)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert failed.returncode == 1
    assert failed.stdout.splitlines() == [
        f"{bad}:7: criteria[0].gate: Input should be less than or equal to 1"
    ]


def _schema() -> dict:
    return json.loads((ROOT / "rubrics/schema/rubric.schema.json").read_text())


def test_shipped_schema_is_current() -> None:
    assert _schema() == Rubric.model_json_schema()
    pool_schema = json.loads((ROOT / "rubrics/schema/judges.schema.json").read_text())
    assert pool_schema == JudgePool.model_json_schema()


def test_json_schema_accepts_library_and_rejects_broken() -> None:
    validator = jsonschema.Draft202012Validator(_schema())
    for path in sorted((ROOT / "rubrics").glob("*.yaml")):
        doc = YAML(typ="safe").load(path.read_text())
        errors = list(validator.iter_errors(doc))
        assert not errors, (path, errors[0].message)
    broken = YAML(typ="safe").load(VALID.format(id="r"))
    broken["criteria"][0]["category"] = "critical"
    broken["criteria"][1]["colour"] = "red"
    del broken["judges"]
    messages = {e.message for e in validator.iter_errors(broken)}
    assert any("'critical' is not one of" in m for m in messages), messages
    assert any("'colour' was unexpected" in m for m in messages), messages
    assert any("'judges' is a required property" in m for m in messages), messages


def test_every_shipped_rubric_declares_the_schema_and_a_header() -> None:
    for path in sorted((ROOT / "rubrics").glob("*.yaml")):
        lines = path.read_text().splitlines()
        assert lines[0] == "# yaml-language-server: $schema=schema/rubric.schema.json"
        assert sum(1 for line in lines[:20] if line.startswith("# ")) >= 4, path


def test_load_file_reports_unreadable(tmp_path: Path) -> None:
    with pytest.raises(InvalidFile) as exc:
        load_file(tmp_path / "missing.yaml", Rubric)
    assert "cannot read" in str(exc.value)
