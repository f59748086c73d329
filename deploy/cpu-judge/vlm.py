"""A tiny vision-language judge: SmolLM2's real text weights behind an untrained vision tower.

No vision-language model ships inside a package this project can install, so ``smolvlm``
(cpujudge.sh's optional VLM judge) is assembled here in the Idefics3 architecture (what
SmolVLM uses, and what vLLM serves as ``Idefics3ForConditionalGeneration``): the text model
is SmolLM2-135M-Instruct with its converted weights, the SigLIP-style vision tower and the
pixel-shuffle connector are drawn from a seeded initialisation. The vision therefore means
nothing: the judge proves the wire path (an image reaches the model, is encoded, costs
``IMAGE_TOKENS`` prompt tokens), not judgement.

Sizes are chosen so an image is cheap on two cores: a 256x256 tile of 16x16 patches is 256
patch embeddings, which the connector folds 2x2 into ``IMAGE_TOKENS`` = 64 text positions.
Images are resized to fit 256 pixels and never split into tiles, so every image costs the
same number of tokens whatever its size.
"""

from __future__ import annotations

import shutil
from pathlib import Path

IMAGE_SIZE, PATCH, SCALE = 256, 16, 2
IMAGE_TOKENS = (IMAGE_SIZE // PATCH) ** 2 // SCALE**2
FAKE, IMAGE, GLOBAL = "<fake_token_around_image>", "<image>", "<global-img>"
END = "<end_of_utterance>"
# SmolLM2's ChatML template, taught to render content parts: a text part as its text, an
# image part (vLLM hands the template {"type": "image"}) as the <image> marker the
# processor expands into the image's tokens.
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
    "Hugging Face<|im_end|>\n' }}{% endif %}{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}"
    "{% elif part['type'] in ['image', 'image_url'] %}{{ '<image>' }}{% endif %}{% endfor %}"
    "{% endif %}{{ '<|im_end|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def vision_config() -> dict[str, object]:
    """The untrained tower: SigLIP's shape at a size two CPU cores encode in milliseconds."""
    return {
        "hidden_size": 192,
        "intermediate_size": 768,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "image_size": IMAGE_SIZE,
        "patch_size": PATCH,
    }


def smolvlm(models: Path, out: Path) -> None:
    """Write the ``smolvlm`` folder (model, tokenizer, processor) from SmolLM2's folder."""
    import torch
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessorPil,
        Idefics3Processor,
    )

    source = models / "smollm2-135m-instruct"
    tokenizer = AutoTokenizer.from_pretrained(source)
    rows = [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]
    tokenizer.add_special_tokens({"additional_special_tokens": [FAKE, IMAGE, GLOBAL, END, *rows]})
    text = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
    torch.manual_seed(0)  # the tower, connector and new embedding rows: the same on every machine
    text.resize_token_embeddings(len(tokenizer), mean_resizing=True)
    text_config = text.config.to_dict()
    text_config.pop("_name_or_path", None)  # a path of the machine that assembled it
    config = Idefics3Config(
        text_config=text_config,
        vision_config=vision_config(),
        scale_factor=SCALE,
        image_token_id=tokenizer.convert_tokens_to_ids(IMAGE),
        tie_word_embeddings=True,
        pad_token_id=text.config.pad_token_id,
    )
    model = Idefics3ForConditionalGeneration(config)
    missing = model.model.text_model.load_state_dict(text.model.state_dict(), strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys
    model.tie_weights()
    model = model.to(torch.bfloat16).eval()
    model.config.text_config.dtype = torch.bfloat16
    images = Idefics3ImageProcessorPil(
        do_image_splitting=False,
        size={"longest_edge": IMAGE_SIZE},
        max_image_size={"longest_edge": IMAGE_SIZE},
    )
    processor = Idefics3Processor(
        images, tokenizer, image_seq_len=IMAGE_TOKENS, chat_template=CHAT_TEMPLATE
    )
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)
    (out / "chat_template.jinja").write_text(CHAT_TEMPLATE)
    shutil.copy(source / "generation_config.json", out / "generation_config.json")
