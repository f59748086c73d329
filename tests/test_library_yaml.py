"""YAML errors for rubric authors: where a construct opened, bad bytes, and bounds on size."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardsvc.core.rubric import Rubric
from rewardsvc.library.yamlfile import (
    DEFAULT_MAX_BYTES,
    MAX_BRACKET_DEPTH,
    InvalidFile,
    load_file,
    load_text,
    parse_yaml,
    read_text,
)


def refusal(text: str, name: str = "r.yaml") -> list[str]:
    with pytest.raises(InvalidFile) as exc:
        parse_yaml(text, name)
    return [str(p) for p in exc.value.problems]


def test_unclosed_bracket_names_where_it_opened_and_where_parsing_stopped() -> None:
    lines = [
        "id: r",
        "criteria:",
        "  - id: a",
        "    text: [one, two,",  # line 4: never closed
        *["    # still inside the bracket"] * 7,
        "judges: [primary]",  # line 12
    ]
    (problem,) = refusal("\n".join(lines) + "\n")
    stopped = int(problem.split(":")[1])
    assert stopped >= 12, problem
    assert "a flow sequence started at line 4, column 11" in problem
    assert problem.startswith(f"r.yaml:{stopped}: YAML syntax error: ")


def test_unclosed_quote_names_its_line() -> None:
    (problem,) = refusal("id: r\ncriteria:\n  - id: a\n    text: 'unclosed\njudges: [primary\n")
    assert "a quoted scalar started at line 4" in problem


def test_error_at_the_construct_start_does_not_repeat_it() -> None:
    (problem,) = refusal("id: r\n\tcriteria: x\n")
    assert problem.startswith("r.yaml:2: YAML syntax error: ")
    assert "started at" not in problem


def test_duplicate_key_names_both_lines() -> None:
    (problem,) = refusal("id: r\ndescription: x\nid: s\n")
    assert problem.startswith("r.yaml:3: YAML syntax error: found duplicate key")
    assert "a mapping started at line 1" in problem


def test_control_character_is_refused_at_its_line() -> None:
    assert refusal("id: r\ndescription: a\x07b\n") == [
        "r.yaml:2: YAML error: character #x0007 is not allowed in YAML"
    ]


def test_non_utf8_file_is_refused_at_the_line_of_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_bytes(b"id: r\ndescription: caf\xe9\n")
    with pytest.raises(InvalidFile) as exc:
        read_text(path)
    (problem,) = exc.value.problems
    assert (problem.file, problem.line) == (str(path), 2)
    assert problem.message == "not UTF-8 text: byte 0xe9 at column 17 (save the file as UTF-8)"


def test_unreadable_file_is_refused_at_line_one(tmp_path: Path) -> None:
    with pytest.raises(InvalidFile) as exc:
        load_file(tmp_path, Rubric)  # a directory cannot be read as a file
    assert str(exc.value).startswith(f"{tmp_path}:1: cannot read")


def test_text_above_the_byte_limit_is_refused_before_parsing() -> None:
    text = "id: r\ndescription: " + "x" * DEFAULT_MAX_BYTES + "\n"
    with pytest.raises(InvalidFile) as exc:
        load_text(text, Rubric, "<request>")
    assert str(exc.value) == (
        f"<request>:1: the YAML is {len(text)} bytes; "
        f"at most {DEFAULT_MAX_BYTES} bytes are accepted"
    )


def test_byte_limit_counts_utf8_bytes_and_is_configurable() -> None:
    text = "id: r\ndescription: " + "é" * 60 + "\n"  # 80 characters, 140 bytes
    with pytest.raises(InvalidFile, match="is 140 bytes; at most 100 bytes"):
        load_text(text, Rubric, "<request>", max_bytes=100)
    with pytest.raises(InvalidFile) as exc:
        load_text(text, Rubric, "<request>", max_bytes=140)
    assert "bytes are accepted" not in str(exc.value)  # checked for content, not size


def test_file_above_the_byte_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("id: r\n" + "# padding\n" * 20)
    with pytest.raises(InvalidFile, match="at most 64 bytes are accepted"):
        read_text(path, max_bytes=64)


def test_billion_laughs_is_refused() -> None:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(8):
        prev, cur = chr(97 + i), chr(98 + i)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    (problem,) = refusal("\n".join(lines) + "\n")
    assert "more than 100000 values once its aliases (*name) are expanded" in problem


def test_aliases_within_the_bound_are_accepted() -> None:
    doc = parse_yaml("shared: &j [primary, secondary]\njudges: *j\nagain: *j\n", "r.yaml")
    assert list(doc["judges"]) == ["primary", "secondary"]


def test_deep_brackets_are_refused_at_their_line() -> None:
    depth = MAX_BRACKET_DEPTH + 1
    (problem,) = refusal("id: r\ndescription: " + "[" * depth + "]" * depth + "\n")
    assert problem == f"r.yaml:2: YAML error: brackets [ {{ nest more than {MAX_BRACKET_DEPTH} deep"


def test_brackets_in_text_are_not_nesting() -> None:
    block = "".join("  m[i][j] = {k: [1, {x: 2}]}\n" for _ in range(200))
    doc = parse_yaml("instructions: |\n" + block, "r.yaml")
    assert doc["instructions"].count("m[i][j]") == 200


def test_deep_block_nesting_is_refused_not_crashed() -> None:
    text = "a:\n" + "".join(" " * (i + 2) + f"k{i}:\n" for i in range(600))
    (problem,) = refusal(text)
    assert problem == "r.yaml:1: YAML error: the document is nested too deeply"


def test_unknown_keys_are_called_keys_in_files() -> None:
    text = "id: r\ncriteria:\n  - id: a\n    text: The answer.\n    colour: red\njudges: [p]\n"
    with pytest.raises(InvalidFile) as exc:
        load_text(text, Rubric, "r.yaml")
    assert [str(p) for p in exc.value.problems] == [
        "r.yaml:5: criteria[0].colour: unknown key (not allowed here)"
    ]


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    assert refusal("&a {criteria: *a}\n") == [
        "r.yaml:1: YAML error: an alias (*name) refers to a node that contains it"
    ]


def test_lone_surrogate_from_a_json_body_is_refused_at_its_line() -> None:
    with pytest.raises(InvalidFile) as exc:
        load_text("id: r\ndescription: \ud800\n", Rubric, "<request>")
    assert str(exc.value) == "<request>:2: YAML error: character #xd800 is not allowed in YAML"
