"""The code-reward corpus: small Python tasks written for this project, each with hidden
pytest tests, a correct solution and a plausible wrong one (an off-by-one, a missed edge
case), and attack families built from templates on each task's wrong solution.

- :mod:`~bench.code_tasks.task`: what a task is and how its tests are rendered;
- ``tasks_*``: the tasks (strings, parsing, lists, numbers and dicts, classes);
- :mod:`~bench.code_tasks.attacks`: the attack families;
- :mod:`~bench.code_tasks.service`: the service in this process and the grading recipe;
- :mod:`~bench.code_tasks.report`: the figures and the Markdown of ``bench.code_corpus``.

``bench.code_corpus`` grades all of it through the service; ``tests/test_code_corpus.py``
checks the corpus itself and ``tests/test_sandbox_load.py`` grades a few tasks.
"""

from bench.code_tasks.task import Task
from bench.code_tasks.tasks_classes import CLASS_TASKS
from bench.code_tasks.tasks_lists import LIST_TASKS
from bench.code_tasks.tasks_numbers import NUMBER_TASKS
from bench.code_tasks.tasks_parsing import PARSING_TASKS
from bench.code_tasks.tasks_strings import STRING_TASKS

TASKS: tuple[Task, ...] = STRING_TASKS + PARSING_TASKS + LIST_TASKS + NUMBER_TASKS + CLASS_TASKS
"""Every task of the corpus."""
