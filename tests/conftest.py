"""Shared fixtures: the tiny exported test model, the real default model (CI prepares it), offscreen Qt."""

from __future__ import annotations

import gc
import os
import sys
import tempfile
from pathlib import Path

import pytest

# A 1920×1200 screen (Qt's offscreen default is 800×800, narrower than the 1280 px window: Qt then narrows
# restored windows, so remembered window and panel sizes could not be compared).
os.environ.setdefault("QT_QPA_PLATFORM", f"offscreen:configfile={Path(__file__).with_name('offscreen_screen.json')}")
# The interface in English whatever the machine's locale (tests/gui/test_i18n.py sets its own).
os.environ["LANGUAGE"] = "en"
# The window autosaves its run: never into the user's own state folder from a test.
os.environ.setdefault("BRANCHPOINT_STATE_DIR", tempfile.mkdtemp(prefix="branchpoint-state-"))


@pytest.fixture(scope="session", autouse=True)
def scratch_settings(tmp_path_factory):
    """The window's settings file lives in a scratch folder: tests never read or write the user's."""
    previous = os.environ.get("BRANCHPOINT_CONFIG_DIR")
    os.environ["BRANCHPOINT_CONFIG_DIR"] = str(tmp_path_factory.mktemp("config"))
    yield
    if previous is None:
        os.environ.pop("BRANCHPOINT_CONFIG_DIR", None)
    else:
        os.environ["BRANCHPOINT_CONFIG_DIR"] = previous


@pytest.fixture(autouse=True)
def no_modal_save_question(request, monkeypatch):
    """A modal "Save changes?" would wait for a click forever: in Qt tests it answers "don't save" unless
    the test answers it itself (gui.shell.unsaved.ask_to_save)."""
    if "qtbot" in request.fixturenames:
        from gui.shell import unsaved

        monkeypatch.setattr(unsaved, "ask_to_save", lambda *_args, **_kwargs: (unsaved.Answer.DISCARD, False))


@pytest.fixture(scope="session")
def qapp():
    """pytest-qt's application made as the app makes it: the same fonts and GUI-thread cycle collection."""
    from gui.app import make_application

    return make_application([])


@pytest.fixture(autouse=True)
def delete_what_the_test_left_on_screen():
    """Top-level widgets a test made and did not delete are deleted at its teardown, while Python can still run
    their overrides. Left until exit, PySide deletes them from a half-finalised interpreter, a pyqtgraph item's
    Python boundingRect is called from there, and the test process ends in a segfault after every test passed."""
    if "PySide6.QtWidgets" not in sys.modules:
        yield
        return
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    before = list(app.topLevelWidgets()) if app is not None else []  # held: their ids stay theirs
    yield
    app = QApplication.instance()
    if app is None:
        return
    known = {id(widget) for widget in before}
    for widget in app.topLevelWidgets():
        if id(widget) not in known:
            widget.deleteLater()
    app.sendPostedEvents(None, QEvent.Type.DeferredDelete)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A tiny random-weight Llama exported with optimum (prepared-model layout). Its HF folder (for transformers
    references) sits beside it: `<dir>-hf`."""
    from tests.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-llama")


@pytest.fixture(scope="session")
def tiny_model_b_dir(tmp_path_factory) -> Path:
    """A second tiny model: the same tokenizer as tiny_model_dir's, other weights (lanes on their own model)."""
    from tests.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-b") / "tiny-llama-b", seed=1, name="tiny-random-llama-b")


@pytest.fixture(scope="session")
def tiny_model_other_tokenizer_dir(tmp_path_factory) -> Path:
    """A third tiny model with another tokenizer (a smaller vocabulary: other ids, other splits) than
    tiny_model_dir's: lanes compared by text."""
    from tests.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-t") / "tiny-llama-t", seed=2, name="tiny-random-llama-t",
                            vocab_size=320)


@pytest.fixture(scope="session")
def tiny_hf_dir(tiny_model_dir: Path) -> Path:
    return tiny_model_dir.parent / (tiny_model_dir.name + "-hf")


@pytest.fixture
def hub_server(monkeypatch, tmp_path):
    """tests/hub_server.py's stand-in for the Hugging Face hub on 127.0.0.1 (a free port), HF_ENDPOINT pointing
    at it (child processes inherit it); no token from the environment or the user's token store."""
    from tests.hub_server import HubServer

    server = HubServer().start()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # its token store: empty
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def prepared_tiny_dir(tmp_path_factory, tiny_hf_dir: Path) -> Path:
    """The tiny model prepared as Branchpoint prepares models (graph edits: the in-place graph's per-row mask), in
    a cache of its own; its inspection model is not prepared."""
    from models import prepare

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path_factory.mktemp("prepared-tiny-cache")))
        return prepare.prepare_hf_folder(tiny_hf_dir, name="tiny-prepared")


@pytest.fixture(scope="session")
def default_model_dir() -> Path:
    """The prepared default model. CI prepares it before the tests; elsewhere the test is skipped if it is absent."""
    from models.catalog import default_model_dir as find_default

    path = find_default()
    if not (path / "model.onnx").exists():
        if os.environ.get("CI"):
            pytest.fail(f"default model is not prepared at {path} (.ci/run should have prepared it)")
        pytest.skip(f"default model not prepared at {path}; run `python main.py prepare`")
    return path


@pytest.fixture
def make_window(qtbot):
    """Windows that are always shut down: stopping and waiting for the worker thread (a QThread still running
    at teardown aborts the process)."""
    from gui.app import make_application
    from gui.main_window import MainWindow

    make_application([])
    windows: list = []

    def make(model_dir: Path | None = None):
        window = MainWindow(model_dir)
        window.prompt.seed.setValue(1)  # sampled lanes repeat from run to run: the tests see the same text
        qtbot.addWidget(window)
        window.resize(1280, 800)
        window.show()
        windows.append(window)
        return window

    yield make
    for window in windows:
        window.shutdown()
        assert not window.worker.is_running()
    windows.clear()
    gc.collect()  # their reference cycles go here, on the GUI thread, not in a later test's worker thread


@pytest.fixture
def window(make_window, tiny_model_dir):
    return make_window(tiny_model_dir)


@pytest.fixture(scope="session")
def gemma_model_dir() -> Path:
    """The prepared catalog model gemma-3-270m (test.sh prepares it); skipped where it is absent, failed in CI."""
    from models.catalog import catalog_entry

    path = catalog_entry("gemma-3-270m").folder
    if not (path / "model.onnx").exists():
        if os.environ.get("CI"):
            pytest.fail(f"gemma-3-270m is not prepared at {path} (test.sh should have prepared it)")
        pytest.skip(f"gemma-3-270m not prepared at {path}; run `python main.py prepare --catalog gemma-3-270m "
                    "--accept-license`")
    return path
