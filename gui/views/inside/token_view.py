"""Tokens, a view of the RunState: the prompt and every lane's text as the tokens the model saw and wrote, each a
box with its piece and id, one after the other as in the text. Special tokens (a chat template's markers, end of
text) are shaded; a character spread over several byte-level tokens (most Chinese characters here) is bracketed
under its tokens, which show their bytes. Counts and the model's context limit head the view.

No inspection model is needed: lanes' pieces are in the run. The prompt's pieces come from the model's tokenizer
when the model is at hand, else from a stored explanation; a run opened without either shows the prompt's ids.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPen
from PySide6.QtWidgets import (
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsSimpleTextItem,
    QGraphicsView,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from gui.i18n import translate
from gui.present import colours
from gui.present.inside_data import TokenChip, TokenLine, prompt_pieces, token_chips
from gui.state.run_state import RunState
from gui.views import style
from gui.views.figure import Figure

MARGIN = 8
GAP = 3
CHIP_PAD = 4
CAPTION_PX = 17  # room under a line of chips for the characters bracketed there
SPECIAL_BACKGROUND = "#E1D5F0"
BYTE_BACKGROUND = "#FFF3D6"
SHADES = ("#F2F2F2", "#E3EEF9")  # neighbouring tokens alternate, so boundaries show even between letters

class TokenView(QWidget):
    def __init__(self, state: RunState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._lines: list[TokenLine] = []
        # per line, per chip: its box, its label, its id
        self._chip_items: list[list[tuple[QGraphicsRectItem, QGraphicsSimpleTextItem, QGraphicsSimpleTextItem]]] = []
        self._caption_items: list[QGraphicsSimpleTextItem] = []
        self._title = ""
        self._summary = QLabel()
        self._summary.setObjectName("tokenSummary")
        self._summary.setWordWrap(True)
        self._summary.setTextFormat(Qt.TextFormat.RichText)
        self._scene = QGraphicsScene(self)
        self._view = _ChipView(self._scene, self._draw)
        self._view.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self._view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._view.mousePressEvent = self._on_press
        self._legend = QLabel(
            translate("token_view", "<span style=\"background:{SPECIAL_BACKGROUND}\">&nbsp;special&nbsp;</span> a "
                                    "special token (chat template, end of text) · <span "
                                    "style=\"background:{BYTE_BACKGROUND}\">&nbsp;‹e8 99›&nbsp;</span> bytes of a "
                                    "character spread over several tokens, the character under its tokens · the number "
                                    "under a token is its id · “·” is a space, “↵” a newline · click a lane's token to "
                                    "select its step").format(SPECIAL_BACKGROUND=SPECIAL_BACKGROUND,
                                                              BYTE_BACKGROUND=BYTE_BACKGROUND))
        self._legend.setFont(style.ui_font(8.5))
        self._legend.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self._summary)
        layout.addWidget(self._legend)
        layout.addWidget(self._view, 1)
        for name in ("lanes_reset", "lane_inserted", "lane_removed", "lane_moved", "lane_changed", "run_finished",
                     "explanations_changed", "model_changed", "selection_changed"):
            state.events.connect(name, self._on_change)
        self._on_change()

    # ---- public API --------------------------------------------------------------------------------------
    def lines(self) -> list[TokenLine]:
        """What is drawn: the prompt's line, then each lane's."""
        return list(self._lines)

    def drawn_labels(self, line: int) -> list[str]:
        """The label text of every chip drawn in a line (read from the scene)."""
        return [label.text() for _rect, label, _id in self._chip_items[line]]

    def drawn_ids(self, line: int) -> list[int]:
        return [int(ident.text()) for _rect, _label, ident in self._chip_items[line]]

    def chip_colour(self, line: int, position: int) -> str:
        return self._chip_items[line][position][0].brush().color().name()

    def captions(self) -> list[str]:
        """The characters drawn under their byte-level tokens."""
        return [item.text() for item in self._caption_items]

    def summary(self) -> str:
        return self._summary.text()

    def chip_scene_rect(self, line: int, position: int) -> QRectF:
        return self._chip_items[line][position][0].sceneBoundingRect()

    def figure(self) -> Figure | None:
        if not self._lines:
            return None
        return Figure(self._title, self._summary.text() + "<br>" + self._legend.text(), self._scene,
                      self._scene.itemsBoundingRect().adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN))

    # ---- state events ------------------------------------------------------------------------------------
    def _on_change(self, *_args) -> None:
        self._lines = self._collect()
        self._draw()

    # ---- data --------------------------------------------------------------------------------------------
    def _collect(self) -> list[TokenLine]:
        trace = self.state.trace
        if trace is None:
            self._summary.setText(translate("token_view", "Run or open a run to see its tokens."))
            self._title = ""
            return []
        tokenizer, positions = self.state.model_files()
        special = getattr(tokenizer, "special_ids", None)
        ids = trace.prompt.ids
        pieces = prompt_pieces(self.state, tokenizer)
        prompt = (translate("token_view", "prompt (chat template) · {count} tokens") if trace.prompt.chat
                  else translate("token_view", "prompt (plain text) · {count} tokens"))
        lines = [TokenLine(prompt.format(count=len(ids)),
                           token_chips(ids, pieces if pieces is not None else ["?"] * len(ids), special))]
        for index, lane in enumerate(self.state.lanes):
            steps = lane.trace.steps
            if steps:
                chips = token_chips([s.token_id for s in steps], [s.token_text for s in steps], special)
                label = translate("token_view", "{lane} · {count} tokens").format(lane=lane.name, count=len(steps))
                lines.append(TokenLine(label, chips, index))
        self._summary.setText(self._summary_text(lines, positions, pieces is None))
        self._title = translate("token_view", "the prompt and every lane as tokens · {model}").format(
            model=trace.model.name)
        return lines

    def _summary_text(self, lines: list[TokenLine], positions: int | None, no_pieces: bool) -> str:
        prompt = len(lines[0].chips)
        special = sum(chip.special for chip in lines[0].chips)
        longest = prompt + max((len(line.chips) for line in lines[1:]), default=0)
        limit = (translate("token_view", "the model's context limit: {positions} positions").format(
                     positions=positions) if positions else
                 translate("token_view", "the model's context limit is unknown here (its model is not prepared "
                                         "here)"))
        longest_text = translate("token_view", "longest sequence {count} tokens").format(count=longest)
        if positions:
            share = f"{longest / positions:.1%}"
            longest_text += translate("token_view", " = {share} of the limit").format(share=share)
        parts = [translate("token_view", "<b>prompt {count} tokens</b> ({special} special)").format(
                     count=prompt, special=special), longest_text, limit]
        if no_pieces:
            parts.append(translate("token_view", "the prompt's pieces need its model or an explanation saved with "
                                                 "the run: ids only"))
        return " · ".join(parts)

    # ---- drawing -----------------------------------------------------------------------------------------
    def _draw(self) -> None:
        self._scene.clear()
        self._view.setBackgroundBrush(QColor(colours.current().background))  # the palette in effect now
        self._chip_items, self._caption_items = [], []
        width = max(self._view.viewport().width() - 2 * MARGIN, 320)
        y = MARGIN
        selection = self.state.selection
        for line in self._lines:
            selected = (selection.step if selection is not None and line.lane is not None
                        and selection.lane == line.lane else None)
            y = self._draw_line(line, y, width, selected) + 10
        self._scene.setSceneRect(0, 0, width + 2 * MARGIN, y)

    def _draw_line(self, line: TokenLine, y: float, width: float, selected: int | None) -> float:
        title = QGraphicsSimpleTextItem(line.title)
        title.setFont(_bold(style.ui_font(9)))
        title.setBrush(QColor(colours.current().ink))
        if line.lane is not None:
            title.setBrush(QColor(style.lane_color_hex(self.state.lanes[line.lane].colour)))
        title.setPos(MARGIN, y)
        self._scene.addItem(title)
        y += QFontMetricsF(title.font()).height() + 3
        label_font, id_font = style.ui_font(9), style.ui_font(7)
        label_metrics, id_metrics = QFontMetricsF(label_font), QFontMetricsF(id_font)
        height = label_metrics.height() + id_metrics.height() + 2 * CHIP_PAD
        x, items, row_chips = MARGIN, [], []
        for chip in line.chips:
            chip_width = max(label_metrics.horizontalAdvance(chip.label),
                             id_metrics.horizontalAdvance(str(chip.token_id))) + 2 * CHIP_PAD
            if x + chip_width > MARGIN + width and row_chips:
                self._draw_captions(row_chips, y + height)
                x, y, row_chips = MARGIN, y + height + CAPTION_PX, []
            rect = QGraphicsRectItem(x, y, chip_width, height)
            rect.setBrush(QBrush(QColor(_chip_background(chip))))
            rect.setPen(QPen(QColor(style.FOREGROUND), 2) if chip.position == selected else QPen(Qt.PenStyle.NoPen))
            rect.setData(0, (line.lane, chip.position))
            rect.setToolTip(_chip_tip(chip))
            self._scene.addItem(rect)
            label = QGraphicsSimpleTextItem(chip.label, rect)
            label.setFont(label_font)
            label.setBrush(QColor(colours.current().ink))
            label.setPos(x + CHIP_PAD, y + CHIP_PAD)
            ident = QGraphicsSimpleTextItem(str(chip.token_id), rect)
            ident.setFont(id_font)
            ident.setBrush(QColor(colours.current().muted))
            ident.setPos(x + CHIP_PAD, y + CHIP_PAD + label_metrics.height())
            items.append((rect, label, ident))
            row_chips.append((chip, rect))
            x += chip_width + GAP
        self._draw_captions(row_chips, y + height)
        self._chip_items.append(items)
        return y + height + CAPTION_PX

    def _draw_captions(self, row: list[tuple[TokenChip, QGraphicsRectItem]], y: float) -> None:
        """Under each run of chips spelling one character: a bracket and the character."""
        groups: list[list[tuple[TokenChip, QGraphicsRectItem]]] = []
        for chip, rect in row:
            share = chip.character
            if share is not None and share.start > 0 and groups and groups[-1][-1][0].character is not None:
                groups[-1].append((chip, rect))
            elif share is not None:
                groups.append([(chip, rect)])
        pen = QPen(QColor("#B07A00"), 1.2)
        for group in groups:
            left = group[0][1].rect().left()
            right = group[-1][1].rect().right()
            self._scene.addLine(left + 1, y + 2, right - 1, y + 2, pen)
            for end in (left + 1, right - 1):
                self._scene.addLine(end, y - 1, end, y + 2, pen)
            character = group[0][0].character
            caption = QGraphicsSimpleTextItem(character.text)
            caption.setFont(style.ui_font(10))
            caption.setBrush(QColor(colours.current().ink))
            caption.setPos((left + right) / 2 - QFontMetricsF(caption.font()).horizontalAdvance(character.text) / 2,
                           y + 2)
            tip = translate("token_view", "{text}: {total} bytes over {count} tokens")
            caption.setToolTip(tip.format(text=character.text, total=character.total, count=len(group)))
            self._scene.addItem(caption)
            self._caption_items.append(caption)

    # ---- interaction -------------------------------------------------------------------------------------
    def _on_press(self, event) -> None:
        for item in self._view.items(event.position().toPoint()):
            target = item.data(0)
            if isinstance(target, tuple) and target[0] is not None:
                self.state.select(*target)
                return
        QGraphicsView.mousePressEvent(self._view, event)


class _ChipView(QGraphicsView):
    """The chips' view: they flow again to its width when it changes."""

    def __init__(self, scene: QGraphicsScene, on_resize: Callable[[], None]) -> None:
        super().__init__(scene)
        self._on_resize = on_resize

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._on_resize()


def _chip_background(chip: TokenChip) -> str:
    if chip.special:
        return _in_palette(SPECIAL_BACKGROUND)
    if chip.character is not None:
        return _in_palette(BYTE_BACKGROUND)
    return _in_palette(SHADES[chip.position % 2])


def _in_palette(light: str) -> str:
    """A light shade as the palette in effect draws it (its dark counterpart in the dark palette)."""
    return colours.counterpart(light) if colours.current().dark else light


def _bold(font: QFont) -> QFont:
    font.setBold(True)
    return font


def _chip_tip(chip: TokenChip) -> str:
    piece = chip.piece.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
    tip = f"id {chip.token_id} · piece {piece!r}"
    if chip.special:
        tip += " · a special token"
    if chip.character is not None:
        tip += f" · part of “{chip.character.text}” ({chip.character.total} bytes)"
    return tip
