"""Issue 33, item 12, as a new user met it: in Chinese the lane editor showed its 38 parameters only as Hugging
Face identifiers. Each now has a Chinese label, the HF (or llama.cpp) name beside it in the tooltip, as LM Studio
and text-generation-webui's translations do; English keeps the HF names; one word, 车道, for "lane"."""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtWidgets import QLabel

import decoding.chain.parameters
from gui.present.lane_fields import FIELDS, PARAMETER_LABELS
from gui.state.run_state import RunState
from gui.views.lanes_editor import LanesEditor
from tests.gui.test_i18n import chinese  # noqa: F401 (the fixture)

CJK = re.compile(r"[\u3400-\u9fff]")
TS = Path(__file__).resolve().parents[2] / "gui" / "i18n" / "translations" / "branchpoint_zh_CN.ts"


def labels(editor: LanesEditor) -> dict[str, QLabel]:
    return {f.name: editor.form.findChild(QLabel, f"label_{f.name}") for f in FIELDS}


def test_every_parameter_has_a_label_entry():
    assert set(PARAMETER_LABELS) == {p.name for p in decoding.chain.parameters.PARAMETERS}


def test_the_english_editor_names_parameters_as_hugging_face_does(qtbot):
    editor = LanesEditor(RunState())
    qtbot.addWidget(editor)
    assert {name: label.text() for name, label in labels(editor).items()} == {f.name: f.name for f in FIELDS}


def test_the_chinese_editor_labels_every_parameter_in_chinese_with_its_hf_name_in_the_tooltip(qtbot, chinese):  # noqa: F811
    editor = LanesEditor(RunState())
    qtbot.addWidget(editor)
    shown = labels(editor)
    assert all(CJK.search(label.text()) for label in shown.values()), {n: w.text() for n, w in shown.items()}
    assert len({label.text() for label in shown.values()}) == len(shown)  # 38 different words
    for name, label in shown.items():
        assert label.toolTip().startswith(f"<b>{name}</b> · {label.text()}<br>"), name
        assert editor.form.widgets[name].toolTip() == label.toolTip()
    assert shown["temperature"].text() == "温度" and shown["top_p"].text() == "核采样阈值"


def test_the_catalogue_says_lane_one_way():
    text = TS.read_text(encoding="utf-8")
    assert "泳道" not in text and text.count("车道") > 100
