"""Which prepared model to compare a lane with: a list of the prepared models and their precision."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QInputDialog, QWidget

from gui.i18n import translate
from gui.present.model_compare_rows import model_label
from gui.state.model_comparison import ModelSide


def ask_model(parent: QWidget | None, choices: list[ModelSide], lane: str, model: str) -> Path | None:
    """The folder of the model picked among `choices` (None: cancelled)."""
    labels = [model_label(choice) for choice in choices]
    text = translate("model_choice", "Read “{lane}”'s tokens (made by {model}) with:").format(lane=lane, model=model)
    picked, ok = QInputDialog.getItem(parent, translate("model_choice", "Compare with model"), text, labels, 0, False)
    if not ok or picked not in labels:
        return None
    return Path(choices[labels.index(picked)].path)
