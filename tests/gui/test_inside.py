"""The inside views (Tokens, Attention, Logit lens) on hand-built explained runs (tests/inside_samples.py): every
cell drawn is the explanation's value (read back from the drawn items), the designed head that looks from the
contrast word back at the concessive one shows where it should, Chinese byte-level tokens read as their
characters, and each view exports a figure."""

from __future__ import annotations

import html

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetrics, QImage, QPainter

from gui.present.inside_data import LOOKED_AT, LOOKS_AT, SINK_LIMIT, STRONGEST, latest_settling
from gui.shell import image_export as export
from gui.views import style
from gui.views.inside.attention_view import COLOUR_MAP, AttentionView
from gui.views.inside.lens_view import LensView
from gui.views.inside.token_view import SPECIAL_BACKGROUND, TokenView
from tests import inside_samples as samples


@pytest.fixture
def english():
    return samples.explained_model(samples.ENGLISH)


@pytest.fixture
def chinese():
    return samples.explained_model(samples.CHINESE)


def shown(qtbot, widget, width=1000, height=600):
    qtbot.addWidget(widget)
    widget.resize(width, height)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


# ------------------------------------------------------------------------------------------------ attention


def test_attention_cells_are_the_explanations_weights(qtbot, english):
    view = shown(qtbot, AttentionView(english))
    result = english.explanation(0)
    but = samples.ENGLISH["contrast"]
    view.set_token(but)
    weights = result.attention[:, :, but, : but + 1].astype(np.float64)
    assert view.columns() == list(range(but + 1))
    np.testing.assert_allclose(view.grid(), weights.mean(axis=1), atol=1e-7)
    view.set_heads(1)
    np.testing.assert_allclose(view.grid(), weights[:, 1], atol=1e-7)
    assert view.grid()[1, samples.ENGLISH["concessive"]] == pytest.approx(samples.DESIGNED)
    view.set_heads(STRONGEST)
    np.testing.assert_allclose(view.grid(), weights.max(axis=1), atol=1e-7)
    high = np.nanmax(view.grid())
    for layer, column in ((1, 1), (0, 3), (2, 0)):
        value = view.grid()[layer, column]
        assert view.cell_colour(layer, column) == COLOUR_MAP.map(value / high, mode="qcolor").name()
    assert view.column_labels() == ["<|im_start|>", "Although", "·I", "·was", "·tired", ",", "·but"]


def test_a_model_with_sliding_windows_marks_the_layers_that_see_everything(qtbot, english):
    """Gemma 3: five of six layers see only the last 512 positions (ExplainResult.windows); the heatmap's layer
    labels mark the others with ● and the legend says what the mark means. A model without windows: no mark."""
    view = shown(qtbot, AttentionView(english))
    view.set_token(samples.ENGLISH["contrast"])
    labels = [text for _, text in view._plot.getAxis("left")._tickLevels[0]]
    assert labels == ["0"] and "●" not in view._legend.text()
    english.explanation(0).windows = [512, None, 512]
    view.redraw()
    labels = [text for _, text in view._plot.getAxis("left")._tickLevels[0]]
    assert labels == ["0", "1●"]
    assert "layers marked ● see every earlier position, the others only the last 512" in view._legend.text()


def test_leaving_out_position_0_rescales_each_row_and_says_so(qtbot, english):
    view = shown(qtbot, AttentionView(english))
    result = english.explanation(0)
    but, although = samples.ENGLISH["contrast"], samples.ENGLISH["concessive"]
    view.set_token(but)
    view.set_drop_first(True)
    grid = view.grid()
    mean = result.attention[:, :, but, : but + 1].astype(np.float64).mean(axis=1)
    assert np.isnan(grid[:, 0]).all() and view.cell_colour(0, 0) == "#ffffff"  # blank
    np.testing.assert_allclose(grid[:, 1:], mean[:, 1:] / (1 - mean[:, :1]), atol=1e-6)
    np.testing.assert_allclose(np.nansum(grid, axis=1), 1.0, atol=1e-6)
    assert "position 0 left out" in view._legend.text() and f"{SINK_LIMIT:.0%}" in view._legend.text()
    view.set_heads(1)
    assert view.grid()[1, although] == pytest.approx(samples.DESIGNED / (1 - samples.SINK), rel=1e-5)
    view.set_heads(STRONGEST)  # the strongest head is shown as computed: position 0 only hidden
    assert view.grid()[1, although] == pytest.approx(samples.DESIGNED)
    assert "not rescaled" in view._legend.text()


def test_a_click_shows_every_head_of_the_layer_and_the_strongest_head_in_words(qtbot, english):
    view = shown(qtbot, AttentionView(english))
    result = english.explanation(0)
    but, although = samples.ENGLISH["contrast"], samples.ENGLISH["concessive"]
    view.set_token(but)
    canvas = view._canvas
    qtbot.mouseClick(canvas.viewport(), Qt.MouseButton.LeftButton,
                     pos=canvas.mapFromScene(view.scene_pos_of(1, although)))
    assert view.picked() == (1, although)
    assert view.head_bars() == pytest.approx(result.attention[1, :, but, although].tolist())
    assert view.strip_bars() == pytest.approx(view.grid()[1].tolist())  # the layer's row above the heatmap
    readout = view.readout()
    assert "“·but”@6 → “Although”@1" in readout
    assert f"layer 1 head 1 {samples.DESIGNED:.2f}" in readout
    assert "top tokens attended" in readout


def test_who_looks_at_the_concessive_word_peaks_at_the_contrast_word(qtbot, english):
    view = shown(qtbot, AttentionView(english))
    although, but = samples.ENGLISH["concessive"], samples.ENGLISH["contrast"]
    view.set_token(although)
    view.set_mode(LOOKED_AT)
    view.set_heads(1)
    view.set_drop_first(True)
    result = english.explanation(0)
    assert view.columns() == list(range(although, len(result.tokens)))
    row = view.grid()[1]
    later = row[1:]  # the tokens after "Although"
    assert int(np.argmax(later)) + although + 1 == but  # the delayed release: a peak at " but"
    column = but - although
    assert row[column] == pytest.approx(samples.DESIGNED / (1 - samples.SINK), rel=1e-5)
    assert view.column_labels()[0] == "Although" and view.column_labels()[column] == "·but"


def test_switching_mode_after_a_click_follows_the_picked_pair(qtbot, english):
    view = shown(qtbot, AttentionView(english))
    but, although = samples.ENGLISH["contrast"], samples.ENGLISH["concessive"]
    view.set_token(but)
    view.pick(1, although)
    view.set_mode(LOOKED_AT)  # who looks at "Although" (the token " but" looked at)
    assert view.token == although and view.columns()[0] == although
    view.set_mode(LOOKS_AT)
    assert view.token == although  # no pick since: the token stays


def test_selecting_a_generated_step_shows_its_token(qtbot, english):
    view = shown(qtbot, AttentionView(english))
    english.select(0, 1)  # the lane's " went"
    prompt_length = len(samples.ENGLISH["prompt"])
    assert view.token == prompt_length + 1
    assert view.grid().shape == (samples.LAYERS, prompt_length + 2)


def test_an_unexplained_lane_offers_to_explain_it(qtbot, english):
    english.trace.explanations = []
    english.events.emit("explanations_changed")
    view = shown(qtbot, AttentionView(english))
    requested = []
    view.header.explainRequested.connect(requested.append)
    english.select(0, 0)
    assert view.header.explain_button.isVisible() and "not explained yet" in view.header.title.text()
    qtbot.mouseClick(view.header.explain_button, Qt.MouseButton.LeftButton)
    assert requested == [0] and view.figure() is None


# ------------------------------------------------------------------------------------------------ logit lens


def test_lens_cells_are_the_explanations_top_tokens(qtbot, english):
    view = shown(qtbot, LensView(english), height=700)
    result = english.explanation(0)
    but = samples.ENGLISH["contrast"]
    view.set_position(but)
    for row in range(samples.LAYERS + 1):
        for rank in range(samples.TOP_K):
            entry = result.lens_top(row, but)[rank]
            text, prob = view.cell(row, rank)
            assert prob == pytest.approx(entry.prob)
            assert text == entry.text.replace(" ", "·")
            assert view.cell_colour(row, rank) == view_colour(entry.prob)
    drawn = view.drawn_texts()
    assert drawn[:3] == [",", "·I", "·the"] and len(drawn) == (samples.LAYERS + 1) * samples.TOP_K


def view_colour(prob: float) -> str:
    from gui.views.inside.lens_view import COLOUR_MAP as LENS_MAP

    return LENS_MAP.map(prob, mode="qcolor").name()


def test_lens_frames_the_final_choice_and_says_where_it_settles(qtbot, english):
    view = shown(qtbot, LensView(english), height=700)
    but = samples.ENGLISH["contrast"]
    view.set_position(but)
    i_id = english.explanation(0).tokens[but + 1].id
    assert sorted(view.final_cells()) == [(0, 1), (1, 1), (2, 0), (3, 0)]
    probs = [english.explanation(0).lens_probs[row, but, rank] for row, rank in sorted(view.final_cells())]
    assert view.journey_curve() == pytest.approx(probs)
    readout = view.readout()
    assert "“·I”" in readout and "top-1 after layer 1 and from there on" in readout  # row 2 = after layer 1
    assert i_id == english.explanation(0).lens_ids[-1, but, 0]


def test_selecting_a_step_reads_the_lens_where_its_token_was_predicted(qtbot, english):
    view = shown(qtbot, LensView(english), height=700)
    english.select(0, 0)
    assert view.position == len(samples.ENGLISH["prompt"]) - 1


def test_latest_settling_finds_the_generated_token_decided_last(english):
    result = english.explanation(0)
    # the designed late choice (after " but") is the prompt's last position: it predicts the lane's first token
    assert latest_settling(result) == samples.ENGLISH["contrast"]


# ------------------------------------------------------------------------------------------------ tokens


def test_tokens_view_draws_every_token_with_its_id(qtbot, english):
    view = shown(qtbot, TokenView(english))
    view.state.model_files = lambda: (None, 8192)
    english.events.emit("model_changed")
    trace = english.trace
    assert view.drawn_labels(0) == ["<|im_start|>", "Although", "·I", "·was", "·tired", ",", "·but"]
    assert view.drawn_ids(0) == trace.prompt.ids
    assert view.drawn_labels(1) == ["·I", "·went"] and view.drawn_ids(1) == trace.lanes[0].token_ids
    assert view.chip_colour(0, 0) == QColor(SPECIAL_BACKGROUND).name()  # <|im_start|>
    assert view.chip_colour(0, 1) != view.chip_colour(0, 2)  # neighbours alternate
    summary = view.summary()
    assert "prompt 7 tokens" in summary and "(1 special)" in summary and "9 tokens" in summary
    assert "8192 positions" in summary


def test_tokens_view_brackets_a_chinese_character_under_its_byte_tokens(qtbot, chinese):
    view = shown(qtbot, TokenView(chinese))
    labels = view.drawn_labels(0)
    assert labels[1:3] == ["‹e6 88›", "‹91›"] and labels[14] == "，"
    assert view.captions()[:6] == ["我", "虽", "然", "很", "累", "但"]
    assert view.captions()[6:] == ["还"]  # the lane's line
    assert view.drawn_labels(1) == ["‹e8 bf›", "‹98›", "是"]


def test_tokens_view_without_the_model_or_an_explanation_shows_the_prompt_ids(qtbot, english):
    english.trace.explanations = []
    view = shown(qtbot, TokenView(english))
    english.events.emit("explanations_changed")
    assert view.drawn_labels(0) == ["?"] * 7 and view.drawn_ids(0) == english.trace.prompt.ids
    assert "ids only" in view.summary() and "unknown here" in view.summary()


def test_a_click_on_a_lanes_token_selects_its_step(qtbot, english):
    view = shown(qtbot, TokenView(english))
    rect = view.chip_scene_rect(1, 1)
    qtbot.mouseClick(view._view.viewport(), Qt.MouseButton.LeftButton,
                     pos=view._view.mapFromScene(rect.center()))
    assert english.selection is not None and (english.selection.lane, english.selection.step) == (0, 1)


# ------------------------------------------------------------------------------------------------ Chinese


def draws_glyph(text: str) -> bool:
    """Whether the window's font draws `text` as a glyph, not the empty box of a missing one."""

    def image(what: str) -> QImage:
        picture = QImage(40, 40, QImage.Format.Format_ARGB32)
        picture.fill(QColor("white"))
        painter = QPainter(picture)
        painter.setFont(style.ui_font(14))
        painter.drawText(4, 30, what)
        painter.end()
        return picture

    return image(text) != image("\ue000")  # a private-use character: no font has it


def test_chinese_labels_are_characters_the_fonts_draw(qtbot, chinese):
    attention = shown(qtbot, AttentionView(chinese))
    contrast, concessive = samples.CHINESE["contrast"], samples.CHINESE["concessive"]
    attention.set_token(contrast)
    labels = attention.column_labels()
    assert labels[1:6] == ["我", "我", "虽", "虽", "虽"] and labels[-1] == "但"
    attention.set_heads(1)
    assert attention.grid()[1, concessive] == pytest.approx(samples.DESIGNED)
    assert "“但”@16 (prompt)" in attention._title
    for character in "我虽然很累但还是":
        assert draws_glyph(character), character
    assert not draws_glyph("\ue001")  # the check itself can fail


# ------------------------------------------------------------------------------------------------ export


def coloured_pixels(image: QImage) -> int:
    """How many of an image's pixels (every third row and column) are coloured, not grey or white."""
    pixels = [image.pixelColor(x, y) for x in range(0, image.width(), 3) for y in range(0, image.height(), 3)]
    return sum(colour.hsvSaturation() > 60 and colour.value() > 40 for colour in pixels)


def test_each_inside_view_exports_a_figure(qtbot, english, tmp_path):
    """The exported figure holds what the view shows: its title, and its scene's coloured cells (about as many
    coloured pixels as the view on screen: the plot is exported at its own size), in the PNG and the SVG."""
    views = {"attention": AttentionView(english), "logit_lens": LensView(english), "tokens": TokenView(english)}
    for name, view in views.items():
        shown(qtbot, view)
        figure = view.figure()
        assert figure is not None and figure.title, name
        image = export.figure_image(figure)
        assert image.width() > 300 and image.height() > 200
        on_screen, exported = coloured_pixels(view.grab().toImage()), coloured_pixels(image)
        assert on_screen > 30 and 0.6 * on_screen < exported < 1.6 * on_screen, (name, on_screen, exported)
        png = export.save_png(image, tmp_path / f"{name}.png")
        assert coloured_pixels(QImage(str(png))) == exported
        svg = export.save_figure_svg(figure, tmp_path / f"{name}.svg")
        text = svg.read_text(encoding="utf-8")
        assert f"<title>{html.escape(figure.title, quote=False)}</title>" in text, name
        assert any(f"<{shape}" in text for shape in ("path", "image", "rect", "polyline", "polygon", "text")), name


def test_lens_cell_texts_fit_their_cells_when_the_panel_narrows(qtbot, english):
    # a narrow panel (the step views beside the run views): long pieces (the embeddings' row) ran into their
    # neighbours' cells; each is cut to its cell, and hovering a cell reads it whole (cell()). Below the width of
    # every rank at MIN_CELL_PX the best ranks are shown (at least MIN_RANKS: the samples have three): in the
    # default model's ten, tests/gui/test_inside_default_model.py
    from gui.views.inside.lens_view import MIN_RANKS

    view = shown(qtbot, LensView(english), width=1000, height=700)
    view.set_position(samples.ENGLISH["contrast"])
    view._texts[0][0] = "·unbelievably_long_piece"
    view._fit_cells()
    metrics = QFontMetrics(style.ui_font(8))
    assert view.drawn_texts()[0] == "·unbelievably_long_piece"  # wide enough
    view.resize(170, 700)
    qtbot.waitUntil(lambda: view.drawn_texts()[0].endswith("…"), timeout=2000)
    assert view._probs.shape[1] == MIN_RANKS == samples.TOP_K
    cell_px = view._table.vb.width() / samples.TOP_K
    assert all(metrics.horizontalAdvance(text) <= cell_px for text in view.drawn_texts())


def test_the_attention_controls_fit_the_step_panels_default_width(qtbot, english):
    # in one row at the step panel's default width (≈ 380 px) every combo box and the check box were cut short
    view = shown(qtbot, AttentionView(english), width=380, height=600)
    for widget in (view._mode_combo, view._token_combo, view._heads_combo, view._drop_box):
        assert widget.width() >= widget.sizeHint().width(), widget


@pytest.mark.parametrize("sample", ["english", "chinese"])
def test_at_the_default_size_the_heatmap_its_heads_and_its_labels_all_show(qtbot, sample, request):
    """The step panel at 1280×800 is about 385 × 420 px (issue 33, item 6): the heatmap was under 100 px high,
    the picked cell's per-head bars were pushed past the panel's edge by a title, and a bold (picked) token's
    label was drawn over its neighbour's."""
    state = request.getfixturevalue(sample)
    prompt = samples.ENGLISH if sample == "english" else samples.CHINESE
    view = shown(qtbot, AttentionView(state), width=385, height=420)
    state.select(0, 0)
    view.set_token(prompt["contrast"])
    view.pick(1, prompt["concessive"])
    qtbot.wait(50)
    box = view._plot.vb.sceneBoundingRect()
    assert box.height() >= 150 and box.width() >= 150, box
    canvas = view._canvas.viewport().rect()
    heads = view._head_plot.vb.sceneBoundingRect()
    assert view._canvas.mapFromScene(heads).boundingRect().right() <= canvas.right(), (heads, canvas)
    assert heads.width() >= 40 and len(view.head_bars()) == state.explanation(0).attention.shape[1]
    axis = view._axis
    drawn, every = axis.drawn_columns(), axis.shown_every()
    assert set(axis.highlight) <= set(drawn)
    plain = [c for c in drawn if c not in axis.highlight]
    for column in plain:  # a plain label keeps its distance from every other drawn label
        assert all(abs(column - other) >= every for other in drawn if other != column), (column, drawn, every)
    view.resize(900, 800)  # a wide, tall panel titles the strip above the heatmap; narrow again, it must let go
    qtbot.waitUntil(view.strip_shown, timeout=2000)
    view.resize(345, 420)
    qtbot.waitUntil(lambda: not view.strip_shown(), timeout=2000)
    qtbot.wait(50)
    assert view._canvas.ci.geometry().width() <= view._canvas.viewport().width() + 1


def test_the_heatmap_keeps_a_readable_size_in_the_step_panel(qtbot, english):
    # at 1280×800 the step panel is about 385 × 420 px: the controls, legend and a five-line readout left the
    # heatmap a strip a few dozen pixels high
    view = shown(qtbot, AttentionView(english), width=385, height=420)
    english.select(0, 0)
    view.set_token(samples.ENGLISH["contrast"])
    qtbot.wait(50)
    box = view._plot.vb.sceneBoundingRect()
    assert box.height() >= 150 and box.width() >= 150, box  # was 23 px high, then 90
    assert not view.strip_shown()  # the picked row's bars again: left out where they squeezed the heatmap
    assert view._readout.text()  # the readout is there, scrolling past its lines
    view.resize(385, 800)  # a taller panel: room for the bars too
    qtbot.waitUntil(view.strip_shown, timeout=2000)
    assert view._plot.vb.sceneBoundingRect().height() > box.height()


def test_in_the_dark_palette_the_heatmaps_zero_is_the_dark_background(qtbot, english):
    """The walkthrough in dark: the attention heatmap and the logit lens stayed white boxes (their scales start at
    white, the light background). In dark their zero is the dark background and a strong weight is light."""
    from gui.shell.theme import app_theme

    attention = shown(qtbot, AttentionView(english), width=700, height=600)
    lens = shown(qtbot, LensView(english), width=700, height=600)
    english.select(0, 0)
    attention.set_token(samples.ENGLISH["contrast"])
    grid = attention.grid()
    low = tuple(int(i) for i in np.argwhere(grid == np.nanmin(grid))[0])
    high = tuple(int(i) for i in np.argwhere(grid == np.nanmax(grid))[0])
    light = attention.cell_colour(*low), attention.cell_colour(*high)
    assert QColor(light[0]).lightness() > 230 and QColor(light[1]).lightness() < 100
    theme = app_theme()
    for widget in (attention, lens):
        theme.watch(widget)
    try:
        theme.set_mode("dark")
        qtbot.wait(20)
        assert QColor(attention.cell_colour(*low)).lightness() < 60, attention.cell_colour(*low)
        assert QColor(attention.cell_colour(*high)).lightness() > 150, attention.cell_colour(*high)
        image = attention._canvas.grab().toImage()
        centre = attention._canvas.mapFromScene(attention.scene_pos_of(*low))
        assert image.pixelColor(centre).lightness() < 60  # what is drawn, not only what is said
        probs = lens._probs
        row, rank = (int(i) for i in np.unravel_index(np.argmin(probs), probs.shape))
        assert QColor(lens.cell_colour(row, rank)).lightness() < 90, lens.cell_colour(row, rank)  # little probability
        theme.set_mode("light")
        qtbot.wait(20)
        assert (attention.cell_colour(*low), attention.cell_colour(*high)) == light
    finally:
        theme.set_mode("system")
