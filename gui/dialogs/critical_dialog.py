"""The thresholds that make a step a critical point (▲): a small dialog over the RunState's settings."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QDoubleSpinBox, QFormLayout, QLabel, QVBoxLayout, QWidget

from decoding.records.trace import CriticalSettings
from gui.i18n import translate
from gui.state.run_state import RunState

FIELDS = (  # name, label, tooltip, maximum
    ("draw_distance", "draw within", "A sampled step is critical when its draw u fell this close to the edge of "
     "the chosen token's interval, next to a strong token", 0.5),
    ("min_prob", "strong token: p ≥", "The least probability of a token that counts as a real candidate", 1.0),
    ("ratio", "greedy / beam: p₂ / p₁ ≥", "A greedy or beam step is critical when its second token is at least "
     "this large a share of the first", 1.0),
)


class CriticalDialog(QDialog):
    def __init__(self, state: RunState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(translate("critical_dialog", "Critical points"))
        self.state = state
        self.boxes: dict[str, QDoubleSpinBox] = {}
        form = QFormLayout()
        for name, label, tip, maximum in FIELDS:
            box = QDoubleSpinBox()
            box.setDecimals(3)
            box.setSingleStep(0.01)
            box.setRange(0.0, maximum)
            box.setValue(getattr(state.critical, name))
            box.setToolTip(tip)
            self.boxes[name] = box
            form.addRow(label, box)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setStyleSheet("color:#c62828")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
                                   | QDialogButtonBox.StandardButton.RestoreDefaults)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults).clicked.connect(self.restore_defaults)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(translate("critical_dialog", "▲ marks the steps where a small change would have picked "
                                                             "another strong token.")))
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(buttons)

    def restore_defaults(self) -> None:
        defaults = CriticalSettings()
        for name, box in self.boxes.items():
            box.setValue(getattr(defaults, name))

    def accept(self) -> None:
        try:
            settings = CriticalSettings(**{name: box.value() for name, box in self.boxes.items()})
        except ValueError as error:  # e.g. ratio 0: said, and the dialog stays open
            self.message.setText(str(error))
            return
        self.state.set_critical(settings)
        super().accept()
