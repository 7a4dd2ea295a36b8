"""`python main.py models`: the prepared models with size, source and provider support."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the list as JSON")


def providers() -> tuple[str, str | None]:
    """Execution providers a prepared model can run on here (CUDA only if a session really runs on it), and why
    CUDA is not among them."""
    from models.validate import cuda_unavailable_reason

    reason = cuda_unavailable_reason()
    return ("CPU" if reason else "CPU, CUDA"), reason


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def licence_of(manifest: dict) -> str:
    """The licence a prepared model's manifest records (older folders: their source's "license")."""
    licence = manifest.get("licence")
    if isinstance(licence, dict) and licence.get("name"):
        return str(licence["name"]) + (" (accepted)" if licence.get("accepted") else "")
    source = manifest.get("source") or {}
    if source.get("kind") == "variant" and not source.get("license"):
        return "as its base"
    return str(source.get("license") or "unknown")


def table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def run(args: argparse.Namespace) -> int:
    import json

    from models.catalog import list_models, models_dir
    from models.variants import describe, precision_of

    models = list_models()
    supported, no_cuda = providers() if models else ("", None)
    if args.json:
        records = [
            {
                "name": m.name,
                "path": str(m.path),
                "precision": precision_of(m.manifest),
                "variant": m.manifest.get("variant"),
                "size_bytes": m.size_bytes,
                "source": m.source,
                "licence": m.manifest.get("licence") or licence_of(m.manifest),
                "created": m.created,
                "valid": m.valid,
                "providers": supported,
            }
            for m in models
        ]
        print(json.dumps(records, indent=2))
        return 0
    if not models:
        print(f"no prepared models in {models_dir()}; run `python main.py prepare`")
        return 0
    header = ["NAME", "PRECISION", "SIZE", "SOURCE", "LICENCE", "CREATED", "PROVIDERS", "STATUS"]
    rows = [
        [
            m.name,
            describe(m.manifest),
            human_size(m.size_bytes),
            m.source,
            licence_of(m.manifest),
            m.created,
            supported,
            "ok" if m.valid else "incomplete",
        ]
        for m in models
    ]
    print(table([header, *rows]))
    print(f"\n{len(models)} model(s) in {models_dir()}")
    if no_cuda:
        print(f"CUDA: not available ({no_cuda})")
    return 0
