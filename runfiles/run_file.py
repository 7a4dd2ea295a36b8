"""Run files and explain files on disk: written whole or not at all (atomic_write), read with one clear error."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from decoding.analysis.why import WhyResult
from decoding.records import jsonio
from decoding.records.explain import ExplainFormatError, ExplainResult
from decoding.records.jsonio import TraceFormatError
from decoding.records.trace import RunTrace
from runfiles.atomic_write import write_text_atomic


def save(trace: RunTrace, path: str | os.PathLike) -> Path:
    """Write atomically: a temp file in the same folder, then os.replace (never a truncated file)."""
    return write_text_atomic(Path(path), jsonio.dumps(trace))


def load(path: str | os.PathLike) -> RunTrace:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"cannot read run file {str(path)!r}: {exc}") from exc
    return jsonio.loads(text, source=str(path))


def save_explain(result: ExplainResult, path: str | os.PathLike) -> Path:
    return write_text_atomic(Path(path), result.to_json())


def load_explain(path: str | os.PathLike) -> ExplainResult:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ExplainFormatError(f"cannot read {str(path)!r}: {exc}") from exc
    return ExplainResult.from_json(text)


def save_why(result: WhyResult, path: str | os.PathLike) -> Path:
    """A `main.py why` result (decoding.analysis.why.WhyResult.to_json), written atomically."""
    return write_text_atomic(Path(path), result.to_json())


def schema() -> dict[str, Any]:
    """The JSON Schema of run files shipped with the package (runfiles/schema.json)."""
    return json.loads(resources.files("runfiles").joinpath("schema.json").read_text(encoding="utf-8"))
