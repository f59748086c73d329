"""What a newcomer reads first, the README and the docs index, names every how-to page and
every trainer the client has an adapter for: a page or an adapter added without them fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOW_TO = ROOT / "docs" / "how-to"
ADAPTERS_DIR = ROOT / "clients" / "python" / "src" / "rewardsvc_client"
# Where each first page links a how-to page from.
FIRST_PAGES = {"README.md": "docs/how-to/", "docs/index.md": "how-to/"}

ADAPTERS = {
    "trl": "TRL",
    "trl_async": "TRL",
    "verl": "veRL",
    "openrlhf": "OpenRLHF",
    "agent": "OpenRLHF",
    "slime": "slime",
    "verifiers": "verifiers",
    "art": "ART",
    "skyrl": "SkyRL",
    "areal": "AReaL",
    "nemo_rl": "NeMo-RL",
    "tinker": "Tinker",
}
"""Each adapter module of the client and the trainer it serves, as the first pages name it."""
NOT_ADAPTERS = {"client", "types", "errors", "criteria", "groups"}
"""The client itself, and helpers every adapter above uses (groups: the group rewards of
TRL, verifiers, slime and ART)."""


def test_every_module_of_the_client_is_an_adapter_or_the_client() -> None:
    modules = {p.stem for p in ADAPTERS_DIR.glob("*.py") if not p.stem.startswith("_")}
    unknown = modules - ADAPTERS.keys() - NOT_ADAPTERS
    assert not unknown, f"new client modules {sorted(unknown)}: add each to ADAPTERS here"
    assert ADAPTERS.keys() | NOT_ADAPTERS <= modules


@pytest.mark.parametrize("page", FIRST_PAGES)
def test_the_first_pages_name_every_trainer(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    missing = sorted(
        {name for name in ADAPTERS.values() if not re.search(rf"(?<![\w-]){name}(?![\w-])", text)}
    )
    assert not missing, f"{page} does not name the trainers {missing}"


@pytest.mark.parametrize("page", FIRST_PAGES)
def test_the_first_pages_link_every_how_to(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    prefix = FIRST_PAGES[page]
    pages = sorted(p.name for p in HOW_TO.glob("*.md"))
    assert len(pages) >= 18
    missing = [name for name in pages if f"]({prefix}{name}" not in text]
    assert not missing, f"{page} does not link {missing}"
