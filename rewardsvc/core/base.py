"""The base of every configuration model: strict, immutable, finite.

Rubric and judge pool files are written by hand, so a misspelt key must be an error
rather than silently ignored (``extra="forbid"``), a loaded model must not change under
the scorer that holds it (``frozen``), and no number may be NaN or infinite: YAML spells
them ``.nan`` and ``.inf``, and one NaN weight turns every reward into 0.0 with status ok.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A frozen model that refuses unknown keys and non-finite numbers."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
