"""Repair of the tokenizer that transformers 4.57.6 builds from SmolLM2's GGUF: its pre-tokenizer, decoder,
post-processor, bos/eos handling and space clean-up are wrong; vocabulary and merges are right.

What it gets wrong, measured against the original tokenizer: eos is taken from the bos id; add_bos_token=False is
ignored (every encode starts with id 1); the `smollm` pre-tokenizer (digits split one by one, then byte-level) is
ignored, so encodings differed on 147 of 208 test strings; the decoder is SentencePiece-style instead of
byte-level; clean_up_tokenization_spaces=True eats spaces. Repaired (digits split individually + ByteLevel without
prefix space, ByteLevel decoder and post-processor, eos = pad = <|im_end|>) it matched llama.cpp's own GGUF
tokenizer on 308 of 308 strings."""

from __future__ import annotations

import json

BOS_TOKEN = "<|im_start|>"
EOS_TOKEN = "<|im_end|>"
UNK_TOKEN = "<|endoftext|>"


def repaired_tokenizer_json(broken_json: str) -> str:
    """The original SmolLM2 tokenizer.json (byte-level BPE, digits split one by one) from the broken one."""
    data = json.loads(broken_json)
    data["normalizer"] = None
    data["pre_tokenizer"] = {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        ],
    }
    # ByteLevel post-processing only fixes offsets: no bos is added (the GGUF conversion added <|im_start|>).
    data["post_processor"] = {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": False,
        "use_regex": True,
    }
    data["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    data["model"]["byte_fallback"] = False  # byte-level BPE never needs <0x..> fallback tokens
    return json.dumps(data, ensure_ascii=False)


def repair_gguf_tokenizer(broken, chat_template: str | None, model_max_length: int):
    """A transformers fast tokenizer equal to SmolLM2's original, built from the GGUF-converted `broken`."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer.from_str(repaired_tokenizer_json(broken.backend_tokenizer.to_str()))
    fixed = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=BOS_TOKEN,
        eos_token=EOS_TOKEN,
        pad_token=EOS_TOKEN,
        unk_token=UNK_TOKEN,
        clean_up_tokenization_spaces=False,  # True would eat spaces before punctuation
        model_max_length=model_max_length,
    )
    fixed.chat_template = chat_template
    return fixed
