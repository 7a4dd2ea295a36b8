"""Model picker: the prepared models in the cache, each with its precision and size on disk; the catalog's entries
not prepared yet and the GGUF files found on the computer (prepared when chosen: gui.dialogs.add_model); then
"Add model from Hugging Face…" (the hub dialog), "Add GGUF file…", "Add local folder…" (an optimum ONNX export is
registered as it is, a Hugging Face model folder is exported; both run in the setup dialog), "Add precision
variant…" (the variants dialog, for the current model) and "Add a server…" (a served model: the server dialog; a
lane on it is added)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QComboBox, QFileDialog, QMessageBox, QWidget

from gui.dialogs import add_model
from gui.dialogs.setup_dialog import SetupDialog
from gui.dialogs.variant_dialog import VariantDialog
from gui.i18n import translate

ADD_HUB = "add-hub"
ADD_GGUF = "add-gguf"
ADD_FOLDER = "add-folder"
ADD_VARIANT = "add-variant"
ADD_SERVER = "add-server"
ACTIONS = (ADD_HUB, ADD_GGUF, ADD_FOLDER, ADD_VARIANT, ADD_SERVER)  # the entries that are commands, not models
CATALOG = "catalog:"  # + an entry's name: prepared when chosen
FOUND = "found:"  # + a found GGUF's path: prepared when chosen


def is_model(data) -> bool:
    """The entry is a prepared model's folder (not a command, a catalog entry or a found file)."""
    return bool(data) and data not in ACTIONS and not str(data).startswith((CATALOG, FOUND))


def folder_kind(path: Path) -> str | None:
    """'onnx' for an exported folder (model.onnx), 'hf' for a Hugging Face model folder (config.json)."""
    if (path / "model.onnx").is_file():
        return "onnx"
    if (path / "config.json").is_file():
        return "hf"
    return None


class ModelPicker(QComboBox):
    modelChosen = Signal(object)  # Path of a prepared model folder
    variantPrepared = Signal(str)  # what the new variant is and how it reads against fp32 (a notice)
    serverAdded = Signal(str)  # a served model's address (runtime.served): a lane on it is added

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMinimumContentsLength(22)
        self.setToolTip(translate("model_picker", "The run's model: every lane that names no model of its own runs "
                                                  "on it (the lanes editor's model field)"))
        self._extra: list[Path] = []
        self._found: dict = {}  # path → the found GGUF listed
        self.current: Path | None = None  # the model shown as chosen (the variants dialog's model)
        self.refresh()
        self.activated.connect(self._on_activated)

    def refresh(self, select: Path | None = None) -> None:
        from gui.present.variant_rows import model_line
        from models.catalog import list_models, model_info

        self.blockSignals(True)
        self.clear()
        known = []
        for info in list_models():
            self.addItem(model_line(info), str(info.path))
            known.append(Path(info.path))
        for path in self._extra:
            if path not in known:
                self.addItem(model_line(model_info(path)), str(path))
        self.add_offers()
        self.addItem(translate("model_picker", "Add model from Hugging Face…"), ADD_HUB)
        self.addItem(translate("model_picker", "Add GGUF file…"), ADD_GGUF)
        self.addItem(translate("model_picker", "Add local folder…"), ADD_FOLDER)
        self.addItem(translate("model_picker", "Add precision variant…"), ADD_VARIANT)
        self.setItemData(self.count() - 1, translate("model_picker", "fp16, int8, int4 or q4_1 weights of the chosen "
                                                                    "model, made offline and checked against fp32"),
                         Qt.ItemDataRole.ToolTipRole)
        self.addItem(translate("model_picker", "Add a server…"), ADD_SERVER)
        self.setItemData(self.count() - 1, translate("model_picker", "A lane on a model served by llama.cpp's server, "
                                                                    "vLLM or SGLang"), Qt.ItemDataRole.ToolTipRole)
        self.blockSignals(False)
        self.select(select or self.current)

    def add_offers(self) -> None:
        """The catalog's entries not prepared yet and the GGUFs found on the computer, each prepared when chosen."""
        from gui.present.model_offers import entry_details, entry_line, found_ggufs, unprepared_entries

        self._found = {str(item.path): item for item in found_ggufs()}
        for entry in unprepared_entries():
            self.addItem(entry_line(entry), CATALOG + entry.name)
            self.setItemData(self.count() - 1, entry_details(entry), Qt.ItemDataRole.ToolTipRole)
        for key, item in self._found.items():
            self.addItem(item.line(), FOUND + key)
            if item.refused:
                self.setItemData(self.count() - 1, item.refused, Qt.ItemDataRole.ToolTipRole)

    def select(self, path: Path | None) -> None:
        if path is None:
            return
        index = self.findData(str(path))
        if index < 0:
            self._extra.append(Path(path))
            self.refresh()
            index = self.findData(str(path))
        self.current = Path(path)
        self.blockSignals(True)
        self.setCurrentIndex(index)
        self.blockSignals(False)

    def show_current(self) -> None:
        """Back to the chosen model's entry after a command entry was picked."""
        index = self.findData(str(self.current)) if self.current is not None else -1
        self.setCurrentIndex(max(index, 0))

    @Slot(int)
    def _on_activated(self, index: int) -> None:
        data = self.itemData(index) or ""
        commands = {ADD_HUB: self.add_from_hub, ADD_GGUF: self.add_gguf, ADD_FOLDER: self.add_folder,
                    ADD_VARIANT: self.add_variant, ADD_SERVER: self.add_server}
        if data in commands:
            commands[data]()
        elif data.startswith(CATALOG):
            self.add_catalog_entry(data.removeprefix(CATALOG))
        elif data.startswith(FOUND):
            found = self._found[data.removeprefix(FOUND)]
            self.adopt(add_model.prepare_gguf_file(self, found.path, found.name))
        elif data:
            self.modelChosen.emit(Path(data))

    def adopt(self, prepared: Path | None) -> None:
        """A model just prepared (or None: cancelled or failed) is listed and chosen."""
        self.refresh(prepared)
        if prepared is None:
            self.show_current()
        else:
            self.modelChosen.emit(prepared)

    @Slot()
    def add_from_hub(self) -> None:
        self.show_current()
        self.adopt(add_model.add_from_hub(self))

    @Slot()
    def add_gguf(self) -> None:
        self.show_current()
        path = add_model.choose_gguf_file(self)
        if path is not None:
            self.add_gguf_path(path)

    def add_gguf_path(self, path: Path) -> None:
        """A GGUF file chosen in the file dialog or dropped on the window, prepared and chosen."""
        self.adopt(add_model.prepare_gguf_file(self, Path(path)))

    def add_catalog_entry(self, name: str) -> None:
        from models.catalog import catalog_entry

        self.show_current()
        self.adopt(add_model.prepare_entry(self, catalog_entry(name)))

    @Slot()
    def add_variant(self) -> None:
        """The variants dialog for the chosen model (else the first prepared one); new variants are listed."""
        self.show_current()
        model = self.current or next((Path(self.itemData(i)) for i in range(self.count())
                                      if is_model(self.itemData(i))), None)
        if model is None:
            QMessageBox.information(self, translate("model_picker", "Add precision variant"),
                                    translate("model_picker", "No model is prepared yet: a precision variant is made "
                                                              "from a prepared model."))
            return
        dialog = self.variant_dialog(model)
        dialog.exec()
        dialog.deleteLater()

    def variant_dialog(self, model: Path) -> VariantDialog:
        dialog = VariantDialog(model, self)
        dialog.prepared.connect(self._on_variant_prepared)
        return dialog

    @Slot(object)
    def _on_variant_prepared(self, folder: Path) -> None:
        from gui.present.variant_rows import validation_text
        from models.catalog import model_info

        self.refresh()
        info = model_info(folder)
        self.variantPrepared.emit(translate("model_picker", "Precision variant {line} prepared; against fp32: "
                                                            "{check}.").format(
            line=self.itemText(self.findData(str(folder))), check=validation_text(info.manifest)))

    @Slot()
    def add_server(self) -> None:
        """The server dialog; OK with an address adds a lane on it (serverAdded)."""
        self.show_current()
        dialog = self.server_dialog()
        if dialog.exec() and dialog.name():
            self.serverAdded.emit(dialog.name())
        dialog.deleteLater()

    def server_dialog(self):
        from gui.dialogs.server_dialog import ServerDialog

        return ServerDialog(self)

    @Slot()
    def add_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, translate("model_picker", "Model folder (ONNX export or "
                                                                                  "Hugging Face model)"))
        if not folder:
            self.show_current()
            return
        prepared = self.prepare_folder(Path(folder))
        self.refresh(prepared)
        if prepared is not None:
            self.modelChosen.emit(prepared)

    def prepare_folder(self, folder: Path) -> Path | None:
        """Register / export a local folder into the cache through the setup dialog. None if it failed."""
        from models import prepare

        kind = folder_kind(folder)
        if kind is None:
            QMessageBox.warning(self, translate("model_picker", "Add model"),
                                translate("model_picker", "{folder} holds neither model.onnx nor a Hugging Face "
                                                          "config.json.").format(folder=folder))
            return None
        fn = prepare.register_onnx_folder if kind == "onnx" else prepare.prepare_hf_folder

        def prepare_fn(progress, cancel):
            return fn(folder, progress=progress, cancel=cancel)

        text = (translate("model_picker", "Registering the ONNX export in {folder}") if kind == "onnx" else
                translate("model_picker", "Exporting the Hugging Face model in {folder} to ONNX (this can take a "
                                          "minute)")).format(folder=folder)
        return SetupDialog(translate("model_picker", "Add model"), text, prepare_fn, self).run()
