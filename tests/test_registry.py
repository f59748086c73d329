"""The rubric library: versions, hot reload, last-good fallback."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.library.registry import Registry

POOL = JudgePool(
    judges={
        "primary": JudgeConfig(model="m", base_urls=["http://127.0.0.1:9/v1"]),
        "secondary": JudgeConfig(model="m", base_urls=["http://127.0.0.1:9/v1"]),
    }
)

RUBRIC = """\
id: {id}
criteria:
  - id: correct
    text: The answer is correct.
    weight: {weight}
judges: [primary]
"""


def test_loads_library_and_refuses_bad_files(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(RUBRIC.format(id="a", weight=1))
    (tmp_path / "b.yaml").write_text(RUBRIC.format(id="b", weight="heavy"))
    (tmp_path / "notes.txt").write_text("not a rubric")
    registry = Registry(tmp_path, POOL)
    assert [e.rubric.id for e in registry.entries()] == ["a"]
    errors = registry.errors()
    assert list(errors) == [str(tmp_path / "b.yaml")]
    assert str(errors[str(tmp_path / "b.yaml")][0]).startswith(
        f"{tmp_path / 'b.yaml'}:5: criteria[0].weight:"
    )
    with pytest.raises(KeyError):
        registry.get("b")


def test_reload_keeps_last_good_version(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(RUBRIC.format(id="a", weight=1))
    registry = Registry(tmp_path, POOL)
    good = registry.get("a").version
    path.write_text(RUBRIC.format(id="a", weight=1).replace("judges: [primary]", "judges: [nope]"))
    assert registry.reload() is False
    assert registry.get("a").version == good
    assert "unknown judge 'nope'" in str(registry.errors()[str(path)][0])
    path.write_text(RUBRIC.format(id="a", weight=2))
    assert registry.reload() is True
    assert registry.get("a").version != good
    assert registry.errors() == {}


def test_comment_only_edit_keeps_version(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(RUBRIC.format(id="a", weight=1))
    registry = Registry(tmp_path, POOL)
    before = registry.get("a").version
    path.write_text("# explained now\n" + RUBRIC.format(id="a", weight=1.0))
    assert registry.reload() is False
    assert registry.get("a").version == before


def test_duplicate_ids_across_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(RUBRIC.format(id="a", weight=1))
    (tmp_path / "a.yml").write_text(RUBRIC.format(id="a", weight=2))
    registry = Registry(tmp_path, POOL)
    assert registry.get("a").path == tmp_path / "a.yaml"
    assert "already defined" in str(registry.errors()[str(tmp_path / "a.yml")][0])


async def _wait_for(predicate, timeout_s: float) -> float:
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout_s:
            raise AssertionError(f"not within {timeout_s} s")
        await asyncio.sleep(0.02)
    return time.monotonic() - start


async def test_hot_reload_under_a_running_watcher(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(RUBRIC.format(id="a", weight=1))
    registry = Registry(tmp_path, POOL)
    first = registry.get("a").version
    stop = asyncio.Event()
    watcher = asyncio.create_task(registry.watch(stop))
    await asyncio.sleep(0.3)  # let the watcher subscribe before the first edit
    try:
        path.write_text(RUBRIC.format(id="a", weight=3))
        await _wait_for(lambda: registry.get("a").version != first, timeout_s=2.0)
        second = registry.get("a").version

        path.write_text("id: a\ncriteria: [\n")
        await _wait_for(lambda: str(path) in registry.errors(), timeout_s=2.0)
        assert registry.get("a").version == second
        assert "YAML syntax error" in str(registry.errors()[str(path)][0])

        (tmp_path / "new.yaml").write_text(RUBRIC.format(id="new", weight=1))
        await _wait_for(lambda: "new" in {e.rubric.id for e in registry.entries()}, 2.0)
    finally:
        stop.set()
        await asyncio.wait_for(watcher, timeout=5)
