"""Model picker: the prepared models in the cache plus "Add local folder…" (an optimum ONNX export is
registered as it is, a Hugging Face model folder is exported; both run in the setup dialog)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QComboBox, QFileDialog, QMessageBox, QWidget

from gui.dialogs.setup_dialog import SetupDialog
from gui.i18n import translate

ADD_FOLDER = "add-folder"


def folder_kind(path: Path) -> str | None:
    """'onnx' for an exported folder (model.onnx), 'hf' for a Hugging Face model folder (config.json)."""
    if (path / "model.onnx").is_file():
        return "onnx"
    if (path / "config.json").is_file():
        return "hf"
    return None


class ModelPicker(QComboBox):
    modelChosen = Signal(object)  # Path of a prepared model folder

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMinimumContentsLength(22)
        self.setToolTip(translate("model_picker", "The run's model: every lane that names no model of its own runs "
                                                  "on it (the lanes editor's model field)"))
        self._extra: list[Path] = []
        self.refresh()
        self.activated.connect(self._on_activated)

    def refresh(self, select: Path | None = None) -> None:
        from models.catalog import list_models

        self.blockSignals(True)
        self.clear()
        known = []
        for info in list_models():
            self.addItem(info.name, str(info.path))
            known.append(Path(info.path))
        for path in self._extra:
            if path not in known:
                self.addItem(path.name, str(path))
        self.addItem(translate("model_picker", "Add local folder…"), ADD_FOLDER)
        self.blockSignals(False)
        self.select(select)

    def select(self, path: Path | None) -> None:
        if path is None:
            return
        index = self.findData(str(path))
        if index < 0:
            self._extra.append(Path(path))
            self.refresh()
            index = self.findData(str(path))
        self.blockSignals(True)
        self.setCurrentIndex(index)
        self.blockSignals(False)

    @Slot(int)
    def _on_activated(self, index: int) -> None:
        data = self.itemData(index)
        if data == ADD_FOLDER:
            self.add_folder()
        elif data:
            self.modelChosen.emit(Path(data))

    @Slot()
    def add_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, translate("model_picker", "Model folder (ONNX export or "
                                                                                  "Hugging Face model)"))
        if not folder:
            self.setCurrentIndex(0)
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
