"""The lanes editor: a table of lanes (add from presets, duplicate, remove, reorder, rename) and a form that
edits every strategy parameter of the selected lane. Widgets enforce ranges; cross-parameter rules are
checked by `LaneSpec` and a refused edit is reverted with the reason shown in red under the form."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from decoding.spec import PRESETS, LaneSpec, default_lanes
from gui.lane_fields import FIELDS, Field, describe, display_value, field_applies, spec_from_values

NAME_COLUMN, STRATEGY_COLUMN = 0, 1


def unique_name(wanted: str, taken: set[str]) -> str:
    """`wanted`, or `wanted #2`, `#3`... if a lane already has that name."""
    if wanted not in taken:
        return wanted
    number = 2
    while f"{wanted} #{number}" in taken:
        number += 1
    return f"{wanted} #{number}"


def preset_for_window(spec: LaneSpec) -> LaneSpec:
    """Presets as the window adds them: beam lanes return every beam, so the text column can expand the
    other hypotheses (the best one is the same whatever num_return_sequences is, as in transformers)."""
    return replace(spec, num_return_sequences=spec.num_beams) if spec.is_beam else spec


def _make_widget(f: Field) -> QWidget:
    if f.kind == "bool":
        widget: QWidget = QCheckBox()
    elif f.kind == "choice":
        widget = QComboBox()
        widget.addItems(list(f.choices))
    elif f.kind == "text":
        widget = QLineEdit()
        widget.setPlaceholderText("none")
    elif f.kind == "int":
        widget = QSpinBox()
        widget.setRange(int(f.minimum), int(f.maximum))
        widget.setSpecialValueText(f.special_text)
        widget.setKeyboardTracking(False)
    else:
        widget = QDoubleSpinBox()
        widget.setDecimals(f.decimals)
        widget.setRange(f.minimum, f.maximum)
        widget.setSingleStep(f.step)
        widget.setKeyboardTracking(False)
    widget.setToolTip(f"<b>{f.name}</b><br>{f.tooltip}")
    widget.setObjectName(f"field_{f.name}")
    return widget


def _widget_value(widget: QWidget) -> Any:
    if isinstance(widget, QCheckBox):
        return widget.isChecked()
    if isinstance(widget, QComboBox):
        return widget.currentText()
    if isinstance(widget, QLineEdit):
        return widget.text()
    return widget.value()


def _set_widget_value(widget: QWidget, value: Any) -> None:
    if isinstance(widget, QCheckBox):
        widget.setChecked(bool(value))
    elif isinstance(widget, QComboBox):
        widget.setCurrentText(str(value))
    elif isinstance(widget, QLineEdit):
        widget.setText(str(value))
    else:
        widget.setValue(value)


class LaneForm(QWidget):
    """Every parameter of one lane. Emits `edited(values)` when the user changes one."""

    edited = Signal(dict)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.widgets: dict[str, QWidget] = {}
        layout = QFormLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setVerticalSpacing(2)
        for f in FIELDS:
            widget = _make_widget(f)
            self.widgets[f.name] = widget
            label = QLabel(f.name)
            label.setToolTip(widget.toolTip())
            layout.addRow(label, widget)
            self._connect(widget)
        self.processors = QLabel()
        self.processors.setWordWrap(True)
        self.processors.setToolTip("The processors this lane applies, in order (transformers' order by "
                                   "default)")
        layout.addRow("applies", self.processors)

    def _connect(self, widget: QWidget) -> None:
        if isinstance(widget, QCheckBox):
            widget.toggled.connect(self._on_change)
        elif isinstance(widget, QComboBox):
            widget.currentTextChanged.connect(self._on_change)
        elif isinstance(widget, QLineEdit):
            widget.editingFinished.connect(self._on_change)
        else:
            widget.valueChanged.connect(self._on_change)

    @Slot()
    def _on_change(self, *_: object) -> None:
        self.edited.emit(self.values())

    def values(self) -> dict[str, Any]:
        return {name: _widget_value(widget) for name, widget in self.widgets.items()}

    def show_spec(self, spec: LaneSpec | None) -> None:
        self.setEnabled(spec is not None)
        if spec is None:
            return
        for f in FIELDS:
            widget = self.widgets[f.name]
            widget.blockSignals(True)
            _set_widget_value(widget, display_value(spec, f))
            widget.blockSignals(False)
            widget.setEnabled(field_applies(f, spec.do_sample, spec.num_beams))
        self.processors.setText(" → ".join(spec.processors()) + (" → " if spec.processors() else "")
                                + _selector_name(spec))


def _selector_name(spec: LaneSpec) -> str:
    if spec.is_beam:
        return f"beam search ({spec.num_beams})"
    return "sample" if spec.do_sample else "argmax"


class LanesEditor(QWidget):
    lanesChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._specs: list[LaneSpec] = []
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels(["Lane", "Strategy"])
        self.table.horizontalHeader().setSectionResizeMode(STRATEGY_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setToolTip("Double-click a name to rename the lane; select a lane to edit its parameters")
        self.table.itemChanged.connect(self._on_item_changed)
        self.table.itemSelectionChanged.connect(self._on_selection)
        self.form = LaneForm()
        self.form.edited.connect(self._on_form_edited)
        self.message = QLabel()
        self.message.setObjectName("laneMessage")
        self.message.setWordWrap(True)
        self.message.setStyleSheet("color:#c62828;font-weight:bold")
        self.message.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self._buttons())
        layout.addWidget(self._table_and_form(), 1)
        layout.addWidget(self.message)
        self.set_specs([preset_for_window(spec) for spec in default_lanes()])

    def _table_and_form(self) -> QSplitter:
        """Table above the form, resizable; the form scrolls when the window is short."""
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(self.form)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.table)
        splitter.addWidget(scroll)
        splitter.setChildrenCollapsible(False)
        splitter.setSizes([190, 420])
        return splitter

    # ------------------------------------------------------------------------------------------- buttons

    def _preset_menu_button(self, text: str, tip: str, on_pick) -> QToolButton:
        """A tool button whose menu lists the presets; picking one calls `on_pick(action)`."""
        button = self._tool(text, tip, None)
        button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(button)
        for title in PRESETS:
            menu.addAction(title).setData(title)
        menu.triggered.connect(on_pick)
        button.setMenu(menu)
        return button

    def _buttons(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.add_button = self._preset_menu_button("+ Add", "Add a lane from a preset", self._on_add_preset)
        self.preset_button = self._preset_menu_button(
            "Preset", "Replace the selected lane's parameters by a preset", self._on_apply_preset
        )
        self.duplicate_button = self._tool("Duplicate", "Copy the selected lane", self.duplicate_selected)
        self.remove_button = self._tool("Remove", "Remove the selected lane", self.remove_selected)
        self.up_button = self._tool("▲", "Move the selected lane left", self.move_up)
        self.down_button = self._tool("▼", "Move the selected lane right", self.move_down)
        for button in (self.add_button, self.preset_button, self.duplicate_button, self.remove_button,
                       self.up_button, self.down_button):
            row.addWidget(button)
        row.addStretch(1)
        return row

    def _tool(self, text: str, tip: str, slot) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setToolTip(tip)
        if slot is not None:
            button.clicked.connect(slot)
        return button

    # ----------------------------------------------------------------------------------------- public API

    def specs(self) -> list[LaneSpec]:
        return list(self._specs)

    def set_specs(self, specs: list[LaneSpec], select: int = 0) -> None:
        self._specs = list(specs)
        self._fill_table()
        if self._specs:
            self.table.selectRow(min(max(select, 0), len(self._specs) - 1))
        else:
            self.form.show_spec(None)
        self.lanesChanged.emit()

    def selected_index(self) -> int:
        rows = self.table.selectionModel().selectedRows()
        return rows[0].row() if rows else -1

    def add_spec(self, spec: LaneSpec, index: int | None = None) -> int:
        """Insert a lane (renamed if its name is taken) at `index` (end by default). Returns its index."""
        spec = replace(spec, name=unique_name(spec.name, {s.name for s in self._specs}))
        index = len(self._specs) if index is None else index
        specs = self.specs()
        specs.insert(index, spec)
        self.set_specs(specs, select=index)
        return index

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))

    # ------------------------------------------------------------------------------------------- actions

    @Slot(object)
    def _on_add_preset(self, action) -> None:
        self.show_message("")
        self.add_spec(preset_for_window(PRESETS[action.data()]))

    @Slot(object)
    def _on_apply_preset(self, action) -> None:
        index = self.selected_index()
        if index < 0:
            return
        preset = preset_for_window(PRESETS[action.data()])
        self._replace(index, replace(preset, name=self._specs[index].name))

    @Slot()
    def duplicate_selected(self) -> None:
        index = self.selected_index()
        if index >= 0:
            self.add_spec(self._specs[index], index + 1)

    @Slot()
    def remove_selected(self) -> None:
        index = self.selected_index()
        if index < 0:
            return
        if len(self._specs) == 1:
            self.show_message("A run needs at least one lane.")
            return
        specs = self.specs()
        del specs[index]
        self.set_specs(specs, select=index)

    @Slot()
    def move_up(self) -> None:
        self._move(-1)

    @Slot()
    def move_down(self) -> None:
        self._move(1)

    def _move(self, delta: int) -> None:
        index = self.selected_index()
        target = index + delta
        if index < 0 or not 0 <= target < len(self._specs):
            return
        specs = self.specs()
        specs[index], specs[target] = specs[target], specs[index]
        self.set_specs(specs, select=target)

    # ------------------------------------------------------------------------------------------- editing

    def _fill_table(self) -> None:
        self.table.blockSignals(True)
        self.table.setRowCount(len(self._specs))
        for row, spec in enumerate(self._specs):
            name = QTableWidgetItem(spec.name)
            strategy = QTableWidgetItem(describe(spec))
            strategy.setFlags(strategy.flags() & ~Qt.ItemFlag.ItemIsEditable)
            strategy.setToolTip(", ".join(f"{k}={v}" for k, v in spec.to_config().items()))
            self.table.setItem(row, NAME_COLUMN, name)
            self.table.setItem(row, STRATEGY_COLUMN, strategy)
        self.table.resizeColumnToContents(NAME_COLUMN)
        self.table.blockSignals(False)

    @Slot()
    def _on_selection(self) -> None:
        index = self.selected_index()
        self.form.show_spec(self._specs[index] if index >= 0 else None)

    @Slot(dict)
    def _on_form_edited(self, values: dict) -> None:
        index = self.selected_index()
        if index < 0:
            return
        current = self._specs[index]
        try:
            spec = spec_from_values(current.name, values, base=current)
        except ValueError as error:
            self.show_message(f"Refused: {error}")
            self.form.show_spec(current)
            return
        self._replace(index, spec)

    @Slot(QTableWidgetItem)
    def _on_item_changed(self, item: QTableWidgetItem) -> None:
        if item.column() != NAME_COLUMN:
            return
        index = item.row()
        name = item.text().strip()
        others = {s.name for i, s in enumerate(self._specs) if i != index}
        if not name or name in others:
            reason = "a lane name cannot be empty" if not name else f"another lane is already named {name!r}"
            self.show_message(f"Refused: {reason}.")
            self._fill_table()
            return
        self._replace(index, replace(self._specs[index], name=name))

    def _replace(self, index: int, spec: LaneSpec) -> None:
        self.show_message("")
        self._specs[index] = spec
        self._fill_table()
        self.table.selectRow(index)
        self.form.show_spec(spec)
        self.lanesChanged.emit()
