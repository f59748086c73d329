"""The sandbox: where untrusted code runs, and nowhere else.

A run (:class:`~rewardsvc.sandbox.run.RunRequest`: a program's argv, the files of a fresh
work directory, stdin, :class:`~rewardsvc.sandbox.run.Limits`, and optionally the caller's
trusted files shown read-only outside the work directory and a report descriptor that is
no file of the sandbox's) gives a
:class:`~rewardsvc.sandbox.run.RunResult`: the exit code, stdout and stderr capped (with
truncation flags), wall and CPU time, and a typed failure (``sandbox_timeout``,
``sandbox_memory``, ``sandbox_busy``, ``sandbox_unavailable``, ``sandbox_failed``, the
:data:`~rewardsvc.core.errors.SandboxFailureKind` that a grader reports as no score, never
0) or None when the program ran to its end.

A backend is a strategy (:class:`~rewardsvc.sandbox.backend.Backend`): bubblewrap
(:mod:`~rewardsvc.sandbox.bubblewrap`, the default) gives no network, a read-only system,
one fresh writable work directory (in memory, bounded), its own PID namespace, user
65534, rlimits (CPU, address space, processes, file size, open files) and a wall-clock
kill of the whole process tree; gVisor's ``runsc`` or a remote sandbox service would be
one more class. ``availability()`` says whether a backend works here and why not; a
backend that does not work answers ``sandbox_unavailable`` and runs nothing (never
unsandboxed).

May import: ``rewardsvc.core`` and the standard library. Never the graders, scoring,
judges, the application, the server, wire models or settings.

A run passes through :class:`~rewardsvc.sandbox.lanes.SandboxLanes`: a fixed number of
lanes, each a thread, take runs from a fair queue (one FIFO per request), the queue is
bounded (``sandbox_busy`` when full), and a lane hands the run to the backend, which
starts the sandbox with the request's files copied into its fresh in-memory work
directory, watches its output and wall clock (:mod:`~rewardsvc.sandbox.process`) and
returns the result; nothing of the run stays behind. The code graders
(``rewardsvc.graders.code``) submit their runs there, one group per request; the
composition root builds the lanes from settings.
"""
