"""Every command of the window as one row: its id, text, keys, tip, the command it runs, and whether it waits
for the run to end. The tool bar, the menus (gui.shell.menus) and F1's list of shortcuts are built from this
table; `Actions` makes the QActions and disables the idle-only ones while a job runs.

Texts are marked for the catalogue in context "actions" and translated when the actions are made."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence

from gui.i18n import QT_TRANSLATE_NOOP, translate


@dataclass(frozen=True)
class ActionRow:
    id: str  # also the command's name in the commands the window passes in
    text: str
    keys: tuple[str, ...] = ()  # key sequences ("Ctrl+L"), or "Open" etc. for Qt's standard keys
    tip: str = ""
    idle_only: bool = False  # disabled while a job runs
    checkable: bool = False
    lane_views_only: bool = False  # a key only while the text columns or the timeline have the focus


STANDARD_KEYS = {
    "Open": QKeySequence.StandardKey.Open,
    "Save": QKeySequence.StandardKey.Save,
    "Undo": QKeySequence.StandardKey.Undo,
    "FullScreen": QKeySequence.StandardKey.FullScreen,
}

ACTIONS: tuple[ActionRow, ...] = (
    # File
    ActionRow(
        "open",
        QT_TRANSLATE_NOOP("actions", "Open…"),
        ("Open",),
        QT_TRANSLATE_NOOP("actions", "Open a saved run (JSON); no model needed"),
        idle_only=True,
    ),
    ActionRow(
        "save",
        QT_TRANSLATE_NOOP("actions", "Save…"),
        ("Save",),
        QT_TRANSLATE_NOOP("actions", "Save the run as JSON"),
        idle_only=True,
    ),
    ActionRow(
        "export",
        QT_TRANSLATE_NOOP("actions", "Export images…"),
        ("Ctrl+Shift+E",),
        QT_TRANSLATE_NOOP(
            "actions", "Export the prompt and texts, each chart (PNG and SVG) and a report image of the whole run"
        ),
    ),
    ActionRow(
        "ask_before_run",
        QT_TRANSLATE_NOOP("actions", "Ask to save before a new run"),
        (),
        QT_TRANSLATE_NOOP("actions", "Before a new run replaces a run that has not been saved, ask whether to save it"),
        checkable=True,
    ),
    ActionRow("quit", QT_TRANSLATE_NOOP("actions", "&Quit"), ("Ctrl+Q",)),
    # Run
    ActionRow("run", QT_TRANSLATE_NOOP("actions", "&Run all lanes"), ("Ctrl+Return", "Ctrl+Enter")),
    ActionRow("stop", QT_TRANSLATE_NOOP("actions", "&Stop"), ("Esc",)),
    ActionRow(
        "replay",
        QT_TRANSLATE_NOOP("actions", "Replay"),
        (),
        QT_TRANSLATE_NOOP("actions", "Re-run the shown run with the model and check every token"),
        idle_only=True,
    ),
    ActionRow(
        "run_again_and_compare",
        QT_TRANSLATE_NOOP("actions", "Run again and &compare"),
        (),
        QT_TRANSLATE_NOOP(
            "actions",
            "Run every lane again (fresh draws where the seed is auto) and say where each differs from this run",
        ),
    ),
    ActionRow(
        "edit_thresholds",
        QT_TRANSLATE_NOOP("actions", "Critical-point &thresholds…"),
        (),
        QT_TRANSLATE_NOOP("actions", "What makes a step a critical point (▲)"),
    ),
    ActionRow(
        "add_precision_variant",
        QT_TRANSLATE_NOOP("actions", "Add precision &variant…"),
        (),
        QT_TRANSLATE_NOOP(
            "actions",
            "Make a precision variant of the chosen model offline (fp16, int8, int4, the GGUF's own blocks, "
            "llama.cpp's schemes, ggml), checked against fp32 (also in the model picker)",
        ),
        idle_only=True,
    ),
    # Lanes
    ActionRow("add_lane", QT_TRANSLATE_NOOP("actions", "&Add lane (greedy)"), ("Ctrl+L",)),
    ActionRow("duplicate_lane", QT_TRANSLATE_NOOP("actions", "&Duplicate selected lane")),
    ActionRow("remove_lane", QT_TRANSLATE_NOOP("actions", "Re&move selected lane")),
    ActionRow("move_lane_left", QT_TRANSLATE_NOOP("actions", "Move selected lane &left")),
    ActionRow("move_lane_right", QT_TRANSLATE_NOOP("actions", "Move selected lane r&ight")),
    ActionRow("import_generation_config", QT_TRANSLATE_NOOP("actions", "Add lane from &generation_config.json…")),
    ActionRow(
        "export_generation_config", QT_TRANSLATE_NOOP("actions", "&Export selected lane as generation_config.json…")
    ),
    ActionRow(
        "undo_branch",
        QT_TRANSLATE_NOOP("actions", "Undo branch"),
        ("Undo",),
        QT_TRANSLATE_NOOP("actions", "Remove the last branch lane (Ctrl+Z)"),
        idle_only=True,
    ),
    ActionRow(
        "toggle_step_mode",
        QT_TRANSLATE_NOOP("actions", "Step mode"),
        ("F6",),
        QT_TRANSLATE_NOOP("actions", "One token at a time: Run (or F7) advances every lane one step, F8 the selected "
                                     "lane, F9 runs it to the end; double-click a candidate to take it instead"),
    ),
    ActionRow("step_all", QT_TRANSLATE_NOOP("actions", "One step of every lane"), ("F7",)),
    ActionRow("step_selected_lane", QT_TRANSLATE_NOOP("actions", "One step of the selected lane"), ("F8",)),
    ActionRow("run_selected_lane_to_end", QT_TRANSLATE_NOOP("actions", "Run the selected lane to the end"), ("F9",)),
    ActionRow(
        "explain_selected_lane",
        QT_TRANSLATE_NOOP("actions", "Explain lane"),
        (),
        QT_TRANSLATE_NOOP(
            "actions",
            "Inside the model for the selected lane: every layer's attention per head and the logit "
            "lens (Attention and Logit lens tabs)",
        ),
        idle_only=True,
    ),
    ActionRow(
        "why_selected_step",
        QT_TRANSLATE_NOOP("actions", "Why this token?"),
        ("Y",),
        QT_TRANSLATE_NOOP(
            "actions",
            "For the selected step: each earlier token hidden from every later one in turn, and how much that moves "
            "its token against the runner-up; where in depth the difference is made (Why tab)",
        ),
        idle_only=True,
        lane_views_only=True,
    ),
    ActionRow(
        "compare_with_model",
        QT_TRANSLATE_NOOP("actions", "Compare with model…"),
        (),
        QT_TRANSLATE_NOOP(
            "actions",
            "Read the selected lane's tokens with a second prepared model (a precision variant, say): per-step KL, "
            "top-1 flips, change in p(chosen) (Model comparison tab)",
        ),
        idle_only=True,
    ),
    # View
    ActionRow("previous_lane", QT_TRANSLATE_NOOP("actions", "&Previous lane"), ("Up",), lane_views_only=True),
    ActionRow("next_lane", QT_TRANSLATE_NOOP("actions", "&Next lane"), ("Down",), lane_views_only=True),
    ActionRow("full_screen", QT_TRANSLATE_NOOP("actions", "&Full screen"), ("FullScreen",), checkable=True),
    ActionRow(
        "reset_layout",
        QT_TRANSLATE_NOOP("actions", "&Reset layout"),
        (),
        QT_TRANSLATE_NOOP("actions", "Window size, panel sizes and tool bar as at first start"),
    ),
    # Help
    ActionRow("shortcuts", QT_TRANSLATE_NOOP("actions", "&Keyboard shortcuts"), ("F1",)),
    ActionRow(
        "tour",
        QT_TRANSLATE_NOOP("actions", "Tour"),
        (),
        QT_TRANSLATE_NOOP("actions", "A guided tour: one preset per phenomenon, explained in English and Chinese"),
    ),
    ActionRow("about", QT_TRANSLATE_NOOP("actions", "&About Branchpoint")),
)

# Where each action appears, in order: "-" a separator, "@name" a place the tool bar or menus fill themselves.
TOOLBAR = (
    "@model",
    "-",
    "open",
    "save",
    "replay",
    "-",
    "@branch_as",
    "undo_branch",
    "toggle_step_mode",
    "explain_selected_lane",
    "-",
    "tour",
    "export",
)
MENUS: dict[str, tuple[str, ...]] = {
    QT_TRANSLATE_NOOP("actions", "&File"): ("open", "@recent", "save", "export", "-", "ask_before_run", "-", "quit"),
    QT_TRANSLATE_NOOP("actions", "&Run"): (
        "run",
        "stop",
        "replay",
        "run_again_and_compare",
        "-",
        "toggle_step_mode",
        "step_all",
        "step_selected_lane",
        "run_selected_lane_to_end",
        "-",
        "edit_thresholds",
        "@device",
        "add_precision_variant",
    ),
    QT_TRANSLATE_NOOP("actions", "&Lanes"): (
        "add_lane",
        "@add_preset",
        "@replace_preset",
        "duplicate_lane",
        "remove_lane",
        "move_lane_left",
        "move_lane_right",
        "-",
        "import_generation_config",
        "export_generation_config",
        "-",
        "undo_branch",
        "-",
        "why_selected_step",
        "compare_with_model",
    ),
    QT_TRANSLATE_NOOP("actions", "&View"): (
        "@theme",
        "@language",
        "-",
        "previous_lane",
        "next_lane",
        "-",
        "full_screen",
        "reset_layout",
    ),
    QT_TRANSLATE_NOOP("actions", "&Help"): ("shortcuts", "tour", "-", "about"),
}
HIDDEN = ("run", "stop", "shortcuts")  # also window actions: their keys work with the menu bar hidden


def key_sequences(row: ActionRow) -> list[QKeySequence]:
    out = []
    for key in row.keys:
        standard = STANDARD_KEYS.get(key)
        out.extend(QKeySequence.keyBindings(standard) if standard is not None else [QKeySequence(key)])
    return out


class Actions:
    """The table's QActions, by id, each running its command from `commands` (id -> callable)."""

    def __init__(self, owner: QObject, commands: Mapping[str, Callable]) -> None:
        self.rows = {row.id: row for row in ACTIONS}
        self.by_id: dict[str, QAction] = {}
        for row in ACTIONS:
            action = QAction(translate("actions", row.text), owner)
            action.setShortcuts(key_sequences(row))
            if row.tip:
                action.setToolTip(translate("actions", row.tip))
                action.setStatusTip(translate("actions", row.tip))
            action.setCheckable(row.checkable)
            if row.lane_views_only:
                action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            elif row.id in HIDDEN:
                action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            action.triggered.connect(commands[row.id])
            self.by_id[row.id] = action

    def __getitem__(self, action_id: str) -> QAction:
        return self.by_id[action_id]

    def set_idle(self, idle: bool) -> None:
        for action_id, row in self.rows.items():
            if row.idle_only:
                self.by_id[action_id].setEnabled(idle)

    def with_keys(self) -> list[QAction]:
        """Every action with a key, in the table's order (F1's list)."""
        return [self.by_id[row.id] for row in ACTIONS if row.keys]
