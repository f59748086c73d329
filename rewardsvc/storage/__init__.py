"""Storage: what outlives one request, on this replica or shared by all of them.

``cache`` holds the verdict cache (memory, then a SQLite file store, then Redis when
configured) keyed by judge identity, prompt and completion; ``codec`` turns a verdict
into the bytes those tiers keep; ``filestore`` is the SQLite tier on its own executor;
``redis_link`` is the one Redis client of a replica (connection, batched reads and
pipelined writes), its health and probe in ``redis_health``; ``calibration`` keeps the
calibration windows of each judge and rubric, shared through that link.

It may import ``rewardsvc.core``, the standard library and redis; never scoring, the
monitor, the server or wire models. A request reaches it through the engine: a cache
lookup before a judge is asked, a write after, and the calibration window read when
scores are combined.
"""
