"""The Chinese interface: chosen from LANGUAGE / LC_ALL / LC_MESSAGES / LANG (or the setting), compiled from the
repository's .ts by PySide6's lrelease into the cache, loaded into a real window: known strings are Chinese,
and no visible button, label, tab, menu or menu entry of the window is left in English. The .ts holds every
string pyside6-lupdate collects from gui/, each translated."""

from __future__ import annotations

import gc
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QGroupBox,
    QLabel,
    QMenu,
    QTabBar,
    QTabWidget,
    QWidget,
)

import decoding.chain.parameters
from decoding.records.trace import RunTrace
from gui.app import make_application
from gui.i18n import language
from gui.main_window import MainWindow
from gui.views.model_picker import ACTIONS
from runfiles import run_file
from tests.decoding.test_jsonio import fake_trace

REPO = Path(__file__).resolve().parents[2]
TS = REPO / "gui" / "i18n" / "translations" / "branchpoint_zh_CN.ts"
CJK = re.compile(r"[\u3400-\u9fff]")

# Words that stay as they are in Chinese: Hugging Face parameter names and their abbreviations, units and symbols,
# key names, the product's name, the language's own name in the language menu.
KEPT_WORDS = {p.name for p in decoding.chain.parameters.PARAMETERS} | {
    "Branchpoint", "English", "CPU", "CUDA", "PNG", "SVG", "JSON", "ONNX", "GGUF", "Hub", "PyPI", "True", "False",
    "never", "id",
    "T", "p", "p₁", "p₂", "u", "H", "lp", "rep", "no-repeat", "typical", "top-k", "top-p", "min-p", "Top-k",
    "Top-p", "Min-p", "DRY", "XTC", "Mirostat",
    "Logit", "logit", "logits", "lm_head", "transformers", "llama", "cpp", "Hugging", "Face", "Ctrl", "Shift", "Alt",
    "Esc", "Up", "Down", "Left", "Right", "Home", "End", "Enter", "Return", "L", "O", "S", "E", "Z", "Q", "F1", "F11",
}


def lane_and_model_names(window: MainWindow) -> set[str]:
    names = {lane.name for lane in window.state.lanes} | {window.state.model_name}
    picker = window.model_picker  # its models' lines (name · precision · size), not its command entries
    return names | {picker.itemText(i) for i in range(picker.count()) if picker.itemData(i) not in ACTIONS}


def visible_texts(window: MainWindow) -> list[tuple[str, str]]:
    """(where, text) for every text a user sees: widgets shown, tab titles, the menu bar and every menu entry."""
    found = []
    for widget in window.findChildren(QWidget):
        if not widget.isVisible():
            continue
        if isinstance(widget, QAbstractButton) and widget.text():
            found.append((type(widget).__name__, widget.text()))
        elif isinstance(widget, QLabel) and widget.text():
            document_text = re.sub(r"<[^>]+>", " ", widget.text()).replace("&nbsp;", " ")
            found.append(("QLabel", document_text))
        elif isinstance(widget, QTabBar):
            found += [("tab", widget.tabText(i)) for i in range(widget.count())]
        elif isinstance(widget, QGroupBox):
            found.append(("group", widget.title()))
        elif isinstance(widget, QComboBox):
            found += [("combo", widget.itemText(i)) for i in range(widget.count())]

    def menu_entries(menu: QMenu, path: str) -> None:
        for action in menu.actions():
            if action.isSeparator():
                continue
            found.append((f"menu {path}", action.text()))
            if action.menu() is not None:
                menu_entries(action.menu(), f"{path} › {action.text()}")

    for action in window.menuBar().actions():
        found.append(("menu bar", action.text()))
        menu_entries(action.menu(), action.text())
    return found


def untranslated(window: MainWindow) -> list[tuple[str, str]]:
    """English words left in what the window shows, once lane and model names, the tokens it quotes (“…”) and
    file names are taken out."""
    names = sorted(lane_and_model_names(window) - {""}, key=len, reverse=True)
    left = []
    for where, text in visible_texts(window):
        text = re.sub(r"“[^”]*”|\S+\.(json|onnx)\b", " ", text.replace("&", ""))
        for name in names:
            text = text.replace(name, " ")
        for word in re.findall(r"[A-Za-z][\w\-]*", text):
            if word not in KEPT_WORDS and not re.fullmatch(r"e[-+]?\d+|F\d+|[A-Z]", word):
                left.append((where, word))
    return left


@pytest.fixture
def chinese(qtbot, monkeypatch, tmp_path):
    """The application with the Chinese translation loaded as run_app loads it under LANG=zh_CN.UTF-8."""
    for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path / "cache"))
    app = make_application([])
    assert language.install(app, language.chosen_language("system")) == ""
    yield app
    language.uninstall(app)


def test_the_locale_chooses_the_language():
    assert language.system_language({"LANG": "zh_CN.UTF-8"}) == "zh_CN"
    assert language.system_language({"LANG": "en_US.UTF-8"}) == "en"
    assert language.system_language({"LANGUAGE": "zh_CN:en", "LANG": "en_US.UTF-8"}) == "zh_CN"
    assert language.system_language({"LC_ALL": "zh_TW.UTF-8", "LANG": "en_US.UTF-8"}) == "zh_CN"
    assert language.system_language({"LANGUAGE": "zh_CN", "LC_ALL": "C"}) == "en"  # gettext: C ignores LANGUAGE
    assert language.system_language({}) == "en"
    assert language.chosen_language("en", {"LANG": "zh_CN.UTF-8"}) == "en"


def fanout_trace() -> RunTrace:
    """A run of one lane fanned out to four seeds (the fan-out view's summary, the text column's fan-out title)."""
    from tests.gui.test_fanout import TOKENS, fanout_run

    return fanout_run(TOKENS)


@pytest.mark.parametrize("trace", [fake_trace, fanout_trace])
def test_the_chinese_window_shows_no_english(qtbot, chinese, tmp_path, tiny_model_dir, trace):
    window = MainWindow(tiny_model_dir)  # deleted below, not by qtbot
    try:  # a window left running (its model preloading) when the test fails crashed the teardown, hiding why
        window.show()
        window.files.open(run_file.save(trace(), tmp_path / "run.json"))
        window.state.select(0, 2)
        qtbot.wait(50)
        menus = [action.text() for action in window.menuBar().actions()]
        assert menus == ["文件(&F)", "运行(&R)", "车道(&L)", "视图(&V)", "帮助(&H)"]
        assert window.prompt.run_button.text() == "运行"
        left = untranslated(window)
        for tabs in window.findChildren(QTabWidget):  # every tab of every tab widget shown in turn
            for index in range(tabs.count()):
                tabs.setCurrentIndex(index)
                qtbot.wait(20)
                left += untranslated(window)
        assert not sorted(set(left)), f"left in English: {sorted(set(left))}"
    finally:
        window.shutdown()
        window.deleteLater()  # Qt deletes it now: Python would keep it until exit, and pyqtgraph's items with it
        qtbot.wait(10)
        gc.collect()


def test_the_catalogue_is_complete():
    """Every string pyside6-lupdate collects from gui/ is in the .ts, translated (no unfinished entry), with the
    same {fields} as its source."""
    collected = TS.with_name("collected.ts")
    lupdate = Path(sys.executable).parent / "pyside6-lupdate"
    sources = sorted(str(p) for p in (REPO / "gui").rglob("*.py"))
    done = subprocess.run([str(lupdate), "-silent", "-locations", "none", *sources, "-ts", str(collected)],
                          capture_output=True, text=True, timeout=300)
    try:
        assert done.returncode == 0, done.stderr
        wanted = {(c.findtext("name"), m.findtext("source")) for c in ET.parse(collected).getroot()
                  for m in c.findall("message")}
    finally:
        collected.unlink(missing_ok=True)
    ours = {}
    for context in ET.parse(TS).getroot():
        for message in context.findall("message"):
            translation = message.find("translation")
            ours[(context.findtext("name"), message.findtext("source"))] = translation
    missing = wanted - set(ours)
    assert not missing, f"not in the .ts: {sorted(missing)[:10]}"
    for key in wanted:
        translation = ours[key]
        assert translation.get("type") is None and (translation.text or "").strip(), f"untranslated: {key}"
        fields = sorted(re.findall(r"\{[^}]*\}", key[1]))
        assert sorted(re.findall(r"\{[^}]*\}", translation.text)) == fields, f"fields differ: {key}"


def test_the_translation_compiles_into_the_cache_once(tmp_path):
    first = language.compiled("zh_CN", tmp_path)
    assert first.is_file() and first.parent == tmp_path and first.stat().st_size > 1000
    assert language.compiled("zh_CN", tmp_path) == first  # named by the .ts's hash: compiled once


def test_the_lane_editors_tooltips_are_chinese(chinese):
    # the parameters' meanings live in decoding.chain.parameters; gui.present.lane_fields lists them for the
    # catalogue, and an
    # edited meaning must not silently fall back to English
    from gui.present.lane_fields import FIELDS, MEANINGS

    assert set(MEANINGS) == {p.meaning for p in decoding.chain.parameters.PARAMETERS}
    for field in FIELDS:
        assert CJK.search(field.tooltip) and "Allowed" not in field.tooltip, field.name


def test_refusals_from_decoding_read_in_chinese(chinese):
    # decoding/ words an invalid value in English (the command line, run files); the window rewords its one shape
    from decoding.chain.spec import LaneSpec
    from gui.present.lane_fields import FIELDS
    from gui.state.refusals import error_text

    refusals = []
    for settings in (dict(top_p=1.5, do_sample=True), dict(num_beams=4, do_sample=True), dict(top_k=5),
                     dict(early_stopping="x", num_beams=2), dict(num_return_sequences=3, num_beams=2)):
        with pytest.raises(ValueError) as refused:
            LaneSpec("x", **settings)
        refusals.append(error_text(refused.value))
    assert refusals[0] == "无效的 top_p=1.5：允许值为 [0, 1] 范围内的浮点数"
    assert refusals[1] == "无效的 do_sample=True：允许值为 num_beams > 1 时须为 false（不支持束采样）"
    assert all(text.startswith("无效的") and CJK.search(text.split("：", 1)[1]) for text in refusals), refusals
    with pytest.raises(ValueError) as refused:  # a rule naming a second parameter, its value kept
        LaneSpec("x", do_sample=True, mirostat=2, top_k=4)
    assert error_text(refused.value) == ("无效的 top_k=4：允许值为 mirostat=2 时不设置（mirostat 自行决定截断，正如 "
                                         "llama.cpp 的 mirostat 取代其他采样器）")
    assert error_text(ValueError("something else")) == "something else"  # other shapes as they are
    assert not any(phrase in field.tooltip for field in FIELDS for phrase in ("a float", "an integer", " or "))
