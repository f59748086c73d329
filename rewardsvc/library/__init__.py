"""The library: rubric and judge pool files on disk, and the rubrics being served.

``yamlfile`` reads YAML with bounds (bytes, alias expansion, bracket depth) and turns
every syntax, encoding or validation error into ``file:line: key.path: message``;
``recipes`` reads recipe and routing-table files; ``registry`` holds the served rubrics
of one directory with their content versions, reloads them when a file changes
(``watchfiles``), refuses an edit that does not validate and keeps serving its last good
version, and reports refusals through the core's ``Observer``.

May import: ``rewardsvc.core``, the detectors' flag tables
(``rewardsvc.safety.detectors.FLAGS`` and ``rewardsvc.safety.tamper.TAMPER_FLAGS``, to check
``flag_penalties`` names), ruamel.yaml and watchfiles. Never the application,
the server, scoring, judges, storage, wire models, HTTP libraries or prometheus_client.

A request meets it when the rubric, recipe or routing table it names is resolved: the
registry gives the served version (or says why it is not served); the CLI's ``validate``
and the evaluation read files through it too.
"""
