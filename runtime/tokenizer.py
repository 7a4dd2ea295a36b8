"""The model's tokenizer (`tokenizers` library, tokenizer.json) with readable token pieces and incremental
detokenization that never shows a broken character while a multi-byte character (Chinese, emoji) is still
spread over several byte-level tokens."""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders

from runtime.chat import ChatTemplate
from runtime.model_files import as_id_tuple, eos_ids_from, read_json, special_token_text

REPLACEMENT = "\ufffd"


@lru_cache(maxsize=1)
def byte_level_decoding_table() -> dict[str, int]:
    """GPT-2's byte-level alphabet, inverted: the printable stand-in character of each byte -> the byte."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            table[chr(256 + extra)] = b
            extra += 1
    return table


def _uses_byte_level_decoder(tokenizer: HFTokenizer) -> bool:
    return isinstance(tokenizer.decoder, decoders.ByteLevel)  # not via to_str(): re-reads all of tokenizer.json


class Tokenizer:
    """encode / decode / piece over tokenizer.json, plus the model's special token ids.

    encode() adds special tokens only where the model's post-processor says so (like transformers'
    `tokenizer(text)`); decode() drops special tokens."""

    def __init__(
        self,
        tokenizer: HFTokenizer,
        eos_token_ids: Sequence[int] = (),
        special_tokens: dict | None = None,
        chat_template: ChatTemplate | None = None,
    ):
        self.backend = tokenizer
        self.chat_template = chat_template
        self.eos_token_ids: tuple[int, ...] = tuple(eos_token_ids)
        self.special_tokens: dict[str, str] = dict(special_tokens or {})  # "bos_token" -> "<|im_start|>", ...
        self.byte_level = _uses_byte_level_decoder(tokenizer)
        added = tokenizer.get_added_tokens_decoder()
        self.special_ids = frozenset(i for i, token in added.items() if token.special)
        self._added_text = {i: token.content for i, token in added.items()}
        self._pieces: dict[int, str] = {}

    @classmethod
    def from_model_dir(cls, model_dir: str | Path) -> Tokenizer:
        model_dir = Path(model_dir)
        path = model_dir / "tokenizer.json"
        if not path.exists():
            raise FileNotFoundError(f"{path} not found (the model folder needs a tokenizer.json)")
        try:
            backend = HFTokenizer.from_file(str(path))
        except Exception as exc:  # noqa: BLE001 - the tokenizers library raises a bare Exception
            raise ValueError(f"{path} cannot be read as a tokenizer: {exc}") from exc
        config = read_json(model_dir / "tokenizer_config.json")
        names = ("bos_token", "eos_token", "pad_token", "unk_token")
        special = {name: text for name in names if (text := special_token_text(config, name)) is not None}
        eos = eos_ids_from(model_dir)
        if not eos and "eos_token" in special:
            eos = as_id_tuple(backend.token_to_id(special["eos_token"]))
        return cls(backend, eos, special, ChatTemplate.from_model_dir(model_dir, special))

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def token_id(self, text: str) -> int | None:
        return self.backend.token_to_id(text)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self.backend.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self.backend.decode(list(token_ids), skip_special_tokens=skip_special_tokens)

    def render_chat(self, user_text: str, system: str | None = None) -> str:
        """The chat-templated prompt text for one user turn (ValueError if the model has no chat template)."""
        if self.chat_template is None:
            raise ValueError("this model has no chat template (chat_template.jinja / tokenizer_config.json)")
        return self.chat_template.render_prompt(user_text, system)

    def encode_chat(self, user_text: str, system: str | None = None) -> list[int]:
        """Ids of the chat-templated prompt; the template writes the special tokens itself, so none are added
        (as transformers' apply_chat_template(tokenize=True))."""
        return self.encode(self.render_chat(user_text, system), add_special_tokens=False)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a byte-level token stands for (added tokens: their text as UTF-8). Ids the model has but the
        tokenizer lacks (padded embedding rows, e.g. Qwen2) give b"", as `decode` skips them."""
        if token_id in self._added_text:
            return self._added_text[token_id].encode("utf-8")
        token = self.backend.id_to_token(token_id)
        if token is None:
            return b""
        table = byte_level_decoding_table()
        return bytes(table[c] for c in token) if all(c in table for c in token) else token.encode("utf-8")

    def piece(self, token_id: int) -> str:
        """Readable text of one token; bytes of an incomplete UTF-8 character are shown as \\x.. escapes."""
        piece = self._pieces.get(token_id)
        if piece is None:
            piece = self._pieces[token_id] = self._make_piece(token_id)
        return piece

    def _make_piece(self, token_id: int) -> str:
        if token_id in self._added_text:
            return self._added_text[token_id]
        if self.backend.id_to_token(token_id) is None:
            return f"<unused id {token_id}>"
        if self.byte_level:
            return self.token_bytes(token_id).decode("utf-8", errors="backslashreplace")
        return self.backend.decode([token_id], skip_special_tokens=False)

    def incremental(self, skip_special_tokens: bool = True) -> IncrementalDecoder:
        """A streaming detokenizer for one growing sequence of generated ids."""
        if self.byte_level:
            return ByteLevelStream(self, skip_special_tokens)
        return DiffStream(self, skip_special_tokens)


class IncrementalDecoder:
    """Feed ids one by one (`add`); each call returns the text that became complete. `finish()` flushes what
    is still held back (bytes of a character that never completed, shown as U+FFFD like `decode`). `text` is
    all the text emitted so far."""

    def __init__(self, tokenizer: Tokenizer, skip_special_tokens: bool):
        self.tokenizer = tokenizer
        self.skip = tokenizer.special_ids if skip_special_tokens else frozenset()
        self.text = ""

    def add(self, token_id: int) -> str:
        delta = self._add(int(token_id))
        self.text += delta
        return delta

    def extend(self, token_ids: Iterable[int]) -> str:
        return "".join(self.add(t) for t in token_ids)

    def finish(self) -> str:
        delta = self._finish()
        self.text += delta
        return delta

    def _add(self, token_id: int) -> str:
        raise NotImplementedError

    def _finish(self) -> str:
        raise NotImplementedError


class ByteLevelStream(IncrementalDecoder):
    """Byte-level BPE: token bytes through an incremental UTF-8 decoder, which holds an incomplete character's
    leading bytes until the rest arrives (invalid bytes become U+FFFD, as in `decode`)."""

    def __init__(self, tokenizer: Tokenizer, skip_special_tokens: bool):
        super().__init__(tokenizer, skip_special_tokens)
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def _add(self, token_id: int) -> str:
        if token_id in self.skip:
            return ""
        return self._utf8.decode(self.tokenizer.token_bytes(token_id))

    def _finish(self) -> str:
        return self._utf8.decode(b"", final=True)


class DiffStream(IncrementalDecoder):
    """Any other tokenizer: decode a short window of ids and emit what grew, holding back while the window's
    text ends in U+FFFD (an incomplete byte-fallback character). The window keeps context so that decoders
    which strip or merge at token boundaries (SentencePiece's leading space) match a full decode."""

    def __init__(self, tokenizer: Tokenizer, skip_special_tokens: bool):
        super().__init__(tokenizer, skip_special_tokens)
        self._ids: list[int] = []
        self._prefix = 0  # window start
        self._read = 0  # ids before this are already emitted

    def _window_text(self, end: int | None = None) -> str:
        return self.tokenizer.decode(self._ids[self._prefix : end], skip_special_tokens=bool(self.skip))

    def _add(self, token_id: int) -> str:
        self._ids.append(token_id)
        emitted = self._window_text(self._read)
        full = self._window_text()
        if len(full) <= len(emitted) or full.endswith(REPLACEMENT):
            return ""
        self._prefix, self._read = self._read, len(self._ids)
        return full[len(emitted) :]

    def _finish(self) -> str:
        emitted = self._window_text(self._read)
        full = self._window_text()
        self._prefix = self._read = len(self._ids)
        return full[len(emitted) :]
