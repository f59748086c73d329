"""One request's images: each distinct URL checked once, each item's images collected."""

from __future__ import annotations

from typing import Any

from rewardsvc.core.errors import FieldProblem, Loc
from rewardsvc.core.media import Image, image_marker
from rewardsvc.core.trajectory_events import placeholder

from .check import check_url
from .rules import MediaRules


class MediaReader:
    """Checks the image URLs of one request against ``rules``: the same URL again (the
    completions of one prompt share its images) is checked once."""

    def __init__(self, rules: MediaRules | None = None) -> None:
        self.rules = rules or MediaRules()
        self._checked: dict[str, Image | str] = {}

    def check(self, url: str) -> Image | str:
        """The image ``url`` stands for, or why it is refused."""
        found = self._checked.get(url)
        if found is None:
            found = self._checked[url] = check_url(url, self.rules)
        return found

    def item(self) -> ItemImages:
        """A collector of the images of one item."""
        return ItemImages(self)


def image_url(part: dict[str, Any]) -> str | None:
    """The URL of an image part: chat's ``image_url.url`` (or ``image_url`` as a string),
    Responses' ``image_url``; None when it has none (a ``file_id``, a missing URL)."""
    value = part.get("image_url")
    if isinstance(value, dict):
        value = value.get("url")
    return value if isinstance(value, str) else None


class ItemImages:
    """The images of one item, in the order its texts hold them (prompt first), and the
    problems of those refused, each at its part's place (``completion[1].content[0]
    .image_url``): an item with any problem is rejected."""

    def __init__(self, reader: MediaReader) -> None:
        self.reader = reader
        self.images: list[Image] = []
        self.problems: list[FieldProblem] = []
        self._over = False

    def take(self, part: dict[str, Any], loc: Loc) -> str:
        """The text that stands for image ``part`` (at ``loc``) in its message: its marker,
        or a placeholder when it is refused (its problem recorded)."""
        at = (*loc, "image_url")
        url = image_url(part)
        limit = self.reader.rules.max_per_item
        if url is None:
            self.problems.append(FieldProblem(at, "an image part needs its URL (a data: URL)"))
        elif len(self.images) >= limit:
            if not self._over:  # one problem says it, not one per image beyond
                self._over = True
                self.problems.append(
                    FieldProblem(at, f"more than max_images_per_item={limit} images in one item")
                )
        else:
            found = self.reader.check(url)
            if isinstance(found, Image):
                self.images.append(found)
                return image_marker(len(self.images) - 1)
            self.problems.append(FieldProblem(at, found))
        return placeholder("image")
