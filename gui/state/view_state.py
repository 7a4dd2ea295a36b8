"""Each view's own choices (a metric, a mode, the other lane, a layer and head…), Qt-free: a view hands out its
`view_state()` and takes one back with `set_view_state(...)`, so an export drawn afresh shows what the window
shows and the settings keep what a user chose, without reading widgets."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TimelineViewState:
    metric: str = "prob"
    layout: str = "auto"  # "overlay": one plot of every lane; "strips": one strip per lane; "auto": strips at 6+


TIMELINE_LAYOUTS = ("auto", "overlay", "strips")
STRIPS_FROM = 5  # lanes from which "auto" draws one strip per lane (overlaid lines become spaghetti)


@dataclass(frozen=True)
class InspectorViewState:
    overlay: bool = False  # processed bars drawn inside raw ones instead of side by side


@dataclass(frozen=True)
class EntropyPlaneViewState:
    raw: bool = True  # the raw distribution's entropy and varentropy (what adaptive decides by), not the processed


@dataclass(frozen=True)
class CompareViewState:
    other: int = 0  # the other lane's index in the list (the reference lane first)


@dataclass(frozen=True)
class SweepViewState:
    diversity: bool = False  # the fan-outs' diversity over temperature instead of the selected step's sweep


@dataclass(frozen=True)
class AttentionViewState:
    mode: str
    heads: str | int
    drop_first: bool
    token: int
    picked: tuple[int, int] | None


@dataclass(frozen=True)
class LensViewState:
    position: int = 0


@dataclass(frozen=True)
class ModelCompareViewState:
    step: int | None = None  # the step whose two distributions are shown side by side
