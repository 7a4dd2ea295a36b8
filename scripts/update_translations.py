"""Bring gui/i18n/translations/branchpoint_zh_CN.ts up to date with the strings pyside6-lupdate collects from gui/:
a string whose context changed (a moved class, a renamed context) keeps the translation it had in any context;
`--known FILE.json` ({"English": "中文"}) adds translations; what has none is listed (and left unfinished).

    .venv/bin/python scripts/update_translations.py [--known extra.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TS = REPO / "gui" / "i18n" / "translations" / "branchpoint_zh_CN.ts"


def collected() -> list[tuple[str, str]]:
    lupdate = Path(sys.executable).parent / "pyside6-lupdate"
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "collected.ts"
        sources = sorted(str(p) for p in (REPO / "gui").rglob("*.py"))
        subprocess.run([str(lupdate), "-silent", "-locations", "none", *sources, "-ts", str(out)], check=True)
        return [(c.findtext("name"), m.findtext("source")) for c in ET.parse(out).getroot()
                for m in c.findall("message")]


def existing() -> tuple[dict[tuple[str, str], str], dict[str, str]]:
    by_key, by_source = {}, {}
    for context in ET.parse(TS).getroot():
        for message in context.findall("message"):
            translation = message.find("translation")
            if translation is not None and translation.get("type") is None and (translation.text or "").strip():
                key = (context.findtext("name"), message.findtext("source"))
                by_key[key] = translation.text
                by_source.setdefault(key[1], translation.text)
    return by_key, by_source


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--known", type=Path, help="a JSON object of English source -> Chinese translation")
    args = parser.parse_args()
    by_key, by_source = existing()
    if args.known:
        by_source.update(json.loads(args.known.read_text(encoding="utf-8")))
    root = ET.Element("TS", version="2.1", language="zh_CN")
    contexts: dict[str, ET.Element] = {}
    missing = []
    for context, source in collected():
        if context not in contexts:
            contexts[context] = ET.SubElement(root, "context")
            ET.SubElement(contexts[context], "name").text = context
        message = ET.SubElement(contexts[context], "message")
        ET.SubElement(message, "source").text = source
        text = by_key.get((context, source)) or by_source.get(source)
        translation = ET.SubElement(message, "translation")
        if text:
            translation.text = text
        else:
            translation.set("type", "unfinished")
            missing.append((context, source))
    ET.indent(root, space="    ")
    body = ET.tostring(root, encoding="unicode")
    TS.write_text('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE TS>\n' + body + "\n", encoding="utf-8")
    for context, source in missing:
        print(f"untranslated: [{context}] {source}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
