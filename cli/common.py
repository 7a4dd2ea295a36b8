"""Shared glue of the headless commands: usage errors reported as one line with exit code 2, and the prepared
model opened with its failures turned into usage errors."""

from __future__ import annotations

import sys
from pathlib import Path

from models.catalog import needs_migration
from models.model_text import ModelText
from models.open_model import OpenModel, open_model, open_model_text

EXIT_MISMATCH = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


def fail(message: str) -> int:
    print(f"branchpoint: error: {one_line(message)}", file=sys.stderr)
    return EXIT_USAGE


def one_line(message: str) -> str:
    """A message from any layer (ONNX Runtime's span lines) as the one line the command line promises."""
    return " ".join(line.strip() for line in str(message).splitlines() if line.strip())


def load_model(name_or_path: str | None, device: str, text: ModelText | None = None) -> OpenModel:
    """The prepared model (default: the default model) on `device`, with `text`'s tokenizer when given (from
    load_model_text); UsageError when missing or unusable."""
    from runtime import DeviceError  # imports onnxruntime: only when a model is opened

    try:
        model = open_model(name_or_path, device, text.tokenizer if text is not None else None)
    except (FileNotFoundError, DeviceError) as exc:
        raise UsageError(str(exc)) from exc
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load model {name_or_path or 'the default model'!r}: {exc}") from exc
    if model.info.path is not None and needs_migration(model.info.path):  # None: a server
        print(
            f"branchpoint: note: {model.info.name} was prepared by an older Branchpoint; `prepare` it again to "
            "make it load faster (a few seconds, no new export)",
            file=sys.stderr,
        )
    return model


def load_model_text(name_or_path: str | None) -> ModelText:
    """The prepared model's tokenizer and positions, without opening it; UsageError when missing or unreadable."""
    try:
        return open_model_text(name_or_path)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load the tokenizer of {name_or_path or 'the default model'!r}: {exc}") from exc


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
