"""What a kind of window task does to the window, as the run state, the status bar and the tour read it (one
frozen value per kind, defined in the task's module; nothing here knows the tasks)."""

from __future__ import annotations

from dataclasses import dataclass

from gui.i18n import QT_TRANSLATE_NOOP


@dataclass(frozen=True)
class TaskKind:
    name: str
    replaces_run: bool = False  # the shown run goes: the task's lanes start empty and become the run
    counts_steps: bool = True  # the status bar counts the steps of the longest lane (not: one call over a lane)
    streams_tokens: bool = True  # tokens stream into lanes (the status bar's tokens per second)
    keeps_proposals: bool = False  # step mode's proposed steps stay (every other task ends them)
    new_run: bool = False  # a whole new run streams (what an autosave writes meanwhile; a tour's wait ends)
    adds_run_text: bool = False  # new text of a run the user started (run, replay, branch): a tour stop's words go
    # the status bar's words while it works (translated there, in the "status" context)
    busy_text: str = QT_TRANSLATE_NOOP("status", "running…")
