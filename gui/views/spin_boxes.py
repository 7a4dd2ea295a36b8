"""Spin boxes that change nothing silently: the arrows stay in the allowed range, but a typed value outside it is
passed on (for the lane's validation to refuse in words) instead of being clamped to the nearest bound; an
emptied box with a special text ("auto", "unset") takes that special value instead of reverting."""

from __future__ import annotations

from PySide6.QtGui import QValidator
from PySide6.QtWidgets import QAbstractSpinBox, QDoubleSpinBox, QSpinBox


class _Checked:
    """Mixed into QSpinBox / QDoubleSpinBox: `allow(low, high)` is the range the arrows keep to; the widget's own
    range (what typing reaches) is wider."""

    allowed: tuple[float, float] = (float("-inf"), float("inf"))

    def allow(self, low: float, high: float, typing_span: float = 0.0) -> None:
        self.allowed = (low, high)
        special = bool(self.specialValueText())  # its minimum is the special value: nothing can be typed below
        self.setRange(low if special else low - typing_span, high + typing_span)

    def stepBy(self, steps: int) -> None:  # noqa: N802 (Qt override)
        low, high = self.allowed
        self.setValue(min(max(self.value() + steps * self.singleStep(), low), high))

    def stepEnabled(self) -> QAbstractSpinBox.StepEnabledFlag:  # noqa: N802 (Qt override)
        low, high = self.allowed
        flags = QAbstractSpinBox.StepEnabledFlag.StepNone
        if self.value() > low:
            flags |= QAbstractSpinBox.StepEnabledFlag.StepDownEnabled
        if self.value() < high:
            flags |= QAbstractSpinBox.StepEnabledFlag.StepUpEnabled
        return flags

    def validate(self, text: str, position: int):
        if not text.strip() and self.specialValueText():
            return QValidator.State.Acceptable, text, position
        return super().validate(text, position)

    def valueFromText(self, text: str):  # noqa: N802 (Qt override)
        if not text.strip() and self.specialValueText():
            return self.minimum()
        return super().valueFromText(text)


class CheckedSpinBox(_Checked, QSpinBox):
    pass


class CheckedDoubleSpinBox(_Checked, QDoubleSpinBox):
    pass
