"""Render the model dialogs to PNG (offscreen), in English or Chinese: the hub dialog mid-download and after a
gated model's refusal, the licence dialog, the first-run dialog and the Chinese hint above the text.

    python scripts/screenshot_dialogs.py --out-dir /tmp/dialogs
    python scripts/screenshot_dialogs.py --lang zh_CN --out-dir /tmp/dialogs-zh

Not a test: it only draws (the hub dialog's progress is fed to it, nothing is downloaded).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", default="en", choices=("en", "zh_CN"), help="interface language")
    parser.add_argument("--out-dir", type=Path, default=Path("/tmp/branchpoint-dialogs"))
    parser.add_argument("--model", help="a prepared model for the hint's window (default: the default model)")
    return parser.parse_args()


def save(widget, path: Path) -> None:
    from PySide6.QtWidgets import QApplication

    widget.show()
    for _ in range(5):
        QApplication.processEvents()
    widget.grab().save(str(path))
    print(path)


def hub_dialog_shots(out: Path) -> None:
    from gui.dialogs.hub_dialog import BYTES, HubDialog

    dialog = HubDialog(None, "Qwen/Qwen2.5-0.5B-Instruct")
    dialog.set_editing(False)
    dialog._on_progress(("download", 0.21, "model.safetensors: 412.3 MB of 988.1 MB"))
    dialog._on_progress((BYTES, 412_300_000, 988_100_000))
    save(dialog, out / "hub-downloading.png")
    dialog.set_editing(True)
    dialog.model_id.setText("google/gemma-3-270m-it")
    from models.hub import TOKEN_PAGE

    dialog._on_failed("PrepareError: prepare failed at stage 'download': google/gemma-3-270m-it is a gated model: "
                      "accept its terms on https://huggingface.co/google/gemma-3-270m-it; a token is needed: make "
                      f"one at {TOKEN_PAGE} (read access), then put it in the token field or HF_TOKEN, or run "
                      "`hf auth login`", "")
    save(dialog, out / "hub-gated.png")


def licence_shot(out: Path) -> None:
    from gui.dialogs.add_model import LicenceDialog, licence_text_html
    from models.catalog import catalog_entry

    entry = catalog_entry("gemma-3-270m")
    save(LicenceDialog(entry.name, entry.licence, licence_text_html(entry)), out / "licence.png")


def first_run_shot(out: Path) -> None:
    from gui.dialogs.first_run import FirstRunDialog

    save(FirstRunDialog(), out / "first-run.png")


def hint_shot(out: Path, model: str | None, lang: str) -> None:
    from gui.main_window import MainWindow
    from models.catalog import resolve

    window = MainWindow(resolve(model))
    window.resize(1280, 800)
    window.prompt.editor.setPlainText("今天天气不错，适合去")
    save(window, out / "chinese-hint.png")
    window.shutdown()


def main() -> int:
    args = parse_args()
    from gui.app import make_application
    from gui.i18n import language

    app = make_application([])
    if args.lang != "en":
        notice = language.install(app, args.lang)
        if notice:
            print(notice, file=sys.stderr)
            return 1
    args.out_dir.mkdir(parents=True, exist_ok=True)
    hub_dialog_shots(args.out_dir)
    licence_shot(args.out_dir)
    first_run_shot(args.out_dir)
    hint_shot(args.out_dir, args.model, args.lang)
    return 0


if __name__ == "__main__":
    sys.exit(main())
