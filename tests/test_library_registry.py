"""The registry: bad bytes under hot reload, the observer, layering, validate's summary."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rewardsvc.cli import main
from rewardsvc.core.observe import NULL_OBSERVER
from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.library.registry import Registry
from rewardsvc.library.yamlfile import InvalidFile

ROOT = Path(__file__).resolve().parent.parent
POOL = JudgePool(judges={"primary": JudgeConfig(model="m", base_urls=["http://127.0.0.1:9/v1"])})

RUBRIC = """\
id: {id}
criteria:
  - id: correct
    text: The answer is correct.
    weight: {weight}
judges: [primary]
"""


class Recorder:
    """An observer that keeps the rubric file events (the only ones a registry sends)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, bool]] = []

    def rubric_file(self, file: str, refused: bool) -> None:
        self.events.append((file, refused))


async def _wait_for(predicate, timeout_s: float) -> None:
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout_s:
            raise AssertionError(f"not within {timeout_s} s")
        await asyncio.sleep(0.02)


async def test_invalid_bytes_under_a_running_watcher_keep_the_last_good(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(RUBRIC.format(id="a", weight=1))
    registry = Registry(tmp_path, POOL)
    good = registry.get("a").version
    stop = asyncio.Event()
    watcher = asyncio.create_task(registry.watch(stop))
    await asyncio.sleep(0.3)  # let the watcher subscribe before the first edit
    try:
        path.write_bytes(RUBRIC.format(id="a", weight=2).encode() + b"# caf\xe9\n")
        await _wait_for(lambda: str(path) in registry.errors(), timeout_s=3.0)
        (problem,) = registry.errors()[str(path)]
        assert (problem.file, problem.line) == (str(path), 7)
        assert problem.message.startswith("not UTF-8 text: byte 0xe9")
        assert registry.get("a").version == good

        # The watcher survived: a later good edit is served.
        path.write_text(RUBRIC.format(id="a", weight=3))
        await _wait_for(lambda: str(path) not in registry.errors(), timeout_s=3.0)
        assert registry.get("a").version != good
        assert not watcher.done()
    finally:
        stop.set()
        await asyncio.wait_for(watcher, timeout=5)


async def test_watcher_outlives_an_unexpected_reload_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(RUBRIC.format(id="a", weight=1))
    registry = Registry(tmp_path, POOL)
    real_reload = registry.reload
    failures = []

    def reload_failing_once() -> bool:
        if not failures:
            failures.append(1)
            raise RuntimeError("unexpected")
        return real_reload()

    monkeypatch.setattr(registry, "reload", reload_failing_once)
    stop = asyncio.Event()
    watcher = asyncio.create_task(registry.watch(stop))
    await asyncio.sleep(0.3)
    try:
        path.write_text(RUBRIC.format(id="a", weight=2))
        await _wait_for(lambda: failures, timeout_s=3.0)
        await asyncio.sleep(0.3)  # past the debounce, so the next edit is a new event
        path.write_text(RUBRIC.format(id="a", weight=3))
        await _wait_for(lambda: registry.get("a").rubric.criteria[0].weight == 3, 3.0)
    finally:
        stop.set()
        await asyncio.wait_for(watcher, timeout=5)


def test_observer_hears_refusals_and_recoveries(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(RUBRIC.format(id="a", weight=1))
    recorder = Recorder()
    registry = Registry(tmp_path, POOL, observer=recorder)
    assert recorder.events == []  # nothing refused, nothing to clear
    path.write_bytes(b"id: a\n\xff\n")
    registry.reload()
    assert recorder.events == [(str(path), True)]
    path.write_text(RUBRIC.format(id="a", weight=1))
    registry.reload()
    assert recorder.events == [(str(path), True), (str(path), False)]


def test_registry_defaults_to_the_null_observer(tmp_path: Path) -> None:
    assert Registry(tmp_path, POOL).observer is NULL_OBSERVER


def test_oversized_file_and_text_are_refused(tmp_path: Path) -> None:
    text = RUBRIC.format(id="a", weight=1) + "# pad\n" * 100
    (tmp_path / "a.yaml").write_text(text)
    registry = Registry(tmp_path, POOL, max_bytes=200)
    assert registry.entries() == []
    (problem,) = registry.errors()[str(tmp_path / "a.yaml")]
    assert problem.message == f"the YAML is {len(text)} bytes; at most 200 bytes are accepted"
    with pytest.raises(InvalidFile, match="at most 200 bytes are accepted"):
        registry.validate_text(text)
    assert Registry(tmp_path, POOL).get("a").text == text


def test_library_does_not_import_the_server() -> None:
    code = (
        "import sys, rewardsvc.library.registry, rewardsvc.library.yamlfile\n"
        "print(sorted(m for m in sys.modules if m.startswith(('rewardsvc.server', "
        "'prometheus_client', 'fastapi'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


def test_validate_counts_every_file_it_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = ROOT / "deploy/cpu-judge/judges.yaml"
    good = tmp_path / "good.yaml"
    good.write_text(RUBRIC.format(id="good", weight=1))
    bad = tmp_path / "bad.yaml"
    bad.write_text(RUBRIC.format(id="bad", weight=1).replace("weight: 1", "weight: .nan"))
    assert main(["validate", "--judges", str(pool), str(bad)]) == 1
    out = capsys.readouterr()
    assert out.out.splitlines() == [f"{bad}:5: criteria[0].weight: Input should be a finite number"]
    assert out.err.strip() == (
        f"1 file(s) checked against judge pool {pool}: 1 problem(s) in 1 file(s)"
    )
    assert main(["validate", "--judges", str(pool), str(tmp_path)]) == 1
    assert capsys.readouterr().err.strip().startswith("2 file(s) checked")
    bad.unlink()
    assert main(["validate", "--judges", str(pool), str(tmp_path)]) == 0
    assert capsys.readouterr().err.strip() == (
        f"1 file(s) checked against judge pool {pool}: all valid"
    )
