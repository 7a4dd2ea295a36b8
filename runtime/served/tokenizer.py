"""The server's own tokenizer (TokenText and TextEncoder): `/tokenize` and `/detokenize` on each protocol.

A token's piece is the bytes an answer named for it (llama.cpp's top_logprobs carry them) or, for one no answer
named, its `/detokenize`; pieces are kept, so each id costs at most one request. Partial UTF-8 shows as \\x..
escapes, as the local tokenizer's pieces do.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from runtime.served.client import ServerError
from runtime.served.source import ServedSource


class ServedTokenizer:
    def __init__(self, source: ServedSource) -> None:
        self.source = source
        self._pieces: dict[int, str] = {}
        self._lock = threading.Lock()

    @property
    def _call(self):
        return self.source.protocol, self.source.client, self.source.info.model

    def piece(self, token_id: int) -> str:
        piece = self._pieces.get(token_id)
        if piece is None:
            known = self.source.pieces.get(token_id)
            if known is not None:
                piece = known.decode("utf-8", errors="backslashreplace")
            else:
                protocol, client, model = self._call
                piece = protocol.detokenize(client, model, [token_id])
            with self._lock:
                self._pieces[token_id] = piece
        return piece

    def decode(self, token_ids: Sequence[int]) -> str:
        if not token_ids:
            return ""
        protocol, client, model = self._call
        return protocol.detokenize(client, model, [int(t) for t in token_ids])

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        protocol, client, model = self._call
        return protocol.tokenize(client, model, text, add_special_tokens)

    def render_chat(self, user_text: str, system: str | None = None) -> str:
        """The chat prompt through the served model's own template (llama.cpp's /apply-template)."""
        protocol, client, _model = self._call
        if protocol.name != "llamacpp":
            raise ValueError(f"a chat prompt on a {protocol.name} server of another tokenizer than the run's: its "
                             "template cannot be read (allowed: a plain prompt, or a model of the run's tokenizer)")
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": user_text})
        answer = client.post("/apply-template", {"messages": messages})
        if not isinstance(answer, dict) or not isinstance(answer.get("prompt"), str):
            raise ServerError(f"{client.url}/apply-template: malformed answer: no text 'prompt'")
        return answer["prompt"]

    def eos_token_ids(self) -> tuple[int, ...]:
        """llama.cpp's /props eos_token as its id; () where the server does not say (lanes stop at their length)."""
        protocol, client, model = self._call
        if protocol.name != "llamacpp":
            return ()
        try:
            props = client.get("/props")
        except ServerError:
            return ()
        eos = props.get("eos_token") if isinstance(props, dict) else None
        if not isinstance(eos, str) or not eos:
            return ()
        ids = protocol.tokenize(client, model, eos, False)
        return tuple(ids) if len(ids) == 1 else ()
