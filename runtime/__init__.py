"""ONNX Runtime side of Branchpoint: the only package (besides models/ validation) that imports onnxruntime.

    from runtime import load_model
    model = load_model(model_dir, device="auto")  # or "cpu" / "cuda" ("cuda" raises DeviceError if inactive)
    model.decoder        # OnnxDecoder, a decoding.engine.protocol.LogitsSource:
                         #   state, logits = decoder.prefill(ids, progress=None) logits: float32 [vocab]
                         #     (in chunks of decoder.chunk tokens; progress(done, total) -> True stops)
                         #   state, logits = decoder.step(state, rows, tokens, lengths=None)
                         #                                                  logits: float32 [len(rows), vocab]
    model.tokenizer      # Tokenizer, a decoding.engine.protocol.TokenText: encode / decode / piece / incremental()
                         #   / render_chat(text, system) / encode_chat(text, system)
    model.chat_template  # ChatTemplate or None
    model.provider       # "CUDAExecutionProvider" or "CPUExecutionProvider", as really active
    model.eos_token_ids, model.name, model.manifest

Modules: session (provider choice), decoder (session IO, logits, row summaries), kv_cache (the KV cache: rows
of OrtValues on the device, per-row masks and lengths; select / truncate / grow / extend in chunks),
helper_graphs (on-device row gather, last-position logits, row summary), tokenizer (pieces, incremental
detokenization), chat (jinja2 chat template), model_files (config JSON).
Heavy imports happen on first use, so `import runtime` stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.chat import ChatTemplate
    from runtime.decoder import OnnxDecoder
    from runtime.tokenizer import Tokenizer

__all__ = ["LoadedModel", "load_model", "OnnxDecoder", "Tokenizer", "ChatTemplate", "DeviceError", "ModelError"]

_LAZY = {
    "OnnxDecoder": "runtime.decoder",
    "Tokenizer": "runtime.tokenizer",
    "ChatTemplate": "runtime.chat",
    "DeviceError": "runtime.session",
    "ModelError": "runtime.session",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'runtime' has no attribute {name!r}")


@dataclass
class LoadedModel:
    decoder: OnnxDecoder
    tokenizer: Tokenizer
    name: str
    path: Path
    manifest: dict = field(default_factory=dict)

    @property
    def chat_template(self) -> ChatTemplate | None:
        return self.tokenizer.chat_template

    @property
    def provider(self) -> str:
        return self.decoder.provider

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        return self.decoder.eos_token_ids or self.tokenizer.eos_token_ids


def load_model(
    model_dir: str | Path,
    device: str = "auto",
    threads: int | None = None,
    warmup: bool = True,
    tokenizer: Tokenizer | None = None,
) -> LoadedModel:
    """Load a prepared model folder (model.onnx, config.json, tokenizer.json, ...); warm the session up unless
    told not to (the first runs of a fresh session are several times slower). `tokenizer`: the folder's, when
    the caller has loaded it already."""
    from runtime.decoder import OnnxDecoder
    from runtime.model_files import read_json
    from runtime.tokenizer import Tokenizer

    path = Path(model_dir)
    decoder = OnnxDecoder(path, device=device, threads=threads)
    if warmup:
        decoder.warmup()
    manifest = read_json(path / "manifest.json")
    if tokenizer is None:
        tokenizer = Tokenizer.from_model_dir(path)
    return LoadedModel(decoder, tokenizer, manifest.get("name") or path.name, path, manifest)
