"""A served model's name, as a lane (`model=`) or a run names it:

    llamacpp+http://127.0.0.1:8080
    vllm+http://gpu-node:8000?model=Qwen/Qwen3-32B&alternatives=100
    sglang+https://cluster.example/sg?alternatives=50&timeout=60&key_env=SGLANG_KEY

The protocol before `+`, the server's base URL, and options after `?` (each refused in words when bad):
alternatives (the top-N each step asks for; `all`: the whole vocabulary, exact; default 1000 on llama.cpp's server,
20 on vLLM's and SGLang's, their default cap), timeout (seconds a request may take, default 30), parallel (requests in
flight at once, default 4), model (the served model to ask for; default the server's first), vocab (the vocabulary
size, for servers that do not report it), key_env (the environment variable holding an API key: the key itself is
never part of the name, nor of a run file).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

PROTOCOLS = ("llamacpp", "vllm", "sglang")
DEFAULT_ALTERNATIVES = {"llamacpp": 1000, "vllm": 20, "sglang": 20}
ALL = 0  # alternatives=all: the whole vocabulary
OPTIONS = ("alternatives", "timeout", "parallel", "model", "vocab", "key_env")


@dataclass(frozen=True)
class ServerAddress:
    protocol: str
    url: str  # scheme://host:port[/path], no query, no trailing slash
    alternatives: int  # ALL: the whole vocabulary
    timeout_s: float = 30.0
    parallel: int = 4
    model: str | None = None
    vocab: int | None = None
    key_env: str | None = None

    @property
    def name(self) -> str:
        """The name without the options that do not change what is computed (what a run file records)."""
        return f"{self.protocol}+{self.url}" + (f"?model={self.model}" if self.model else "")

    def api_key(self) -> str | None:
        """The API key from the environment variable `key_env` (None: none is sent)."""
        if self.key_env is None:
            return None
        key = os.environ.get(self.key_env)
        if not key:
            raise ValueError(f"invalid key_env={self.key_env}: the environment variable is not set (allowed: the "
                             "name of a set environment variable holding the server's API key)")
        return key


def is_served(name: str | None) -> bool:
    """Whether a model name names a server (PROTOCOL+http(s)://...), not a prepared model."""
    if not name:
        return False
    protocol, plus, rest = name.partition("+")
    return bool(plus) and protocol.lower() in PROTOCOLS and rest.lower().startswith(("http://", "https://"))


def parse_address(name: str) -> ServerAddress:
    """The ServerAddress of a served model's name; ValueError naming the part that is wrong and what it allows."""
    protocol, plus, rest = name.strip().partition("+")
    protocol = protocol.lower()
    if not plus or protocol not in PROTOCOLS:
        raise ValueError(f"invalid served model {name!r}: allowed PROTOCOL+URL with PROTOCOL one of "
                         f"{', '.join(PROTOCOLS)} (e.g. llamacpp+http://127.0.0.1:8080)")
    parts = urlsplit(rest)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"invalid server URL {rest!r} in {name!r}: allowed http://HOST:PORT or https://HOST[:PORT]")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise ValueError(f"invalid port in {rest!r}: allowed an integer 1..65535") from None
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r} in {name!r}: allowed {', '.join(OPTIONS)}")
    url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    return ServerAddress(
        protocol=protocol,
        url=url,
        alternatives=_alternatives(options.get("alternatives"), protocol),
        timeout_s=_number("timeout", options.get("timeout"), 30.0, float, 0.1, 3600),
        parallel=_number("parallel", options.get("parallel"), 4, int, 1, 64),
        model=options.get("model") or None,
        vocab=_number("vocab", options.get("vocab"), None, int, 2, 10_000_000),
        key_env=options.get("key_env") or None,
    )


def _alternatives(raw: str | None, protocol: str) -> int:
    if raw is None:
        return DEFAULT_ALTERNATIVES[protocol]
    if raw.lower() == "all":
        return ALL
    return _number("alternatives", raw, None, int, 1, 10_000_000)


def _number(key: str, raw: str | None, default, kind: type, low: float, high: float):
    if raw is None:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        what = "an integer" if kind is int else "a number"
        extra = " or all" if key == "alternatives" else ""
        raise ValueError(f"invalid {key}={raw}: allowed {what} {low:g}..{high:g}{extra}")
    return value
