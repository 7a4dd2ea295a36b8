"""The "Branch as" box, a view of the run state's request: the strategy a branched lane continues with after
the picked token (its parent's, or a preset)."""

from __future__ import annotations

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QComboBox, QWidget

from decoding.chain.spec import PRESETS
from gui.i18n import translate
from gui.present.lane_fields import preset_title
from gui.state.requests import RunRequest
from gui.state.run_state import RunState


class BranchStrategyBox(QComboBox):
    def __init__(self, state: RunState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.setObjectName("branchStrategy")
        self.addItem(translate("BranchStrategyBox", "parent's strategy"), "")
        for title in PRESETS:
            self.addItem(preset_title(title), title)
        self.setToolTip(translate("BranchStrategyBox", "The strategy a branched lane continues with after the picked "
                                                       "token (right-click a token, or double-click an alternative "
                                                       "in the inspector)"))
        self.show_request(state.request)
        self.currentIndexChanged.connect(self._on_chosen)
        state.events.connect("request_changed", self.show_request)

    def show_request(self, request: RunRequest) -> None:
        index = self.findData(request.branch_strategy)
        if index >= 0 and index != self.currentIndex():
            self.setCurrentIndex(index)

    @Slot(int)
    def _on_chosen(self, _index: int) -> None:
        self.state.update_request(branch_strategy=self.currentData())
