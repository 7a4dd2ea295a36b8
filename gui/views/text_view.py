"""Side-by-side text, a view of the RunState: one column per lane (its colour swatch, name, strategy and summary
numbers on top), tokens shaded by probability, hover = top-5 alternatives, click = select (lane, step),
Left/Right = move through the steps, right-click a token or its mark = branch from an alternative or force it
for all lanes. A legend above the columns explains the colours and marks."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, QPoint, QRect, Qt, QTimer, QUrl, Signal, Slot
from PySide6.QtGui import QAction, QContextMenuEvent, QKeyEvent, QTextCursor
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QScrollArea,
    QSplitter,
    QTextBrowser,
    QToolButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from decoding.analysis.compare import first_difference
from decoding.analysis.critical import critical_point, runner_up
from decoding.records.trace import CriticalSettings, LaneTrace, StepRecord
from gui.i18n import translate
from gui.present import colours
from gui.present.lane_fields import describe
from gui.present.lane_html import (
    PROPOSED_GLYPH,
    alternatives_html,
    format_prob,
    known_pieces,
    lane_characters,
    lane_fragments,
    lane_summary,
    mark_legend,
    pending_bytes,
    piece_label,
    plain_fragments,
    prefill_text,
    probability_colour,
    proposed_tip,
    replay_words,
)
from gui.state.run_state import Lane, RunState, Selection, running_beam_pieces
from gui.views.redraw import RedrawScheduler
from gui.views.style import lane_swatch

MIN_COLUMN_WIDTH = 170


def parse_token_url(url: str) -> tuple[int, int] | None:
    """'tok:<lane>:<step>' → (lane, step)."""
    parts = url.split(":")
    if len(parts) != 3 or parts[0] != "tok":
        return None
    try:
        return int(parts[1]), int(parts[2])
    except ValueError:
        return None


def legend_html(critical: CriticalSettings | None = None) -> str:
    """What the colours and marks in the text mean (the same words as the tooltips, inspector and charts), with
    the thresholds that make a critical point."""
    scale = "".join(f'<span style="background:{probability_colour(p)}">&nbsp;{p:g}&nbsp;</span>'
                    for p in (0.0, 0.25, 0.5, 0.75, 1.0))
    keys = mark_legend(("divergence", "critical", "branch", "forced", "proposed"), short=True)
    if critical is not None:
        thresholds = translate("text_view", "(draw within {distance:g} of p ≥ {prob:g}; p₂/p₁ ≥ {ratio:g})")
        keys[1] += (f" <span style='color:{colours.current().faint}'>"
                    + thresholds.format(distance=critical.draw_distance, prob=critical.min_prob, ratio=critical.ratio)
                    + "</span>")
    space, newline = translate("text_view", "space"), translate("text_view", "newline")
    return (translate("text_view", "p(token)") + f" {scale} &nbsp; " + " &nbsp; ".join(keys)
            + f" &nbsp; <b>·</b>&nbsp;{space} &nbsp; <b>↵</b>&nbsp;{newline}")


def legend_tip() -> str:
    """The legend's words in full (its tooltip)."""
    return "<br>".join(mark_legend(("divergence", "critical", "branch", "forced", "proposed")))


class TokenBrowser(QTextBrowser):
    """A read-only rich text view whose anchors are tokens."""

    def __init__(self, panel: TextPanel, lane: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._panel = panel
        self.lane = lane
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setMouseTracking(True)
        self.setObjectName("laneText")
        # a visible focus ring: where the arrow keys and the Menu key act (palette colours follow the theme)
        self.setStyleSheet("#laneText { border: 1px solid palette(mid); }"
                           "#laneText:focus { border: 2px solid palette(highlight); }")
        self.anchorClicked.connect(self._on_anchor)
        self._document = FragmentDocument(self)

    def show_fragments(self, fragments: list[str]) -> None:
        self._document.show(fragments)

    @Slot(QUrl)
    def _on_anchor(self, url: QUrl) -> None:
        target = parse_token_url(url.toString())
        if target is not None:
            self._panel.state.select(*target)

    def token_at(self, pos: QPoint) -> tuple[int, int] | None:
        """The token under a viewport position, or whose mark (◆ ↳ ★ before it, ▲ after it) is there."""
        found = parse_token_url(self.anchorAt(pos))
        if found is not None:
            return found
        position = self.cursorForPosition(pos).position()
        document = self.document()
        for offset in (1, 2, 0, -1):  # a leading mark sits right before its anchor, a trailing one after
            cursor = QTextCursor(document)
            target = position + offset
            if not 0 < target < document.characterCount():
                continue
            cursor.setPosition(target)
            found = parse_token_url(cursor.charFormat().anchorHref())
            if found is not None and abs(self.cursorRect(cursor).center().x() - pos.x()) < 40:
                return found
        return None

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt override)
        """Left / Right move the selection through the lane's steps; the Menu key and Shift+F10 open the selected
        step's menu (not the text caret's)."""
        shift_f10 = event.key() == Qt.Key.Key_F10 and event.modifiers() == Qt.KeyboardModifier.ShiftModifier
        if event.key() == Qt.Key.Key_Menu or shift_f10:
            self._open_menu(self.selected_token(), None)
            return
        target = self._step_for_key(event.key())
        if target is None:
            super().keyPressEvent(event)
            return
        self._panel.state.select(self.lane, target)

    def _step_for_key(self, key: int) -> int | None:
        """The step Left / Right / Home / End go to in this lane: from the selected step when it is this lane's,
        else from the lane's first step (Right, Home) or last (Left, End); None for other keys or no steps."""
        state = self._panel.state
        last = len(state.lanes[self.lane].trace.steps) - 1 if self.lane < len(state.lanes) else -1
        if last < 0 or key not in (Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Home, Qt.Key.Key_End):
            return None
        if key == Qt.Key.Key_Home:
            return 0
        if key == Qt.Key.Key_End:
            return last
        selected = self.selected_token()
        if selected is None:
            return 0 if key == Qt.Key.Key_Right else last
        return min(max(selected[1] + (1 if key == Qt.Key.Key_Right else -1), 0), last)

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 (Qt override): tooltips arrive at the viewport
        if event.type() == QEvent.Type.ToolTip:
            self._show_tooltip(event)
            return True
        return super().viewportEvent(event)

    def tooltip_at(self, pos: QPoint) -> str:
        """The hover text at a viewport position: the token's top-5 alternatives ('' off tokens)."""
        target = self.token_at(pos)
        record = self._panel.state.step_record(*target) if target else None
        if record is None:
            return ""
        alternatives = alternatives_html(record, character=self._panel.character_of(*target),
                                         pending=self._panel.pending_of(*target))
        state = self._panel.state
        if state.proposed_step(target[0]) != target[1]:
            return alternatives
        return proposed_tip(state.lanes[target[0]].spec.is_beam) + "<br>" + alternatives

    def _show_tooltip(self, event: QEvent) -> None:
        text = self.tooltip_at(event.pos())
        if text:
            QToolTip.showText(event.globalPos(), text, self.viewport())
        else:
            QToolTip.hideText()

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:  # noqa: N802 (Qt override)
        """Right-click on a token or its mark: the lane's actions for that step (never the text widget's own
        link menu); elsewhere: copy. From the keyboard: the selected step's."""
        if event.reason() == QContextMenuEvent.Reason.Keyboard:
            self._open_menu(self.selected_token(), None)
        else:
            self._open_menu(self.token_at(event.pos()), event.globalPos())

    def selected_token(self) -> tuple[int, int] | None:
        """The selected step, when it is this lane's own (lane, step)."""
        selection = self._panel.state.selection
        if selection is None or selection.lane != self.lane or selection.member:
            return None
        return selection.lane, selection.step

    def _open_menu(self, target: tuple[int, int] | None, at: QPoint | None) -> None:
        """The step's menu at `at` (global), or under the token itself when opened from the keyboard."""
        record = self._panel.state.step_record(*target) if target else None
        menu = self.alternatives_menu(target[0], record) if record is not None else QMenu(self)
        menu.addSeparator()
        _add(menu, translate("text_view", "Copy"), self, self.copy).setEnabled(self.textCursor().hasSelection())
        _add(menu, translate("text_view", "Select all"), self, self.selectAll)
        if at is None:
            rect = self.token_rect(*target) if target else None
            at = self.viewport().mapToGlobal(rect.bottomLeft() if rect else self.cursorRect().bottomLeft())
        menu.exec(at)

    def token_rect(self, lane: int, step: int) -> QRect | None:
        """Where the token's first character is drawn (viewport coordinates), or None when it is not shown."""
        position = self.token_position(lane, step)
        if position is None:
            return None
        cursor = QTextCursor(self.document())
        cursor.setPosition(position + 1)
        return self.cursorRect(cursor)

    def token_position(self, lane: int, step: int) -> int | None:
        """The document position where the token's anchor starts, or None when it is not shown."""
        href = f"tok:{lane}:{step}"
        block = self.document().begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                if fragment.charFormat().anchorHref() == href:
                    return fragment.position()
                it += 1
            block = block.next()
        return None

    def alternatives_menu(self, lane: int, record: StepRecord) -> QMenu:
        menu = QMenu(self)
        panel = self._panel
        branch_menu = menu.addMenu(translate("text_view", "Branch from here with…"))
        force_menu = menu.addMenu(translate("text_view", "Force for all lanes…"))
        for token in record.top[:10]:
            share = panel.character_of(lane, record.step) if token.id == record.token_id else None
            label = f"{piece_label(token.text, share, panel.pending_of(lane, record.step))}    " \
                    f"{format_prob(token.prob)}"
            # triggered(bool checked) comes first: the token id must be a keyword default, not positional.
            _add(branch_menu, label, self,
                 lambda _checked=False, t=token.id: panel.request_branch(lane, record.step, t))
            _add(force_menu, label, self, lambda _checked=False, t=token.id: panel.request_force(record.step, t))
        other = runner_up(record, panel.state.critical)
        if other is not None:
            token = next(t for t in record.top if t.id == other)
            critical = critical_point(record, panel.state.critical) is not None
            words = (translate("text_view", "▲ Replay the branch not taken: “{token}” ({prob})") if critical
                     else translate("text_view", "Replay with the runner-up: “{token}” ({prob})"))
            label = words.format(token=piece_label(token.text, None, panel.pending_of(lane, record.step)),
                                 prob=format_prob(token.prob))
            _add(menu, label, self, lambda _checked=False: panel.request_replay(lane, record.step))
        _add(menu, translate("text_view", "Why this token and not the runner-up? (Y)"), self,
             lambda _checked=False: panel.request_why(lane, record.step))
        _add(menu, translate("text_view", "Explain this lane: attention, logit lens"), self,
             lambda _checked=False: panel.request_explain(lane))
        _add(menu, translate("text_view", "Compare this lane with another model…"), self,
             lambda _checked=False: panel.request_compare_model(lane))
        return menu


def _add(menu: QMenu, label: str, parent: QWidget, slot) -> QAction:
    # Menu actions fire on the GUI thread (triggered by a user click), so a small closure is safe here.
    action = QAction(label, parent)
    action.triggered.connect(slot)
    menu.addAction(action)
    return action


class LaneColumn(QFrame):
    """Header (colour swatch, lane name, strategy, summary numbers, beam toggle) above the lane's token text."""

    def __init__(self, panel: TextPanel, index: int) -> None:
        super().__init__()
        self.index = index
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setMinimumWidth(MIN_COLUMN_WIDTH)
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.summary = QLabel()
        self.summary.setObjectName("laneSummary")
        self.summary.setWordWrap(True)
        self.summary.setStyleSheet(f"color:{colours.current().muted};font-size:8pt")
        self.beams_button = QToolButton()
        self.beams_button.setText(translate("text_view", "all beams"))
        self.beams_button.setCheckable(True)
        self.beams_button.setToolTip(translate("text_view", "Show every returned beam hypothesis under the best one"))
        self.beams_button.toggled.connect(lambda _on: panel.refresh_lane(self.index))
        self.browser = TokenBrowser(panel, index)
        self._header: tuple | None = None
        header = QHBoxLayout()
        header.addWidget(self.title, 1)
        header.addWidget(self.beams_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(3, 3, 3, 3)
        layout.setSpacing(2)
        layout.addLayout(header)
        layout.addWidget(self.summary)
        layout.addWidget(self.browser, 1)

    def show_lane(self, state: RunState, fragments: list[str]) -> None:
        lane = state.lanes[self.index]
        header = (lane.name, lane.spec, lane.colour, lane.stale, self.index == state.reference,
                  bool(lane.trace.sequences and len(lane.trace.sequences) > 1), len(lane.members),
                  len({tuple(member.token_ids) for member in lane.members}) if not state.running else None)
        if header != self._header:  # a streamed redraw changes only the text: no other widget call
            self._header = header
            self._show_header(state)
        self.browser.show_fragments(fragments)

    def _show_header(self, state: RunState) -> None:
        lane = state.lanes[self.index]
        swatch = lane_swatch(lane.colour)
        palette = colours.current()
        reference = translate("text_view", "(reference)")
        role = f" <span style='color:{palette.faint}'>{reference}</span>" if self.index == state.reference else ""
        edited = translate("text_view", "· edited: Run to update")
        stale = f" <span style='color:{palette.warning}'>{edited}</span>" if lane.stale else ""
        self.title.setToolTip(", ".join(f"{k}={v}" for k, v in lane.spec.to_config().items()))
        fanout = ""
        if lane.members:  # how many continuations are distinct is known once the run ends (not redrawn meanwhile)
            distinct = "" if state.running else translate("text_view", ": {count} distinct").format(
                count=len({tuple(m.token_ids) for m in lane.members}))
            shown = translate("text_view", "fan-out ×{members}").format(members=len(lane.members))
            fanout = f" · <b>{shown}</b>{distinct}"
        picked = picks_words(lane)
        picked = f"<br><span style='color:{palette.warning}'>{picked}</span>" if picked else ""
        self.title.setText(f"{swatch} <b>{lane.name}</b>{role}<br>"
                           f"<span style='color:{palette.muted}'>{describe(lane.spec, seed=False)}</span>"
                           f"{fanout}{stale}{picked}")
        several_beams = bool(lane.trace.sequences and len(lane.trace.sequences) > 1)
        self.beams_button.setText(translate("text_view", "all members") if lane.members else translate("text_view",
                                                                                                       "all beams"))
        self.beams_button.setToolTip(translate("text_view",
                                               "Show every member's text under member #0's") if lane.members else
                                     translate("text_view", "Show every returned beam hypothesis under the best one"))
        self.beams_button.setVisible(several_beams or bool(lane.members))

    def show_summary(self, text: str, tip: str) -> None:
        self.summary.setText(text)
        self.summary.setToolTip(tip)


def picks_words(lane: Lane) -> str:
    """What the lane's header says of tokens it is made to take and a limit step mode left it ("" for none): a run
    of these lanes is not the strategy alone."""
    words = []
    if lane.spec.forced:
        steps = ", ".join(str(step) for step in sorted(lane.spec.forced))
        words.append(translate("text_view", "★ forced at step {steps}").format(steps=steps))
    if lane.picks is not None and lane.spec.max_new_tokens and lane.spec.max_new_tokens != lane.picks[2]:
        words.append(translate("text_view", "stops after {count} tokens (step mode)").format(
            count=lane.spec.max_new_tokens))
    return " · ".join(words)


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
    """All lane columns side by side (resizable, scrolled horizontally when many), with the legend above."""

    branchRequested = Signal(int, int, int)  # lane, step, token id
    forceRequested = Signal(int, int)  # step, token id (every lane)
    replayRequested = Signal(int, int)  # lane, step: the branch not taken
    explainRequested = Signal(int)  # lane
    whyRequested = Signal(int, int)  # lane, step: why its token and not the runner-up
    compareModelRequested = Signal(int)  # lane: read its tokens with a second model

    def __init__(self, state: RunState, scheduler: RedrawScheduler, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._scheduler = scheduler
        self.columns: list[LaneColumn] = []
        self._splitter = QSplitter(Qt.Orientation.Horizontal)
        self._splitter.setChildrenCollapsible(False)
        self._scroll = QScrollArea()
        self._scroll.setWidgetResizable(True)
        self._scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self._scroll.setWidget(self._splitter)
        self.legend = QLabel(legend_html(state.critical))
        self.legend.setToolTip(legend_tip())
        self.legend.setObjectName("textLegend")
        self.legend.setWordWrap(True)
        self.legend.setStyleSheet(f"color:{colours.current().muted}")
        self.thresholds = QToolButton()
        self.thresholds.setText(translate("text_view", "▲ thresholds…"))
        self.thresholds.setToolTip(translate("text_view", "What makes a step a critical point"))
        self.thresholds.clicked.connect(self.edit_thresholds)
        top = QHBoxLayout()
        top.addWidget(self.legend, 1)
        top.addWidget(self.thresholds)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addWidget(self._scroll, 1)
        events = state.events
        for name in ("lanes_reset", "lane_inserted", "lane_removed", "lane_moved"):
            events.connect(name, self._on_lanes_event)
        events.connect("lane_inserted", self._reveal)
        events.connect("lane_changed", self._on_lane_changed)
        events.connect("step_added", self._on_step_added)
        events.connect("prefill_progress", self._on_prefill)
        events.connect("member_step_added", lambda index, _member, record: self._on_step_added(index, record))
        events.connect("run_finished", self._on_run_finished)
        events.connect("marks_changed", self._on_marks_changed)
        events.connect("selection_changed", self._on_selection_changed)
        self._selected_lane: int | None = None
        self._rebuild_columns()
        self.refresh_all()

    def character_of(self, lane: int, step: int):
        """The character a lane's byte-level piece at `step` is part of (None for whole tokens)."""
        return lane_characters([s.token_text for s in self.state.lanes[lane].trace.steps]).get(step)

    def pending_of(self, lane: int, step: int) -> bytes:
        """The bytes of a character the lane started before `step` and had not finished."""
        return pending_bytes([s.token_text for s in self.state.lanes[lane].trace.steps[:step]])

    # ---- commands (the window connects the signals) ---------------------------------------------------

    def request_branch(self, lane: int, step: int, token_id: int) -> None:
        self.branchRequested.emit(lane, step, token_id)

    def request_replay(self, lane: int, step: int) -> None:
        self.replayRequested.emit(lane, step)

    def request_why(self, lane: int, step: int) -> None:
        self.whyRequested.emit(lane, step)

    def request_explain(self, lane: int) -> None:
        self.explainRequested.emit(lane)

    def request_compare_model(self, lane: int) -> None:
        self.compareModelRequested.emit(lane)

    def request_force(self, step: int, token_id: int) -> None:
        self.forceRequested.emit(step, token_id)

    # ---- state events --------------------------------------------------------------------------------

    def _on_lanes_event(self, *_args) -> None:
        self._rebuild_columns()
        self.refresh_all()

    def _reveal(self, index: int) -> None:
        """A new lane scrolls into view."""
        column = self.columns[index]
        QTimer.singleShot(0, lambda: self._scroll.ensureWidgetVisible(column, 20, 0))

    def edit_thresholds(self) -> None:
        from gui.dialogs.critical_dialog import CriticalDialog

        CriticalDialog(self.state, self).exec()

    def _on_marks_changed(self) -> None:
        self.refresh_look()

    def refresh_look(self) -> None:
        """The legend and every column drawn again (the marks' thresholds or the palette changed)."""
        self.legend.setText(legend_html(self.state.critical))
        self.refresh_all()

    def _on_lane_changed(self, index: int) -> None:
        self.refresh_lane(index)

    def _on_step_added(self, index: int, _record: StepRecord) -> None:
        key = self.state.lanes[index].key
        self._scheduler.mark("text", ("text", key), lambda: self._refresh_key(key))

    def _refresh_key(self, key: int) -> None:
        try:
            index = self.state.index_of(key)
        except KeyError:
            return
        self.refresh_lane(index)

    def _on_selection_changed(self, selection: Selection | None) -> None:
        lanes = {self._selected_lane, None if selection is None else selection.lane} - {None}
        self._selected_lane = None if selection is None else selection.lane
        for index in lanes:
            if index < min(len(self.columns), len(self.state.lanes)):
                self.refresh_lane(index)
        self._focus_selected_column()
        if selection is not None and selection.lane < len(self.columns) and not selection.member:
            self.show_step(selection.lane, selection.step)

    @Slot()
    def _on_run_finished(self) -> None:
        """A finished run shows each text from its start (a column followed the stream to its end), the lane's
        proposed step in step mode, and the selected step in its own column."""
        self.refresh_all()
        selection = self.state.selection
        for index, column in enumerate(self.columns):
            proposed = self.state.proposed_step(index) if index < len(self.state.lanes) else None
            if selection is not None and selection.lane == index and not selection.member:
                self.show_step(index, selection.step)
            elif proposed is not None:
                self.show_step(index, proposed)
            else:
                column.browser.verticalScrollBar().setValue(0)

    def show_step(self, lane: int, step: int) -> None:
        """Scrolls the lane's column into view and its token at `step` into the column's view."""
        column = self.columns[lane]
        self._scroll.ensureWidgetVisible(column, 20, 0)
        browser = column.browser
        position = browser.token_position(lane, step)
        if position is None:
            return
        cursor = QTextCursor(browser.document())
        cursor.setPosition(position)
        rect = browser.cursorRect(cursor)
        bar = browser.verticalScrollBar()
        viewport = browser.viewport().height()
        if rect.top() < 0 or rect.bottom() > viewport:  # off screen: the token a third of the way down
            bar.setValue(bar.value() + rect.top() - viewport // 3)

    def _focus_selected_column(self) -> None:
        """With the keyboard in the texts, the focus follows the selected lane (Up / Down move between lanes)."""
        focus = QApplication.focusWidget()
        lane = self._selected_lane
        if focus is not None and self.isAncestorOf(focus) and lane is not None and lane < len(self.columns):
            browser = self.columns[lane].browser
            if focus is not browser:
                browser.setFocus(Qt.FocusReason.OtherFocusReason)

    # ---- drawing -------------------------------------------------------------------------------------

    def _rebuild_columns(self) -> None:
        if len(self.columns) == len(self.state.lanes):
            for column in self.columns:
                column._header = None  # same widgets (no flicker, no relayout), headers redrawn
            return
        sizes = self._splitter.sizes()
        for column in self.columns:
            column.setParent(None)
            column.deleteLater()
        self.columns = [LaneColumn(self, index) for index in range(len(self.state.lanes))]
        for column in self.columns:
            self._splitter.addWidget(column)
        if len(sizes) == len(self.columns):
            self._splitter.setSizes(sizes)
        self._selected_lane = self.state.selection.lane if self.state.selection else None

    @Slot()
    def refresh_all(self) -> None:
        for index in range(len(self.columns)):
            self.refresh_lane(index)

    def _on_prefill(self, done: int, total: int) -> None:
        """While a long prompt is read, the lanes waiting for it say how far it got."""
        if not total:
            return
        text = prefill_text(done, total)
        for index, column in enumerate(self.columns):
            if index < len(self.state.lanes) and not self.state.lanes[index].trace.steps:
                column.show_summary(text, "")

    def refresh_lane(self, index: int) -> None:
        column = self.columns[index]
        lane = self.state.lanes[index].trace
        stepping = self.state.proposed_step(index) is not None  # step mode shows a beam lane's best path, marked
        running = running_beam_pieces(lane.steps) if lane.finish_reason is None and not stepping else None
        if running is not None:  # a streaming beam lane: its best running hypothesis, plain
            best = translate("text_view", "best running beam…")
            header = f"<i style='color:{colours.current().faint}'>{best}</i><br>"
            fragments = [header, *plain_fragments(running)]
        else:
            fragments = lane_fragments(index, lane.steps, self.state.marks(index))
        if column.beams_button.isChecked():
            members = self.state.lanes[index].members
            fragments.append(self._other_members_html(members) if members else self._other_beams_html(lane))
        column.show_lane(self.state, fragments)
        if self.state.running and lane.finish_reason is None:  # not the last run's numbers: this run's so far
            column.show_summary(translate("text_view", "running… {count} tok").format(count=len(lane.steps)), "")
        else:
            text, tip = lane_summary(lane, self.state.divergence_step(index), self.state.critical_count(index),
                                     self.state.aligned_with(index))
            if stepping:
                text += "\n" + translate("text_view", "{glyph} step {step} proposed").format(
                    glyph=PROPOSED_GLYPH, step=self.state.proposed_step(index))
            comparison = self.state.replay_comparison(index)
            if comparison is not None:
                text += "\n" + translate("text_view", "vs {lane}: {comparison}").format(
                    lane=lane.replay_of["lane"], comparison=replay_words(comparison))
            column.show_summary(text, tip)

    def _other_beams_html(self, lane: LaneTrace) -> str:
        """The other returned hypotheses, spelled with the token texts the trace recorded (no model)."""
        if not lane.sequences:
            return ""
        pieces = known_pieces(lane.steps)
        parts = []
        scores = lane.sequence_scores or []
        for rank, ids in enumerate(lane.sequences[1:], start=1):
            title = translate("text_view", "beam #{rank}").format(rank=rank + 1)
            if rank < len(scores):
                title += " · " + translate("text_view", "score {score}").format(score=f"{scores[rank]:.3f}")
            parts.append(f"<br><br><span style='color:{colours.current().faint}'>{title}</span><br>")
            text = "".join(plain_fragments([pieces.get(i, f"<{i}>") for i in ids]))
            parts.append(f"<span style='color:{colours.current().ink}'>{text}</span>")
        return "".join(parts)

    def _other_members_html(self, members: list[LaneTrace]) -> str:
        """Members #1… of a fan-out under member #0's text, each with where it parts from #0."""
        parts = []
        for member in members[1:]:
            split = first_difference(member.token_ids, members[0].token_ids)
            where = (translate("text_view", "same as #0") if split is None else
                     translate("text_view", "parts from #0 at step {step}").format(step=split))
            seed = translate("text_view", "seed {seed}").format(seed=member.config.get("seed"))
            parts.append(f"<br><br><span style='color:{colours.current().faint}'>{member.name} · {seed} · {where}"
                         "</span><br>")
            text = "".join(plain_fragments([step.token_text for step in member.steps]))
            parts.append(f"<span style='color:{colours.current().ink}'>{text}</span>")
        return "".join(parts)

    def column_texts(self) -> Sequence[str]:
        """Plain text of each column (tests, export)."""
        return [column.browser.toPlainText() for column in self.columns]
