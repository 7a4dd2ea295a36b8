"""A lane on a served model (runtime.served): its LaneModel for the engine, beside the prepared models a lane names;
and a whole run on one (ServedRunModel, what models.open_model.open_model gives for a served model's name).

The server's tokenizer is the run's when the vocabulary sizes match and it reads a probe text (words, digits,
accents, Chinese, the chat markers) to the same ids as the run's tokenizer: the lane is then compared token by
token and sends the run's prompt ids as they are. Otherwise the lane brings the server's tokenizer (its prompt
encoded by the server, its own pieces and eos) and is compared by text, as a lane on a model of another tokenizer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from decoding.engine.engine import Engine
from decoding.engine.protocol import LaneModel, OwnTokenizer
from decoding.records.model_info import LaneModelInfo, ModelInfo
from decoding.records.trace import PromptInfo
from models.model_text import ModelText, encode_prompt
from runtime.served import ServedModel, ServerError, connect

PROBE = ("Branchpoint's tokenizer probe: 12,345 naïve café — 你好，世界！ <|im_start|>user\n  tabs\tand  "
         "spaces<|im_end|>")


def served_lane_model(name: str, run_tokenizer: Any, run_vocab_size: int) -> LaneModel:
    """The LaneModel of the served model `name` for a run whose tokenizer and vocabulary are given; LookupError (the
    engine names the lane) when the address is bad or the server does not answer."""
    try:
        served = connect(name, run_vocab_size)
        same = served.source.vocab_size == run_vocab_size and same_tokenizer(served, run_tokenizer)
    except (ValueError, ServerError) as exc:
        raise LookupError(f"a served model that answers ({exc})") from None
    info = LaneModelInfo(name=name, hashes={}, path=None, served=served.record())
    if same:
        return LaneModel(served.source, info)
    tokenizer = OwnTokenizer(served.tokenizer, lambda prompt: encode_on_server(served, prompt), served.eos_token_ids)
    identity = "served:" + hashlib.sha256(served.address.name.encode()).hexdigest()[:16]
    return LaneModel(served.source, LaneModelInfo(name=name, hashes={}, path=None, served=served.record(),
                                                  tokenizer=identity), tokenizer)


def same_tokenizer(served: ServedModel, run_tokenizer: Any) -> bool:
    """Whether the server reads the probe text as the run's tokenizer does (ids and the pieces of a few)."""
    ids = served.tokenizer.encode(PROBE, add_special_tokens=False)
    if ids != run_tokenizer.encode(PROBE, add_special_tokens=False):
        return False
    return all(served.tokenizer.piece(t) == run_tokenizer.piece(t) for t in ids[:4])


def encode_on_server(served: ServedModel, prompt: PromptInfo) -> list[int]:
    """The run's prompt as the served model's tokenizer reads it (a chat prompt through its own template)."""
    if not prompt.chat:
        return served.tokenizer.encode(prompt.text)
    rendered = served.tokenizer.render_chat(prompt.text, prompt.system)
    return served.tokenizer.encode(rendered, add_special_tokens=False)


@dataclass
class ServedRunModel:
    """A whole run on a served model: OpenModel's interface (decoder, tokenizer, eos ids, the identity a run
    records, an Engine) over runtime.served. The identity records the server (ModelInfo.served): a replay names it
    and connects again; the engine marks each lane's top-N from it."""

    served: ServedModel
    info: ModelInfo

    @property
    def decoder(self) -> Any:
        return self.served.source

    @property
    def tokenizer(self) -> Any:
        return self.served.tokenizer

    @property
    def provider(self) -> str:
        return f"{self.served.address.protocol} server"

    @property
    def eos_token_ids(self) -> list[int]:
        return list(self.served.eos_token_ids)

    def engine(self, **settings: Any) -> Engine:
        return Engine(self.decoder, self.tokenizer, self.eos_token_ids, **settings)

    def encode_prompt(self, text: str, chat: bool = False, system: str | None = None) -> PromptInfo:
        return encode_prompt(self.tokenizer, text, chat, system)


def open_served_model(name: str) -> ServedRunModel:
    """The run model on the server `name`; ValueError (in words) when the name is bad or the server does not
    answer as it should."""
    served = _connect(name)
    return ServedRunModel(served, ModelInfo(name=name, hashes={}, path=None, served=served.record()))


def served_model_text(name: str) -> ModelText:
    """What encodes and checks a prompt for a run on the server `name`: its tokenizer and context."""
    served = _connect(name)
    return ModelText(served.tokenizer, served.source.info.context)


def _connect(name: str) -> ServedModel:
    try:
        return connect(name)
    except ServerError as exc:
        raise ValueError(f"the server does not answer as it should ({exc})") from None
