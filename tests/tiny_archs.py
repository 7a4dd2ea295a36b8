"""Tiny random models of several architectures, saved as Hugging Face folders and written as GGUF files from the
same weights with gguf-py's writer, so preparing from a folder and from a GGUF can be tested without downloads.

The GGUF is written the way llama.cpp's convert_hf_to_gguf.py writes it, as far as transformers 4.57's GGUF loader
undoes it (modeling_gguf_pytorch_utils): tensor names from gguf-py's own name map, Llama/Mistral q and k rows
permuted, Gemma norms stored as 1 + w, GPT-2's Conv1D matrices transposed, config keys as integrations/ggml.py
maps them, tied embeddings (no output.weight). Byte-level BPE vocabularies are written as `gpt2` with the `smollm`
pre-tokenizer (the tiny tokenizer splits digits one by one before byte-level BPE, as SmolLM2's does); Gemma's as a
SentencePiece (`llama`) vocabulary trained here with the sentencepiece library.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ARCHITECTURES = ("llama", "qwen2", "qwen3", "gemma3", "phi3", "mistral", "gpt2")
SPM_CORPUS = [
    "The capital of France is Paris. Although I was tired, I still decided to go for a walk.",
    "我虽然很累，但还是决定出去散步。今天天气很好，我们去公园吧。",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))  # 5",
    "Once upon a time there was a little fox who loved to read books about the sea and the stars.",
]
SPM_USER_DEFINED = ["\n", "\n\n", "  ", "    ", "<b>", "</b>", "\t"]


@dataclass(frozen=True)
class TinyModel:
    architecture: str
    hf_dir: Path
    gguf: Path


def common_config() -> dict:
    return {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "max_position_embeddings": 512, "initializer_range": 0.2,
            "tie_word_embeddings": True}


def hf_config(architecture: str, vocab_size: int, bos: int, eos: int, pad: int):
    from transformers import AutoConfig

    ids = {"vocab_size": vocab_size, "bos_token_id": bos, "eos_token_id": eos, "pad_token_id": pad}
    if architecture == "gpt2":
        return AutoConfig.for_model("gpt2", n_embd=64, n_layer=2, n_head=4, initializer_range=0.2, **ids)
    settings = common_config() | ids
    if architecture == "gemma3":  # 6 layers, window 8: sliding and global layers, and the window is crossed
        settings |= {"num_hidden_layers": 6, "num_key_value_heads": 1, "head_dim": 16, "sliding_window": 8}
        return AutoConfig.for_model("gemma3_text", **settings)
    if architecture == "qwen3":  # transformers' GGUF loader reads no head_dim for qwen3: Qwen3Config's default
        settings["head_dim"] = 128
    return AutoConfig.for_model(architecture, **settings)


def build(architecture: str, folder: Path, seed: int = 0) -> TinyModel:
    """The tiny model of `architecture` as folder/hf (weights, config, tokenizer) and folder/<arch>.gguf."""
    import torch
    from transformers import AutoModelForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    hf_dir = folder / "hf"
    tokenizer = spm_tokenizer(folder) if architecture == "gemma3" else bpe_tokenizer()
    config = hf_config(architecture, tokenizer.vocab_size, tokenizer.bos, tokenizer.eos, tokenizer.pad)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config).eval()
    model.generation_config.eos_token_id = tokenizer.eos
    model.generation_config.bos_token_id = tokenizer.bos
    model.generation_config.pad_token_id = tokenizer.pad
    model.save_pretrained(hf_dir)
    tokenizer.save(hf_dir)
    gguf_path = folder / f"tiny-{architecture}.gguf"
    write_gguf(model, architecture, tokenizer, gguf_path)
    return TinyModel(architecture, hf_dir, gguf_path)


@dataclass
class BpeVocabulary:
    fast: object  # transformers PreTrainedTokenizerFast
    bos: int
    eos: int
    pad: int

    @property
    def vocab_size(self) -> int:
        return len(self.fast)

    def save(self, hf_dir: Path) -> None:
        self.fast.save_pretrained(hf_dir)


def bpe_tokenizer() -> BpeVocabulary:
    from transformers import PreTrainedTokenizerFast

    from tests.tiny_model import build_tokenizer

    fast = PreTrainedTokenizerFast(tokenizer_object=build_tokenizer(), bos_token="<|im_start|>",
                                   eos_token="<|im_end|>", pad_token="<|im_end|>", unk_token="<|endoftext|>",
                                   clean_up_tokenization_spaces=False)
    ids = fast.convert_tokens_to_ids
    return BpeVocabulary(fast, ids("<|im_start|>"), ids("<|im_end|>"), ids("<|im_end|>"))


@dataclass
class SpmVocabulary:
    vocabulary: object  # models.gguf_tokenizer.GgufVocabulary
    bos: int
    eos: int
    pad: int

    @property
    def vocab_size(self) -> int:
        return len(self.vocabulary.pieces)

    def save(self, hf_dir: Path) -> None:
        from models.gguf_tokenizer import write_spm_tokenizer

        write_spm_tokenizer(self.vocabulary, hf_dir, 512)


def spm_tokenizer(folder: Path) -> SpmVocabulary:
    """A small SentencePiece BPE vocabulary in Gemma's layout (pad, eos, bos, unk first; byte pieces; user-defined
    whitespace runs and tags), trained on a few sentences."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    from models.gguf_tokenizer import GgufVocabulary

    corpus = folder / "spm-corpus.txt"
    corpus.write_text("\n".join(SPM_CORPUS * 5), encoding="utf-8")
    prefix = folder / "spm"
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(prefix), model_type="bpe", vocab_size=400, byte_fallback=True,
        pad_id=0, eos_id=1, bos_id=2, unk_id=3, user_defined_symbols=SPM_USER_DEFINED, add_dummy_prefix=False,
        remove_extra_whitespaces=False, normalization_rule_name="identity", character_coverage=1.0,
        allow_whitespace_only_pieces=True, split_digits=True, minloglevel=2,
    )  # fmt: skip
    proto = model_pb2.ModelProto()
    proto.ParseFromString((folder / "spm.model").read_bytes())
    pieces = [p.piece for p in proto.pieces]
    types = [int(p.type) for p in proto.pieces]
    vocabulary = GgufVocabulary(
        model="llama", pre="default", pieces=pieces, scores=[float(p.score) for p in proto.pieces], types=types,
        bos_id=2, eos_id=1, unk_id=3, pad_id=0, add_bos=True, add_eos=False, add_space_prefix=False,
        chat_template=None,
    )  # fmt: skip
    return SpmVocabulary(vocabulary, 2, 1, 0)


def permute_rows(weights: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's permute for q / k rows (convert_hf_to_gguf.LlamaModel.permute)."""
    return weights.reshape(heads, 2, weights.shape[0] // heads // 2, *weights.shape[1:]).swapaxes(1, 2).reshape(
        weights.shape
    )


def gguf_tensors(model, architecture: str) -> dict[str, np.ndarray]:
    import gguf

    config = model.config
    arch = {"mistral": "llama", "gemma3": "gemma3"}.get(architecture, architecture)
    layers = config.num_hidden_layers if architecture != "gpt2" else config.n_layer
    names = gguf.get_tensor_name_map(next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == arch), layers)
    tensors = {}
    for hf_name, tensor in model.state_dict().items():
        if hf_name == "lm_head.weight" or hf_name.endswith(".attn.bias") or hf_name.endswith(".masked_bias"):
            continue  # tied to the embeddings; GPT-2's causal-mask buffers
        base, _, suffix = hf_name.rpartition(".")
        name = names.get_name(base)
        if name is None:
            raise KeyError(f"gguf-py has no name for {hf_name} ({architecture})")
        weights = tensor.detach().numpy().astype(np.float32)
        if architecture in ("llama", "mistral") and base.endswith("q_proj"):
            weights = permute_rows(weights, config.num_attention_heads)
        if architecture in ("llama", "mistral") and base.endswith("k_proj"):
            weights = permute_rows(weights, config.num_key_value_heads)
        if architecture == "gemma3" and base.endswith("norm"):
            weights = weights + 1
        if architecture == "gpt2" and any(part in base for part in ("c_attn", "c_proj", "c_fc")) and weights.ndim == 2:
            weights = weights.T
        tensors[f"{name}.{suffix}"] = np.ascontiguousarray(weights)
    return tensors


def write_gguf(model, architecture: str, tokenizer, path: Path) -> None:
    import gguf
    from transformers.integrations.ggml import GGUF_CONFIG_MAPPING

    arch = "llama" if architecture == "mistral" else architecture
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_name(f"tiny-random-{architecture}")
    config = model.config.to_dict()
    for key, hf_key in GGUF_CONFIG_MAPPING[architecture].items():
        if hf_key is None or key == "vocab_size" or config.get(hf_key) is None:
            continue
        value = config[hf_key]
        if isinstance(value, float):
            writer.add_float32(f"{arch}.{key}", value)
        elif isinstance(value, int):
            writer.add_uint32(f"{arch}.{key}", value)
    if architecture == "gpt2":
        writer.add_uint32("gpt2.feed_forward_length", 4 * config["n_embd"])
    write_tokenizer(writer, tokenizer)
    for name, weights in gguf_tensors(model, architecture).items():
        writer.add_tensor(name, weights)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write_tokenizer(writer, tokenizer) -> None:
    if isinstance(tokenizer, SpmVocabulary):
        v = tokenizer.vocabulary
        writer.add_tokenizer_model("llama")
        writer.add_tokenizer_pre("default")
        writer.add_token_list(v.pieces)
        writer.add_token_scores(v.scores)
        writer.add_token_types(v.types)
        writer.add_add_space_prefix(False)
        writer.add_unk_token_id(v.unk_id)
    else:
        data = json.loads(tokenizer.fast.backend_tokenizer.to_str())
        vocab = data["model"]["vocab"] | {t["content"]: t["id"] for t in data["added_tokens"]}
        pieces = [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]
        added = {t["id"] for t in data["added_tokens"]}
        writer.add_tokenizer_model("gpt2")
        writer.add_tokenizer_pre("smollm")
        writer.add_token_list(pieces)
        writer.add_token_types([3 if i in added else 1 for i in range(len(pieces))])
        merges = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
        writer.add_token_merges(merges)
    writer.add_bos_token_id(tokenizer.bos)
    writer.add_eos_token_id(tokenizer.eos)
    writer.add_pad_token_id(tokenizer.pad)
    writer.add_add_bos_token(isinstance(tokenizer, SpmVocabulary))
