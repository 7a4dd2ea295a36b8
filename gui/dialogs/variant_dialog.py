""""Add precision variant…": the variants of the current model's fp32 model (fp16, int8, int4, q4_1, q8_0, q4_0,
q4_1r, gguf, ggml), what each is, its size on disk and speed, and its check against fp32 when prepared; the chosen
one is prepared offline on a worker thread (models.variants.prepare_variant) with a progress bar and Cancel. A
preparation is all-or-nothing: a failure or a cancel leaves no folder behind. The rows scroll when they do not fit."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QButtonGroup,
    QDialogButtonBox,
    QLabel,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from gui.dialogs.setup_dialog import PreparationDialog
from gui.i18n import translate
from gui.present import colours
from gui.present.variant_rows import VariantRow, base_of, refusal, validation_text, variant_rows


class VariantDialog(PreparationDialog):
    """Lists the variants of `model_dir`'s fp32 model; `prepared` is emitted with each new variant's folder."""

    prepared = Signal(object)  # Path of the variant just installed

    def __init__(self, model_dir: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.base_dir = base_of(model_dir)
        self.rows: list[VariantRow] = []
        self._preparing: VariantRow | None = None
        self.setWindowTitle(translate("variant_dialog", "Add precision variant"))
        self.setMinimumWidth(640)
        self._fit_timer = QTimer(self, singleShot=True, interval=0)
        self._fit_timer.timeout.connect(self.adjustSize)
        self._build()
        self.refresh(first=True)

    def _build(self) -> None:
        self.heading = QLabel()
        self.heading.setWordWrap(True)
        self.choices = QButtonGroup(self)  # one radio button per variant, its status line under it
        self.choices.idToggled.connect(self._on_row_changed)
        self.radios: list[QRadioButton] = []
        self.meanings: list[QLabel] = []
        self.statuses: list[QLabel] = []
        self.list = QWidget()
        self.list_layout = QVBoxLayout(self.list)
        self.list_layout.setContentsMargins(0, 4, 8, 4)
        self.list_layout.setSpacing(2)
        self.scroll = QScrollArea()  # nine variants with three lines each do not fit every screen
        self.scroll.setWidget(self.list)
        self.scroll.setWidgetResizable(True)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.scroll.setMinimumHeight(420)
        self.stage = QLabel()
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.result = QLabel()
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.prepare_button = QPushButton(translate("variant_dialog", "Prepare"))
        self.prepare_button.clicked.connect(self.start)
        self.cancel_button = QPushButton(translate("variant_dialog", "Close"))
        self.cancel_button.clicked.connect(self.cancel)
        buttons = QDialogButtonBox()
        buttons.addButton(self.prepare_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.cancel_button, QDialogButtonBox.ButtonRole.RejectRole)
        layout = QVBoxLayout(self)
        for widget in (self.heading, self.scroll, self.stage, self.bar, self.result, buttons):
            layout.addWidget(widget)
        self.stage.hide()
        self.bar.hide()
        self.result.hide()

    def refresh(self, first: bool = False) -> None:
        """The rows as the cache has them now (at first the first one to make chosen); a model that cannot have
        variants says why."""
        name = self.base_dir.name
        why_not = refusal(self.base_dir)
        self.rows = [] if why_not else variant_rows(self.base_dir)
        self.heading.setText(why_not or translate(
            "variant_dialog", "Precision variants of {name}, made offline from its prepared weights into model folders "
                              "of their own; each is checked against fp32 (greedy tokens and KL) before it is "
                              "installed.").format(name=name))
        current = max(self.choices.checkedId(), 0)
        self._clear_rows()
        for index, row in enumerate(self.rows):
            self._add_row(index, row)
        choice = next((i for i, row in enumerate(self.rows) if row.can_prepare), current) if first else current
        if self.rows:
            self.radios[choice].setChecked(True)
        self._on_row_changed()

    def _add_row(self, index: int, row: VariantRow) -> None:
        radio = QRadioButton(row.variant)
        radio.setEnabled(row.refused is None)
        font = radio.font()
        font.setBold(True)
        radio.setFont(font)
        meaning = QLabel(row.meaning)
        status = QLabel(row.status())
        for label in (meaning, status):
            label.setWordWrap(True)
            label.setIndent(24)  # under the radio button's text
        status.setStyleSheet(f"color:{'#c62828' if row.refused else colours.current().muted}")
        self.choices.addButton(radio, index)
        self.radios.append(radio)
        self.meanings.append(meaning)
        self.statuses.append(status)
        for widget in (radio, meaning, status):
            self.list_layout.addWidget(widget)
        self.list_layout.addSpacing(8)

    def _clear_rows(self) -> None:
        for radio in self.radios:
            self.choices.removeButton(radio)
        for widget in (*self.radios, *self.meanings, *self.statuses):
            widget.deleteLater()
        while self.list_layout.count():  # the rows and the spacing between them
            self.list_layout.takeAt(0)
        self.radios, self.meanings, self.statuses = [], [], []

    def row_text(self, index: int) -> str:
        """A row as shown: its variant and what it is, then its status line."""
        return f"{self.radios[index].text()} — {self.meanings[index].text()}\n{self.statuses[index].text()}"

    def select(self, variant: str) -> None:
        self.radios[next(i for i, row in enumerate(self.rows) if row.variant == variant)].setChecked(True)

    def chosen(self) -> VariantRow | None:
        index = self.choices.checkedId()
        return self.rows[index] if 0 <= index < len(self.rows) else None

    def _on_row_changed(self, *_args) -> None:  # a radio button toggled (id, checked), or the rows changed
        row = self.chosen()
        self.prepare_button.setEnabled(row is not None and row.can_prepare and not self._worker.is_running())

    # ------------------------------------------------------------------------------------------ preparing

    @Slot()
    def start(self) -> None:
        row = self.chosen()
        if row is None or not row.can_prepare or self._worker.is_running():
            return
        from functools import partial

        from models.variants import prepare_variant

        prepare = partial(prepare_variant, row.variant, self.base_dir)
        self._preparing = row
        self.result.hide()
        self.stage.setText(translate("variant_dialog", "preparing {name}…").format(name=row.name))
        self.bar.setValue(0)
        for widget in (self.stage, self.bar):
            widget.show()
        self.list.setEnabled(False)
        self.prepare_button.setEnabled(False)
        self.cancel_button.setText(translate("variant_dialog", "Cancel"))
        self.adjustSize()
        self._prepare(prepare)

    @Slot(object)
    def _on_finished(self, folder: object) -> None:
        from models.catalog import read_manifest

        self.bar.setValue(1000)
        self.stage.setText(translate("variant_dialog", "done"))
        self._show_result(self.done_text(Path(folder), read_manifest(Path(folder))), failed=False)
        self.prepared.emit(Path(folder))

    def done_text(self, folder: Path, manifest: dict) -> str:
        return translate("variant_dialog", "{name} is prepared: {check}. Pick it in the model picker, or name it in a "
                                           "lane's model field.").format(name=folder.name,
                                                                         check=validation_text(manifest))

    @Slot(str, str)
    def _on_failed(self, message: str, _details: str) -> None:
        name = self._preparing.name if self._preparing else ""
        if "cancelled" in message:
            text = translate("variant_dialog", "Cancelled: {name} was not made, and nothing of it was left "
                                               "on disk.").format(name=name)
        else:
            text = translate("variant_dialog", "{name} could not be made, and nothing of it was left on disk: "
                                               "{error}").format(name=name, error=message)
        self.stage.setText(translate("variant_dialog", "cancelled") if "cancelled" in message
                           else translate("variant_dialog", "failed"))
        self._show_result(text, failed=True)

    def _show_result(self, text: str, failed: bool) -> None:
        self.result.setText(text)
        self.result.setStyleSheet("color:#c62828" if failed else "")
        self.result.show()
        self.list.setEnabled(True)
        self.cancel_button.setEnabled(True)
        self.cancel_button.setText(translate("variant_dialog", "Close"))
        self.refresh()
        # the wrapped lines whole, once the new rows are shown and polished (queued by their layout); the dialog's
        # own timer, which dies with it (a plain singleShot would call a deleted dialog)
        self._fit_timer.start()

