"""`ServedSource`: a model on a server (llama.cpp's, vLLM's, SGLang's) behind the LogitsSource protocol.

Its state is the rows' token sequences (the server keeps the KV cache): each step sends every row's whole sequence
and gets the top-N log-probabilities of its next position back, the server's prefix cache making that one token of
compute (llama.cpp: one slot per row, `cache_prompt`; vLLM and SGLang: automatic prefix caching). The rows' requests
run at once, at most `parallel` in flight, each bounded by the address's timeout; `cancel_in_flight` aborts them.

The logits it hands the engine are the returned log-probabilities at their ids and -inf elsewhere: the lane's chain
runs on exactly what came back, renormalised over it, and `unseen_mass` says per row how much probability the
server did not return (0 when the whole vocabulary was asked for). Each answer's model is checked against the one
the server named at the start: a changed model is an error, not a silent mix.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from decoding.engine.protocol import PrefillCancelled, PrefillProgress
from runtime.served.address import ALL, ServerAddress
from runtime.served.client import JsonClient, ServerError
from runtime.served.protocols import NextToken, Protocol, ServerInfo


@dataclass
class ServedRows:
    """The engine's opaque state: each row's whole sequence (prompt included) and its llama.cpp slot."""

    sequences: list[tuple[int, ...]]
    slots: list[int | None]

    @property
    def num_rows(self) -> int:
        return len(self.sequences)


class ServedSource:
    """LogitsSource (with PartialRows and InFlight) over one served model; see the module docstring."""

    def __init__(self, address: ServerAddress, protocol: Protocol, client: JsonClient, info: ServerInfo,
                 vocab_size: int) -> None:
        self.address = address
        self.protocol = protocol
        self.client = client
        self.info = info
        self.vocab_size = vocab_size
        self.max_positions: int | None = info.context
        wanted = vocab_size if address.alternatives == ALL else address.alternatives
        self.alternatives = min(wanted, vocab_size)  # asked for each step
        self.pieces: dict[int, bytes] = {}  # token bytes the answers named (llama.cpp's), for the tokenizer
        self._pieces_lock = threading.Lock()
        self._unseen = np.zeros(0)
        self._pool = ThreadPoolExecutor(max_workers=address.parallel, thread_name_prefix="served")
        self._slot_use: dict[int, int] = {}  # slot -> the step it was last given out (least recently used first)
        self._clock = 0

    @property
    def complete(self) -> bool:
        """Whether each step reads the whole vocabulary (then nothing is partial)."""
        return self.alternatives >= self.vocab_size

    @property
    def in_flight(self) -> int:
        return self.client.in_flight

    def unseen_mass(self) -> np.ndarray:
        return self._unseen

    def cancel_in_flight(self) -> None:
        self.client.cancel_in_flight()

    def prefill(self, prompt_ids: Sequence[int], progress: PrefillProgress | None = None) -> tuple[ServedRows,
                                                                                                     np.ndarray]:
        """The prompt in one request (the server reads it in its own batches); progress hears 0 and the whole."""
        ids = tuple(int(t) for t in prompt_ids)
        if not ids:
            raise ValueError("prompt_ids must not be empty")
        self._check_tokens(ids)
        if progress is not None and progress(0, len(ids)):
            raise PrefillCancelled()
        rows = ServedRows([ids], self._assign_slots([None], 1))
        logits = self._next(rows)
        if progress is not None and progress(len(ids), len(ids)):
            raise PrefillCancelled()
        return rows, logits[0]

    def step(self, state: ServedRows, rows: Sequence[int], tokens: Sequence[int],
             lengths: Sequence[int | None] | None = None) -> tuple[ServedRows, np.ndarray]:
        if len(tokens) != len(rows):
            raise ValueError(f"tokens must have one id per row ({len(rows)}), got {len(tokens)}")
        self._check_tokens(tokens)
        sequences = []
        for i, (row, token) in enumerate(zip(rows, tokens, strict=True)):
            sequence = state.sequences[row]
            if lengths is not None and lengths[i] is not None:
                sequence = sequence[: lengths[i]]
            sequences.append((*sequence, int(token)))
        longest = max((len(s) for s in sequences), default=0)
        if self.max_positions and longest > self.max_positions:
            raise ValueError(f"sequence length {longest} exceeds the server's {self.max_positions} positions")
        new = ServedRows(sequences, self._continued_slots(state, rows))
        return new, self._next(new)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- internals --

    def _next(self, rows: ServedRows) -> np.ndarray:
        """The rows' requests at once (bounded by the pool); float32 logits [rows, vocab], unseen mass kept."""
        if rows.num_rows == 0:
            self._unseen = np.zeros(0)
            return np.zeros((0, self.vocab_size), np.float32)
        answers = list(self._pool.map(self._ask, rows.sequences, rows.slots))
        logits = np.full((rows.num_rows, self.vocab_size), -np.inf, np.float32)
        unseen = np.zeros(rows.num_rows)
        for i, answer in enumerate(answers):
            logits[i, answer.ids] = answer.logprobs
            returned = float(np.exp(answer.logprobs).sum())
            unseen[i] = 0.0 if answer.ids.size >= self.vocab_size else min(max(1.0 - returned, 0.0), 1.0)
        self._unseen = unseen
        return logits

    def _ask(self, sequence: tuple[int, ...], slot: int | None) -> NextToken:
        answer = self.protocol.next_token(self.client, self.info.model, sequence, self.alternatives, slot)
        where = f"{self.address.protocol} server {self.address.url}"
        if answer.model is not None and answer.model != self.info.model:
            raise ServerError(f"{where}: its model changed from {self.info.model!r} to {answer.model!r} during the "
                              "run (the steps so far are the old model's; start a new run)")
        if answer.ids.size == 0:
            raise ServerError(f"{where}: the answer has no alternatives (is n_probs / logprobs supported?)")
        bad = answer.ids[(answer.ids < 0) | (answer.ids >= self.vocab_size)]
        if bad.size:
            raise ServerError(f"{where}: token id {int(bad[0])} is outside the vocabulary of {self.vocab_size} "
                              "(another model than the one it named?)")
        if np.unique(answer.ids).size != answer.ids.size:
            raise ServerError(f"{where}: malformed answer: a token id is listed twice")
        if answer.pieces:
            with self._pieces_lock:
                self.pieces.update(answer.pieces)
        return answer

    def _check_tokens(self, ids: Sequence[int]) -> None:
        if ids and (min(ids) < 0 or max(ids) >= self.vocab_size):
            raise ValueError(f"token ids must be in [0, {self.vocab_size}), got {min(ids)}..{max(ids)}")

    def _assign_slots(self, inherited: list[int | None], count: int) -> list[int | None]:
        """llama.cpp: a row keeps its parent's slot; others take the least recently used free one (None: the
        server chooses, when there are more rows than slots). Other servers cache by prefix: no slots."""
        slots = self.info.slots if self.protocol.name == "llamacpp" else None
        if not slots:
            return [None] * count
        self._clock += 1
        taken = {s for s in inherited if s is not None}
        free = sorted((s for s in range(slots) if s not in taken), key=lambda s: self._slot_use.get(s, -1))
        assigned = [s if s is not None else (free.pop(0) if free else None) for s in inherited]
        for s in assigned:
            if s is not None:
                self._slot_use[s] = self._clock
        return assigned

    def _continued_slots(self, state: ServedRows, rows: Sequence[int]) -> list[int | None]:
        inherited: list[int | None] = []
        seen: set[int] = set()
        for row in rows:  # the first new row continuing an old row keeps its slot (its cache); forks get others
            slot = state.slots[row] if row not in seen else None
            seen.add(row)
            inherited.append(slot)
        return self._assign_slots(inherited, len(rows))
