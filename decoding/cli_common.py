"""Shared glue of the headless commands: load a prepared model (runtime and models are imported lazily, only
here), build an Engine over it, report usage errors as one line with exit code 2."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from decoding.engine import Engine
from decoding.trace import ModelInfo

EXIT_MISMATCH = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


def fail(message: str) -> int:
    print(f"branchpoint: error: {message}", file=sys.stderr)
    return EXIT_USAGE


@dataclass
class LoadedModel:
    decoder: Any  # runtime.decoder.OnnxDecoder (a LogitsSource)
    tokenizer: Any  # runtime.tokenizer.Tokenizer (a TokenText)
    info: ModelInfo

    @property
    def provider(self) -> str:
        return self.decoder.provider

    def engine(self, top_n: int, near_tie_threshold: float) -> Engine:
        return Engine(
            self.decoder,
            self.tokenizer,
            self.decoder.eos_token_ids or self.tokenizer.eos_token_ids,
            top_n=top_n,
            near_tie_threshold=near_tie_threshold,
        )


def model_identity(model_dir: Path) -> ModelInfo:
    from models.catalog import read_manifest

    manifest = read_manifest(model_dir)
    hashes = {
        name: entry["sha256"]
        for name, entry in sorted((manifest.get("files") or {}).items())
        if isinstance(entry, dict) and "sha256" in entry
    }
    return ModelInfo(name=manifest.get("name", model_dir.name), hashes=hashes, path=str(model_dir))


def load_model(name_or_path: str | None, device: str) -> LoadedModel:
    """The prepared model (default: the default model) on `device`; UsageError when missing or unusable."""
    from models.catalog import resolve
    from runtime.decoder import OnnxDecoder
    from runtime.session import DeviceError
    from runtime.tokenizer import Tokenizer

    try:
        model_dir = resolve(name_or_path)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    try:
        decoder = OnnxDecoder(model_dir, device=device)
        tokenizer = Tokenizer.from_model_dir(model_dir)
    except DeviceError as exc:
        raise UsageError(str(exc)) from exc
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load model {str(model_dir)!r}: {exc}") from exc
    decoder.warmup()
    return LoadedModel(decoder, tokenizer, model_identity(model_dir))


def check_writable(path: Path) -> None:
    """Fail before the run, not after it, when the JSON file cannot be written."""
    folder = path.expanduser().resolve().parent
    if not folder.is_dir():
        raise UsageError(f"cannot write {str(path)!r}: folder {str(folder)!r} does not exist")
    if path.is_dir():
        raise UsageError(f"cannot write {str(path)!r}: it is a folder")
    import os

    if not os.access(folder, os.W_OK):
        raise UsageError(f"cannot write {str(path)!r}: folder {str(folder)!r} is not writable")
