"""`python main.py catalog`: the models Branchpoint prepares by name (models.catalog), and which are prepared."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the catalog as JSON")


def parameters_text(count: int) -> str:
    return f"{count / 1e9:.2f} B" if count >= 1e9 else f"{count / 1e6:.0f} M"


def record(entry) -> dict:
    return {
        "name": entry.name,
        "parameters": entry.parameters,
        "languages": list(entry.languages),
        "licence": entry.licence.name,
        "licence_text": entry.licence.where(),
        "must_accept_licence": entry.licence.must_accept,
        "source": entry.describe_source(),
        "needs_network": entry.needs_network,
        "download_bytes": entry.download_bytes,
        "prepared": entry.is_prepared(),
        "description": entry.description,
    }


def run(args: argparse.Namespace) -> int:
    import json

    from cli.models_command import human_size, table
    from models.catalog import DEFAULT_MODEL_NAME, catalog_entries

    entries = catalog_entries()
    if args.json:
        print(json.dumps([record(e) for e in entries], indent=2, ensure_ascii=False))
        return 0
    header = ["NAME", "PARAMETERS", "LANGUAGES", "LICENCE", "SOURCE", "DOWNLOAD", "STATUS"]
    rows = [
        [
            entry.name + (" (default)" if entry.name == DEFAULT_MODEL_NAME else ""),
            parameters_text(entry.parameters),
            ", ".join(entry.languages),
            entry.licence.name + (" (accept to prepare)" if entry.licence.must_accept else ""),
            entry.describe_source(),
            ("≈ " if entry.needs_network else "") + human_size(entry.download_bytes),
            "prepared" if entry.is_prepared() else "not prepared",
        ]
        for entry in entries
    ]
    print(table([header, *rows]))
    print("\nprepare one: python main.py prepare --catalog NAME (--accept-license where its licence asks)")
    return 0
