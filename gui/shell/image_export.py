"""Images of a run made for reading, not screenshots of widgets: the prompt and every lane's whole text with its
colours and marks; each chart with its title, legend and axes and no controls (PNG and SVG); and one report
image of the whole run. Charts hand over a `Figure` (what to draw); this module lays it out."""

from __future__ import annotations

import html
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPalette, QTextDocument
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QApplication, QWidget

from gui.present.lane_fields import describe
from gui.present.lane_html import lane_fragments, lane_summary
from gui.state.run_state import RunState
from gui.views.figure import Figure
from gui.views.style import lane_swatch, ui_font

COLUMN_PX = 380  # width of one lane's column in the text image
COLUMNS_PER_ROW = 4
MARGIN = 16


def page_colour() -> QColor:
    """The images' ground: the palette's page (white, or the dark palette's), so titles, legends and lane texts,
    drawn in the palette's text colours, and the charts, drawn on the palette's background, stay readable."""
    return QApplication.palette().color(QPalette.ColorRole.Base)


def _secondary_text() -> str:
    """Grey for the model line, a lane's strategy and summary: readable on either page."""
    return "#555555" if page_colour().lightness() > 128 else "#b0b0b0"


def text_document(state: RunState, legend: str = "") -> QTextDocument:
    """The prompt, then every lane that ran as a column (header, summary, whole text in its colours and marks),
    at most COLUMNS_PER_ROW columns a row."""
    lanes = [(index, lane) for index, lane in enumerate(state.lanes) if lane.trace.steps]
    trace = state.trace
    prompt = trace.prompt if trace is not None else None
    grey = _secondary_text()
    parts = [f"<h3 style='margin:0'>{html.escape(prompt.text if prompt else '')}</h3>"]
    if prompt is not None and (prompt.chat or trace.model.name):
        chat = " · chat template" + (f" · system: {html.escape(prompt.system)}" if prompt.system else "") \
            if prompt.chat else ""
        parts.append(f"<p style='color:{grey};margin:2px 0 8px 0'>{html.escape(trace.model.name)}{chat}</p>")
    parts.append("<table cellspacing=6 cellpadding=4 width=100%>")
    for row_start in range(0, len(lanes), COLUMNS_PER_ROW):
        parts.append("<tr>")
        for index, lane in lanes[row_start:row_start + COLUMNS_PER_ROW]:
            summary, _ = lane_summary(lane.trace, state.divergence_step(index), state.critical_count(index),
                                      state.aligned_with(index))
            marks = [replace(mark, selected=False) for mark in state.marks(index)]  # no selection in a shared image
            text = "".join(lane_fragments(index, lane.trace.steps, marks))
            parts.append(
                f"<td valign=top width={COLUMN_PX} style='border:1px solid #cccccc'>"
                f"{lane_swatch(lane.colour)} <b>{html.escape(lane.name)}</b><br>"
                f"<span style='color:{grey}'>{html.escape(describe(lane.spec, seed=True))}</span><br>"
                f"<span style='color:{grey}'>{html.escape(summary)}</span><br>"
                f"<span style='white-space:pre-wrap'>{text}</span></td>")
        parts.append("</tr>")
    parts.append("</table>")
    if legend:
        parts.append(f"<p style='color:{grey}'>{legend}</p>")
    document = QTextDocument()
    document.setDefaultFont(ui_font(9.5))
    document.setHtml("".join(parts))
    document.setTextWidth(min(len(lanes), COLUMNS_PER_ROW) * (COLUMN_PX + 12) + 2 * MARGIN or 600)
    return document


def document_image(document: QTextDocument) -> QImage:
    size = document.size().toSize() + QSize(2 * MARGIN, 2 * MARGIN)
    image = _blank(size)
    painter = QPainter(image)
    painter.translate(MARGIN, MARGIN)
    document.drawContents(painter)
    painter.end()
    return image


def _html_block(text: str, width: float, point_size: float = 9.0) -> QTextDocument:
    document = QTextDocument()
    document.setDefaultFont(ui_font(point_size))
    document.setHtml(text)
    document.setTextWidth(width)
    return document


def figure_width(figure: Figure) -> int:
    """A figure is drawn at its plot's own size (scaling would blow up the axis fonts)."""
    return int(figure.source.width()) + 2 * MARGIN


def _figure_layout(figure: Figure) -> tuple[list[QTextDocument], QRectF, list[QTextDocument], int]:
    inner = figure.source.width()
    above = [_html_block(f"<b>{html.escape(figure.title)}</b>", inner, 10.5)]
    if figure.legend_html:
        above.append(_html_block(figure.legend_html, inner, 8.5))
    below = [_html_block(figure.footer_html, inner, 8.5)] if figure.footer_html else []
    top = MARGIN + sum(d.size().height() for d in above)
    plot = QRectF(MARGIN, top, inner, figure.source.height())
    height = int(plot.bottom() + sum(d.size().height() for d in below) + MARGIN)
    return above, plot, below, height


def paint_figure(painter: QPainter, figure: Figure) -> int:
    """Draw the figure at the painter's origin; returns its height."""
    above, plot, below, height = _figure_layout(figure)
    y = MARGIN
    for document in above:
        painter.save()
        painter.translate(MARGIN, y)
        document.drawContents(painter)
        painter.restore()
        y += document.size().height()
    figure.scene.render(painter, plot, figure.source, Qt.AspectRatioMode.KeepAspectRatio)
    y = plot.bottom()
    for document in below:
        painter.save()
        painter.translate(MARGIN, y)
        document.drawContents(painter)
        painter.restore()
        y += document.size().height()
    return height


def figure_image(figure: Figure) -> QImage:
    image = _blank(QSize(figure_width(figure), _figure_layout(figure)[3]))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    paint_figure(painter, figure)
    painter.end()
    return image


def save_figure_svg(figure: Figure, path: Path) -> Path:
    width, height = figure_width(figure), _figure_layout(figure)[3]
    generator = QSvgGenerator()
    generator.setFileName(str(path))
    generator.setSize(QSize(width, height))
    generator.setViewBox(QRectF(0, 0, width, height))
    generator.setTitle(figure.title)
    painter = QPainter(generator)
    painter.fillRect(QRectF(0, 0, width, height), page_colour())
    paint_figure(painter, figure)
    painter.end()
    if not path.is_file():
        raise OSError(f"could not write SVG to {path}")
    return path


def report_layout(text: QSize, sizes: list[QSize]) -> tuple[QSize, list[QRectF]]:
    """Where each figure of `sizes` goes under the text: as wide as the text or two usual figures side by side,
    the figures left to right in rows (stacked in one column under a 2,200 px beam tree, a report was mostly
    empty), and one wider than that (a long beam tree) after them, scaled to the report's width (its own PNG
    has it at full size). Returns the report's size and each figure's rectangle."""
    widths = sorted(size.width() for size in sizes)
    width = max(text.width(), 2 * widths[len(widths) // 2] if widths else 0)
    usual = [index for index, size in enumerate(sizes) if size.width() <= width]
    wide = [index for index, size in enumerate(sizes) if size.width() > width]
    places: dict[int, QRectF] = {}
    x, y, row_height = 0, text.height(), 0
    for index in usual:
        size = sizes[index]
        if x and x + size.width() > width:  # a new row
            x, y, row_height = 0, y + row_height, 0
        places[index] = QRectF(x, y, size.width(), size.height())
        x += size.width()
        row_height = max(row_height, size.height())
    y += row_height
    for index in wide:
        height = sizes[index].height() * width / sizes[index].width()
        places[index] = QRectF(0, y, width, height)
        y += height
    return QSize(width, int(y)), [places[index] for index in range(len(sizes))]


def report_image(document: QTextDocument, figures: list[Figure]) -> QImage:
    """The text image, then every figure, in rows (report_layout)."""
    text = document_image(document)
    sizes = [QSize(figure_width(figure), _figure_layout(figure)[3]) for figure in figures]
    size, places = report_layout(text.size(), sizes)
    image = _blank(size)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.drawImage(0, 0, text)
    for figure, own, place in zip(figures, sizes, places, strict=True):
        painter.save()
        painter.translate(place.topLeft())
        painter.scale(place.width() / own.width(), place.height() / own.height())
        paint_figure(painter, figure)
        painter.restore()
    painter.end()
    return image


def save_png(image: QImage, path: Path) -> Path:
    if not image.save(str(path), "PNG"):
        raise OSError(f"could not write PNG to {path}")
    return path


def _blank(size: QSize) -> QImage:
    image = QImage(size, QImage.Format.Format_ARGB32)
    image.fill(page_colour())
    return image


def export_run(folder: Path, state: RunState, live: dict[str, QWidget], legend: str) -> list[Path]:
    """text.png (prompt and every lane's whole text), report.png (everything), and each chart of the view
    registry as PNG and SVG, drawn afresh off screen at a size made for reading and showing what its live view
    (`live`, by id) shows. Raises OSError when the folder cannot be written."""
    from gui.views.registry import VIEWS

    snapshot = state.snapshot()
    rows = sorted(VIEWS, key=lambda row: row.export_rank)
    views = {row.file_name: _drawn_off_screen(row, snapshot, live[row.id]) for row in rows}
    try:
        document = text_document(state, legend)
        figures = {name: view.figure() for name, view in views.items()}
        figures = {name: figure for name, figure in figures.items() if figure is not None}
        folder.mkdir(parents=True, exist_ok=True)
        paths = [save_png(document_image(document), folder / "text.png"),
                 save_png(report_image(document, list(figures.values())), folder / "report.png")]
        for name, figure in figures.items():
            paths.append(save_png(figure_image(figure), folder / f"{name}.png"))
            paths.append(save_figure_svg(figure, folder / f"{name}.svg"))
        return paths
    finally:
        for view in views.values():
            view.deleteLater()


def _drawn_off_screen(row, snapshot: RunState, live: QWidget) -> QWidget:
    from gui.views.redraw import RedrawScheduler

    view = row.make(snapshot, RedrawScheduler(live))
    view.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    view.resize(*row.export_size(snapshot))
    view.show()
    if hasattr(live, "view_state"):
        view.set_view_state(live.view_state())
    if hasattr(view, "prepare_export"):
        view.prepare_export()
    QApplication.processEvents()
    return view
