""""Add precision variant…" in the window: the dialog lists a model's variants (what each is, expected size,
prepared ones with their size and check against fp32), prepares one of the tiny model on a worker thread with a
progress bar, cancels leaving nothing behind, refuses q4_1 and gguf without a GGUF (q4_1 without Q4_1 blocks) in
words; the picker lists every prepared model with its precision and size; the dialog in Chinese."""

from __future__ import annotations

import re
import shutil
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, Qt

from gui.app import make_application

TIMEOUT_MS = 60_000


@pytest.fixture
def tiny_cache(tmp_path, monkeypatch, tiny_model_dir):
    """A models root of its own holding the tiny model, prepared as "tiny"."""
    from models import prepare

    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path / "cache"))
    prepare.register_onnx_folder(tiny_model_dir, name="tiny")
    return tmp_path / "cache" / "models"


def leftovers(root) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name != "tiny")


def open_picker(qtbot, cache):
    from gui.views.model_picker import ModelPicker

    make_application([])
    picker = ModelPicker()
    qtbot.addWidget(picker)
    picker.select(cache / "tiny")
    return picker


def open_dialog(qtbot, picker):
    dialog = picker.variant_dialog(picker.current)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def test_the_picker_lists_precision_and_size_and_the_three_commands(qtbot, tiny_cache):
    picker = open_picker(qtbot, tiny_cache)
    texts = [picker.itemText(i) for i in range(picker.count())]
    assert re.fullmatch(r"tiny · fp32 · \d+(\.\d)? [KM]B", texts[0]), texts
    # the catalog's models not prepared here
    offers = [text for text in texts[1:] if " · " in text and " from " in text]
    assert [text.split(" · ")[0] for text in offers][:2] == ["SmolLM2-135M-Instruct", "gemma-3-270m"], texts
    assert texts[1 + len(offers):] == ["Add model from Hugging Face…", "Add GGUF file…", "Add local folder…",
                                       "Add precision variant…", "Add a server…"]
    assert picker.currentIndex() == 0


def test_the_dialog_lists_the_variants_and_refuses_q4_1_without_a_gguf(qtbot, tiny_cache):
    picker = open_picker(qtbot, tiny_cache)  # held: the dialog is its child
    dialog = open_dialog(qtbot, picker)
    assert [row.variant for row in dialog.rows] == [
        "fp16", "int8", "int4", "q4_1", "q8_0", "q4_0", "q4_1r", "gguf", "ggml"]
    lines = [dialog.row_text(i) for i in range(len(dialog.rows))]
    assert "near-exact" in lines[0] and "approximate" in lines[1] and "exact" in lines[3]
    assert all(re.search(r"about \d+(\.\d)? [KM]B on disk", line) for line in lines[:3]), lines
    assert "not prepared from a GGUF" in lines[3] and "q4_1 runs a GGUF's own blocks" in lines[3]
    assert "gguf runs a GGUF's own blocks" in lines[7] and "exact" in lines[7]
    assert not dialog.radios[3].isEnabled() and all(radio.isEnabled() for radio in dialog.radios[:3])
    assert all(radio.isEnabled() for radio in dialog.radios[4:7])  # llama.cpp's schemes need no GGUF
    assert not dialog.radios[7].isEnabled()
    assert "activations quantized" in lines[1] and "re-quantizes weights that were 4-bit already" in lines[5]
    dialog.select("q4_1")
    assert not dialog.prepare_button.isEnabled()
    dialog.start()  # refused before any work: no thread, no folder
    assert not dialog.bar.isVisible() and leftovers(tiny_cache) == []


def test_a_gguf_without_q4_1_blocks_offers_gguf_not_q4_1(qtbot, tiny_cache):
    """A model prepared from a GGUF of other blocks (gemma-3-270m's Q4_K_M: here a Q5_0 one): q4_1 is refused,
    naming the GGUF's blocks; gguf can be made."""
    import numpy as np

    from models.catalog import read_manifest
    from models.manifest import write_manifest
    from models.sources import sha256_file
    from tests.models.test_gguf_blocks import raw_tensor, write_gguf

    folder = tiny_cache / "tiny"
    rng = np.random.default_rng(0)
    write_gguf(folder / "tiny.gguf", {"blk.0.attn_q.weight": ("Q5_0", raw_tensor("Q5_0", 64, 64, rng)),
                                      "blk.0.ffn_down.weight": ("Q6_K", raw_tensor("Q6_K", 64, 256, rng))})
    source = {"kind": "pypi-chunks", "gguf": "tiny.gguf", "gguf_sha256": sha256_file(folder / "tiny.gguf")}
    write_manifest(folder, read_manifest(folder) | {"source": source})
    picker = open_picker(qtbot, tiny_cache)
    dialog = open_dialog(qtbot, picker)
    lines = [dialog.row_text(i) for i in range(len(dialog.rows))]
    assert "Not for tiny: q4_1 runs Q4_1 blocks and its GGUF has none (1 Q5_0, 1 Q6_K)." in lines[3], lines[3]
    assert not dialog.radios[3].isEnabled() and dialog.radios[7].isEnabled()
    assert re.search(r"about \d+(\.\d)? [KM]B on disk", lines[7]), lines[7]


def test_preparing_int8_shows_progress_then_lists_it_with_its_check(qtbot, tiny_cache):
    picker = open_picker(qtbot, tiny_cache)
    dialog = open_dialog(qtbot, picker)
    dialog.select("int8")
    values, notices = [], []
    dialog.bar.valueChanged.connect(values.append)
    picker.variantPrepared.connect(notices.append)
    qtbot.mouseClick(dialog.prepare_button, Qt.MouseButton.LeftButton)
    assert dialog.bar.isVisible() and dialog.cancel_button.text() == "Cancel"
    qtbot.waitUntil(lambda: dialog.result.isVisible(), timeout=TIMEOUT_MS)
    assert "tiny-int8 is prepared" in dialog.result.text() and "KL vs fp32" in dialog.result.text()
    assert len(set(values)) > 3 and values == sorted(values) and values[-1] == 1000
    row = dialog.rows[1]
    assert row.prepared_size and "prepared ·" in dialog.row_text(1) and "greedy:" in row.status()
    assert not dialog.prepare_button.isEnabled()  # prepared: nothing to make
    texts = [picker.itemText(i) for i in range(picker.count())]
    assert any(re.fullmatch(r"tiny-int8 · int8 · KL [\d.e-]+ · same top \d+\.\d % · \d+(\.\d)? [KM]B", t)
               for t in texts), texts  # its teacher-forced check against fp32, as `main.py models` gives it
    assert picker.currentText().startswith("tiny · fp32")  # the run's model is still the chosen one
    assert len(notices) == 1 and notices[0].startswith("Precision variant tiny-int8 · int8 · ")
    assert "teacher-forced over" in notices[0] and "same top" in notices[0]
    assert leftovers(tiny_cache) == ["tiny-int8"]


def test_cancel_midway_leaves_nothing(qtbot, tiny_cache, monkeypatch):
    """int4 re-quantizes matrix by matrix: the preparation waits after its first matrix until Cancel is clicked,
    then stops at the next matrix."""
    from models import quantize

    reached, clicked = threading.Event(), threading.Event()
    real = quantize.to_int4_stock

    def first_matrix_then_wait(model, tick):
        tick(0.1, "int4: /first")
        reached.set()
        clicked.wait(TIMEOUT_MS / 1000)
        return real(model, tick)

    monkeypatch.setattr(quantize, "to_int4_stock", first_matrix_then_wait)
    picker = open_picker(qtbot, tiny_cache)
    dialog = open_dialog(qtbot, picker)
    dialog.select("int4")
    dialog.start()
    qtbot.waitUntil(reached.is_set, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: dialog.stage.text().startswith("quantize"), timeout=TIMEOUT_MS)
    assert 0 < dialog.bar.value() < 1000
    qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    clicked.set()
    qtbot.waitUntil(lambda: dialog.result.isVisible(), timeout=TIMEOUT_MS)
    assert dialog.result.text() == "Cancelled: tiny-int4 was not made, and nothing of it was left on disk."
    assert dialog.stage.text() == "cancelled" and dialog.cancel_button.text() == "Close"
    assert leftovers(tiny_cache) == []  # neither tiny-int4 nor a .partial build folder
    assert dialog.rows[2].can_prepare and dialog.prepare_button.isEnabled()


def test_closing_the_dialog_while_its_preparation_reports_is_safe(qtbot, tiny_cache, monkeypatch):
    """The user closes the dialog (the window's picker then deletes it) while the preparation still reports: the
    reports that reach the dialog as it closes are shown before it goes, none reaches it once deleted ("Internal
    C++ object (VariantDialog) already deleted"), and the cancelled preparation leaves nothing."""
    from models import quantize

    reached, go_on = threading.Event(), threading.Event()
    real = quantize.to_int4_stock

    def first_matrix_then_wait(model, tick):
        tick(0.1, "int4: /first")
        reached.set()
        go_on.wait(TIMEOUT_MS / 1000)
        tick(0.2, "int4: /second")  # reported while the dialog closes
        return real(model, tick)

    monkeypatch.setattr(quantize, "to_int4_stock", first_matrix_then_wait)
    picker = open_picker(qtbot, tiny_cache)
    dialog = picker.variant_dialog(picker.current)  # as the picker makes it (not held by qtbot: it is deleted here)
    dialog.show()
    dialog.select("int4")
    dialog.start()
    qtbot.waitUntil(reached.is_set, timeout=TIMEOUT_MS)
    threading.Timer(0.2, go_on.set).start()  # the job goes on while close() waits for it
    dialog.close()
    assert dialog.stage.text() == "cancelled"  # its last reports were shown as it closed
    with qtbot.waitSignal(dialog.destroyed, timeout=TIMEOUT_MS):
        dialog.deleteLater()  # as the picker does once the dialog is closed, and gone before any timer fires
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    qtbot.wait(100)  # anything still queued for the dialog would run now
    assert leftovers(tiny_cache) == []


def test_a_variant_chosen_in_the_picker_offers_its_base_s_variants(qtbot, tiny_cache):
    from gui.present.variant_rows import base_of
    from models.variants import prepare_variant

    fp16 = prepare_variant("fp16", "tiny")
    assert base_of(fp16) == tiny_cache / "tiny"
    picker = open_picker(qtbot, tiny_cache)
    picker.select(fp16)
    dialog = open_dialog(qtbot, picker)
    assert "Precision variants of tiny," in dialog.heading.text()
    assert dialog.rows[0].prepared_size and "KL vs fp32" in dialog.row_text(0)
    assert dialog.chosen().variant == "int8"  # the first one still to make
    shutil.rmtree(tiny_cache / "tiny")  # its fp32 model gone: nothing to make variants from
    dialog = open_dialog(qtbot, picker)
    assert dialog.heading.text() == "tiny-fp16 is itself a precision variant and its fp32 model is not prepared."
    assert not dialog.radios and not dialog.prepare_button.isEnabled()


def test_a_folder_that_is_not_a_prepared_model_is_refused_in_words(qtbot, tiny_cache, tmp_path):
    from gui.dialogs.variant_dialog import VariantDialog

    folder = tmp_path / "loose"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"")
    make_application([])
    dialog = VariantDialog(folder)
    qtbot.addWidget(dialog)
    assert "loose is not a complete prepared model" in dialog.heading.text()
    assert not dialog.radios and not dialog.prepare_button.isEnabled()


def test_a_model_without_fp32_weights_is_refused_in_words(qtbot, tiny_cache):
    from gui.dialogs.variant_dialog import VariantDialog
    from models.catalog import manifest_is_valid, read_manifest
    from models.manifest import write_manifest

    folder = tiny_cache / "tiny"
    write_manifest(folder, read_manifest(folder) | {"dtype": "float16"})  # as a registered float16 export reads
    assert manifest_is_valid(folder)
    make_application([])
    dialog = VariantDialog(folder)
    qtbot.addWidget(dialog)
    assert dialog.heading.text() == "tiny has fp16 weights: precision variants are made from a model's fp32 weights."
    assert not dialog.radios and not dialog.prepare_button.isEnabled()


def test_the_chinese_dialog_is_translated(qtbot, tiny_cache, monkeypatch):
    from gui.i18n import language

    for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    app = make_application([])
    language.install(app, "zh_CN")
    try:
        picker = open_picker(qtbot, tiny_cache)
        dialog = open_dialog(qtbot, picker)
        texts = [dialog.windowTitle(), dialog.heading.text(), dialog.prepare_button.text(),
                 dialog.cancel_button.text(), *(dialog.row_text(i) for i in range(len(dialog.rows))),
                 picker.itemText(picker.count() - 1)]
    finally:
        language.uninstall(app)
    kept = {"tiny", "fp16", "fp32", "int8", "int4", "q4_1", "float16", "float32", "ONNX", "Runtime", "GGUF", "KL",
            "e", "MB", "KB", "llama", "cpp", "Q8_0", "Q4_0", "Q4_1", "q8_0", "q4_0", "q4_1r", "gguf", "ggml",
            "gemma-3-270m", "Q4_K", "Q5_0", "Q6_K", "lm_head"}
    for text in texts:
        assert re.search(r"[\u3400-\u9fff]", text), text
        words = re.findall(r"[A-Za-z][\w\-]*", text)
        english = [w for w in words if w not in kept and not re.fullmatch(r"e[-+]?\d+", w)]
        assert not english, (text, english)


def test_the_run_menu_opens_the_dialog_for_the_window_s_model_and_its_notice(make_window, tiny_cache, monkeypatch):
    from gui.dialogs.variant_dialog import VariantDialog

    opened = []
    monkeypatch.setattr(VariantDialog, "exec", lambda dialog: opened.append(dialog) or 0)
    window = make_window(tiny_cache / "tiny")
    run_menu = window.menuBar().actions()[1].menu()
    action = window.window_actions["add_precision_variant"]
    assert action in run_menu.actions() and action.text() == "Add precision &variant…"
    action.trigger()
    assert len(opened) == 1 and opened[0].base_dir == tiny_cache / "tiny"
    assert window.model_picker.currentText().startswith("tiny · fp32 · ")
    window.model_picker.variantPrepared.emit("Precision variant tiny-int8 prepared")
    assert window.state.notice.text == "Precision variant tiny-int8 prepared" and window.state.notice.level == "info"


def test_a_failure_says_why_and_leaves_nothing(qtbot, tiny_cache, monkeypatch):
    import onnx

    def no_space(model, target, **options):  # part of the graph written, then the disk filled up
        Path(target).write_bytes(b"half a graph")
        raise OSError(28, "No space left on device", str(target))

    monkeypatch.setattr(onnx, "save", no_space)
    picker = open_picker(qtbot, tiny_cache)
    dialog = open_dialog(qtbot, picker)
    dialog.select("int8")
    dialog.start()
    qtbot.waitUntil(lambda: dialog.result.isVisible(), timeout=TIMEOUT_MS)
    assert dialog.result.text().startswith("tiny-int8 could not be made, and nothing of it was left on disk: ")
    assert "'save'" in dialog.result.text() and "No space left on device" in dialog.result.text()
    assert dialog.stage.text() == "failed" and leftovers(tiny_cache) == []
    assert dialog.prepare_button.isEnabled()  # try again
