"""What each server is asked and what its answers mean: llama.cpp's server, vLLM's OpenAI-compatible server, SGLang.

Each protocol answers four questions: what the server serves (`describe`), the top-N log-probabilities of the
next token after a sequence of ids (`next_token`), and its tokenizer both ways (`tokenize`, `detokenize`).
Requests and fields as their docs and sources (2026) give them:

- llama.cpp `POST /completion` {prompt: ids, n_predict: 1, n_probs: N, cache_prompt, id_slot} ->
  completion_probabilities[0].top_logprobs [{id, token, bytes, logprob}] (pre-sampling: the softmax of the raw
  logits); `GET /v1/models` data[0].meta.n_vocab / n_ctx, `GET /props` total_slots; `/tokenize`, `/detokenize`.
- vLLM `POST /v1/completions` {model, prompt: ids, max_tokens: 1, logprobs: N, return_tokens_as_token_ids} ->
  choices[0].logprobs.top_logprobs[0] {"token_id:ID": logprob} (at most --max-logprobs, default 20; raw or processed
  as the server's --logprobs-mode says); `/tokenize`, `/detokenize`.
- SGLang `POST /generate` {input_ids, sampling_params: {max_new_tokens: 1}, return_logprob, top_logprobs_num: N} ->
  meta_info.output_top_logprobs[0] [[logprob, id, text]]; `GET /get_model_info`; `/tokenize`, `/detokenize`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime.served.client import JsonClient, ServerError

NO_PROBABILITY = -1e30  # llama.cpp writes log(0) as the lowest float (JSON has no -inf)


@dataclass
class ServerInfo:
    """What a server says it serves."""

    model: str
    vocab_size: int | None  # None: the server does not say (vLLM, SGLang)
    context: int | None = None  # positions per sequence, when it says
    slots: int | None = None  # llama.cpp's parallel slots (each keeps one sequence's cache)
    reported: dict[str, Any] = field(default_factory=dict)  # what else it said, small and JSON-able


@dataclass
class NextToken:
    """The top-N of the next position: ids and natural-log probabilities (best first), the model that answered
    (None: the protocol does not say) and the pieces (bytes) the answer named, when it did."""

    ids: np.ndarray  # int64 [n]
    logprobs: np.ndarray  # float64 [n]; -inf: probability 0
    model: str | None
    pieces: dict[int, bytes]


class Protocol:
    name = ""

    def describe(self, client: JsonClient, model: str | None) -> ServerInfo:
        raise NotImplementedError

    def next_token(self, client: JsonClient, model: str, ids: Sequence[int], n: int, slot: int | None) -> NextToken:
        raise NotImplementedError

    def tokenize(self, client: JsonClient, model: str, text: str, add_special: bool) -> list[int]:
        raise NotImplementedError

    def detokenize(self, client: JsonClient, model: str, ids: Sequence[int]) -> str:
        raise NotImplementedError


class LlamaCpp(Protocol):
    """llama.cpp's server holds back a generated token that ends in an incomplete UTF-8 character, and its
    probabilities with it (no completion_probabilities): every request biases its one sampled token to a plain
    ASCII one ("a"). The probabilities it returns are the raw logits' (pre-sampling), which no bias touches."""

    name = "llamacpp"
    SAFE_TEXT = "a"

    def __init__(self) -> None:
        self.safe_token: int | None = None

    def describe(self, client: JsonClient, model: str | None) -> ServerInfo:
        answer = client.get("/v1/models")
        entry = _first(answer, "data", "/v1/models", client)
        meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
        info = ServerInfo(model=_text(entry, "id", "/v1/models", client), vocab_size=_int_or_none(meta, "n_vocab"),
                          context=_int_or_none(meta, "n_ctx"),
                          reported={k: meta[k] for k in ("n_params", "size", "n_ctx_train", "vocab_type", "ftype")
                                    if k in meta})
        try:
            props = client.get("/props")
        except ServerError:  # --no-props servers: slots unknown
            props = {}
        if isinstance(props, dict):
            info.slots = _int_or_none(props, "total_slots")
            for key in ("model_path", "build_info"):
                if isinstance(props.get(key), str):
                    info.reported[key] = props[key]
        return info

    def next_token(self, client: JsonClient, model: str, ids: Sequence[int], n: int, slot: int | None) -> NextToken:
        if self.safe_token is None:
            safe = self.tokenize(client, model, self.SAFE_TEXT, False)
            self.safe_token = safe[0] if len(safe) == 1 else -1
        body = {"prompt": list(ids), "n_predict": 1, "n_probs": n, "cache_prompt": True, "temperature": 0.0,
                "post_sampling_probs": False}
        if self.safe_token >= 0:
            body["logit_bias"] = [[self.safe_token, 1000.0]]
        if slot is not None:
            body["id_slot"] = slot
        answer = client.post("/completion", body)
        probabilities = _list(answer, "completion_probabilities", "/completion", client)
        if not probabilities or not isinstance(probabilities[0], dict):
            raise _malformed(client, "/completion", "completion_probabilities is empty")
        top = _list(probabilities[0], "top_logprobs", "/completion", client)
        ids_out, logprobs, pieces = [], [], {}
        for entry in top:
            if not isinstance(entry, dict):
                raise _malformed(client, "/completion", "a top_logprobs entry is not an object")
            token = _int(entry, "id", "/completion", client)
            ids_out.append(token)
            logprobs.append(_logprob(entry.get("logprob"), client, "/completion"))
            if isinstance(entry.get("bytes"), list):
                pieces[token] = bytes(entry["bytes"])
        return NextToken(np.asarray(ids_out, np.int64), np.asarray(logprobs, np.float64),
                         answer.get("model") if isinstance(answer.get("model"), str) else None, pieces)

    def tokenize(self, client: JsonClient, model: str, text: str, add_special: bool) -> list[int]:
        answer = client.post("/tokenize", {"content": text, "add_special": add_special, "parse_special": True})
        return _ids(answer, "tokens", "/tokenize", client)

    def detokenize(self, client: JsonClient, model: str, ids: Sequence[int]) -> str:
        return _text(client.post("/detokenize", {"tokens": list(ids)}), "content", "/detokenize", client)


class Vllm(Protocol):
    name = "vllm"

    def describe(self, client: JsonClient, model: str | None) -> ServerInfo:
        answer = client.get("/v1/models")
        entries = _list(answer, "data", "/v1/models", client)
        chosen = next((e for e in entries if isinstance(e, dict) and e.get("id") == model), None) if model else None
        if model and chosen is None:
            served = ", ".join(str(e.get("id")) for e in entries if isinstance(e, dict))
            raise ServerError(f"{client.url} does not serve model {model!r} (it serves: {served or 'none'})")
        entry = chosen or _first(answer, "data", "/v1/models", client)
        return ServerInfo(model=_text(entry, "id", "/v1/models", client), vocab_size=None,
                          context=_int_or_none(entry, "max_model_len"),
                          reported={k: entry[k] for k in ("root", "owned_by") if isinstance(entry.get(k), str)})

    def next_token(self, client: JsonClient, model: str, ids: Sequence[int], n: int, slot: int | None) -> NextToken:
        body = {"model": model, "prompt": list(ids), "max_tokens": 1, "logprobs": n, "temperature": 0.0,
                "return_tokens_as_token_ids": True}
        answer = client.post("/v1/completions", body)
        choice = _first(answer, "choices", "/v1/completions", client)
        logprobs = choice.get("logprobs")
        top = logprobs.get("top_logprobs") if isinstance(logprobs, dict) else None
        if not isinstance(top, list) or not top or not isinstance(top[0], dict):
            raise _malformed(client, "/v1/completions", "no choices[0].logprobs.top_logprobs[0]")
        ids_out, values = [], []
        for key, value in top[0].items():
            token = key.removeprefix("token_id:")
            if not token.lstrip("-").isdigit():
                raise _malformed(client, "/v1/completions", f"top_logprobs key {key!r} is not token_id:ID (is "
                                 "return_tokens_as_token_ids supported?)")
            ids_out.append(int(token))
            values.append(_logprob(value, client, "/v1/completions"))
        order = np.argsort(-np.asarray(values), kind="stable")
        return NextToken(np.asarray(ids_out, np.int64)[order], np.asarray(values, np.float64)[order],
                         answer.get("model") if isinstance(answer.get("model"), str) else None, {})

    def tokenize(self, client: JsonClient, model: str, text: str, add_special: bool) -> list[int]:
        answer = client.post("/tokenize", {"model": model, "prompt": text, "add_special_tokens": add_special})
        return _ids(answer, "tokens", "/tokenize", client)

    def detokenize(self, client: JsonClient, model: str, ids: Sequence[int]) -> str:
        return _text(client.post("/detokenize", {"model": model, "tokens": list(ids)}), "prompt", "/detokenize",
                     client)


class SGLang(Protocol):
    name = "sglang"

    def describe(self, client: JsonClient, model: str | None) -> ServerInfo:
        answer = client.get("/get_model_info")
        if not isinstance(answer, dict):
            raise _malformed(client, "/get_model_info", "not an object")
        name = model or _text(answer, "model_path", "/get_model_info", client)
        return ServerInfo(model=name, vocab_size=None,
                          reported={k: answer[k] for k in ("model_path", "tokenizer_path") if k in answer})

    def next_token(self, client: JsonClient, model: str, ids: Sequence[int], n: int, slot: int | None) -> NextToken:
        body = {"input_ids": list(ids), "sampling_params": {"max_new_tokens": 1, "temperature": 0.0},
                "return_logprob": True, "top_logprobs_num": n, "return_text_in_logprobs": False}
        answer = client.post("/generate", body)
        if isinstance(answer, list) and answer:
            answer = answer[0]
        meta = answer.get("meta_info") if isinstance(answer, dict) else None
        top = meta.get("output_top_logprobs") if isinstance(meta, dict) else None
        if not isinstance(top, list) or not top or not isinstance(top[0], list):
            raise _malformed(client, "/generate", "no meta_info.output_top_logprobs[0]")
        ids_out, values = [], []
        for entry in top[0]:
            if not isinstance(entry, list) or len(entry) < 2 or not isinstance(entry[1], int):
                raise _malformed(client, "/generate", "an output_top_logprobs entry is not [logprob, id, ...]")
            ids_out.append(entry[1])
            values.append(_logprob(entry[0], client, "/generate"))
        return NextToken(np.asarray(ids_out, np.int64), np.asarray(values, np.float64), None, {})

    def tokenize(self, client: JsonClient, model: str, text: str, add_special: bool) -> list[int]:
        answer = client.post("/tokenize", {"prompt": text, "add_special_tokens": add_special})
        return _ids(answer, "tokens", "/tokenize", client)

    def detokenize(self, client: JsonClient, model: str, ids: Sequence[int]) -> str:
        return _text(client.post("/detokenize", {"tokens": list(ids)}), "text", "/detokenize", client)


PROTOCOL_CLASSES: dict[str, type[Protocol]] = {"llamacpp": LlamaCpp, "vllm": Vllm, "sglang": SGLang}


# -- reading answers: every missing or mistyped field is a ServerError naming it --


def _malformed(client: JsonClient, path: str, what: str) -> ServerError:
    return ServerError(f"{client.url}{path}: malformed answer: {what}")


def _list(answer: Any, key: str, path: str, client: JsonClient) -> list:
    value = answer.get(key) if isinstance(answer, dict) else None
    if not isinstance(value, list):
        raise _malformed(client, path, f"no list {key!r}")
    return value


def _first(answer: Any, key: str, path: str, client: JsonClient) -> dict:
    entries = _list(answer, key, path, client)
    if not entries or not isinstance(entries[0], dict):
        raise _malformed(client, path, f"{key!r} is empty")
    return entries[0]


def _text(answer: Any, key: str, path: str, client: JsonClient) -> str:
    value = answer.get(key) if isinstance(answer, dict) else None
    if not isinstance(value, str):
        raise _malformed(client, path, f"no text {key!r}")
    return value


def _int(answer: dict, key: str, path: str, client: JsonClient) -> int:
    value = answer.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _malformed(client, path, f"{key!r} is not an integer")
    return value


def _int_or_none(answer: dict, key: str) -> int | None:
    value = answer.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ids(answer: Any, key: str, path: str, client: JsonClient) -> list[int]:
    values = _list(answer, key, path, client)
    ids = [v["id"] if isinstance(v, dict) and "id" in v else v for v in values]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in ids):
        raise _malformed(client, path, f"{key!r} holds something other than token ids")
    return ids


def _logprob(value: Any, client: JsonClient, path: str) -> float:
    if value is None:  # -inf written as null
        return -math.inf
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or value > 1e-3:
        raise _malformed(client, path, f"a log-probability is {value!r} (allowed: a number <= 0)")
    return -math.inf if value <= NO_PROBABILITY else min(float(value), 0.0)
