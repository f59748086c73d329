"""Evaluation of rubrics and judges against labelled data, and preference labelling.

``rewardsvc eval`` and ``rewardsvc label`` (``commands``) score rows through the service
(``--url``) or an engine in this process (``scorers``), then measure agreement with pure
functions (``metrics``) and report it as Markdown, JSON or a PNG (``report``). It sits
beside the CLI: it scores in-process through ``rewardsvc.application`` (never the server)
and may import everything below it.
"""
