"""Models on a server as lane sources: llama.cpp's server, vLLM, SGLang (no onnxruntime here).

    from runtime.served import connect, is_served
    served = connect("llamacpp+http://127.0.0.1:8080")   # ValueError: a bad name; ServerError: the server
    served.source       # ServedSource, a LogitsSource (partial: PartialRows; Stop: InFlight)
    served.tokenizer    # ServedTokenizer, the server's /tokenize and /detokenize
    served.record()     # what a run file records of it (never an API key)
    served.summary()    # one line: protocol, URL, model, vocabulary, alternatives a step

Modules: address (the name and its options), client (JSON over HTTP, each fault in words, cancel), protocols (the
three servers' requests and answers), source (ServedSource), tokenizer (ServedTokenizer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime.served.address import ServerAddress, is_served, parse_address
from runtime.served.client import JsonClient, ServerCancelled, ServerError
from runtime.served.protocols import PROTOCOL_CLASSES
from runtime.served.source import ServedSource
from runtime.served.tokenizer import ServedTokenizer

__all__ = ["ServedModel", "ServerError", "ServerCancelled", "connect", "is_served", "parse_address", "test_connection"]


@dataclass
class ServedModel:
    name: str  # as the lane or run named it
    address: ServerAddress
    source: ServedSource
    tokenizer: ServedTokenizer
    eos_token_ids: tuple[int, ...]

    def record(self) -> dict[str, Any]:
        """What a run file records (LaneModelInfo.served): no API key, only where it would come from."""
        source = self.source
        record = {"protocol": self.address.protocol, "url": self.address.url, "model": source.info.model,
                  "vocab_size": source.vocab_size, "alternatives": source.alternatives,
                  "reported": dict(source.info.reported)}
        if source.info.context:
            record["reported"]["n_ctx"] = source.info.context
        if source.info.slots:
            record["reported"]["slots"] = source.info.slots
        return record

    def summary(self) -> str:
        source = self.source
        exact = "the whole vocabulary (exact)" if source.complete else f"top {source.alternatives:,} (partial)"
        return (f"{self.address.protocol} {self.address.url}: model {source.info.model}, vocabulary "
                f"{source.vocab_size:,}, {exact} each step")


def connect(name: str, run_vocab_size: int | None = None) -> ServedModel:
    """Open the served model `name` (runtime.served.address): ask the server what it serves. `run_vocab_size`: the
    vocabulary to assume when the server does not report its own (vLLM, SGLang) and the address gives no vocab=.
    ValueError for a bad name, ServerError when the server does not answer as it should."""
    address = parse_address(name)
    client = JsonClient(address.url, address.timeout_s, address.api_key())
    protocol = PROTOCOL_CLASSES[address.protocol]()
    info = protocol.describe(client, address.model)
    vocab = address.vocab or info.vocab_size or run_vocab_size
    if vocab is None:
        raise ValueError(f"invalid served model {name!r}: the server does not report its vocabulary size (allowed: "
                         "add vocab=N to the address)")
    source = ServedSource(address, protocol, client, info, vocab)
    tokenizer = ServedTokenizer(source)
    return ServedModel(name, address, source, tokenizer, tokenizer.eos_token_ids())


def test_connection(name: str, run_vocab_size: int | None = None, text: str = "The capital of France is") -> dict:
    """What the window's "Test connection" shows: the server's model, its vocabulary, how many alternatives one
    step returned for `text` and their best token. Raises as `connect` does."""
    served = connect(name, run_vocab_size)
    ids = served.tokenizer.encode(text, add_special_tokens=False) or [0]
    _state, logits = served.source.prefill(ids)
    returned = int((logits > float("-inf")).sum())
    best = int(logits.argmax())
    source = served.source
    return {"model": source.info.model, "vocab_size": source.vocab_size, "asked": source.alternatives,
            "returned": returned, "unseen_mass": float(served.source.unseen_mass()[0]),
            "best": served.tokenizer.piece(best), "summary": served.summary()}


test_connection.__test__ = False  # not a pytest test
