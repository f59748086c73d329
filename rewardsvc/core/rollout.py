"""A Rollout: the text of one item, normalized for judging and caching.

Chat messages are rendered to a plain transcript once, when an item is read, so that
prompts, cache keys and detectors all see the same text. An item read from messages or
Responses-API items also carries its :class:`~rewardsvc.core.trajectory.Trajectory`:
its ``completion`` is then the plain rendering of the policy's events (every tool call,
argument and result in full), which is what detectors scan, and the prompt builders
render the views a rubric asks for from the trajectory itself.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace

from rewardsvc.core.errors import FieldProblem
from rewardsvc.core.media import Image
from rewardsvc.core.rubric import JudgeRule, Rubric
from rewardsvc.core.trajectory import CUT_FLAG, Trajectory


def prompt_key(prompt: object) -> str:
    """A short digest of a prompt (its text, or a JSON value such as a message list): the
    items of one batch with the same key are one group in the monitor's rubric health."""
    text = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(frozen=True)
class Rollout:
    """Prompt, completion and optional reference as text; all of it is untrusted.

    ``trajectory`` is the structured form of an item given as messages or items (None for
    plain strings); ``step``, set only on the rollouts of process-reward calls, is the
    0-based assistant step being graded, the trajectory then ending with that step;
    ``data_flags`` are the attack shapes found in the item's dataset texts (prompt,
    reference, its own criteria) when it was read, named ``dataset:<flag>``; ``files`` is
    an agent's workspace (relative POSIX path -> UTF-8 text, sorted by path), the code a
    code grader runs instead of the completion's program; ``images`` are the images its
    texts hold by :func:`~rewardsvc.core.media.image_marker` (index into this tuple).
    """

    prompt: str
    completion: str
    reference: str | None = None
    trajectory: Trajectory | None = None
    step: int | None = None
    data_flags: tuple[str, ...] = ()
    files: tuple[tuple[str, str], ...] = ()
    images: tuple[Image, ...] = ()

    @classmethod
    def of(cls, trajectory: Trajectory, reference: str | None = None) -> Rollout:
        """The rollout of a trajectory: prompt and completion as its plain text."""
        return cls(trajectory.plain("task"), trajectory.plain("events"), reference, trajectory)

    def at_step(self, step: int) -> Rollout:
        """The rollout a judge sees to grade assistant step ``step``: the trajectory up to
        and including that step (a plain rollout is one step: its completion)."""
        trajectory = self.trajectory
        if trajectory is None:
            if step != 0:
                raise IndexError(f"step {step} of a rollout with one step")
            return replace(self, step=0)
        cut = trajectory.upto(step)
        return replace(self, completion=cut.plain("events"), trajectory=cut, step=step)

    def step_count(self) -> int:
        """Assistant steps of the policy (a plain completion is one step)."""
        return 1 if self.trajectory is None else self.trajectory.step_count

    def notes(self) -> tuple[str, ...]:
        """Flags raised by the content itself, beside the detectors': ``non_text_part``,
        and ``trajectory_cut`` when the whole trace does not fit ``DEFAULT_FIT_CHARS``."""
        if self.trajectory is None:
            return ()
        cut = self.trajectory.rich and self.trajectory.render("trace").cut
        return self.trajectory.notes() + ((CUT_FLAG,) if cut else ())

    def prompt_key(self) -> str:
        """The prompt's :func:`prompt_key`: the completions of one prompt share it."""
        return prompt_key(self.prompt)

    def digest(self) -> str:
        """Content hash, for cache keys and in-flight deduplication."""
        h = hashlib.sha256()
        for part in (self.prompt, self.completion, self.reference):
            data = b"\x00" if part is None else b"\x01" + part.encode()
            h.update(len(data).to_bytes(8, "big") + data)
        # Plain rollouts, and plain chat whose reply is one message, keep the digests they
        # always had (a reply sent as a string or as a message is the same answer); any
        # other trajectory's structure changes what a view shows, so it joins the key.
        t = self.trajectory
        if t is not None and (t.rich or len(t.events) > 1):
            h.update(b"trajectory:" + t.fingerprint().encode())
        if self.step is not None:
            h.update(b"step:" + str(self.step).encode())
        # Only a workspace joins the key: the digests of items without one do not change.
        for path, text in self.files:
            for field in (
                b"file:" + path.encode("utf-8", "surrogatepass"),
                text.encode("utf-8", "surrogatepass"),
            ):
                h.update(len(field).to_bytes(8, "big") + field)
        # An image joins the key by the hash of its bytes (and its place): a one-pixel
        # change is a miss, the same image sent again a hit.
        for image in self.images:
            h.update(b"image:" + image.sha256.encode())
        return h.hexdigest()


@dataclass(frozen=True)
class ItemIn:
    """One item of a batch as the engine receives it: its id and its rollout, or, for an
    item the server could not read, the reason it is rejected; ``rubric`` is the item's
    own (the batch rubric with the item's criteria), None to be scored with the batch's."""

    id: str
    rollout: Rollout | None
    error: str | None = None
    rubric: Rubric | None = None
    problems: tuple[FieldProblem, ...] = ()
    """A rejected item's problems, each placed relative to the item (``("reference",)``,
    ``("criteria", 2, "text")``): ``error`` is their text as the request names them."""


@dataclass(frozen=True)
class ScoreOptions:
    """Per-request overrides of a rubric's settings (``None``: the rubric's own)."""

    judges: tuple[str, ...] | None = None
    rule: JudgeRule | None = None
    min_judges: int | None = None
    use_cache: bool = True
    run: str | None = None
