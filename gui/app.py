"""Application entry: QApplication with explicit fonts (Chinese included), icon and desktop name; the default
model is prepared through the setup dialog on first run; then the main window."""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication, QMessageBox

from gui.i18n import language, translate
from gui.shell import faults, restore
from gui.shell.settings import LANGUAGES, Settings

ICON_PATH = Path(__file__).with_name("icon.svg")
# The worker thread's Python (sampling, traces) holds the GIL; the GUI thread waits up to this long for it
# after each Qt call that released it. The default 5 ms adds up to stalls of a tenth of a second per redraw.
GIL_SWITCH_INTERVAL_S = 0.0005


def app_icon() -> QIcon:
    return QIcon(str(ICON_PATH))


def make_application(argv: list[str]) -> QApplication:
    """The QApplication (reused if one exists, e.g. under pytest-qt), set up once."""
    app = QApplication.instance()
    if app is None:
        QGuiApplication.setHighDpiScaleFactorRoundingPolicy(Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
        app = QApplication(["branchpoint", *argv])
    from gui.views.style import configure_fonts

    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    if not hasattr(app, "garbage_collector"):
        # Python's cycle collector runs in whichever thread allocates when it triggers; if it frees a Qt object
        # there (a view in a reference cycle), Qt deletes it off the GUI thread: seen as a deadlock in
        # ~QObject while a worker job ran. Collect on a GUI-thread timer instead, as pyqtgraph recommends.
        from pyqtgraph.util.garbage_collector import GarbageCollector

        app.garbage_collector = GarbageCollector(interval=1.0)
    app.setApplicationName("Branchpoint")
    app.setDesktopFileName("branchpoint")
    app.setWindowIcon(app_icon())
    configure_fonts(app)
    return app


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="branchpoint", description="Branchpoint desktop window")
    parser.add_argument("--gui-model", help="prepared model name or folder (default: the default model)")
    parser.add_argument("--gui-open", help="a saved run (JSON) to open")
    parser.add_argument("--gui-prompt", help="the prompt to show (instead of the default)")
    parser.add_argument("--gui-max-new-tokens", type=int, help="the run's max new tokens")
    parser.add_argument("--gui-run", action="store_true", help="run every lane on the prompt as soon as it opens")
    parser.add_argument("--gui-install-desktop", action="store_true",
                        help="add Branchpoint to the desktop's application menu (a .desktop file and icons under "
                             "$XDG_DATA_HOME, default ~/.local/share) and exit")
    parser.add_argument("--gui-uninstall-desktop", action="store_true",
                        help="remove what --gui-install-desktop wrote and exit")
    args, _unknown = parser.parse_known_args(argv)  # Qt's own options pass through
    return args


def desktop_command(args: argparse.Namespace) -> int | None:
    """--gui-install-desktop / --gui-uninstall-desktop: done without a display or a model (exit code), else
    None."""
    from gui.shell import desktop

    if (args.gui_install_desktop or args.gui_uninstall_desktop) and sys.platform in ("win32", "darwin"):
        print("--gui-install-desktop writes a freedesktop.org launcher (Linux and BSD desktops); on Windows pin "
              "the branchpoint program (.venv\\Scripts\\branchpoint.exe) to Start, on macOS start "
              ".venv/bin/branchpoint", file=sys.stderr)
        return 2
    if args.gui_install_desktop:
        for path in desktop.install_desktop_file():
            print(f"wrote {path}")
        return 0
    if args.gui_uninstall_desktop:
        removed = desktop.uninstall_desktop_file()
        for path in removed:
            print(f"removed {path}")
        if not removed:
            print("the launcher was not installed")
        return 0
    return None


def ensure_default_model(parent=None) -> Path | None:
    """The default model's folder, updating it when an older Branchpoint prepared it (kept as it is if that
    fails); when it is missing, the model the user chooses and prepares in the first-run dialog (None if the user
    closed it or it failed)."""
    from models.catalog import default_model_dir, needs_migration

    path = default_model_dir()
    if (path / "model.onnx").is_file() and not needs_migration(path):
        return path
    from gui.dialogs.setup_dialog import SetupDialog
    from models.prepare import prepare_default

    if (path / "model.onnx").is_file():  # prepared by an older Branchpoint: still usable if the update fails
        explanation = ("The default model was prepared by an older Branchpoint. Stored in the current layout it "
                       "loads faster; updating it takes a few seconds, once.")
        return SetupDialog("Updating the default model", explanation, prepare_default, parent).run() or path

    from gui.dialogs.first_run import FirstRunDialog

    return FirstRunDialog(parent).run()  # the catalog and the GGUFs found here, the default model chosen


def choose_model(args: argparse.Namespace, settings: Settings | None = None) -> Path | None:
    """--gui-model, else the model chosen last (if still prepared), else the default model (prepared now if
    missing, unless a saved run is being opened)."""
    from models.catalog import default_model_dir, list_models, resolve

    if args.gui_model:
        return resolve(args.gui_model)
    if settings is not None and settings.model_path() is not None:
        return settings.model_path()
    if args.gui_open and not (default_model_dir() / "model.onnx").is_file():
        return list_models()[0].path if list_models() else None  # a saved run shows without a model
    if not (default_model_dir() / "model.onnx").is_file() and list_models():
        return list_models()[0].path  # the first-run dialog is for a cache without any model
    path = ensure_default_model()
    if path is None and list_models():
        return list_models()[0].path  # another prepared model is still usable
    return path


def run_app(argv: list[str]) -> int:
    args = parse_args(argv)
    done = desktop_command(args)
    if done is not None:
        return done
    settings = Settings()
    app = make_application(argv)
    language_notice = language.install(app, language.chosen_language(settings.choice("view/language", LANGUAGES)))
    from gui.main_window import MainWindow

    try:
        model = choose_model(args, settings)
    except FileNotFoundError as error:
        QMessageBox.critical(None, translate("app", "Branchpoint"), str(error))
        return 2
    window = MainWindow(model, settings)
    faults.install(window.state)  # an error in a slot is said in the window and logged, not lost on stderr
    if language_notice:
        window.state.show_notice(language_notice, level="info", cause="language")
    if model is None:
        window.state.show_notice(translate("app", "No model is prepared: pick “Add local folder…” in the Model list, "
                                                  "or restart to prepare the default model. Saved runs can still be "
                                                  "opened (Ctrl+O)."))
    if args.gui_open:
        window.files.open(Path(args.gui_open))
    window.show()
    restore.report_stale_builds(window.state)
    if not args.gui_open:
        window.offer_restore()
    if args.gui_prompt is not None:
        window.prompt.editor.setPlainText(args.gui_prompt)
    if args.gui_max_new_tokens is not None:
        window.prompt.max_new_tokens.setValue(args.gui_max_new_tokens)
    if args.gui_run:
        window.commands.run()
    freeze_startup_objects()
    QTimer.singleShot(0, window.preload_model)  # once the event loop has put the window on screen
    return app.exec()


def freeze_startup_objects() -> None:
    """Python's garbage collector stops visiting what start-up made (modules, classes, functions, the window's
    widgets: ~90 k objects that live as long as the app). Its full collections run on the window's thread and
    visit every object: on a 512-token run one took ~120 ms, 40-50 ms with these frozen."""
    gc.collect()
    gc.freeze()


if __name__ == "__main__":
    sys.exit(run_app(sys.argv[1:]))
