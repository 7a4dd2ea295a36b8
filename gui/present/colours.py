"""The colours the views draw with, for a light and a dark palette (Qt-free: gui.present.lane_html reads them too).
gui.shell.theme sets the current set when the palette changes; views read `current()` when they draw.

Light lanes are Okabe–Ito (distinguishable with colour-vision deficiencies), then four of Paul Tol's and a red:
twelve colours at least ΔE 20 apart (CIELAB); lanes beyond twelve repeat them with a dashed, dotted or
dash-dotted line (`lane_pattern`). The dark set keeps each lane's
hue, lighter, so every lane line, mark and token text stays at WCAG contrast on its background (text ≥ 4.5:1,
lines and marks ≥ 3:1; tests/gui/test_theme.py measures what is drawn).
"""

from __future__ import annotations

import colorsys
from contextlib import contextmanager
from dataclasses import dataclass

LINE_PATTERNS = ("solid", "dash", "dot", "dashdot")
# A legend's key for a lane's line, in its pattern
PATTERN_KEYS = {"solid": "━━", "dash": "╍╍", "dot": "┉┉", "dashdot": "━╍"}
# A lane's swatch beside its name, in its pattern
PATTERN_SWATCHES = {"solid": "■", "dash": "▨", "dot": "▩", "dashdot": "◪"}


@dataclass(frozen=True)
class Colours:
    dark: bool
    background: str  # charts and text columns
    ink: str  # axes, chart text, the default mark outline
    muted: str  # secondary text (strategy lines, hints)
    faint: str  # tertiary text (roles, running-beam header)
    label_fill: tuple[int, int, int, int]  # behind labels on chart lines (RGBA)
    lanes: tuple[str, ...]
    hidden_lane: str  # a hidden lane's key in a legend
    marks: dict[str, str]  # divergence, critical, branch, forced
    token_lightness: float  # HLS lightness of the probability backgrounds (red unlikely → green likely)
    token_saturation: float
    token_text: str
    selected_background: str
    selected_text: str
    proposed_background: str  # step mode's proposed token (its text: marks["proposed"])
    raw: str  # raw-distribution bars and lines
    processed: str
    chosen: str
    cutoff: str
    top_k: str
    draw: str
    beam_kept: str
    beam_kept_edge: str
    beam_pruned: str  # pruned nodes' outline and label
    beam_pruned_fill: str
    beam_pruned_edge: str
    beam_finished: str
    beam_best: str
    error: str  # message text
    warning: str  # "edited: Run to update"
    notice_error: str  # the notice bar's CSS
    notice_info: str
    # "Why A, not B": a diverging scale from the background to push_a (toward A) or push_b (toward B), blue and
    # vermilion (Okabe–Ito: apart for colour-vision deficiencies too); push_blend: the most of it a token's
    # background takes, so its text stays readable (text >= 4.5:1 on it, tests/gui/test_why_view.py measures)
    push_a: str = "#0072B2"
    push_b: str = "#D55E00"
    push_blend: float = 0.55

    def push(self, fraction: float) -> str:
        """Background of a token whose push is `fraction` of the strongest (> 0 toward A, < 0 toward B)."""
        fraction = min(max(float(fraction), -1.0), 1.0)
        end = self.push_a if fraction >= 0 else self.push_b
        mix = abs(fraction) * self.push_blend
        ground, tint = _rgb(self.background), _rgb(end)
        return "#" + "".join(f"{round(g + (t - g) * mix):02x}" for g, t in zip(ground, tint, strict=True))

    def lane(self, index: int) -> str:
        return self.lanes[index % len(self.lanes)]

    def lane_pattern(self, index: int) -> str:
        """How a lane's line is drawn: solid for the first round of colours, then dashed, dotted, dash-dotted,
        so the 13th lane shares the 1st's colour but not its line."""
        return LINE_PATTERNS[index // len(self.lanes) % len(LINE_PATTERNS)]

    def probability(self, p: float) -> str:
        """Background of a token of probability p: red (unlikely) through yellow to green (near certain)."""
        p = min(max(float(p), 0.0), 1.0)
        r, g, b = colorsys.hls_to_rgb(p / 3.0, self.token_lightness, self.token_saturation)
        return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


LIGHT = Colours(
    dark=False,
    background="#ffffff",
    ink="#202020",
    muted="#555555",
    faint="#888888",
    label_fill=(255, 255, 255, 200),
    lanes=("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B",
           "#332288", "#882255", "#999933", "#E31A1C"),
    hidden_lane="#bbbbbb",
    marks={"divergence": "#c2185b", "critical": "#e65100", "branch": "#1565c0", "forced": "#6a1b9a",
           "proposed": "#455a64"},
    token_lightness=0.80,
    token_saturation=0.75,
    token_text="#000000",
    selected_background="#1565c0",
    selected_text="#ffffff",
    proposed_background="#eceff1",
    raw="#A8A8A8",
    processed="#0072B2",
    chosen="#E69F00",
    cutoff="#C0392B",
    top_k="#7B3294",
    draw="#009E73",
    beam_kept="#0072B2",
    beam_kept_edge="#7FA7C9",
    beam_pruned="#9A9A9A",
    beam_pruned_fill="#FFFFFF",
    beam_pruned_edge="#B8B8B8",
    beam_finished="#009E73",
    beam_best="#E69F00",
    error="#c62828",
    warning="#b26a00",
    notice_error="background:#ffebee;color:#b71c1c;border:1px solid #e57373",
    notice_info="background:#e3f2fd;color:#0d47a1;border:1px solid #90caf9",
)

DARK = Colours(
    dark=True,
    background="#1f1f1f",
    ink="#e0e0e0",
    muted="#b0b0b0",
    faint="#a6a6a6",
    label_fill=(31, 31, 31, 210),
    lanes=("#5AA9E6", "#F07A2E", "#2BC49A", "#E08FC0", "#F2B233", "#9ED8FF", "#E6E6E6", "#C4907F",
           "#9A8CFF", "#E0679A", "#C9C94A", "#FF6B6B"),
    hidden_lane="#5a5a5a",
    marks={"divergence": "#f06292", "critical": "#ffb74d", "branch": "#64b5f6", "forced": "#ce93d8",
           "proposed": "#b0bec5"},
    token_lightness=0.25,
    token_saturation=0.50,
    token_text="#f0f0f0",
    selected_background="#1565c0",
    selected_text="#ffffff",
    proposed_background="#37474f",
    raw="#8a8a8a",
    processed="#5AA9E6",
    chosen="#F2B233",
    cutoff="#ff6f61",
    top_k="#c39bd3",
    draw="#2BC49A",
    beam_kept="#5AA9E6",
    beam_kept_edge="#4f7da3",
    beam_pruned="#9a9a9a",
    beam_pruned_fill="#1f1f1f",
    beam_pruned_edge="#5c5c5c",
    beam_finished="#2BC49A",
    beam_best="#F2B233",
    error="#ff8a80",
    warning="#ffc670",
    notice_error="background:#4a1f1f;color:#ffcdd2;border:1px solid #c62828",
    notice_info="background:#1a2f45;color:#bbdefb;border:1px solid #1e88e5",
    push_a="#56B4E9",
    push_b="#E69F00",
    push_blend=0.45,
)

_current = LIGHT
# The marks' colours in effect, one dict for the whole program (gui.present.lane_html and the charts hold it).
MARK_COLOURS: dict[str, str] = dict(LIGHT.marks)


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))


def current() -> Colours:
    return _current


@contextmanager
def built_light():
    """Widgets made inside are drawn with the light palette (some views write colours into their widgets once);
    gui.shell.theme then turns what they drew into the scheme in effect."""
    previous = _current
    set_current(LIGHT)
    try:
        yield
    finally:
        set_current(previous)


def set_current(colours: Colours) -> None:
    global _current
    _current = colours
    MARK_COLOURS.clear()
    MARK_COLOURS.update(colours.marks)


# ------------------------------------------------------------------------- one palette's colours as the other's

def _pairs() -> dict[str, str]:
    """Each designed light colour and its dark counterpart, both ways."""
    pairs: dict[str, str] = {}
    for name in ("background", "ink", "muted", "faint", "hidden_lane", "token_text", "raw", "processed", "chosen",
                 "cutoff", "top_k", "draw", "beam_kept", "beam_kept_edge", "beam_pruned", "beam_pruned_fill",
                 "beam_pruned_edge", "beam_finished", "beam_best", "error", "warning", "proposed_background",
                 "push_a", "push_b"):
        pairs[getattr(LIGHT, name).lower()] = getattr(DARK, name).lower()
    for light, dark in zip(LIGHT.lanes, DARK.lanes, strict=True):
        pairs[light.lower()] = dark.lower()
    for kind, light in LIGHT.marks.items():
        pairs[light.lower()] = DARK.marks[kind].lower()
    return pairs | {dark: light for light, dark in pairs.items()}


PAIRS = _pairs()


def swap_lightness(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    """The colour with its HSL lightness mirrored (L → 1 − L), hue and saturation kept: dark ink becomes light
    ink, a white background black, a saturated colour a lighter or darker shade of itself. Applied twice it gives
    the colour back."""
    shift = 255 - max(rgb) - min(rgb)
    return tuple(channel + shift for channel in rgb)


def counterpart(hex_colour: str) -> str:
    """A colour of one palette as the other palette has it: the designed pair, else its lightness mirrored
    (with `swap_lightness`, so going back and forth returns the colour)."""
    key = hex_colour.lower()
    if key in PAIRS:
        return PAIRS[key]
    r, g, b = (int(key[i:i + 2], 16) for i in (1, 3, 5))
    return "#{:02x}{:02x}{:02x}".format(*swap_lightness((r, g, b)))
