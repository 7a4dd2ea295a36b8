"""Every view the window shows in a tab, one row each: its id (the window's name for it, the tour's and the
export file's), how it is made over the run state, its tab group and title, the size it is drawn at for export,
and which of its signals go to which window command. The window builds its tabs, `show_view`, the export and the
tour's view ids from these rows: a new view is the view's class plus one row here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from PySide6.QtWidgets import QWidget

from gui.i18n import QT_TRANSLATE_NOOP
from gui.state.run_state import RunState
from gui.state.view_state import STRIPS_FROM
from gui.views.beam_tree import BeamTreeView
from gui.views.compare_view import CompareView
from gui.views.entropy_plane import EntropyPlane
from gui.views.fanout_view import FanoutView
from gui.views.inside.attention_view import AttentionView
from gui.views.inside.lens_view import LensView
from gui.views.inside.token_view import TokenView
from gui.views.inspector import StepInspector
from gui.views.lane_map import LaneStepMap
from gui.views.model_compare_view import ModelCompareView
from gui.views.redraw import RedrawScheduler
from gui.views.session_tree_view import SessionTreeView
from gui.views.sweep_view import SweepView
from gui.views.timeline import Timeline
from gui.views.why_view import WhyView

STEP, CHARTS = "step", "charts"  # the tab groups: the selected step (left), the run (right)
BRANCH_SIGNALS = {"branchRequested": "branch", "forceRequested": "force_for_all", "replayRequested": "replay_not_taken"}
# the lane texts' signals (the text panel is not a tabbed view)
TEXT_SIGNALS = {**BRANCH_SIGNALS, "explainRequested": "explain_lane", "whyRequested": "why",
                "compareModelRequested": "compare_lane_with_model"}


@dataclass(frozen=True)
class ViewRow:
    id: str  # the window's attribute, the tour's `view`, and the export's file name unless `export_name`
    make: Callable[[RunState, RedrawScheduler], QWidget]
    group: str  # STEP or CHARTS
    title: str  # marked for the catalogue (context "views"); translated where shown
    export_size: Callable[[RunState], tuple[int, int]]
    signals: dict[str, str] = field(default_factory=dict)  # the view's signal -> the window command it runs
    export_name: str = ""
    export_rank: int = 0  # where its figure comes in the export and the report image

    @property
    def file_name(self) -> str:
        return self.export_name or self.id


def _fixed(width: int, height: int) -> Callable[[RunState], tuple[int, int]]:
    return lambda _state: (width, height)


def _timeline_size(state: RunState) -> tuple[int, int]:
    """Room for each lane's strip (36 px) where the timeline draws strips (gui.views.timeline)."""
    return 1000, 440 if len(state.lanes) < STRIPS_FROM else 36 * len(state.lanes) + 160


def _lane_map_size(state: RunState) -> tuple[int, int]:
    return 1000, max(260, 26 * len(state.lanes) + 120)


def _session_tree_size(state: RunState) -> tuple[int, int]:
    return 1000, max(260, 26 * len(state.tree) + 120)


def _beam_tree_size(state: RunState) -> tuple[int, int]:
    steps = max((len(lane.trace.steps) for lane in state.lanes if lane.spec.is_beam), default=0)
    # 64 px a step keeps every token label (below 46 the view hides them): capped at 3000 px, a 64-step tree
    # was exported without any
    return max(900, 64 * steps + 120), 520


def _lens_size(state: RunState) -> tuple[int, int]:
    layers = max((e.layers for e in state.trace.explanations), default=0) if state.trace else 0
    return 1000, 24 * layers + 200


VIEWS: tuple[ViewRow, ...] = (
    ViewRow("inspector", lambda s, _r: StepInspector(s), STEP, QT_TRANSLATE_NOOP("views", "Step"), _fixed(820, 560),
            {**BRANCH_SIGNALS, "whyNotRequested": "why_not"}, export_rank=2),
    ViewRow("attention", lambda s, _r: AttentionView(s), STEP, QT_TRANSLATE_NOOP("views", "Attention"),
            _fixed(1100, 640), {"explainRequested": "explain_lane"}, export_rank=8),
    ViewRow("lens", lambda s, _r: LensView(s), STEP, QT_TRANSLATE_NOOP("views", "Logit lens"), _lens_size,
            {"explainRequested": "explain_lane"}, export_name="logit_lens", export_rank=9),
    ViewRow("tokens_view", lambda s, _r: TokenView(s), STEP, QT_TRANSLATE_NOOP("views", "Tokens"),
            _fixed(1000, 400), export_name="tokens", export_rank=7),
    ViewRow("why", lambda s, _r: WhyView(s), STEP, QT_TRANSLATE_NOOP("views", "Why"), _fixed(1000, 900),
            {"whyRequested": "why", "cancelRequested": "stop"}, export_rank=13),
    ViewRow("timeline", Timeline, CHARTS, QT_TRANSLATE_NOOP("views", "Timeline"), _timeline_size, export_rank=0),
    ViewRow("lane_map", LaneStepMap, CHARTS, QT_TRANSLATE_NOOP("views", "Lane map"), _lane_map_size, export_rank=1),
    ViewRow("session_tree", SessionTreeView, CHARTS, QT_TRANSLATE_NOOP("views", "Session tree"), _session_tree_size,
            {"restoreRequested": "bring_back"}, export_rank=11),
    ViewRow("compare", lambda s, _r: CompareView(s), CHARTS, QT_TRANSLATE_NOOP("views", "Side by side"),
            _fixed(1000, 460), export_name="side_by_side", export_rank=3),
    ViewRow("fanout", FanoutView, CHARTS, QT_TRANSLATE_NOOP("views", "Fan-out"), _fixed(1000, 560), export_rank=4),
    ViewRow("sweep", lambda s, _r: SweepView(s), CHARTS, QT_TRANSLATE_NOOP("views", "Temperature"),
            _fixed(1000, 560), {"sweepRequested": "sweep", "fanoutsRequested": "add_temperature_fanouts"},
            export_name="temperature", export_rank=5),
    ViewRow("beam_tree", BeamTreeView, CHARTS, QT_TRANSLATE_NOOP("views", "Beam tree"), _beam_tree_size, export_rank=6),
    ViewRow("entropy_plane", EntropyPlane, CHARTS, QT_TRANSLATE_NOOP("views", "Entropy × varentropy"),
            _fixed(1000, 620), export_rank=10),
    ViewRow("model_compare", lambda s, _r: ModelCompareView(s), CHARTS, QT_TRANSLATE_NOOP("views", "Model comparison"),
            _fixed(1000, 700), {"compareRequested": "compare_with_model"}, export_name="model_comparison",
            export_rank=12),
)


def row(view_id: str) -> ViewRow:
    return next(r for r in VIEWS if r.id == view_id)
