"""Help → About (versions, the model and the execution provider really active, the folders Branchpoint uses)
and Help → Keyboard shortcuts (F1; read from the menus' actions, so it never disagrees with them). Both are
non-modal: the window stays usable."""

from __future__ import annotations

import html
import platform
import sys
from importlib import metadata
from pathlib import Path

from PySide6.QtCore import Qt, qVersion
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gui.i18n import translate
from gui.state.model_holder import ModelHolder
from gui.views.status import provider_label


def package_version(*names: str) -> str:
    """The installed version of the first of `names` that is installed ("—" if none; read from the package
    metadata: onnxruntime is not imported by the window)."""
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "—"


def versions() -> list[tuple[str, str]]:
    import numpy
    import pyqtgraph
    import PySide6

    return [
        ("Branchpoint", package_version("branchpoint")),
        ("Python", f"{platform.python_version()} ({sys.platform})"),
        ("Qt / PySide6", f"{qVersion()} / {PySide6.__version__}"),
        ("pyqtgraph", pyqtgraph.__version__),
        ("ONNX Runtime", package_version("onnxruntime-gpu", "onnxruntime")),
        ("tokenizers", package_version("tokenizers")),
        ("NumPy", numpy.__version__),
    ]


def about_rows(holder: ModelHolder | None, device: str, settings_path: Path | None) -> list[tuple[str, str]]:
    from models.catalog import cache_root

    loaded = holder.loaded if holder is not None else None
    if loaded is not None:
        provider = provider_label(loaded.provider)
    elif holder is not None:
        provider = translate("About", "not loaded yet (the first run loads it)")
    else:
        provider = "—"
    model = f"{holder.name} ({holder.path})" if holder is not None else translate("About", "none")
    rows = [
        (translate("About", "Model"), model),
        (translate("About", "Model licence"), licence_line(Path(holder.path)) if holder is not None else "—"),
        (translate("About", "Execution provider in use"), provider),
        (translate("About", "Device setting"), device),
        (translate("About", "Cache folder (models, logs)"), str(cache_root())),
    ]
    if settings_path is not None:
        rows.append((translate("About", "Settings file"), str(settings_path)))
    return rows


def licence_line(model_dir: Path) -> str:
    """The prepared model's licence as its manifest records it (name, whether accepted, where its text is)."""
    from models.catalog import read_manifest

    manifest = read_manifest(model_dir)
    record = manifest.get("licence") or {}
    name = record.get("name") or (manifest.get("source") or {}).get("license")
    if not name:
        return translate("About", "not recorded (see the model's own page)")
    parts = [name]
    if record.get("accepted"):
        parts.append(translate("About", "accepted when prepared"))
    if record.get("file") and (model_dir / record["file"]).is_file():
        parts.append(str(model_dir / record["file"]))
    elif record.get("url"):
        parts.append(record["url"])
    return " · ".join(parts)


def _table_html(rows: list[tuple[str, str]]) -> str:
    cells = "".join(f"<tr><td style='padding-right:12px'><b>{html.escape(k)}</b></td><td>{html.escape(v)}</td>"
                    "</tr>" for k, v in rows)
    return f"<table>{cells}</table>"


class AboutDialog(QDialog):
    def __init__(self, parent: QWidget, rows: list[tuple[str, str]]) -> None:
        super().__init__(parent)
        self.setObjectName("aboutDialog")
        self.setWindowTitle(self.tr("About Branchpoint"))
        intro = self.tr("See how a language model chooses its words: one small causal LM continues a prompt under "
                        "several decoding strategies side by side.")
        self.text = QLabel(f"<h3>Branchpoint</h3><p>{html.escape(intro)}</p>{_table_html(rows)}"
                           f"<p></p>{_table_html(versions())}")
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.text)
        layout.addWidget(buttons)
        self.setMinimumWidth(560)


def widget_keys() -> list[tuple[str, str]]:
    """Keys the views handle themselves (not menu actions)."""
    return [
        (translate("Shortcuts", "Left / Right"),
         translate("Shortcuts", "Previous / next step (in a lane's text or the timeline)")),
        (translate("Shortcuts", "Home / End"), translate("Shortcuts", "First / last step (timeline)")),
        (translate("Shortcuts", "Right-click a token or mark"),
         translate("Shortcuts", "Branch from an alternative, force it for all lanes")),
        (translate("Shortcuts", "Double-click an inspector row"),
         translate("Shortcuts", "Branch a new lane with that token")),
    ]


class ShortcutsDialog(QDialog):
    def __init__(self, parent: QWidget, actions: list[QAction]) -> None:
        super().__init__(parent)
        self.setObjectName("shortcutsDialog")
        self.setWindowTitle(self.tr("Keyboard shortcuts"))
        rows = [(", ".join(k.toString(QKeySequence.SequenceFormat.NativeText) for k in action.shortcuts()),
                 action.text().replace("&", "")) for action in actions]
        rows += widget_keys()
        self.table = QTableWidget(len(rows), 2)
        self.table.setHorizontalHeaderLabels([self.tr("Keys"), self.tr("Does")])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for row, (keys, does) in enumerate(rows):
            self.table.setItem(row, 0, QTableWidgetItem(keys))
            self.table.setItem(row, 1, QTableWidgetItem(does))
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(560, 480)

    def rows(self) -> list[tuple[str, str]]:
        return [(self.table.item(r, 0).text(), self.table.item(r, 1).text()) for r in range(self.table.rowCount())]
