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
class CliModel:
    """runtime's loaded model plus the identity a RunTrace records."""

    loaded: Any  # runtime.LoadedModel: decoder (a LogitsSource), tokenizer (a TokenText), eos ids, provider
    info: ModelInfo

    @property
    def tokenizer(self) -> Any:
        return self.loaded.tokenizer

    @property
    def provider(self) -> str:
        return self.loaded.provider

    def engine(self, top_n: int, near_tie_threshold: float) -> Engine:
        loaded = self.loaded
        return Engine(
            loaded.decoder,
            loaded.tokenizer,
            list(loaded.eos_token_ids),
            top_n=top_n,
            near_tie_threshold=near_tie_threshold,
        )


def model_identity(model_dir: Path, manifest: dict) -> ModelInfo:
    hashes = {
        name: entry["sha256"]
        for name, entry in sorted((manifest.get("files") or {}).items())
        if isinstance(entry, dict) and "sha256" in entry
    }
    return ModelInfo(name=manifest.get("name", model_dir.name), hashes=hashes, path=str(model_dir))


def load_model(name_or_path: str | None, device: str) -> CliModel:
    """The prepared model (default: the default model) on `device`; UsageError when missing or unusable."""
    from models.catalog import resolve
    from runtime import DeviceError
    from runtime import load_model as load_runtime_model

    try:
        model_dir = resolve(name_or_path)
        loaded = load_runtime_model(model_dir, device=device)
    except (FileNotFoundError, DeviceError) as exc:
        raise UsageError(str(exc)) from exc
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load model {name_or_path or 'the default model'!r}: {exc}") from exc
    return CliModel(loaded, model_identity(Path(model_dir), loaded.manifest))


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
