"""The first start without the default model: the catalog's entries (name, parameters, languages, licence,
source, download size) and the GGUF files found on the computer, one chosen (the default model; with the Chinese
interface the first offline model that writes Chinese) and prepared through gui.dialogs.add_model when the user
presses Prepare."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QLocale, Qt, Slot
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gui.dialogs import add_model
from gui.i18n import translate
from gui.present.model_offers import FoundGguf, entry_details, entry_line, found_ggufs
from models.catalog import DEFAULT_MODEL_NAME, CatalogEntry, catalog_entries


def chinese_interface() -> bool:
    return QLocale().language() == QLocale.Language.Chinese


def first_choice(entries: list[CatalogEntry], chinese: bool) -> int:
    """The row chosen when the dialog opens: the default model, or with the Chinese interface the first entry
    that writes Chinese without network."""
    if chinese:
        for row, entry in enumerate(entries):
            if entry.writes("zh") and not entry.needs_network:
                return row
    return next((row for row, entry in enumerate(entries) if entry.name == DEFAULT_MODEL_NAME), 0)


class FirstRunDialog(QDialog):
    """`run()`: the prepared folder, or None when the user closed the dialog or every try failed."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(translate("first_run", "Choose a model"))
        self.resize(720, 460)
        self.result_path: Path | None = None
        intro = QLabel(translate("first_run", "Branchpoint shows how a language model chooses its tokens. Choose "
                                              "the model to prepare: it is downloaded once, converted and exported "
                                              "to ONNX into your cache folder. More can be added later from the "
                                              "model picker."))
        intro.setWordWrap(True)
        self.offers = QListWidget()
        self.offers.setObjectName("firstRunOffers")
        self.entries = catalog_entries()
        for entry in self.entries:
            item = QListWidgetItem(entry_line(entry))
            item.setToolTip(entry_details(entry))
            item.setData(Qt.ItemDataRole.UserRole, entry)
            self.offers.addItem(item)
        for found in found_ggufs():
            item = QListWidgetItem(found.line())
            item.setToolTip(found.refused or str(found.path))
            item.setData(Qt.ItemDataRole.UserRole, found)
            if found.refused:
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled)
            self.offers.addItem(item)
        self.offers.setCurrentRow(first_choice(self.entries, chinese_interface()))
        self.details = QLabel()
        self.details.setObjectName("firstRunDetails")
        self.details.setWordWrap(True)
        self.offers.currentItemChanged.connect(self._show_details)
        self.offers.itemDoubleClicked.connect(lambda _item: self.prepare())
        self._show_details()
        self.prepare_button = QPushButton(translate("first_run", "Prepare"))
        self.prepare_button.setDefault(True)
        self.prepare_button.clicked.connect(self.prepare)
        close = QPushButton(translate("first_run", "Not now"))
        close.clicked.connect(self.reject)
        buttons = QDialogButtonBox()
        buttons.addButton(self.prepare_button, QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton(close, QDialogButtonBox.ButtonRole.RejectRole)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.offers, 1)
        layout.addWidget(self.details)
        layout.addWidget(buttons)

    def run(self) -> Path | None:
        self.exec()
        return self.result_path

    def chosen(self) -> CatalogEntry | FoundGguf | None:
        item = self.offers.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None

    @Slot()
    def _show_details(self) -> None:
        chosen = self.chosen()
        if isinstance(chosen, FoundGguf):
            self.details.setText(str(chosen.path))
        elif chosen is not None:
            self.details.setText(entry_details(chosen))

    @Slot()
    def prepare(self) -> None:
        chosen = self.chosen()
        if isinstance(chosen, FoundGguf):
            prepared = add_model.prepare_gguf_file(self, chosen.path, chosen.name)
        elif chosen is not None:
            prepared = add_model.prepare_entry(self, chosen)
        else:
            return
        if prepared is not None:
            self.result_path = prepared
            self.accept()
