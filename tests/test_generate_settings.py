"""``rewardsvc rubrics generate`` takes its settings from the CLI's one settings path
(``application.root.settings_with``), as every other command does: the environment's judge
pool reaches it, ``--judges`` replaces it, and a setting the environment gets wrong stops it
naming the variable. On ca8fbfa it built ``Settings()`` itself, only when ``--judges`` was
not given."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from rewardsvc.application import root
from rewardsvc.authoring import generate
from rewardsvc.cli import main

POOL = """\
judges:
  {name}:
    model: tiny
    base_urls: ["http://127.0.0.1:9/v1"]
    api: chat
"""


def _pool(folder: Path, name: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(POOL.format(name=name), encoding="utf-8")
    return path


def _args(judges: Path | None) -> argparse.Namespace:
    """The options ``rubrics generate`` parses that choose its generator."""
    return argparse.Namespace(
        rubrics=None,
        judges=None if judges is None else str(judges),
        generator=None,
        timeout=None,
        min_criteria=3,
        max_criteria=8,
        max_text_chars=200,
        retries=1,
        max_tokens=None,
        frequency_penalty=0.0,
    )


async def test_the_generator_comes_from_the_settings_of_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REWARDSVC_JUDGE_POOL", str(_pool(tmp_path, "from-env")))
    asked: list[tuple[Any, ...]] = []
    real = root.settings_with

    def spy(*args: Any, **kwargs: Any) -> Any:
        asked.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(root, "settings_with", spy)
    from_env = generate._generator(_args(None))
    given = generate._generator(_args(_pool(tmp_path, "from-cli")))
    try:
        assert from_env.name == "from-env"
        assert given.name == "from-cli"
        assert asked == [(None, None), (None, str(tmp_path / "from-cli.yaml"))]
    finally:
        await from_env.aclose()
        await given.aclose()


def test_a_bad_setting_stops_generate_naming_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As ``rewardsvc score`` and the others: on ca8fbfa, with ``--judges`` given, the
    environment was never read and the run went on to call the generator."""
    monkeypatch.setenv("REWARDSVC_MAX_ITEMS", "0")
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "1", "prompt": "What is 2+2?"}\n', encoding="utf-8")
    pool = _pool(tmp_path, "from-cli")
    code = main(
        ["rubrics", "generate", str(rows), str(tmp_path / "out.jsonl"), "--judges", str(pool)]
    )
    assert code == 2
    assert "REWARDSVC_MAX_ITEMS" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()
