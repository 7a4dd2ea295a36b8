"""Render every chart widget with an English and a Chinese sample trace to PNG, for looking at them:
`python -m tests.render_charts OUT_DIR` (offscreen)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests import chart_samples as samples

SAMPLES = {
    "en": (samples.EN_CANDIDATES, samples.EN_BEAM_WORDS),
    "zh": (samples.ZH_CANDIDATES, samples.ZH_BEAM_WORDS),
}


def render_all(out_dir: Path) -> list[Path]:
    from PySide6.QtWidgets import QApplication

    from gui.views.beam_tree import BeamTreeView
    from gui.views.inspector import StepInspector
    from gui.views.redraw import RedrawScheduler
    from gui.views.style import configure_fonts
    from gui.views.timeline import Timeline

    app = QApplication.instance() or QApplication([])
    configure_fonts(app)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for tag, (candidates, words) in SAMPLES.items():
        inspector = StepInspector(samples.model_of([samples.sampled_lane(candidates), samples.min_p_lane(candidates)]))
        inspector.resize(640, 480)
        inspector.show()
        inspector.set_step(0, 0)
        paths.append(_save(app, inspector, out_dir / f"inspector_{tag}.png"))
        inspector.set_overlay(True)
        inspector.set_step(1, 0)
        paths.append(_save(app, inspector, out_dir / f"inspector_min_p_overlay_{tag}.png"))

        model = samples.model_of(samples.timeline_lanes(candidates))
        timeline = Timeline(model, RedrawScheduler())
        timeline.resize(760, 360)
        timeline.show()
        model.select(1, 5)
        paths.append(_save(app, timeline, out_dir / f"timeline_{tag}.png"))

        tree = BeamTreeView()
        tree.resize(760, 360)
        tree.show()
        tree.set_lane(1, samples.beam_lane(words))
        paths.append(_save(app, tree, out_dir / f"beam_tree_{tag}.png"))
        for widget in (inspector, timeline, tree):
            widget.close()
    return paths


def _save(app, widget, path: Path) -> Path:
    app.processEvents()
    return widget.export_png(path)


if __name__ == "__main__":
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    for written in render_all(Path(sys.argv[1] if len(sys.argv) > 1 else "chart_renders")):
        print(written)
