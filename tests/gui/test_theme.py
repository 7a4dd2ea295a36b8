"""Light and dark: forcing the dark palette turns every chart's drawn background dark and back, and what is drawn
stays readable in both — WCAG contrast measured on the colours Qt draws: token text on its background in the
text columns (≥ 4.5:1), the marks on the page and every chart's axes (≥ 4.5:1), lane lines and chart marks
(≥ 3:1; the light palette's Okabe–Ito orange and sky blue lines are checked at 2:1, as designed)."""

from __future__ import annotations

import gc
import random

import pyqtgraph as pg
import pytest
from PySide6.QtGui import QColor, QPalette, QTextCursor
from PySide6.QtWidgets import QApplication

from gui.app import make_application
from gui.main_window import MainWindow
from gui.present import colours
from gui.views.style import make_plot_widget
from runfiles import run_file
from tests.decoding.test_jsonio import fake_trace


def luminance(colour: QColor) -> float:
    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())


def contrast(a: QColor, b: QColor) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.fixture
def window(qtbot, tmp_path):
    make_application([])
    window = MainWindow(None)
    qtbot.addWidget(window)
    window.show()
    window.files.open(run_file.save(fake_trace(), tmp_path / "run.json"))  # every lane kind, marks, a beam lane
    window.state.select(0, 3)
    window.charts.setCurrentWidget(window.beam_tree)
    qtbot.wait(50)
    yield window
    window.theme.set_mode("system")
    window.shutdown()
    window.deleteLater()  # Qt deletes it now: Python would keep it until exit, and pyqtgraph's items with it
    qtbot.wait(10)
    gc.collect()


def charts(window) -> list[pg.GraphicsView]:
    return [view for view in window.findChildren(pg.GraphicsView) if view.isVisible()]


def drawn_background(view: pg.GraphicsView) -> QColor:
    """The colour drawn in a chart's corner (inside the view, outside any plot item)."""
    return view.grab().toImage().pixelColor(2, 2)


def token_formats(window):
    """(foreground, background) of every token as the text columns' documents draw it."""
    found = []
    for column in window.text.columns:
        block = column.browser.document().begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                fmt = it.fragment().charFormat()
                if fmt.anchorHref().startswith("tok:"):
                    found.append((fmt.foreground().color(), fmt.background().color()))
                it += 1
            block = block.next()
    return found


def mark_colours(window) -> list[QColor]:
    """The colours the marks (◆ ▲ ↳ ★) are drawn in, in the text columns."""
    found = []
    for column in window.text.columns:
        document = column.browser.document()
        text = document.toPlainText()
        for index, char in enumerate(text):
            if char in "◆▲↳★":
                cursor = QTextCursor(document)
                cursor.setPosition(index + 1)
                found.append(cursor.charFormat().foreground().color())
    return found


def test_the_dark_palette_darkens_every_chart_and_light_brings_it_back(qtbot, window):
    views = charts(window)
    assert len(views) >= 2  # the inspector (two plots), the beam tree
    before = [drawn_background(view).name() for view in views]
    assert all(QColor(name).lightness() > 240 for name in before)
    window.menus.choice_actions("&Theme")["dark"].trigger()
    qtbot.wait(20)
    assert window.theme.is_dark() and QApplication.palette().color(QPalette.ColorRole.Window).lightness() < 80
    assert all(drawn_background(view).lightness() < 50 for view in views)
    later = make_plot_widget()  # a chart made now takes the palette in effect
    assert later.backgroundBrush().color().name() == colours.DARK.background
    later.deleteLater()
    qtbot.wait(10)
    window.menus.choice_actions("&Theme")["light"].trigger()
    qtbot.wait(20)
    assert [drawn_background(view).name() for view in views] == before


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_what_is_drawn_stays_readable(qtbot, window, mode):
    window.theme.set_mode(mode)
    qtbot.wait(20)
    tokens = token_formats(window)
    assert len(tokens) > 20
    worst = min(contrast(fg, bg) for fg, bg in tokens)
    assert worst >= 4.5, f"token text contrast {worst:.2f} in {mode}"
    page = window.text.columns[0].browser.viewport().palette().color(QPalette.ColorRole.Base)
    assert page.lightness() < 80 if mode == "dark" else page.lightness() > 200
    marks = mark_colours(window)
    assert marks and min(contrast(mark, page) for mark in marks) >= 3.0
    for view in charts(window):
        background = drawn_background(view)
        for item in view.scene().items():
            if isinstance(item, pg.AxisItem) and item.isVisible():
                assert contrast(item.textPen().color(), background) >= 4.5
    window.charts.setCurrentWidget(window.timeline)
    qtbot.wait(20)
    background = drawn_background(window.timeline._view)  # once shown: a hidden chart is not laid out yet
    lines = [window.timeline._series[i].curve.opts["pen"].color() for i in range(len(window.state.lanes))]
    floor = 3.0 if mode == "dark" else 2.0  # Okabe–Ito orange and sky blue are 2.3:1 on white
    assert min(contrast(line, background) for line in lines) >= floor
    for scatter in (window.timeline._divergence_marks, window.timeline._critical_marks):
        assert contrast(scatter.opts["brush"].color(), background) >= 3.0


def test_a_colour_in_either_palette_has_one_counterpart():
    for light, dark in zip(colours.LIGHT.lanes, colours.DARK.lanes, strict=True):
        assert colours.counterpart(light) == dark.lower() and colours.counterpart(dark) == light.lower()
    rng = random.Random(7)
    for _ in range(500):
        colour = "#" + "".join(f"{rng.randrange(256):02x}" for _ in range(3))
        assert colours.counterpart(colours.counterpart(colour)) == colour
    assert QColor(colours.counterpart("#202020")).lightness() > 200  # ink becomes light
    assert colours.counterpart("#ffffff") == colours.DARK.background


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_exported_images_keep_their_words_readable(qtbot, window, mode):
    """A chart's exported image and the text image: the ground is the palette's page and the darkest or lightest
    text on it (the title, the legend, the lanes' words) stands out from it, in either palette."""
    from gui.shell import image_export

    window.theme.set_mode(mode)
    qtbot.wait(20)
    window.charts.setCurrentWidget(window.timeline)
    qtbot.wait(20)
    figure = window.timeline.figure()
    images = [image_export.figure_image(figure), image_export.document_image(image_export.text_document(window.state))]
    for image in images:
        ground = image.pixelColor(2, 2)
        assert (ground.lightness() < 80) == (mode == "dark")
        title = [image.pixelColor(x, y) for x in range(16, min(image.width(), 400)) for y in range(16, 40)]
        assert max(contrast(pixel, ground) for pixel in title) >= 7.0, mode
