"""What turns a prompt into a model's ids (ModelText: its tokenizer with the chat template, its positions) and the
prompt as a run records it (encode_prompt): for prepared models (models.open_model) and served ones
(models.served_lane)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from decoding.records.trace import PromptInfo


@dataclass
class ModelText:
    """What turns a prompt into a prepared model's ids, loaded without ONNX Runtime (a tenth of a second beside
    the seconds a session takes): its tokenizer with the chat template, and the positions it was trained for.
    A front end encodes and checks the prompt with it (decoding.engine.engine.check_positions) before opening the
    model."""

    tokenizer: Any
    max_positions: int | None

    def encode_prompt(self, text: str, chat: bool = False, system: str | None = None) -> PromptInfo:
        return encode_prompt(self.tokenizer, text, chat, system)


def encode_prompt(tokenizer: Any, text: str, chat: bool = False, system: str | None = None) -> PromptInfo:
    """The prompt as a run records it; a chat prompt is rendered once through the model's chat template
    (ValueError if it has none) and the ids encode exactly that text, without added special tokens: the
    template writes them itself (as transformers' apply_chat_template(tokenize=True))."""
    if not chat:
        return PromptInfo(text, tokenizer.encode(text))
    rendered = tokenizer.render_chat(text, system)
    ids = tokenizer.encode(rendered, add_special_tokens=False)
    return PromptInfo(text, ids, chat=True, system=system, rendered=rendered)
