"""The ``rewardsvc rubrics`` command group (registered by ``rewardsvc.cli``).

Each command of the group is one entry of :data:`COMMANDS`: a function that adds its
parser to the group's subparsers and sets its ``func``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from rewardsvc.authoring import generate, health, importing

ConfigArgs = Callable[[argparse.ArgumentParser], None]
Register = Callable[[Any, ConfigArgs], None]

COMMANDS: tuple[Register, ...] = (importing.register, generate.register, health.register)
"""The group's commands, in the order ``rewardsvc rubrics --help`` lists them."""


def register(sub: Any, config_args: ConfigArgs) -> None:
    """Add ``rubrics`` and its commands to the ``rewardsvc`` subcommands."""
    group = sub.add_parser("rubrics", help="import, generate and check rubrics")
    commands = group.add_subparsers(dest="rubrics_command", required=True)
    for add in COMMANDS:
        add(commands, config_args)
