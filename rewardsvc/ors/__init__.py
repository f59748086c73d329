"""The ORS room: a rubric, recipe or routing table plus a task file served as an Open
Reward Standard environment.

It sits between the server (``rewardsvc.server.ors``, the HTTP + SSE routes, above it) and
the application room (below it); it speaks no HTTP itself.

Modules:

- ``environments``: environment files and their task files, read once at start (a request
  never names a file), as :class:`~.environments.OrsEnvironment`;
- ``sessions``: open sessions (one task each, a time to live), their episodes (the answer
  as an item of ``/v1/rewards``, the result as a tool output or a failure) and the calls
  whose results a cut stream may resume. Its refusals (a session id already open, every
  session slot taken) are the core's typed errors, which the server answers in ORS's form.
"""
