"""After a crash or kill -9: the run an instance left in its autosave is offered back at start; and what an
interrupted preparation left in the model cache is removed, and said."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QMessageBox, QWidget

from decoding.chain.spec import specs_of
from gui.i18n import translate
from gui.shell.autosaver import Autosaver, restorable
from gui.shell.unsaved import UnsavedRun
from gui.state.requests import request_of
from gui.state.run_state import RunState
from runfiles import autosave


def ask_restore(parent: QWidget, _path: Path) -> bool:
    answer = QMessageBox.question(
        parent, translate("restore", "Restore the last run?"),
        translate("restore", "Branchpoint stopped unexpectedly while it showed a run. Restore that run (the text "
                             "generated so far)?"),
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes)
    return answer == QMessageBox.StandardButton.Yes


def offer_restore(state: RunState, autosaver: Autosaver, unsaved: UnsavedRun, ask: Callable[[Path], bool]) -> bool:
    """Offer the newest run an instance left behind (`ask(path) -> bool`); "no" discards it."""
    found = restorable()
    if not found:
        return False
    path = found[0]
    if not ask(path):
        path.unlink(missing_ok=True)
        return False
    claimed = autosaver.store.claim(path)  # another instance may have taken it first
    if claimed is None:
        return False
    try:
        trace = autosave.restore(claimed)
        specs = specs_of(trace)
    except (OSError, ValueError) as error:
        state.show_notice(translate("restore", "Could not restore the autosaved run: {error}").format(error=error))
        return False
    state.show_trace(trace, specs)
    state.set_request(state.request.with_prompt_of(request_of(trace)))
    unsaved.unsaved = True  # no file of the user's holds it
    restored = translate("restore", "Restored the run Branchpoint was showing when it stopped ({lanes} lanes, "
                                    "{tokens} tokens).")
    tokens = sum(len(lane.steps) for lane in trace.lanes)
    state.show_notice(restored.format(lanes=len(trace.lanes), tokens=tokens), level="info", cause="restore")
    return True


def report_stale_builds(state: RunState) -> list[Path]:
    """Remove what an interrupted preparation (killed, power loss) left in the cache, and say so."""
    from models.prepare import remove_all_stale_builds

    removed = remove_all_stale_builds()
    if removed:
        names = ", ".join(path.name for path in removed)
        removed_text = translate("restore", "Removed {count} unfinished preparation folder(s) that an interrupted "
                                            "preparation left in the cache: {names}.")
        state.show_notice(removed_text.format(count=len(removed), names=names), level="info", cause="cleanup")
    return removed
