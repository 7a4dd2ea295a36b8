"""A tiny random-weight Llama with a real byte-level BPE tokenizer, exported with optimum exactly like a prepared
model (same folder layout), so runtime, engine and GUI tests run in seconds on the real code paths."""

from __future__ import annotations

import json
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant.<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "The capital of France is Paris. Although I was tired, I still decided to go for a walk.",
    "Once upon a time there was a little fox who loved to read books about the sea and the stars.",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))  # 5",
    "我虽然很累，但还是决定出去散步。今天天气很好，我们去公园吧。",
    "Emoji test: 🙂🚀 and numbers 1234567890, punctuation !?;:,.()[]{}",
    "She said that the weather would be fine, but it rained all day long in the city.",
]


def build_tokenizer(vocab_size: int = 384):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 20, trainer)
    return tok


def build_tiny_model(out_dir: Path, seed: int = 0, name: str = "tiny-random-llama", vocab_size: int = 384) -> Path:
    """Build, save and export the tiny model into out_dir (a prepared-model folder named `name`): its weights
    depend on `seed`, its tokenizer on `vocab_size` only. Returns out_dir."""
    import torch
    from optimum.exporters.onnx import main_export
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out_dir = Path(out_dir)
    hf_dir = out_dir.parent / (out_dir.name + "-hf")
    tok = build_tokenizer(vocab_size)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
        unk_token="<|endoftext|>",
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        initializer_range=0.2,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config).eval()
    model.generation_config.eos_token_id = 2
    model.generation_config.bos_token_id = 1
    model.generation_config.pad_token_id = 2
    model.save_pretrained(hf_dir)
    fast.save_pretrained(hf_dir)
    main_export(str(hf_dir), output=str(out_dir), task="text-generation-with-past", device="cpu", do_validation=False)
    if not (out_dir / "chat_template.jinja").exists():
        (out_dir / "chat_template.jinja").write_text(CHAT_TEMPLATE, encoding="utf-8")
    # exported from hf_dir, as a prepared HF folder records it: its inspection model can be built from there
    manifest = {"name": name, "source": {"kind": "hf-folder", "path": str(hf_dir), "seed": seed},
                "hf_dir": str(hf_dir)}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return out_dir
