"""Runs in the veRL 0.9.1 venv: veRL's legacy ``naive`` reward manager scores a sample whose
``extra_info`` carries its image as a dataset row keeps it (``{"bytes": ..., "path": ...}``)
and its question the ``<image>`` marker, through the rewardsvc adapter (``compute_score``).

argv: URL TOKENIZER_DIR PNG_FILE OUT.json. Writes the scores the manager returned.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from transformers import AutoTokenizer
from verl_run import batch, legacy


def main() -> None:
    url, tokenizer_dir, png, out = sys.argv[1:5]
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    data = batch(tokenizer, [("<image>What colour is the square?", "Red.", "red", "chat")])
    info = data.non_tensor_batch["extra_info"][0]
    info["images"] = [{"bytes": Path(png).read_bytes(), "path": None}]
    scores = legacy(url, tokenizer, "naive", "compute_score", data)["scores"]
    with open(out, "w") as f:
        json.dump({"scores": scores}, f)


if __name__ == "__main__":
    main()
