"""The lane editor's new parameters and its chain, as a user works them: list-valued parameters typed on one line,
the llama.cpp samplers, refusals naming two parameters, the chain reordered with ▲▼ and by preset, the order pair
added from the Add lane menu, run, saved and opened again with its order."""

from __future__ import annotations

from PySide6.QtCore import Qt

from decoding.chain.parameters import LLAMA_CPP_ORDER
from decoding.chain.spec import ORDER_PAIR, LaneSpec
from gui.state.run_state import RunState
from gui.views.lanes_editor import LanesEditor, auto_name
from tests.gui_helpers import run_and_wait, wait_idle


def _editor(qtbot, *specs: LaneSpec) -> LanesEditor:
    editor = LanesEditor(RunState(list(specs) or [LaneSpec("greedy")]))
    qtbot.addWidget(editor)
    editor.show()
    return editor


def _type(qtbot, editor: LanesEditor, name: str, text: str) -> None:
    widget = editor.form.widgets[name]
    widget.clear()
    qtbot.keyClicks(widget, text)
    qtbot.keyClick(widget, Qt.Key.Key_Return)


def _strategy(editor: LanesEditor, row: int) -> str:
    return editor.table.item(row, 1).text()


def test_list_valued_parameters_name_the_lane_and_read_back(qtbot):
    lane = LaneSpec("suppress", do_sample=True, suppress_tokens=(28, 30), sequence_bias=(((5, 6), -2.5),))
    assert auto_name(lane) == "sequence-bias 5 6:-2.5 suppress-tokens 28|30"  # `:g` raised on these lists
    editor = _editor(qtbot, lane)
    assert editor.form.widgets["suppress_tokens"].text() == "28|30"
    assert editor.form.widgets["sequence_bias"].text() == "5 6:-2.5"
    _type(qtbot, editor, "bad_words_ids", "5 6|7")
    spec = editor.specs()[0]
    assert spec.bad_words_ids == ((5, 6), (7,)) and spec.suppress_tokens == (28, 30)  # the others kept
    assert "bad_words_ids 5 6|7" in _strategy(editor, 0)
    _type(qtbot, editor, "suppress_tokens", "28|x")
    assert editor.message.text() == ("Refused: invalid suppress_tokens='28|x': allowed a list of token ids "
                                     "(integers >= 0)")
    assert editor.specs()[0].suppress_tokens == (28, 30) and editor.form.widgets["suppress_tokens"].text() == "28|30"


def test_the_llama_cpp_samplers_and_their_rules(qtbot):
    editor = _editor(qtbot, LaneSpec("T", do_sample=True, temperature=0.8, top_k=40))
    widgets = editor.form.widgets
    widgets["top_n_sigma"].setValue(1.5)
    widgets["dry_multiplier"].setValue(0.8)
    spec = editor.specs()[0]
    assert (spec.top_n_sigma, spec.dry_multiplier, spec.dry_base) == (1.5, 0.8, 1.75)  # DRY's companions: defaults
    assert spec.name == "T 0.8 dry-multiplier 0.8 +2"  # two processors named, the others counted (issue 33)
    assert editor.form.chain.chain() == ["dry_multiplier", "temperature", "top_k", "top_n_sigma"]
    widgets["mirostat"].setValue(2)  # mirostat with top-k: refused, naming both
    assert editor.message.text() == ("Refused: invalid top_k=40: allowed unset with mirostat=2 (mirostat chooses its "
                                     "own truncation, as llama.cpp's mirostat replaces its other samplers)")
    assert editor.specs()[0].mirostat is None and widgets["mirostat"].value() == 0
    widgets["do_sample"].setChecked(False)  # greedy: the sampling-only parameters go, DRY stays
    spec = editor.specs()[0]
    assert (spec.top_n_sigma, spec.top_k, spec.dry_multiplier) == (None, None, 0.8)
    assert editor.form.chain.chain() == ["dry_multiplier"] and editor.message.text() == ""
    assert not widgets["top_n_sigma"].isEnabled() and widgets["dry_base"].isEnabled()
    widgets["dry_multiplier"].setValue(0.0)
    widgets["dry_base"].setValue(2.0)  # a companion without its processor
    assert editor.message.text() == ("Refused: invalid dry_base=2.0: allowed its default (1.75) unless "
                                     "dry_multiplier is set: it configures that processor")


def test_the_chain_reorders_with_the_buttons_and_the_presets(qtbot):
    editor = _editor(qtbot, ORDER_PAIR[0])
    chain = editor.form.chain
    assert chain.chain() == ["temperature", "top_k", "top_p", "min_p"]
    assert chain.preset.currentText() == "transformers order" and chain.selector.text() == "then sample"
    assert [chain.list.item(i).text() for i in range(4)] == ["1. temperature", "2. top_k", "3. top_p", "4. min_p"]
    chain.list.setCurrentRow(0)
    for _ in range(3):
        qtbot.mouseClick(chain.down, Qt.MouseButton.LeftButton)
    spec = editor.specs()[0]
    assert spec.processors() == ["top_k", "top_p", "min_p", "temperature"]
    assert chain.preset.currentText() == "llama.cpp order"  # the same chain as llama.cpp orders it
    assert chain.list.currentRow() == 3 and chain.chain()[3] == "temperature"
    chain.list.setCurrentRow(2)
    qtbot.mouseClick(chain.up, Qt.MouseButton.LeftButton)  # min_p before top_p: neither preset
    assert editor.specs()[0].processors() == ["top_k", "min_p", "top_p", "temperature"]
    assert chain.preset.currentText() == "custom order" and _strategy(editor, 0).endswith("custom order")
    chain.preset.activated.emit(0)  # the user picks "transformers order"
    assert editor.specs()[0].processor_order is None and chain.chain()[0] == "temperature"
    chain.preset.activated.emit(1)
    assert editor.specs()[0].processor_order == LLAMA_CPP_ORDER
    assert "llama.cpp order" in _strategy(editor, 0)


def test_the_order_pair_runs_saves_and_reopens_with_its_order(qtbot, window, make_window, tmp_path):
    editor = window.lanes
    pair = next(a for a in editor.add_button.menu().actions() if a.text() == "Order pair: transformers vs llama.cpp")
    before = len(editor.specs())
    pair.trigger()
    specs = editor.specs()
    assert specs[before:] == list(ORDER_PAIR) and editor.selected_index() == before + 1
    assert editor.form.chain.preset.currentText() == "llama.cpp order"
    assert editor.form.chain.chain() == ["top_k", "top_p", "min_p", "temperature"]
    run_and_wait(qtbot, window, max_new_tokens=6)
    stages = [[stage.name for stage in window.state.traces[i].steps[0].stages] for i in (before, before + 1)]
    assert stages == [["temperature", "top_k", "top_p", "min_p"], ["top_k", "top_p", "min_p", "temperature"]]
    path = tmp_path / "pair.json"
    window.files.save(path)
    reopened = make_window(None)
    reopened.files.open(path)
    assert reopened.lanes.specs()[before + 1].processor_order == LLAMA_CPP_ORDER
    reopened.lanes.table.selectRow(before + 1)
    assert reopened.lanes.form.chain.preset.currentText() == "llama.cpp order"


def test_the_inspector_shows_the_chain_stage_by_stage(qtbot, window):
    window.lanes.add_order_pair()
    llama = len(window.state.lanes) - 1
    run_and_wait(qtbot, window, max_new_tokens=6)
    window.state.select(llama, 2)
    record = window.state.traces[llama].steps[2]
    table = window.inspector.stage_table()
    assert table[0] == ["stage", "kept", "mass kept", "rank", "p"]
    assert [line[0] for line in table[1:]] == ["raw (before the chain)", "top_k", "top_p", "min_p", "temperature"]
    assert table[2][1] == "40" and table[-1][4] == f"{record.prob:.4f}"  # top-k kept 40; the last stage: the record
    for line, stage in zip(table[2:], record.stages, strict=True):
        assert line[1:3] == [f"{stage.kept:,}", f"{stage.mass:.4f}"] and line[3].endswith(f"#{stage.rank + 1}")
    assert "varentropy" in window.inspector.numbers_text()
    outsider = 383  # not among the 40 most likely at step 2 (the tiny model's last id): the top-k stage removes it
    assert outsider not in record.top_raw.ids
    window.inspector.forceRequested.emit(2, outsider)  # "Force … for all lanes at step 2"
    wait_idle(qtbot, window)
    window.state.select(llama, 2)
    stages = window.state.traces[llama].steps[2].stages
    assert [stage.rank for stage in stages] == [None] * 4
    table = window.inspector.stage_table()
    assert table[2][0] == "top_k" and table[2][3] == "✗ removed here" and table[3][3] == "—"
    greedy = 0
    window.state.select(greedy, 2)  # no chain: no table
    assert window.inspector.stage_table() == [] and not window.inspector._stages.isVisible()


def test_the_entropy_plane_shows_every_step_and_the_adaptive_decisions(qtbot, window):
    window.lanes.add_spec(LaneSpec("adaptive", do_sample=True, adaptive=True, seed=3))
    adaptive = len(window.state.lanes) - 1
    run_and_wait(qtbot, window, max_new_tokens=8)
    window.show_view("entropy_plane")
    plane = window.entropy_plane
    assert plane.isVisible()
    for index, lane in enumerate(window.state.traces):
        points = plane.points(index)
        assert [(p.step, p.entropy, p.varentropy) for p in points] == [
            (s.step, s.entropy_raw, s.varentropy_raw) for s in lane.steps]
    decisions = [p.decision for p in plane.points(adaptive)]
    assert decisions == [s.adaptive for s in window.state.traces[adaptive].steps] and None not in decisions
    assert all(p.decision is None for p in plane.points(0))
    assert "adaptive" in plane._legend.text() and "sample" in plane._legend.text()
    position = plane._view.mapFromScene(plane.scene_pos_of(adaptive, 3))
    qtbot.mouseClick(plane._view.viewport(), Qt.MouseButton.LeftButton, pos=position)
    selected = window.state.selection  # step 3, or a step drawn on top of it (the tiny model's steps look alike)
    picked = plane._view.mapFromScene(plane.scene_pos_of(selected.lane, selected.step))
    assert selected.lane == adaptive and (picked - position).manhattanLength() <= 8
    assert plane.selected_ring() == plane.points(adaptive)[selected.step].xy
    record = window.state.traces[adaptive].steps[selected.step]
    assert f"adaptive {record.adaptive}" in window.inspector.numbers_text()
    plane._distribution.setCurrentIndex(1)  # after the lane's processors
    assert [p.varentropy for p in plane.points(adaptive)] == [s.varentropy for s in window.state.traces[adaptive].steps]


def test_the_order_pair_tour_stop_selects_where_the_two_orders_part(qtbot, window):
    assert window.tour.start("order_pair")
    for _ in range(2):  # the run, then the selection after it
        wait_idle(qtbot, window)
        qtbot.wait(50)
    assert [lane.spec for lane in window.state.lanes] == list(ORDER_PAIR) and window.view_shown("compare")
    parted = window.state.divergence_step(1)
    assert parted is not None  # the same seed, another order: the texts part
    assert window.state.traces[0].token_ids[:parted] == window.state.traces[1].token_ids[:parted]
    assert (window.state.selection.lane, window.state.selection.step) == (1, parted)
    assert [line[0] for line in window.inspector.stage_table()[2:]] == ["top_k", "top_p", "min_p", "temperature"]
    assert window.state.notice.text.startswith("The same settings in two orders: transformers vs llama.cpp — ")
