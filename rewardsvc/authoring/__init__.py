"""Rubric authoring: the ``rewardsvc rubrics ...`` commands that bring rubrics into the
library and check them, next to evaluation at the edge of the service.

What it holds: :mod:`.commands`, the ``rubrics`` command group (each command registers
itself in :data:`.commands.COMMANDS`), and one module per command: :mod:`.importing`
(``import``: a rubric dataset's rows as per-prompt rubrics), :mod:`.generate` with its
prompt, checks and run (``generate``: per-prompt rubrics written by a pool judge through
structured outputs), :mod:`.health` (``health``: a run's rubric health from the monitor
or the reward log).

What it may import: the application room, the library, the monitor, the judges' backend,
shapes and fencing (``generate`` calls one judge as a generator), safety, the wire
models and the core; never the server (the import-linter contract in ``pyproject.toml``
checks it).

A command reads its files, does its work through those rooms, and writes JSON lines or a
report; a bad input row is reported with its file and line and never stops the others.
"""
