"""The setup dialog driving the real preparation (models.prepare, its export worker process), not a stand-in:
the stages it shows, the prepared folder it accepts with, and Cancel during the export killing the worker and
leaving nothing behind. The default model is prepared from the GGUF the prepared default model keeps (no
download); the cancel uses the tiny HF folder."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from gui.app import make_application
from gui.dialogs.setup_dialog import SetupDialog
from models import catalog, prepare
from models.sources import GGUF_NAME
from tests.processes import HAS_PROC, child_pids, process_gone

pytestmark = pytest.mark.slow

PREPARE_TIMEOUT_MS = 900_000


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(root))
    return root


def open_dialog(qtbot, prepare_fn) -> tuple[SetupDialog, list[str]]:
    """The dialog, shown (which starts the preparation), and the stage lines it shows, as they change."""
    make_application([])
    dialog = SetupDialog("Preparing", "the real preparation", prepare_fn)
    qtbot.addWidget(dialog)
    shown: list[str] = []
    dialog._worker.progress.connect(lambda _payload: shown.append(dialog.stage.text()))
    dialog.show()
    return dialog, shown


def test_the_dialog_prepares_the_default_model_for_real(qtbot, cache, default_model_dir):
    gguf = default_model_dir / GGUF_NAME
    dialog, shown = open_dialog(qtbot, functools.partial(prepare.prepare_default, gguf=gguf))
    qtbot.waitUntil(lambda: dialog.result_path is not None or dialog.error is not None, timeout=PREPARE_TIMEOUT_MS)
    assert dialog.error is None, dialog.error
    assert dialog.result_path == cache / "models" / catalog.DEFAULT_MODEL_NAME
    assert catalog.manifest_is_valid(dialog.result_path) and dialog.bar.value() == 1000
    stages = [line.split(" — ")[0] for line in shown]
    for stage in ("verify", "dequantize", "export", "smoke-test", "install"):
        assert stage in stages, stages
    assert stages.index("dequantize") < stages.index("export") < stages.index("install")


@pytest.mark.skipif(not HAS_PROC, reason="reads the worker's pid from /proc")
def test_cancel_in_the_dialog_kills_the_real_export_and_leaves_nothing(qtbot, cache, tiny_hf_dir):
    dialog, shown = open_dialog(qtbot, functools.partial(prepare.prepare_hf_folder, tiny_hf_dir, name="tiny"))
    workers: list[int] = []

    def in_export() -> bool:
        if shown and shown[-1].startswith("export") and not workers:
            workers.extend(child_pids("models.export_worker"))
        return bool(workers)

    qtbot.waitUntil(in_export, timeout=PREPARE_TIMEOUT_MS)
    qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.failure.isVisible(), timeout=60_000)
    assert dialog.stage.text() == "cancelled" and "cancelled at stage 'export'" in dialog.failure.text()
    assert dialog.result_path is None and dialog.retry_button.isVisible()
    assert process_gone(workers[0])
    models = cache / "models"
    assert not models.exists() or list(models.iterdir()) == []
    dialog.close()
