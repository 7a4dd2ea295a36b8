"""An independent reference for SentencePiece-style GGUF tokenizers (Gemma 3's): the sentencepiece library's own
BPE encoder over a model proto built from the GGUF's pieces, scores and token types, after llama.cpp's first pass
over the raw text — its USER_DEFINED pieces (runs of newlines, spaces, tabs; HTML tags) are cut out where they
occur, the longest piece first (src/llama-vocab.cpp, tokenizer_st_partition: control pieces only when special
tokens are parsed, which a plain prompt does not). It shares no code with models/gguf_tokenizer.py (the tokenizers
library's BPE over score-ranked merges), only the GGUF's arrays, read here with gguf-py directly."""

from __future__ import annotations

from pathlib import Path

USER_DEFINED = 4


class GgufSentencePiece:
    def __init__(self, gguf_path: Path) -> None:
        import gguf
        import sentencepiece as spm
        from sentencepiece import sentencepiece_model_pb2 as model_pb2

        fields = gguf.GGUFReader(str(gguf_path)).fields

        def array(key: str) -> list:
            return [fields[key].parts[i] for i in fields[key].data]

        def scalar(key: str):
            return fields[key].parts[-1][0].item()

        pieces = [bytes(p).decode("utf-8") for p in array("tokenizer.ggml.tokens")]
        scores = [float(s[0]) for s in array("tokenizer.ggml.scores")]
        types = [int(t[0]) for t in array("tokenizer.ggml.token_type")]
        proto = model_pb2.ModelProto()
        proto.trainer_spec.model_type = model_pb2.TrainerSpec.BPE
        proto.trainer_spec.vocab_size = len(pieces)
        proto.trainer_spec.byte_fallback = True
        proto.trainer_spec.unk_id = scalar("tokenizer.ggml.unknown_token_id")
        proto.trainer_spec.bos_id = scalar("tokenizer.ggml.bos_token_id")
        proto.trainer_spec.eos_id = scalar("tokenizer.ggml.eos_token_id")
        proto.trainer_spec.pad_id = scalar("tokenizer.ggml.padding_token_id")
        proto.normalizer_spec.name = "identity"
        proto.normalizer_spec.add_dummy_prefix = bool(scalar("tokenizer.ggml.add_space_prefix"))
        proto.normalizer_spec.remove_extra_whitespaces = False
        proto.normalizer_spec.escape_whitespaces = True
        for piece, score, kind in zip(pieces, scores, types, strict=True):
            proto.pieces.add(piece=piece, score=score, type=kind)
        self.processor = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
        self.bos = proto.trainer_spec.bos_id if scalar("tokenizer.ggml.add_bos_token") else None
        user = [(p, i) for i, (p, t) in enumerate(zip(pieces, types, strict=True)) if t == USER_DEFINED]
        self.user_defined = sorted(user, key=lambda item: -len(item[0]))  # llama.cpp: the longest first

    def partition(self, text: str) -> list[str | int]:
        """The raw text cut at every user-defined piece: pieces become their ids, the rest stays text."""
        fragments: list[str | int] = [text]
        for piece, token_id in self.user_defined:
            cut: list[str | int] = []
            for fragment in fragments:
                if isinstance(fragment, int) or piece not in fragment:
                    cut.append(fragment)
                    continue
                parts = fragment.split(piece)
                for k, part in enumerate(parts):
                    if k:
                        cut.append(token_id)
                    if part:
                        cut.append(part)
            fragments = cut
        return fragments

    def encode(self, text: str) -> list[int]:
        ids = [] if self.bos is None else [self.bos]
        for fragment in self.partition(text):
            ids.extend([fragment] if isinstance(fragment, int) else self.processor.encode(fragment))
        return ids
