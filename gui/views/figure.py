"""What a chart hands over for export (gui.shell.image_export lays it out): a title and legend above a region of a
graphics scene."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QGraphicsScene


@dataclass
class Figure:
    """A chart to draw: a title and legend (HTML) above a region of a graphics scene (its plot and axes)."""

    title: str
    legend_html: str
    scene: QGraphicsScene
    source: QRectF  # the scene region: the plot with its axes, without the widget's controls
    footer_html: str = ""
