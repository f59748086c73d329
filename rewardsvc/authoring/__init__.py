"""Rubric authoring: the ``rewardsvc rubrics ...`` commands that bring rubrics into the
library and check them, next to evaluation at the edge of the service.

What it holds: :mod:`.commands`, the ``rubrics`` command group (each command registers
itself in :data:`.commands.COMMANDS`), and one module per command.

What it may import: the application room (to score or call a judge in-process), the
library, the monitor's readers and the core; never the server (the import-linter
contract in ``pyproject.toml`` checks it).

A command reads its files, does its work through those rooms, and writes JSON lines or a
report; a bad input row is reported with its file and line and never stops the others.
"""
