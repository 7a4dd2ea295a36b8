"""A GGUF file's own tokenizer as a `tokenizers` tokenizer.json, for GGUFs whose tokenizer is SentencePiece-style
(`tokenizer.ggml.model` "llama": Gemma, Llama 2, Mistral v0.1 …).

transformers 4.57 converts Gemma 3's GGUF vocabulary wrongly ("Although I was tired" → `Al` `th` `ough` …: 9 of 15
mixed strings differ from a SentencePiece model built from the same pieces). This builds the tokenizer the way
llama.cpp reads the GGUF (src/llama-vocab.cpp, LLAMA_VOCAB_TYPE_SPM):

- pieces typed CONTROL (3) and USER_DEFINED (4) are matched in the raw text first (control ones only where special
  tokens are parsed): `added_tokens` that are not normalized — runs of newlines, spaces and tabs, HTML tags;
- the rest has its spaces escaped to ▁ (a ▁ is prepended only when `tokenizer.ggml.add_space_prefix` is true),
  then adjacent symbols are merged, the pair whose merged piece scores highest first: a BPE model whose merges are
  ranked by the merged piece's score;
- characters outside the vocabulary fall back to their UTF-8 bytes (`<0xXX>` pieces, type BYTE = 6);
- a bos is added when `tokenizer.ggml.add_bos_token` is true.

Pure python (no torch, no transformers): the export worker and tests read the same arrays.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
SPACE = "▁"


@dataclass(frozen=True)
class GgufVocabulary:
    model: str  # tokenizer.ggml.model: "llama" (SentencePiece), "gpt2" (byte-level BPE), …
    pre: str | None  # tokenizer.ggml.pre
    pieces: list[str]
    scores: list[float]
    types: list[int]
    bos_id: int | None
    eos_id: int | None
    unk_id: int | None
    pad_id: int | None
    add_bos: bool
    add_eos: bool
    add_space_prefix: bool
    chat_template: str | None

    def ids_of_type(self, kind: int) -> list[int]:
        return [i for i, t in enumerate(self.types) if t == kind]

    def piece(self, token_id: int | None) -> str | None:
        return None if token_id is None else self.pieces[token_id]


def read_vocabulary(gguf_path: str | Path) -> GgufVocabulary:
    """The tokenizer arrays and flags of a GGUF file (ValueError when it has none), read with models.gguf_file's
    header reader (a second for Gemma's 262,144 pieces, where gguf-py's reader takes a minute)."""
    from models.gguf_file import read_summary

    metadata = read_summary(gguf_path, vocabulary=True).metadata
    pieces = metadata.get("tokenizer.ggml.tokens")
    if not pieces:
        raise ValueError(f"{gguf_path} has no tokenizer (no tokenizer.ggml.tokens)")
    return GgufVocabulary(
        model=metadata.get("tokenizer.ggml.model", ""),
        pre=metadata.get("tokenizer.ggml.pre"),
        pieces=pieces,
        scores=[float(s) for s in metadata.get("tokenizer.ggml.scores") or [0.0] * len(pieces)],
        types=[int(t) for t in metadata.get("tokenizer.ggml.token_type") or [NORMAL] * len(pieces)],
        bos_id=metadata.get("tokenizer.ggml.bos_token_id"),
        eos_id=metadata.get("tokenizer.ggml.eos_token_id"),
        unk_id=metadata.get("tokenizer.ggml.unknown_token_id"),
        pad_id=metadata.get("tokenizer.ggml.padding_token_id"),
        add_bos=bool(metadata.get("tokenizer.ggml.add_bos_token", True)),
        add_eos=bool(metadata.get("tokenizer.ggml.add_eos_token", False)),
        add_space_prefix=bool(metadata.get("tokenizer.ggml.add_space_prefix", True)),
        chat_template=metadata.get("tokenizer.chat_template"),
    )


def score_ranked_merges(vocabulary: GgufVocabulary) -> list[list[str]]:
    """Every (left, right) split of a normal piece into two vocabulary pieces, ranked by the merged piece's score
    (highest first; SentencePiece BPE merges the best-scoring pair), ties by the pieces' ids."""
    index = {}
    for i, piece in enumerate(vocabulary.pieces):
        if vocabulary.types[i] in (NORMAL, UNUSED):
            index.setdefault(piece, i)
    ranked = []
    for piece, merged_id in index.items():
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in index and right in index:
                ranked.append((-vocabulary.scores[merged_id], merged_id, index[left], left, right))
    ranked.sort()
    return [[left, right] for *_, left, right in ranked]


def spm_tokenizer_json(vocabulary: GgufVocabulary) -> str:
    """tokenizer.json (tokenizers library) of a SentencePiece-style GGUF vocabulary, as llama.cpp tokenizes."""
    if vocabulary.model != "llama":
        raise ValueError(f"tokenizer.ggml.model is {vocabulary.model!r}; this builds SentencePiece ('llama') ones")
    unk = vocabulary.piece(vocabulary.unk_id)
    added = [
        {
            "id": i,
            "content": piece,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": kind == CONTROL,
        }
        for i, (piece, kind) in enumerate(zip(vocabulary.pieces, vocabulary.types, strict=True))
        if kind in (CONTROL, USER_DEFINED) or (kind == UNKNOWN and piece == unk)
    ]
    for entry in added:
        entry["special"] = entry["special"] or entry["content"] == unk
    normalizer = [{"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]
    if vocabulary.add_space_prefix:
        normalizer.insert(0, {"type": "Prepend", "prepend": SPACE})
    data = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": normalizer},
        "pre_tokenizer": None,
        "post_processor": post_processor(vocabulary),
        "decoder": {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
                *([{"type": "Strip", "content": " ", "start": 1, "stop": 0}] if vocabulary.add_space_prefix else []),
            ],
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": unk,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": {piece: i for i, piece in reversed(list(enumerate(vocabulary.pieces)))},
            "merges": score_ranked_merges(vocabulary),
        },
    }
    return json.dumps(data, ensure_ascii=False)


def post_processor(vocabulary: GgufVocabulary) -> dict | None:
    """bos (and eos) added as the GGUF's add_bos_token / add_eos_token say."""
    first = [vocabulary.piece(vocabulary.bos_id)] if vocabulary.add_bos and vocabulary.bos_id is not None else []
    last = [vocabulary.piece(vocabulary.eos_id)] if vocabulary.add_eos and vocabulary.eos_id is not None else []
    if not first and not last:
        return None
    specials = {p: {"id": p, "ids": [vocabulary.pieces.index(p)], "tokens": [p]} for p in first + last}

    def template(*sequences: str) -> list[dict]:
        items = []
        for type_id, name in enumerate(sequences):
            items += [{"SpecialToken": {"id": p, "type_id": type_id}} for p in first]
            items.append({"Sequence": {"id": name, "type_id": type_id}})
            items += [{"SpecialToken": {"id": p, "type_id": type_id}} for p in last]
        return items

    return {
        "type": "TemplateProcessing",
        "single": template("A"),
        "pair": template("A", "B"),
        "special_tokens": specials,
    }


def tokenizer_config(vocabulary: GgufVocabulary, model_max_length: int) -> dict:
    """tokenizer_config.json for transformers' PreTrainedTokenizerFast over that tokenizer.json."""
    names = {
        "bos_token": vocabulary.bos_id,
        "eos_token": vocabulary.eos_id,
        "unk_token": vocabulary.unk_id,
        "pad_token": vocabulary.pad_id,
    }
    config = {name: vocabulary.pieces[i] for name, i in names.items() if i is not None}
    config |= {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "add_bos_token": vocabulary.add_bos,
        "add_eos_token": vocabulary.add_eos,
        "clean_up_tokenization_spaces": False,
        "model_max_length": model_max_length,
    }
    if vocabulary.chat_template:
        config["chat_template"] = vocabulary.chat_template
    return config


def write_spm_tokenizer(vocabulary: GgufVocabulary, out_dir: Path, model_max_length: int) -> None:
    """tokenizer.json and tokenizer_config.json (and chat_template.jinja when the GGUF has one) into out_dir."""
    (out_dir / "tokenizer.json").write_text(spm_tokenizer_json(vocabulary), encoding="utf-8")
    config = tokenizer_config(vocabulary, model_max_length)
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2), encoding="utf-8")
    special = {k: config[k] for k in ("bos_token", "eos_token", "unk_token", "pad_token") if k in config}
    (out_dir / "special_tokens_map.json").write_text(json.dumps(special, ensure_ascii=False), encoding="utf-8")
    if vocabulary.chat_template:
        (out_dir / "chat_template.jinja").write_text(vocabulary.chat_template, encoding="utf-8")
