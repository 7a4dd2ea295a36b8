"""The lanes editor, a view of the RunState's lanes: a table (add from presets, duplicate, remove, reorder,
rename) and a form that edits every strategy parameter of the selected lane. Every change goes through the
model, so the text columns and charts follow it. Widgets enforce ranges; what `LaneSpec` refuses (e.g.
`do_sample` with `num_beams > 1`, temperature 0) is reverted with the reason shown in red under the form, in
space kept for it so nothing moves."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QColor, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
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

from decoding.analysis.fanout import MAX_FANOUT, refusal
from decoding.chain.spec import ORDER_PAIR, PRESETS, LaneSpec, unique_name
from gui.i18n import translate
from gui.present import colours
from gui.present.lane_fields import (
    FIELDS,
    LIST_KINDS,
    Field,
    describe,
    display_value,
    field_applies,
    parameter_label,
    preset_title,
    spec_from_values,
)
from gui.state.lane_names import auto_name, follows_strategy, model_label
from gui.state.refusals import error_text
from gui.state.run_state import Lane, RunState, Selection
from gui.views.chain_editor import ChainEditor
from gui.views.spin_boxes import CheckedDoubleSpinBox, CheckedSpinBox
from gui.views.style import lane_color_hex

NAME_COLUMN, STRATEGY_COLUMN = 0, 1
NAME_COLUMN_MAX_PX = 150
MESSAGE_LINES = 2  # the message area keeps room for this many lines, shown or not
RUN_MODEL = ""  # the model field's entry for "the run's model" (LaneSpec.model None)


def preset_for_window(spec: LaneSpec) -> LaneSpec:
    """Presets as the window adds them: beam lanes return every beam, so the text column can expand the
    other hypotheses (the best one is the same whatever num_return_sequences is, as in transformers)."""
    return replace(spec, num_return_sequences=spec.num_beams) if spec.is_beam else spec


def edge_note(spec: LaneSpec) -> str:
    """A word on parameter values that are valid but do something a user may not expect."""
    notes = []
    if spec.do_sample and spec.top_p == 0.0:
        notes.append("top_p 0 keeps only the most likely token (the lane then draws like greedy)")
    if spec.do_sample and spec.top_k == 1:
        notes.append("top_k 1 keeps only the most likely token")
    if spec.do_sample and spec.min_p == 1.0:
        notes.append("min_p 1 keeps only the tokens as likely as the top one")
    return "; ".join(notes)


def _refusal_hint(values: dict[str, Any]) -> str:
    """What the user probably meant by a refused value."""
    if values.get("do_sample") and values.get("temperature") == 0:
        return translate("lanes_editor", " (for greedy decoding, turn do_sample off)")
    return ""


def _make_widget(f: Field) -> QWidget:
    if f.kind == "bool":
        widget: QWidget = QCheckBox()
    elif f.kind == "choice":
        widget = QComboBox()
        widget.addItems(list(f.choices))
    elif f.kind in LIST_KINDS:
        widget = QLineEdit()
        widget.setPlaceholderText(translate("lanes_editor", "none"))
    elif f.kind == "int":
        widget = CheckedSpinBox()
        widget.setSpecialValueText(translate("lane_fields", f.special_text) if f.special_text else "")
        widget.allow(int(f.minimum), int(f.maximum), _typing_span(f, 2**31 - 1))
        widget.setKeyboardTracking(False)
    else:
        widget = CheckedDoubleSpinBox()
        widget.setDecimals(f.decimals)
        widget.allow(f.minimum, f.maximum, _typing_span(f, 1e9))
        widget.setSingleStep(f.step)
        widget.setKeyboardTracking(False)
    label = parameter_label(f.name)
    named = f"<b>{f.name}</b>" + (f" · {label}" if label != f.name else "")  # the HF name whatever the language
    widget.setToolTip(f"{named}<br>{f.tooltip}")
    widget.setObjectName(f"field_{f.name}")
    return widget


def _typing_span(f: Field, limit: float) -> float:
    """How far past its range a value may be typed (to be refused in words, not clamped): ten times the range's
    size, so the box stays about as wide as its values."""
    return min(10 * max(abs(f.minimum), abs(f.maximum), 1), limit - max(abs(f.minimum), abs(f.maximum)))


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
    """Every parameter of one lane; calls `on_edit(values)` when the user changes one."""

    def __init__(self, on_edit, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._on_edit = on_edit
        self.widgets: dict[str, QWidget] = {}
        layout = QFormLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setVerticalSpacing(2)
        for f in FIELDS:
            widget = _make_widget(f)
            self.widgets[f.name] = widget
            label = QLabel(parameter_label(f.name))
            label.setObjectName(f"label_{f.name}")
            label.setToolTip(widget.toolTip())
            layout.addRow(label, widget)
            self._connect(widget)
        self._order: tuple[str, ...] | None = None
        self.chain = ChainEditor(self._order_changed)
        chain_label = QLabel(translate("lanes_editor", "chain"))
        chain_label.setToolTip(translate("lanes_editor", "The processors this lane applies, in order "
                                                         "(transformers' order by default)"))
        layout.insertRow(0, chain_label, self.chain)  # first: the order is what the fields below feed
        self.model = _model_field()
        self.model.currentIndexChanged.connect(self._changed)
        label = QLabel(translate("lanes_editor", "model"))
        label.setToolTip(self.model.toolTip())
        layout.insertRow(0, label, self.model)

    def _order_changed(self, order: tuple[str, ...] | None) -> None:
        self._on_edit({**self.values(), "processor_order": order})

    def _connect(self, widget: QWidget) -> None:
        if isinstance(widget, QCheckBox):
            widget.toggled.connect(self._changed)
        elif isinstance(widget, QComboBox):
            widget.currentTextChanged.connect(self._changed)
        elif isinstance(widget, QLineEdit):
            widget.editingFinished.connect(self._changed)
        else:
            widget.valueChanged.connect(self._changed)

    @Slot()
    def _changed(self, *_: object) -> None:
        self._on_edit(self.values())

    def values(self) -> dict[str, Any]:
        """Every field's value and the lane's processor order."""
        values = {name: _widget_value(widget) for name, widget in self.widgets.items()}
        return {**values, "processor_order": self._order, "model": self.model.currentData() or None}

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
        self._order = spec.processor_order
        self.chain.show_spec(spec)
        self.model.blockSignals(True)
        model = spec.model or RUN_MODEL
        if self.model.findData(model) < 0:  # a folder or a model prepared since: listed from now on
            self.model.addItem(model_label(model), model)
        self.model.setCurrentIndex(self.model.findData(model))
        self.model.blockSignals(False)


def _model_field() -> QComboBox:
    """The lane's model: the run's (the model picker's), or one of the prepared models, each lane on its own."""
    from models.catalog import list_models

    field = QComboBox()
    field.setObjectName("field_model")
    field.addItem(translate("lanes_editor", "(run's model)"), RUN_MODEL)
    for info in list_models():
        field.addItem(info.name, info.path.name)
    field.setToolTip(translate("lanes_editor", "The model this lane runs on: the run's (the model picker's) or "
                                               "another prepared model, such as a precision variant. Lanes on one "
                                               "model share its batched steps; a model of another tokenizer reads "
                                               "the prompt with its own and is compared with the others by text."))
    return field


class LanesEditor(QWidget):
    def __init__(self, state: RunState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels([translate("lanes_editor", "Lane"), translate("lanes_editor", "Strategy")])
        self.table.horizontalHeader().setSectionResizeMode(STRATEGY_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setTabKeyNavigation(False)  # Tab crosses the table in one stop (the arrows move in it)
        self.table.setToolTip(translate("lanes_editor", "Double-click a name to rename the lane; select a lane to edit "
                                                        "its parameters"))
        self.table.itemChanged.connect(self._on_item_changed)
        self.table.itemSelectionChanged.connect(self._show_selected)
        self.form = LaneForm(self._on_form_edited)
        self._shown_lane: Lane | None = None  # the lane the form shows
        self.message = QLabel()
        self.message.setObjectName("laneMessage")
        self.message.setWordWrap(True)
        self.message.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.message.setFixedHeight(self.fontMetrics().lineSpacing() * MESSAGE_LINES + 4)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self._buttons())
        layout.addWidget(self._table_and_form(), 1)
        layout.addLayout(self._fanout_row())
        layout.addWidget(self.message)
        for name in ("lanes_reset", "lane_inserted", "lane_removed", "lane_moved", "lane_changed"):
            state.events.connect(name, self._on_lanes_event)
        state.events.connect("selection_changed", self._on_selection_changed)
        self._fill_table()
        self._select_row(0)

    def _fanout_row(self) -> QHBoxLayout:
        """How many seed members a sampled lane runs as (thermal noise made visible: the Fan-out tab)."""
        self.fanout = QSpinBox()
        self.fanout.setObjectName("field_fanout")
        self.fanout.setRange(1, MAX_FANOUT)
        self.fanout.setSpecialValueText(translate("lanes_editor", "off"))
        self.fanout.setKeyboardTracking(False)
        self.fanout.setToolTip(translate("lanes_editor", "Run this sampled lane as K members (seeds seed, seed+1, …, "
                                                         "all in the same batched steps) and see where they part in "
                                                         "the Fan-out tab. off = the lane alone; up to {MAX_FANOUT}.")
                                                         .format(MAX_FANOUT=MAX_FANOUT))
        self.fanout.valueChanged.connect(self._on_fanout_edited)
        row = QHBoxLayout()
        label = QLabel(translate("lanes_editor", "fan-out (seeds)"))
        label.setToolTip(self.fanout.toolTip())
        row.addWidget(label)
        row.addWidget(self.fanout, 1)
        return row

    def _on_fanout_edited(self, count: int) -> None:
        index = self.selected_index()
        if index < 0 or count == self.state.lanes[index].fanout or not self._editable():
            self._show_selected()
            return
        self.state.set_fanout(index, count)

    def _table_and_form(self) -> QSplitter:
        """Table above the form, resizable; the form scrolls when the window is short."""
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(self.form)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setObjectName("laneSplitter")  # gui.shell.settings keeps its sizes
        splitter.addWidget(self.table)
        splitter.addWidget(scroll)
        splitter.setChildrenCollapsible(False)
        splitter.setSizes([190, 420])
        return splitter

    # ------------------------------------------------------------------------------------------- buttons

    def _preset_menu_button(self, text: str, tip: str, on_pick, pair: bool = False) -> QToolButton:
        """A tool button whose menu lists the presets (and with `pair`, the order pair); picking a preset calls
        `on_pick(action)`."""
        button = self._tool(text, tip, None)
        button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(button)
        for title in PRESETS:
            menu.addAction(preset_title(title)).setData(title)
        menu.triggered.connect(on_pick)
        if pair:
            _add_pair_action(menu, self.add_order_pair)
        button.setMenu(menu)
        return button

    def _buttons(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.add_button = self._preset_menu_button(
            translate("lanes_editor", "Add lane"),
            translate("lanes_editor", "Add a new lane from a preset (Ctrl+L: greedy)"), self._on_add_preset, pair=True)
        self.preset_button = self._preset_menu_button(
            translate("lanes_editor", "Use preset"),
            translate("lanes_editor", "Replace the selected lane's parameters by a preset's"), self._on_apply_preset)
        self.duplicate_button = self._tool(translate("lanes_editor", "Duplicate"),
                                           translate("lanes_editor", "Copy the selected lane"), self.duplicate_selected)
        self.remove_button = self._tool(translate("lanes_editor", "Remove"),
                                        translate("lanes_editor", "Remove the selected lane"), self.remove_selected)
        self.up_button = self._tool("▲", translate("lanes_editor", "Move the selected lane left"), self.move_up)
        self.down_button = self._tool("▼", translate("lanes_editor", "Move the selected lane right"), self.move_down)
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
        return self.state.specs

    def selected_index(self) -> int:
        rows = self.table.selectionModel().selectedRows()
        return rows[0].row() if rows else -1

    def add_spec(self, spec: LaneSpec, index: int | None = None) -> int:
        """Insert a lane (renamed if its name is taken) at `index` (end by default). Returns its index."""
        if self.state.running:
            self.show_message(translate("lanes_editor", "Stop the run before changing lanes."))
            return -1
        spec = replace(spec, name=unique_name(spec.name, self.state.names()))
        index = len(self.state.lanes) if index is None else index
        self.state.insert_lane(index, spec, named_by_user=not follows_strategy(spec))
        self._select_row(index)
        return index

    def add_served(self, address: str) -> int:
        """A greedy lane on a served model (the model picker's "Add a server…"), at the end. Returns its index."""
        self.show_message("")
        return self.add_spec(LaneSpec("served greedy", model=address))

    def show_message(self, text: str, error: bool = True) -> None:
        colour = colours.current().error if error else colours.current().muted
        self.message.setStyleSheet(f"color:{colour};{'font-weight:bold' if error else ''}")
        self.message.setText(text)

    # ------------------------------------------------------------------------------------------- actions

    @Slot(object)
    def _on_add_preset(self, action) -> None:
        if action.data() in PRESETS:  # the menu may hold other entries (gui.views.generation_configs)
            self.add_preset(action.data())

    @Slot(object)
    def _on_apply_preset(self, action) -> None:
        if action.data() in PRESETS:
            self.apply_preset(action.data())

    def add_preset(self, title: str) -> int:
        """A new lane from the preset `title` (a key of PRESETS), at the end. Returns its index."""
        self.show_message("")
        return self.add_spec(preset_for_window(PRESETS[title]))

    def add_order_pair(self) -> int:
        """The order pair at the end (decoding.chain.spec.ORDER_PAIR): the same settings and seed in transformers' order
        and in llama.cpp's, side by side. Returns the first one's index."""
        self.show_message("")
        first = self.add_spec(ORDER_PAIR[0])
        if first >= 0:
            self.add_spec(ORDER_PAIR[1])
            self._select_row(first + 1)
        return first

    def apply_preset(self, title: str) -> None:
        """The selected lane takes the preset `title`'s parameters (its name too, unless the user named it)."""
        index = self.selected_index()
        if index < 0 or not self._editable():
            return
        lane = self.state.lanes[index]
        preset = preset_for_window(PRESETS[title])
        name = lane.name if lane.named_by_user else unique_name(preset.name, self.state.names() - {lane.name})
        self._replace(index, replace(preset, name=name, branch=lane.spec.branch))

    @Slot()
    def duplicate_selected(self) -> None:
        index = self.selected_index()
        if index >= 0:
            self.add_spec(replace(self.state.lanes[index].spec, branch=None, forced={}), index + 1)

    @Slot()
    def remove_selected(self) -> None:
        index = self.selected_index()
        if index < 0 or not self._editable():
            return
        if len(self.state.lanes) == 1:
            self.show_message(translate("lanes_editor", "A run needs at least one lane."))
            return
        self.show_message("")
        self.state.remove_lane(index)
        self._select_row(min(index, len(self.state.lanes) - 1))

    @Slot()
    def move_up(self) -> None:
        self._move(-1)

    @Slot()
    def move_down(self) -> None:
        self._move(1)

    def _move(self, delta: int) -> None:
        index = self.selected_index()
        target = index + delta
        if index < 0 or not 0 <= target < len(self.state.lanes) or not self._editable():
            return
        self.state.move_lane(index, target)
        self._select_row(target)

    def _editable(self) -> bool:
        if self.state.running:
            self.show_message(translate("lanes_editor", "Stop the run before changing lanes."))
            return False
        return True

    # ------------------------------------------------------------------------------------------- editing

    def _on_lanes_event(self, *_args) -> None:
        """The table again, the selection on the lane the user chose (wherever lanes inserted or removed
        around it moved its row), else on the same row."""
        index = self.selected_index()
        shown = self._shown_lane
        self._fill_table()
        if shown is not None and shown in self.state.lanes:
            index = self.state.lanes.index(shown)
        self._select_row(index if 0 <= index < len(self.state.lanes) else 0)

    def _on_selection_changed(self, selection: Selection | None) -> None:
        """A step selected in a lane's text selects that lane here too."""
        if selection is not None and selection.lane != self.selected_index():
            self._select_row(selection.lane)

    def _select_row(self, index: int) -> None:
        if 0 <= index < self.table.rowCount():
            self.table.selectRow(index)
        self._show_selected()

    def _fill_table(self) -> None:
        self.table.blockSignals(True)
        self.table.setRowCount(len(self.state.lanes))
        for row, lane in enumerate(self.state.lanes):
            name = QTableWidgetItem(lane.name)
            name.setData(Qt.ItemDataRole.DecorationRole, _swatch(lane.colour))  # the lane's colour everywhere
            name.setToolTip(translate("lanes_editor", "{name}: double-click to rename").format(name=lane.name))
            strategy = QTableWidgetItem(describe(lane.spec) + ("  (edited: Run to update)" if lane.stale else ""))
            strategy.setFlags(strategy.flags() & ~Qt.ItemFlag.ItemIsEditable)
            strategy.setToolTip(", ".join(f"{k}={v}" for k, v in lane.spec.to_config().items()))
            self.table.setItem(row, NAME_COLUMN, name)
            self.table.setItem(row, STRATEGY_COLUMN, strategy)
        self.table.resizeColumnToContents(NAME_COLUMN)
        # a long name is cut (its tooltip has it whole): the strategy column keeps its room
        self.table.setColumnWidth(NAME_COLUMN, min(self.table.columnWidth(NAME_COLUMN), NAME_COLUMN_MAX_PX))
        self.table.blockSignals(False)

    @Slot()
    def _show_selected(self) -> None:
        index = self.selected_index()
        lane = self.state.lanes[index] if 0 <= index < len(self.state.lanes) else None
        if lane is not self._shown_lane:  # a refusal or note is about the lane it was said under
            self._shown_lane = lane
            self.show_message("")
        self.form.show_spec(lane.spec if lane else None)
        self.fanout.blockSignals(True)
        self.fanout.setValue(lane.fanout if lane else 1)
        self.fanout.blockSignals(False)
        reason = refusal(lane.spec) if lane else "no lane"
        self.fanout.setEnabled(reason is None)
        self.fanout.setToolTip(self.fanout.toolTip().split("\n")[0] + (f"\nNot here: {reason}." if reason else ""))

    def _on_form_edited(self, values: dict) -> None:
        index = self.selected_index()
        if index < 0:
            return
        if not self._editable():
            self._show_selected()
            return
        lane = self.state.lanes[index]
        try:
            spec = spec_from_values(lane.name, values, base=lane.spec)
        except ValueError as error:
            refused = translate("lanes_editor", "Refused: {error}{hint}")
            self.show_message(refused.format(error=error_text(error), hint=_refusal_hint(values)))
            self.form.show_spec(lane.spec)
            return
        if not lane.named_by_user:
            spec = replace(spec, name=unique_name(auto_name(spec), self.state.names() - {lane.name}))
        self._replace(index, spec)
        note = edge_note(spec)
        self.show_message(translate("lanes_editor", "Note: {note}.").format(note=note) if note else "", error=False)

    @Slot(QTableWidgetItem)
    def _on_item_changed(self, item: QTableWidgetItem) -> None:
        if item.column() != NAME_COLUMN:
            return
        index = item.row()
        name = item.text().strip()
        others = self.state.names() - {self.state.lanes[index].name}
        if not name or name in others or not self._editable():
            if not self.state.running:
                reason = (translate("lanes_editor", "a lane name cannot be empty") if not name else
                          translate("lanes_editor", "another lane is already named “{name}”").format(name=name))
                self.show_message(translate("lanes_editor", "Refused: {reason}.").format(reason=reason))
            self._fill_table()
            return
        self.show_message("")
        self.state.replace_spec(index, replace(self.state.lanes[index].spec, name=name), named_by_user=True)

    def _replace(self, index: int, spec: LaneSpec) -> None:
        self.show_message("")
        self.state.replace_spec(index, spec)
        if self.state.lanes[index].fanout > 1 and refusal(spec):  # e.g. turned greedy: nothing to fan out
            self.state.set_fanout(index, 1)
        self._select_row(index)


def _swatch(colour: int) -> QPixmap:
    pixmap = QPixmap(10, 10)
    pixmap.fill(QColor(lane_color_hex(colour)))
    return pixmap


def preset_add_menu(editor: LanesEditor, parent: QMenu) -> QMenu:
    """Lanes → Add lane from preset ▸ (every preset, then the order pair)."""
    menu = _preset_menu(parent, translate("lanes_editor", "Add lane from &preset"), editor.add_preset)
    _add_pair_action(menu, editor.add_order_pair)
    return menu


def _add_pair_action(menu: QMenu, add_pair) -> None:
    menu.addSeparator()
    action = menu.addAction(translate("lanes_editor", "Order pair: transformers vs llama.cpp"), add_pair)
    action.setToolTip(translate("lanes_editor", "Two lanes with the same settings and seed, one in transformers' "
                                                "order (temperature first), one in llama.cpp's (temperature last)"))


def preset_replace_menu(editor: LanesEditor, parent: QMenu) -> QMenu:
    return _preset_menu(parent, translate("lanes_editor", "&Replace selected lane with preset"), editor.apply_preset)


def _preset_menu(parent: QMenu, title: str, choose) -> QMenu:
    menu = parent.addMenu(title)
    for preset in PRESETS:
        menu.addAction(preset_title(preset), partial(choose, preset))
    return menu
