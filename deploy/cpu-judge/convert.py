"""Convert a quantized GGUF checkpoint into a bfloat16 Hugging Face model folder.

Run with the cpu-judge venv's python (it has torch, transformers 5, gguf, accelerate):

    python convert.py --gguf path/to/model.gguf --out path/to/folder

vLLM on CPU does not load these Q4 GGUF files directly, so each one is converted once.
transformers 5 dequantizes a GGUF on load but refuses ``save_pretrained`` on such a
model, so the weights are moved into a fresh model built from the same config (without
its ``quantization_config``), cast to bfloat16 and saved together with the tokenizer.
The folder is written next to ``--out`` and renamed into place only when complete.

``--dtype bfloat16`` dequantizes straight to bfloat16 instead of float32: half the memory
(a 1.5B model took 10 GB in float32 and was OOM-killed beside the running judges), and the
stored weights are the same, since they are cast to bfloat16 either way.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path


def gguf_flag(gguf: Path, key: str) -> bool | None:
    """A boolean from the GGUF metadata, or None when absent."""
    from gguf import GGUFReader

    field = GGUFReader(gguf).fields.get(key)
    return None if field is None else bool(field.contents())


def convert(gguf: Path, out: Path, dtype_name: str = "float32") -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.monotonic()
    dtype = getattr(torch, dtype_name)
    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    # transformers drops the GGUF's add_bos_token flag (Gemma needs <bos> first, SmolLM2
    # must not get one): set it from the metadata so vLLM's /v1/completions adds it.
    add_bos = gguf_flag(gguf, "tokenizer.ggml.add_bos_token")
    if add_bos is not None and bool(getattr(tokenizer, "add_bos_token", False)) != add_bos:
        tokenizer.add_bos_token = add_bos
    first = tokenizer("hi").input_ids[0]
    if add_bos and first != tokenizer.bos_token_id:
        raise SystemExit(
            f"tokenizer does not start with BOS although the GGUF asks for it ({first})"
        )
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=dtype)
    loaded.eval()

    config = loaded.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    fresh = AutoModelForCausalLM.from_config(config, dtype=dtype)
    result = fresh.load_state_dict(loaded.state_dict(), strict=False)
    if result.missing_keys or result.unexpected_keys:
        missing, unexpected = result.missing_keys, result.unexpected_keys
        raise SystemExit(f"state dict mismatch: missing={missing} unexpected={unexpected}")
    fresh = fresh.to(torch.bfloat16).eval()
    fresh.config.dtype = torch.bfloat16

    # Sanity check: the bf16 copy must pick the same next token as the dequantized model.
    ids = tokenizer("The capital of France is", return_tensors="pt").input_ids
    with torch.no_grad():
        ref = loaded(ids).logits[0, -1].argmax().item()
        new = fresh(ids).logits[0, -1].argmax().item()
    if ref != new:
        print(
            f"warning: next-token argmax differs after bf16 cast ({ref} vs {new})", file=sys.stderr
        )

    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    fresh.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    print(
        f"converted {gguf.name} -> {out} ({type(fresh).__name__}, "
        f"{sum(p.numel() for p in fresh.parameters()) / 1e6:.0f}M params, "
        f"chat_template={'yes' if getattr(tokenizer, 'chat_template', None) else 'no'}, "
        f"add_bos={add_bos}, "
        f"{time.monotonic() - t0:.0f}s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, required=True, help="path of the .gguf file")
    parser.add_argument("--out", type=Path, required=True, help="Hugging Face folder to write")
    parser.add_argument(
        "--dtype",
        choices=["float32", "bfloat16"],
        default="float32",
        help="dtype the GGUF is dequantized to before the bfloat16 copy (default float32)",
    )
    args = parser.parse_args()
    convert(args.gguf.resolve(), args.out.resolve(), args.dtype)


if __name__ == "__main__":
    main()
