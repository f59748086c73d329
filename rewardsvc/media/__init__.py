"""Images in items: each image part a request carries, read, checked and bounded once.

An image part (OpenAI chat ``{"type": "image_url", "image_url": {"url": ...}}`` or a
Responses ``{"type": "input_image", "image_url": ...}``) is accepted as a ``data:`` URL
of a PNG, JPEG, WebP or GIF image, or as an ``http(s)`` URL whose host the judge pool
lists in ``media_domains``: such a URL is passed on untouched, never fetched here. A data
URL is bounded before it is decoded (its bytes), its header read without decoding (its
type must be the one declared; its sides and pixel count bounded), then the image is
decoded once in a bounded worker (one at a time, with a time limit), so that a
decompression bomb, a truncated file or a non-image sent as an image rejects its item
alone and never costs more than one bounded decode.

:class:`~rewardsvc.media.rules.MediaRules` are the bounds (from the settings) and the
allowed domains (from the pool); :class:`~rewardsvc.media.collect.MediaReader` checks the
images of one request (each distinct URL once); :class:`~rewardsvc.media.collect.ItemImages`
collects one item's images as :class:`~rewardsvc.core.media.Image` s and the markers that
hold their places in its text.

:mod:`~rewardsvc.media.typographic` draws typographic attacks (an instruction to the grader
written into an image) for the monitor's image canaries and the red-team bench set.

May import the core only (and Pillow).
"""
