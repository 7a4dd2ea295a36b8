"""What the entropy × varentropy view draws, Qt-free: each lane's steps as points on the plane (raw or processed
distribution), where the adaptive strategy's thresholds (decoding.chain.adaptive) cut it into entropix's four regimes,
and each regime's words. Both axes are logarithmic (entropy and varentropy span 0.001 to 10 nats and nats²
within one text): a point is drawn at log10 of its value, a value under FLOOR at FLOOR.

>>> from gui.present.entropy_plane import regime
>>> regime(0.02, 0.01), regime(6.0, 8.0), regime(0.5, 7.0), regime(5.5, 1.0)
('sure', 'lost', 'forks', 'spread')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from decoding.chain.adaptive import HIGH_ENTROPY, HIGH_VARENTROPY, LOW_ENTROPY, LOW_VARENTROPY
from decoding.records.trace import StepRecord
from gui.i18n import QT_TRANSLATE_NOOP, translate

FLOOR = 1e-3  # values below are drawn here (a log axis has no 0)
CEILING = 100.0
TICKS = (0.001, 0.01, 0.1, 1.0, 5.0, 10.0, 100.0)


@dataclass(frozen=True)
class PlanePoint:
    step: int
    entropy: float  # nats
    varentropy: float  # nats squared
    decision: str | None  # an adaptive lane's decision this step ("argmax", "sample", "widen")

    @property
    def xy(self) -> tuple[float, float]:
        """Where the point is drawn (log10 of each value, floored)."""
        return log_position(self.entropy), log_position(self.varentropy)


def log_position(value: float) -> float:
    return math.log10(min(max(value, FLOOR), CEILING))


def plane_points(steps: Sequence[StepRecord], raw: bool) -> list[PlanePoint]:
    """A lane's steps on the plane: the raw distribution's entropy and varentropy (what the adaptive strategy
    decides by), or the processed one's; steps without a varentropy (a version 2 run file) are left out."""
    points = []
    for step in steps:
        varentropy = step.varentropy_raw if raw else step.varentropy
        if varentropy is not None:
            points.append(PlanePoint(step.step, step.entropy_raw if raw else step.entropy, varentropy, step.adaptive))
    return points


def regime(entropy: float, varentropy: float) -> str:
    """The regime a point lies in, by the adaptive strategy's thresholds: "sure" (argmax), "lost" (widen), and
    of the rest "forks" (a few strong candidates: varentropy high for its entropy) or "spread" (many alike)."""
    if entropy < LOW_ENTROPY and varentropy < LOW_VARENTROPY:
        return "sure"
    if entropy > HIGH_ENTROPY and varentropy > HIGH_VARENTROPY:
        return "lost"
    return "forks" if varentropy > entropy else "spread"


# The regimes (context "entropy_plane"), shown through regime_text; where each one's words sit on the plane (log10
# of entropy, of varentropy) and which end of them sits there (0: their left end, 1: their right end, inside the
# plot's right edge).
REGIMES = {
    "sure": (QT_TRANSLATE_NOOP("entropy_plane", "low H, low V: sure → argmax"), (-2.9, -2.6), 0),
    "forks": (QT_TRANSLATE_NOOP("entropy_plane", "low H, high V: a few strong candidates, forks → sample"),
              (-2.9, 1.7), 0),
    "spread": (QT_TRANSLATE_NOOP("entropy_plane", "high H, low V: many alike → sample"), (1.95, -2.6), 1),
    "lost": (QT_TRANSLATE_NOOP("entropy_plane", "high H, high V: lost → widen"), (1.95, 1.7), 1),
}
# The corners the adaptive strategy acts on: (entropy low, high), (varentropy low, high), in nats and nats².
CORNERS = {"sure": ((FLOOR, LOW_ENTROPY), (FLOOR, LOW_VARENTROPY)),
           "lost": ((HIGH_ENTROPY, CEILING), (HIGH_VARENTROPY, CEILING))}


def regime_text(key: str) -> str:
    return translate("entropy_plane", REGIMES[key][0])


def two_lines(text: str) -> str:
    """A regime's words with their corner's name on a line of its own ("low H, high V:" / "a few strong …")."""
    for colon in (": ", "："):
        if colon in text:
            head, tail = text.split(colon, 1)
            return f"{head}{colon.strip()}\n{tail}"
    return text


def tick_text(value: float) -> str:
    return f"{value:g}"
