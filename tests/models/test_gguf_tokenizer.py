"""models.gguf_tokenizer: a SentencePiece-style GGUF vocabulary as a tokenizers tokenizer.json, checked against an
independent reference (tests/gguf_spm.py: the sentencepiece library over the GGUF's pieces, scores and types, after
llama.cpp's matching of user-defined pieces in the raw text) — quickly on a tiny vocabulary trained here, and on
Gemma 3 270M's own 262,144 pieces over ≥ 300 strings (slow: needs the prepared gemma-3-270m), where llama.cpp's
tokenizer is a second reference when it is built."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gguf_spm import GgufSentencePiece
from tests.tokenizer_strings import tokenizer_strings


@pytest.fixture(scope="module")
def tiny_spm_gguf(tmp_path_factory) -> Path:
    """A GGUF holding only a tiny SentencePiece vocabulary in Gemma's layout (tests/tiny_archs.spm_tokenizer)."""
    import gguf

    from tests.tiny_archs import spm_tokenizer, write_tokenizer

    folder = tmp_path_factory.mktemp("tiny-spm")
    path = folder / "tiny-spm.gguf"
    writer = gguf.GGUFWriter(str(path), "gemma3")
    write_tokenizer(writer, spm_tokenizer(folder))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def built_tokenizer(gguf_path: Path):
    from tokenizers import Tokenizer

    from models.gguf_tokenizer import read_vocabulary, spm_tokenizer_json

    return Tokenizer.from_str(spm_tokenizer_json(read_vocabulary(gguf_path)))


def differences(tokenizer, reference, strings: list[str]) -> list[tuple[str, list[int], list[int]]]:
    found = []
    for text in strings:
        ids, expected = tokenizer.encode(text).ids, reference(text)
        if ids != expected:
            found.append((text, ids, expected))
    return found


def test_tiny_spm_vocabulary_encodes_as_sentencepiece_after_llama_cpp_partition(tiny_spm_gguf):
    tokenizer = built_tokenizer(tiny_spm_gguf)
    reference = GgufSentencePiece(tiny_spm_gguf)
    strings = tokenizer_strings()
    assert differences(tokenizer, reference.encode, strings) == []
    # the user-defined pieces are matched in the raw text, and a bos leads
    assert tokenizer.encode("a\n\nb").ids == [2, reference.encode("a")[1], tokenizer.token_to_id("\n\n"),
                                              reference.encode("b")[1]]


def test_tiny_spm_vocabulary_decodes_what_it_encodes(tiny_spm_gguf):
    tokenizer = built_tokenizer(tiny_spm_gguf)
    for text in tokenizer_strings():
        assert tokenizer.decode(tokenizer.encode(text).ids, skip_special_tokens=True) == text


def test_transformers_unigram_conversion_is_what_is_repaired(tiny_spm_gguf):
    """The reference tells a wrong tokenizer from a right one: a Unigram model over the same pieces and scores (what
    transformers 4.57 builds from Gemma 3's GGUF) differs from it."""
    import json

    from tokenizers import Tokenizer

    from models.gguf_tokenizer import read_vocabulary, spm_tokenizer_json

    data = json.loads(spm_tokenizer_json(read_vocabulary(tiny_spm_gguf)))
    vocabulary = read_vocabulary(tiny_spm_gguf)
    data["model"] = {"type": "Unigram", "unk_id": 3, "byte_fallback": True,
                     "vocab": [[p, s] for p, s in zip(vocabulary.pieces, vocabulary.scores, strict=True)]}
    unigram = Tokenizer.from_str(json.dumps(data))
    assert differences(unigram, GgufSentencePiece(tiny_spm_gguf).encode, tokenizer_strings())


@pytest.fixture(scope="module")
def gemma_gguf(gemma_model_dir) -> Path:
    return gemma_model_dir / "gemma-3-270m-q4_k_m.gguf"


@pytest.mark.slow
def test_gemma_tokenizer_matches_sentencepiece_from_its_gguf_on_300_strings(gemma_model_dir, gemma_gguf):
    from tokenizers import Tokenizer

    strings = tokenizer_strings()
    assert len(strings) >= 300
    prepared = Tokenizer.from_file(str(gemma_model_dir / "tokenizer.json"))
    reference = GgufSentencePiece(gemma_gguf)
    assert differences(prepared, reference.encode, strings) == []
    assert prepared.encode("我虽然很累，但还是决定").ids == [2, 237169, 26990, 237614, 240128, 236900, 237678, 17093,
                                                          43581]
    pieces = [prepared.id_to_token(i) for i in prepared.encode("Although I was tired, I still decided to").ids]
    assert pieces == ["<bos>", "Although", "▁I", "▁was", "▁tired", ",", "▁I", "▁still", "▁decided", "▁to"]


@pytest.mark.slow
def test_gemma_tokenizer_matches_llama_cpp(gemma_model_dir, gemma_gguf):
    """llama.cpp's own tokenizer over the same GGUF (vocab_only), where helper builds of llama.cpp exist."""
    from tokenizers import Tokenizer

    build = pytest.importorskip("tests.llama_cpp_build")
    llama_cpp = build.import_llama_cpp()
    llm = llama_cpp.Llama(model_path=str(gemma_gguf), vocab_only=True, verbose=False)
    prepared = Tokenizer.from_file(str(gemma_model_dir / "tokenizer.json"))

    def llama_cpp_ids(text: str) -> list[int]:
        return llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)

    assert differences(prepared, llama_cpp_ids, tokenizer_strings()) == []
