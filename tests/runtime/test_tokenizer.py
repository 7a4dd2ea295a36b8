"""Tokenizer, incremental detokenization and chat template on the tiny model's byte-level BPE (trained on a
small corpus with Chinese and emoji), checked against transformers' tokenizer of the same folder."""

from __future__ import annotations

import jinja2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers

from runtime.chat import ChatTemplate
from runtime.tokenizer import REPLACEMENT, DiffStream, Tokenizer

TEXTS = [
    "我虽然很累，但还是决定出去散步。",
    "Emoji test: 🙂🚀 and 👍🏽 too",
    "def add(a, b):\n    return a + b  # 5\n\tprint(add(2, 3))",
    "The capital of France is Paris.",
    "混合 text 和 emoji 🚀 in one line: 1234",
]


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir) -> Tokenizer:
    return Tokenizer.from_model_dir(tiny_model_dir)


@pytest.fixture(scope="module")
def hf_tokenizer(tiny_hf_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_hf_dir)


def stream(tok: Tokenizer, ids: list[int]) -> list[str]:
    decoder = tok.incremental()
    return [decoder.add(i) for i in ids] + [decoder.finish()]


@pytest.mark.parametrize("text", TEXTS)
def test_round_trip(tokenizer, text):
    assert tokenizer.decode(tokenizer.encode(text)) == text


@pytest.mark.parametrize("text", TEXTS)
def test_encode_matches_transformers(tokenizer, hf_tokenizer, text):
    assert tokenizer.encode(text) == hf_tokenizer(text)["input_ids"]


@pytest.mark.parametrize("text", TEXTS)
def test_incremental_decoding_never_shows_broken_characters(tokenizer, text):
    ids = tokenizer.encode(text)
    deltas = stream(tokenizer, ids)
    assert all(REPLACEMENT not in d for d in deltas)
    assert "".join(deltas) == text


def test_multibyte_characters_really_span_tokens(tokenizer):
    """Guards the test above: the tiny vocabulary does split Chinese and emoji bytes across tokens."""
    for text in ("我虽然很累", "🙂🚀"):
        pieces = [tokenizer.piece(i) for i in tokenizer.encode(text)]
        assert any("\\x" in p for p in pieces)
        deltas = stream(tokenizer, tokenizer.encode(text))
        assert "" in deltas[:-1]  # something was held back until its character completed


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=383), max_size=40))
def test_stream_equals_decode_for_any_ids(tokenizer, ids):
    deltas = stream(tokenizer, ids)
    assert "".join(deltas) == tokenizer.decode(ids)
    for delta in deltas[:-1]:
        assert REPLACEMENT not in delta or REPLACEMENT in tokenizer.decode(ids)


def test_pieces(tokenizer):
    assert tokenizer.piece(tokenizer.token_id("<|im_end|>")) == "<|im_end|>"
    ids = tokenizer.encode("The capital")
    assert "".join(tokenizer.piece(i) for i in ids) == "The capital"
    first_byte = tokenizer.encode("我")[0]  # one token for the whole character in this vocabulary
    assert tokenizer.piece(first_byte) == "我"
    lone = next(i for i in range(tokenizer.vocab_size) if tokenizer.token_bytes(i) == b"\xe4")
    assert tokenizer.piece(lone) == "\\xe4"


def test_ids_beyond_the_tokenizer_vocabulary(tokenizer):
    """Models may have more logits than the tokenizer has tokens (padded embeddings): shown, never a crash."""
    beyond = tokenizer.vocab_size + 5
    assert tokenizer.piece(beyond) == f"<unused id {beyond}>"
    ids = [*tokenizer.encode("hi"), beyond]
    assert "".join(stream(tokenizer, ids)) == tokenizer.decode(ids) == "hi"


def test_special_ids_and_decode_skips_them(tokenizer):
    assert tokenizer.eos_token_ids == (2,)
    assert tokenizer.special_ids == {0, 1, 2}
    assert tokenizer.decode([1, *tokenizer.encode("hi"), 2]) == "hi"
    # the ByteLevel post-processor adds nothing
    assert tokenizer.encode("hi") == tokenizer.encode("hi", add_special_tokens=False)


def test_chat_template_renders_chatml_with_system_prompt(tokenizer, hf_tokenizer):
    text = tokenizer.render_chat("你好 🙂", system="Be brief.")
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n你好 🙂<|im_end|>\n<|im_start|>assistant\n"
    )
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "你好 🙂"}]
    assert text == hf_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    expected_ids = hf_tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    assert tokenizer.encode_chat("你好 🙂", system="Be brief.") == list(expected_ids)


def test_chat_template_default_system_prompt(tokenizer):
    default = "<|im_start|>system\nYou are a helpful AI assistant.<|im_end|>"
    assert tokenizer.render_chat("hi").startswith(default)


def test_chat_template_raise_exception_and_sandbox():
    with pytest.raises(jinja2.TemplateError, match="no system"):
        ChatTemplate("{{ raise_exception('no system') }}").render([])
    with pytest.raises(jinja2.exceptions.SecurityError):
        ChatTemplate("{{ messages.append(1) }}").render([])


def test_model_without_template_refuses_chat(tiny_model_dir, tmp_path):
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json"):
        (tmp_path / name).write_bytes((tiny_model_dir / name).read_bytes())
    tok = Tokenizer.from_model_dir(tmp_path)
    assert tok.chat_template is None
    with pytest.raises(ValueError, match="no chat template"):
        tok.render_chat("hi")


def sentencepiece_style_tokenizer() -> Tokenizer:
    """A byte-fallback tokenizer (Llama-2 style: Metaspace, <0x..> byte tokens) built by hand, to exercise the
    decode-window stream that non-byte-level tokenizers use."""
    vocab = {f"<0x{b:02X}>": b for b in range(256)}
    for word in ["▁", "▁hello", "▁world", "h", "e", "l", "o", "w", "r", "d", "▁the"]:
        vocab.setdefault(word, len(vocab))
    backend = HFTokenizer(models.BPE(vocab=vocab, merges=[], byte_fallback=True, fuse_unk=False))
    backend.pre_tokenizer = pre_tokenizers.Metaspace()
    backend.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    return Tokenizer(backend)


def test_non_byte_level_stream_holds_back_byte_fallback_characters():
    tok = sentencepiece_style_tokenizer()
    assert not tok.byte_level
    text = "hello 我🙂 world"
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert isinstance(tok.incremental(), DiffStream)
    deltas = stream(tok, ids)
    assert "".join(deltas) == text
    assert all(REPLACEMENT not in d for d in deltas)
    assert "" in deltas[:-1]  # the byte tokens of 我 and 🙂 were held back until complete
