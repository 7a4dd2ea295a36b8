"""What the window's actions and the views' signals run, over the run state and its controller: the commands
that replace the shown run ask "Save changes?" first (gui.shell.unsaved); the rest go to the controller."""

from __future__ import annotations

from PySide6.QtCore import QObject, Slot

from gui.i18n import translate
from gui.shell.unsaved import UnsavedRun
from gui.state.controller import RunController
from gui.state.run_state import RunState


class RunCommands(QObject):
    def __init__(self, state: RunState, controller: RunController, unsaved: UnsavedRun,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state, self.controller, self.unsaved = state, controller, unsaved

    def _may_replace_run(self) -> bool:
        return self.unsaved.may_discard(translate("RunCommands", "start a new run"), new_run=True)

    @Slot()
    def run(self) -> None:
        """Run every lane; in step mode, one step of every lane."""
        if self.controller.step_mode:
            self.controller.step_all()
        elif self.controller.check_run() and self._may_replace_run():  # refused before "Save changes?"
            self.controller.run()

    @Slot()
    def toggle_step_mode(self) -> None:
        if self.controller.step_mode or (self.controller.check_run() and self._may_replace_run()):
            self.controller.toggle_step_mode()

    @Slot()
    def step_selected_lane(self) -> None:
        if self.state.selection is not None:
            self.controller.step_lane(self.state.selection.lane)

    @Slot()
    def run_selected_lane_to_end(self) -> None:
        if self.state.selection is not None:
            self.controller.run_lane_to_end(self.state.selection.lane)

    @Slot()
    def run_again_and_compare(self) -> None:
        """Run every lane again (fresh draws where the seed is auto) and say where each differs from this run."""
        if self.controller.check_run() and self._may_replace_run():
            self.controller.run(compare=True)

    @Slot(int, int)
    def force_for_all(self, step: int, token_id: int) -> None:
        if self._may_replace_run():
            self.controller.force_for_all(step, token_id)

    @Slot()
    def stop(self) -> None:
        self.controller.stop()

    @Slot()
    def replay(self) -> None:
        self.controller.replay()

    @Slot(int, int, int)
    def branch(self, lane: int, step: int, token_id: int) -> None:
        self.controller.branch(lane, step, token_id)

    @Slot(int, int)
    def replay_not_taken(self, lane: int, step: int) -> None:
        self.controller.replay_not_taken(lane, step)

    @Slot()
    def undo_branch(self) -> None:
        self.controller.undo_branch()

    @Slot(int)
    def bring_back(self, node_id: int) -> None:
        """A session tree node's path becomes the lanes again."""
        if self._may_replace_run():
            self.controller.bring_back(node_id)

    @Slot(int, int)
    def sweep(self, lane: int, step: int) -> None:
        self.controller.sweep(lane, step)

    @Slot(int)
    def add_temperature_fanouts(self, lane: int) -> None:
        self.controller.add_temperature_fanouts(lane)

    @Slot(int)
    def explain_lane(self, lane: int) -> None:
        """Lane `lane` inside the model (its inspection model prepared on first use, off the GUI thread)."""
        self.controller.explain_lane(lane)

    @Slot(int, int)
    def why(self, lane: int, step: int) -> None:
        """Why lane `lane` chose its token at `step`, not the runner-up (the Why tab)."""
        self.controller.why(lane, step)

    @Slot(int, int, int)
    def why_not(self, lane: int, step: int, token_id: int) -> None:
        """Why lane `lane` chose its token at `step`, not `token_id`."""
        self.controller.why(lane, step, b=token_id)

    @Slot()
    def why_selected_step(self) -> None:
        selection = self.state.selection
        if selection is None:
            self.state.show_notice(translate("RunCommands", "Select a token of a lane first (click it in the text): "
                                                            "“Why” explains that step."), level="info")
            return
        self.why(selection.lane, selection.step)

    @Slot()
    def explain_selected_lane(self) -> None:
        if self.state.selection is None:
            self.state.show_notice(translate("RunCommands", "Select a token of the lane to explain (click it in the "
                                                            "text)."), level="info", cause="selection")
            return
        self.explain_lane(self.state.selection.lane)

    @Slot()
    def compare_with_model(self) -> None:
        """The selected lane read by a second model the user picks."""
        if self.state.selection is None:
            self.state.show_notice(translate("RunCommands", "Select a token of the lane to compare with another model "
                                                            "(click it in the text)."), level="info",
                                   cause="selection")
            return
        self.compare_lane_with_model(self.state.selection.lane)

    @Slot(int)
    def compare_lane_with_model(self, lane: int) -> None:
        from gui.dialogs import model_choice
        from gui.state.model_comparison import other_models

        holder = self.controller.holder
        choices = other_models(holder.path if holder is not None else None)
        if not choices:
            self.state.show_notice(translate("RunCommands", "No other prepared model to compare with: prepare a "
                                                            "precision variant first (python main.py prepare "
                                                            "--variant int4)."), level="info")
            return
        name = self.state.lanes[lane].name if 0 <= lane < len(self.state.lanes) else ""
        path = model_choice.ask_model(self.parent(), choices, name, holder.name if holder else "")
        if path is not None:
            self.controller.compare_with_model(lane, path)

    @Slot()
    def previous_lane(self) -> None:
        self.select_neighbour_lane(-1)

    @Slot()
    def next_lane(self) -> None:
        self.select_neighbour_lane(1)

    def select_neighbour_lane(self, delta: int) -> None:
        """The lane above (-1) or below (+1) the selected one, at the same step (its last if it is shorter);
        lanes that have not run are skipped."""
        state, selection = self.state, self.state.selection
        lane, step = (selection.lane, selection.step) if selection else ((-1 if delta > 0 else len(state.lanes)), 0)
        lane += delta
        while 0 <= lane < len(state.lanes) and not state.lanes[lane].trace.steps:
            lane += delta
        if 0 <= lane < len(state.lanes):
            state.select(lane, min(step, len(state.lanes[lane].trace.steps) - 1))
