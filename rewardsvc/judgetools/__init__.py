"""Judge tools: what an agentic judge may call before it answers, in one registry.

:data:`~rewardsvc.judgetools.registry.TOOLS` holds every tool by name (``run_code``,
``run_tests``, ``read_file``, ``list_files``, ``grader_evidence``); a new tool is one
entry. Each tool declares its OpenAI function schema and its bounds (the most characters
of its output the judge is shown, the arguments it reads); bound to one item
(:func:`~rewardsvc.judgetools.registry.bind`) it becomes a
:class:`~rewardsvc.judges.toolloop.Tool` that the judge's bounded loop
(:mod:`rewardsvc.judges.toolloop`) calls. What a tool returns is untrusted (a program's
output, a file the policy wrote): the loop bounds, sanitizes, fences and flags it.

A tool sees one item only (:class:`~rewardsvc.judgetools.registry.ToolContext`: the
rollout, the task's tests, the deterministic graders' results for that item, the
sandbox), never other judges' scores, rewards, flags or the reward log. It reads no host
file and fetches no URL: ``read_file`` and ``list_files`` read the item's own files (its
workspace, or its program), ``run_code`` and ``run_tests`` run in the sandbox room with
those files only.

Why a room of its own: the tools reuse the code graders (``run_tests`` runs the task's
tests exactly as the ``unit_tests`` grader does, through
:func:`rewardsvc.graders.unit_tests.unit_tests`) and the sandbox, while the judges room
may not import the graders (the two are independent layers). So the tools sit one layer
above both, below the scoring room that asks agentic questions.

May import: ``rewardsvc.core``, ``judges`` (the loop's tool protocol), ``graders`` (the
code graders, their sandbox handle and results), ``sandbox`` and ``safety``. Never
scoring, the application, the server, storage or wire models.
"""
