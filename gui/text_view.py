"""Side-by-side text: one column per lane, tokens shaded by probability, hover = top-5 alternatives, click =
select (lane, step), right-click = branch from an alternative or force it for all lanes."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, QPoint, Qt, QUrl, Signal, Slot
from PySide6.QtGui import QAction, QContextMenuEvent, QKeyEvent, QTextCursor
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QScrollArea,
    QTextBrowser,
    QToolButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from decoding.spec import LaneSpec
from decoding.trace import LaneTrace, StepRecord
from gui.lane_fields import describe
from gui.render import (
    alternatives_html,
    format_prob,
    known_pieces,
    label_piece,
    lane_fragments,
    plain_fragments,
)
from gui.run_state import RunState, running_beam_pieces

MIN_COLUMN_WIDTH = 170
RUNNING_BEAM_HEADER = "<i style='color:#888'>best running beam…</i><br>"


def parse_token_url(url: str) -> tuple[int, int] | None:
    """'tok:<lane>:<step>' → (lane, step)."""
    parts = url.split(":")
    if len(parts) != 3 or parts[0] != "tok":
        return None
    try:
        return int(parts[1]), int(parts[2])
    except ValueError:
        return None


class TokenBrowser(QTextBrowser):
    """A read-only rich text view whose anchors are tokens."""

    tokenClicked = Signal(int, int)  # lane, step
    branchRequested = Signal(int, int, int)  # lane, step, token id
    forceRequested = Signal(int, int)  # step, token id

    def __init__(self, panel: TextPanel, lane: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._panel = panel
        self._lane = lane
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setMouseTracking(True)
        self.anchorClicked.connect(self._on_anchor)
        self._document = FragmentDocument(self)

    def show_fragments(self, fragments: list[str]) -> None:
        self._document.show(fragments)

    @Slot(QUrl)
    def _on_anchor(self, url: QUrl) -> None:
        target = parse_token_url(url.toString())
        if target is not None:
            self.tokenClicked.emit(*target)

    def token_at(self, pos: QPoint) -> tuple[int, int] | None:
        return parse_token_url(self.anchorAt(pos))

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt override)
        """Left / Right move the selection through the lane's steps."""
        selection = self._panel.state.selection
        delta = {Qt.Key.Key_Left: -1, Qt.Key.Key_Right: 1}.get(event.key())
        if delta is None or selection is None or selection.lane != self._lane:
            super().keyPressEvent(event)
            return
        if self._panel.state.step_record(self._lane, selection.step + delta) is not None:
            self.tokenClicked.emit(self._lane, selection.step + delta)

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 (Qt override): tooltips arrive at the viewport
        if event.type() == QEvent.Type.ToolTip:
            self._show_tooltip(event)
            return True
        return super().viewportEvent(event)

    def tooltip_at(self, pos: QPoint) -> str:
        """The hover text at a viewport position: the token's top-5 alternatives ('' off tokens)."""
        target = self.token_at(pos)
        record = self._panel.state.step_record(*target) if target else None
        return alternatives_html(record) if record is not None else ""

    def _show_tooltip(self, event: QEvent) -> None:
        text = self.tooltip_at(event.pos())
        if text:
            QToolTip.showText(event.globalPos(), text, self.viewport())
        else:
            QToolTip.hideText()

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        target = self.token_at(event.pos())
        record = self._panel.state.step_record(*target) if target else None
        if record is None:
            super().contextMenuEvent(event)
            return
        menu = self.alternatives_menu(target[0], record)
        menu.exec(event.globalPos())

    def alternatives_menu(self, lane: int, record: StepRecord) -> QMenu:
        menu = QMenu(self)
        branch_menu = menu.addMenu("Branch from here with…")
        force_menu = menu.addMenu("Force for all lanes…")
        for token in record.top[:10]:
            label = f"{label_piece(token.text)}    {format_prob(token.prob)}"
            # triggered(bool checked) comes first: the token id must be a keyword default, not positional.
            _add(branch_menu, label, self,
                 lambda _checked=False, t=token.id: self.branchRequested.emit(lane, record.step, t))
            _add(force_menu, label, self,
                 lambda _checked=False, t=token.id: self.forceRequested.emit(record.step, t))
        return menu


def _add(menu: QMenu, label: str, parent: QWidget, slot) -> QAction:
    # Menu actions fire on the GUI thread (triggered by a user click), so a small closure is safe here.
    action = QAction(label, parent)
    action.triggered.connect(slot)
    menu.addAction(action)
    return action


class LaneColumn(QFrame):
    """Header (lane name, strategy, beam toggle) above the lane's token text."""

    def __init__(self, panel: TextPanel, index: int) -> None:
        super().__init__()
        self.index = index
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setMinimumWidth(MIN_COLUMN_WIDTH)
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.beams_button = QToolButton()
        self.beams_button.setText("all beams")
        self.beams_button.setCheckable(True)
        self.beams_button.setToolTip("Show every returned beam hypothesis under the best one")
        self.beams_button.toggled.connect(panel.refresh_all)
        self.browser = TokenBrowser(panel, index)
        self._header: tuple | None = None
        header = QHBoxLayout()
        header.addWidget(self.title, 1)
        header.addWidget(self.beams_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(3, 3, 3, 3)
        layout.setSpacing(2)
        layout.addLayout(header)
        layout.addWidget(self.browser, 1)

    def show_lane(self, state: RunState, fragments: list[str]) -> None:
        lane = state.lanes[self.index]
        spec = state.specs[self.index] if self.index < len(state.specs) else None
        header = (lane.name, spec, self.index == state.reference, lane.config,
                  bool(lane.sequences and len(lane.sequences) > 1))
        if header != self._header:  # a streamed redraw changes only the text: no other widget call
            self._header = header
            self._show_header(*header)
        self.browser.show_fragments(fragments)

    def _show_header(self, name: str, spec: LaneSpec | None, reference: bool, config: dict,
                     several_beams: bool) -> None:
        summary = describe(spec, seed=False) if spec is not None else ""
        self.title.setToolTip(", ".join(f"{k}={v}" for k, v in config.items()))
        role = " <span style='color:#888'>(reference)</span>" if reference else ""
        self.title.setText(f"<b>{name}</b>{role}<br><span style='color:#555'>{summary}</span>")
        self.beams_button.setVisible(several_beams)


class FragmentDocument:
    """Keeps a text browser's document equal to a list of HTML fragments by editing only the end: what follows
    the longest common prefix with what is shown is replaced, from the last insertion point before it. While
    a lane streams only its new tokens are inserted (a whole rebuild re-lays out every token at every redraw).
    """

    def __init__(self, browser: QTextBrowser) -> None:
        self._browser = browser
        browser.document().setUndoRedoEnabled(False)
        self._shown: list[str] = []
        # (fragment index, document position where it starts) for each insertion, ascending
        self._checkpoints: list[tuple[int, int]] = [(0, 0)]

    def show(self, fragments: list[str]) -> None:
        common = _common_prefix(self._shown, fragments)
        if common == len(self._shown) == len(fragments):
            return
        while self._checkpoints[-1][0] > common:
            self._checkpoints.pop()
        index, position = self._checkpoints[-1]
        bar = self._browser.verticalScrollBar()
        at_end, keep = bar.value() >= bar.maximum() - 4, bar.value()
        cursor = QTextCursor(self._browser.document())
        cursor.setPosition(position)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        if index < len(fragments):
            cursor.insertHtml(f'<span style="white-space:pre-wrap">{"".join(fragments[index:])}</span>')
        if len(fragments) > index:
            self._checkpoints.append((len(fragments), cursor.position()))
        self._shown = list(fragments)
        bar.setValue(bar.maximum() if at_end else keep)


def _common_prefix(a: list[str], b: list[str]) -> int:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


class TextPanel(QWidget):
    """All lane columns side by side in a horizontal scroll area."""

    tokenClicked = Signal(int, int)
    branchRequested = Signal(int, int, int)
    forceRequested = Signal(int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = RunState()
        self.columns: list[LaneColumn] = []
        self._row = QWidget()
        self._row_layout = QHBoxLayout(self._row)
        self._row_layout.setContentsMargins(0, 0, 0, 0)
        self._row_layout.setSpacing(4)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        scroll.setWidget(self._row)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll)

    def set_state(self, state: RunState) -> None:
        self.state = state
        self._rebuild_columns()
        self.refresh_all()

    def _rebuild_columns(self) -> None:
        if len(self.columns) == len(self.state.lanes):
            return  # same number of lanes: keep the widgets (no flicker, no relayout)
        for column in self.columns:
            column.setParent(None)
            column.deleteLater()
        self.columns = [LaneColumn(self, index) for index in range(len(self.state.lanes))]
        for column in self.columns:
            self._row_layout.addWidget(column, 1)
            column.browser.tokenClicked.connect(self.tokenClicked)
            column.browser.branchRequested.connect(self.branchRequested)
            column.browser.forceRequested.connect(self.forceRequested)

    @Slot()
    def refresh_all(self) -> None:
        for index in range(len(self.columns)):
            self.refresh_lane(index)

    def refresh_lane(self, index: int) -> None:
        column = self.columns[index]
        lane = self.state.lanes[index]
        running = running_beam_pieces(lane.steps) if lane.finish_reason is None else None
        if running is not None:  # a streaming beam lane: its best running hypothesis, plain
            fragments = [RUNNING_BEAM_HEADER, *plain_fragments(running)]
        else:
            fragments = lane_fragments(index, lane.steps, self.state.marks(index))
        if column.beams_button.isChecked():
            fragments.append(self._other_beams_html(lane))
        column.show_lane(self.state, fragments)

    def _other_beams_html(self, lane: LaneTrace) -> str:
        """The other returned hypotheses, spelled with the token texts the trace recorded (no model)."""
        if not lane.sequences:
            return ""
        pieces = known_pieces(lane.steps)
        parts = []
        scores = lane.sequence_scores or []
        for rank, ids in enumerate(lane.sequences[1:], start=1):
            score = f" · score {scores[rank]:.3f}" if rank < len(scores) else ""
            parts.append(f"<br><br><span style='color:#888'>beam #{rank + 1}{score}</span><br>")
            text = "".join(plain_fragments([pieces.get(i, f"<{i}>") for i in ids]))
            parts.append(f"<span style='color:#444444'>{text}</span>")
        return "".join(parts)

    def column_texts(self) -> Sequence[str]:
        """Plain text of each column (tests, export)."""
        return [column.browser.toPlainText() for column in self.columns]
