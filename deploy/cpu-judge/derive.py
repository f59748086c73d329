"""Model folders for cpujudge.sh's optional judges, derived from the two default models.

An optional judge serves default weights another way; some ways need a folder of their own
(e.g. a tokenizer with extra special tokens, or a classification head). Each entry of
``DERIVATIONS`` makes one such folder from the default folders, deterministically and
offline, and runs in the cpu-judge venv (torch, transformers).

    python derive.py --list                       the keys that have a derivation
    python derive.py KEY --models DIR --out DIR   make KEY's folder from DIR's defaults
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Callable
from pathlib import Path

from vlm import smolvlm

THINK_START, THINK_END = "<think>", "</think>"
# SmolLM2's own template, with the assistant turn opened on "<think>\n" as Qwen3 and the
# DeepSeek-R1 distills do; chat_template_kwargs {"enable_thinking": false} closes it at once
# ("<think>\n\n</think>\n\n", Qwen3's way), so both switches of a thinking judge are real.
THINK_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
    "Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% if enable_thinking is defined and not enable_thinking %}"
    "{{ '<think>\n\n</think>\n\n' }}{% else %}{{ '<think>\n' }}{% endif %}{% endif %}"
)


def smollm2_think(models: Path, out: Path) -> None:
    """SmolLM2 with ``<think>``/``</think>`` in its vocabulary and a template that opens
    thinking: what vLLM's ``deepseek_r1`` reasoning parser and thinking budget need (the
    parser looks both up as single tokens in the vocab and raises without them).

    They are added tokens that are not *special*: vLLM detokenizes with
    ``skip_special_tokens``, and the parser splits the decoded text at ``</think>``, so a
    special end marker would vanish from the text (DeepSeek-R1 and Qwen3 ship them the
    same way). The two new embedding rows (tied with the output head) are drawn, with a
    fixed seed, around the others' mean as transformers initializes them: the tiny model
    rarely closes its thinking by itself, which is what the thinking budget is for.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = models / "smollm2-135m-instruct"
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.bfloat16)
    tokenizer.add_tokens([THINK_START, THINK_END], special_tokens=False)
    torch.manual_seed(0)  # the new rows are sampled: the same folder on every machine
    model.resize_token_embeddings(len(tokenizer), mean_resizing=True)
    tokenizer.chat_template = THINK_TEMPLATE
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "chat_template.jinja").write_text(THINK_TEMPLATE)
    shutil.copy(source / "generation_config.json", out / "generation_config.json")


# key (as in cpujudge.sh's EXTRAS) -> (models folder, output folder) -> None
DERIVATIONS: dict[str, Callable[[Path, Path], None]] = {
    "smollm2-think": smollm2_think,
    "smolvlm": smolvlm,  # vlm.py: SmolLM2 behind an untrained vision tower
}


def main() -> None:
    """Make one derived folder, or list the keys that have one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("key", nargs="?")
    parser.add_argument("--list", action="store_true", help="print the keys, one a line")
    parser.add_argument("--models", type=Path, help="the folder holding the default models")
    parser.add_argument("--out", type=Path, help="where the derived folder goes")
    args = parser.parse_args()
    if args.list:
        print("\n".join(DERIVATIONS))
        return
    if args.key not in DERIVATIONS or args.models is None or args.out is None:
        parser.error(f"give a key ({', '.join(DERIVATIONS) or 'none yet'}), --models and --out")
    DERIVATIONS[args.key](args.models, args.out)


if __name__ == "__main__":
    main()
