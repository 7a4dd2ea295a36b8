"""An independent reference for the default model's tokenizer: byte-level BPE written out here, over the
vocabulary and merges read from the GGUF file itself, split as llama.cpp splits text for the GGUF's `smollm`
pre-tokenizer. It shares no code or data with the repaired tokenizer.json (tokenizers library, vocabulary from
transformers' GGUF conversion), so agreement between the two is evidence, not a tautology.

llama.cpp (src/llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_SMOLLM) splits with two regexes in turn, every match and
every run of text between matches becoming a piece: `\\p{N}` (each digit alone), then GPT-2's
`'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)` (its own implementation also takes
a lone whitespace character, written `|\\s+` below). Each piece's UTF-8 bytes are mapped to GPT-2's printable
byte alphabet, then merged pair by pair, lowest merge rank first (the leftmost of equal pairs), and each
resulting symbol is looked up in the vocabulary. No bos is added (`tokenizer.ggml.add_bos_token` is false).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import regex

DIGIT = regex.compile(r"\p{N}")
GPT2_SPLIT = regex.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")


def byte_alphabet() -> dict[int, str]:
    """GPT-2's byte -> printable character table (bytes_to_unicode)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def split_keeping_gaps(pattern: regex.Pattern, text: str) -> list[str]:
    pieces, start = [], 0
    for match in pattern.finditer(text):
        if match.start() > start:
            pieces.append(text[start : match.start()])
        pieces.append(match.group())
        start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces


class GgufBpe:
    def __init__(self, gguf_path: Path) -> None:
        import gguf

        fields = gguf.GGUFReader(str(gguf_path)).fields

        def strings(key: str) -> list[str]:
            field = fields[key]
            return [bytes(field.parts[index]).decode("utf-8") for index in field.data]

        self.pre = strings("tokenizer.ggml.pre")[0]
        self.model = strings("tokenizer.ggml.model")[0]
        self.add_bos = bool(fields["tokenizer.ggml.add_bos_token"].parts[-1][0])
        self.vocab = {token: index for index, token in enumerate(strings("tokenizer.ggml.tokens"))}
        self.ranks = {tuple(merge.split(" ")): rank for rank, merge in enumerate(strings("tokenizer.ggml.merges"))}
        self.alphabet = byte_alphabet()

    def encode(self, text: str) -> list[int]:
        ids = []
        for part in split_keeping_gaps(DIGIT, text):
            for piece in split_keeping_gaps(GPT2_SPLIT, part):
                word = "".join(self.alphabet[b] for b in piece.encode("utf-8"))
                for symbol in self._merge(word):
                    ids.extend([self.vocab[symbol]] if symbol in self.vocab else [self.vocab[c] for c in symbol])
        return ids

    @lru_cache(maxsize=4096)  # noqa: B019 - one instance per test session
    def _merge(self, word: str) -> tuple[str, ...]:
        symbols = list(word)
        while len(symbols) > 1:
            pairs = enumerate(zip(symbols, symbols[1:], strict=False))
            ranked = [(self.ranks[pair], i) for i, pair in pairs if pair in self.ranks]
            if not ranked:
                break
            _, i = min(ranked)
            symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
        return tuple(symbols)
