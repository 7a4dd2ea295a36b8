"""The lane editor's chain: the processors a lane applies, in the order it applies them, as a list the user
reorders (▲▼ or drag), with the order presets ("transformers order", "llama.cpp order") and "custom order" when
the chain follows neither. Calls `on_order(processor_order)` when the user changes the order; the lane's spec
(processor_order) keeps it, and so the run file."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from decoding.chain.spec import LaneSpec
from gui.i18n import translate
from gui.present.chain import CHOICES, moved, order_choice, order_name, preset_order, reordered


class ChainEditor(QWidget):
    def __init__(self, on_order: Callable[[tuple[str, ...] | None], None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._on_order = on_order
        self._spec: LaneSpec | None = None
        self.preset = QComboBox()
        self.preset.setObjectName("chainOrder")
        for choice in CHOICES:
            self.preset.addItem(order_name(choice), choice)
        self.preset.setToolTip(translate("chain", "transformers applies temperature before its truncations, "
                                                  "llama.cpp after them: the same settings give different "
                                                  "distributions. Reorder the chain below for an order of your "
                                                  "own."))
        self.preset.activated.connect(self._on_preset)
        self.list = QListWidget()
        self.list.setObjectName("chainList")
        self.list.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.list.setToolTip(translate("chain", "The processors this lane applies, first to last: drag one, or "
                                                "select it and use ▲▼, to change the order"))
        self.list.model().rowsMoved.connect(self._on_dragged)
        self.up = self._button("▲", translate("chain", "Apply the selected processor earlier"), -1)
        self.down = self._button("▼", translate("chain", "Apply the selected processor later"), 1)
        self.selector = QLabel()
        self.selector.setWordWrap(True)
        self._lay_out()

    def _button(self, text: str, tip: str, delta: int) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setToolTip(tip)
        button.clicked.connect(lambda: self.move_selected(delta))
        return button

    def _lay_out(self) -> None:
        buttons = QVBoxLayout()
        buttons.addWidget(self.up)
        buttons.addWidget(self.down)
        buttons.addStretch(1)
        chain = QHBoxLayout()
        chain.addWidget(self.list, 1)
        chain.addLayout(buttons)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.preset)
        layout.addLayout(chain)
        layout.addWidget(self.selector)

    def chain(self) -> list[str]:
        """The processors as the list shows them, first to last."""
        return [self.list.item(row).data(Qt.ItemDataRole.UserRole) for row in range(self.list.count())]

    def show_spec(self, spec: LaneSpec) -> None:
        self._spec = spec
        chain = spec.processors()
        self.preset.setCurrentIndex(CHOICES.index(order_choice(spec)))
        self.list.blockSignals(True)
        self.list.clear()
        for number, name in enumerate(chain, 1):
            self.list.addItem(f"{number}. {name}")
            self.list.item(number - 1).setData(Qt.ItemDataRole.UserRole, name)
        self.list.blockSignals(False)
        rows = max(len(chain), 1)
        self.list.setFixedHeight((self.list.sizeHintForRow(0) + 1) * rows + 2 * self.list.frameWidth() + 6)
        self.list.setVisible(bool(chain))
        movable = len(chain) > 1
        self.up.setEnabled(movable)
        self.down.setEnabled(movable)
        self.selector.setText(self._selector_text(spec, chain))

    @staticmethod
    def _selector_text(spec: LaneSpec, chain: list[str]) -> str:
        if spec.is_beam:
            selector = translate("chain", "beam search ({beams})").format(beams=spec.num_beams)
        elif spec.do_sample:
            selector = translate("chain", "sample")
        else:
            selector = translate("chain", "argmax")
        if not chain:
            return translate("chain", "no processors: {selector} of the model's distribution").format(
                selector=selector)
        return translate("chain", "then {selector}").format(selector=selector)

    @Slot()
    def move_selected(self, delta: int) -> None:
        """Move the selected processor `delta` places (-1: earlier) and apply the new order."""
        row = self.list.currentRow()
        if self._spec is None or row < 0:
            return
        chain = moved(self.chain(), row, delta)
        self._apply(chain)
        self.list.setCurrentRow(min(max(row + delta, 0), len(chain) - 1))

    def _on_dragged(self, *_args) -> None:
        QTimer.singleShot(0, lambda: self._apply(self.chain()))  # after the drop: the list is redrawn from the lane

    def _apply(self, chain: list[str]) -> None:
        if self._spec is not None and chain != self._spec.processors():
            self._on_order(reordered(self._spec, chain))

    @Slot(int)
    def _on_preset(self, index: int) -> None:
        choice = self.preset.itemData(index)
        if self._spec is None or choice is None:  # "custom order": what reordering the chain makes
            if self._spec is not None:
                self.show_spec(self._spec)
            return
        self._on_order(preset_order(choice))
