"""Render the window with each "why it forks" view open, on the default model, with English and Chinese prompts
(offscreen), for docs/views/:

    python scripts/screenshot_views.py --out docs/views
    python scripts/screenshot_views.py --out /tmp/views --theme dark   # files named …_dark.png

Not a test: it only draws. Each shot is a tour stop (gui/state/tour.py) or a run with a fan-out, then a view.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHOTS = [  # file, tour stop, view to show after it
    ("near_tie_compare_en.png", "near_tie", "compare"),
    ("near_tie_lane_map_zh.png", "near_tie_zh", "lane_map"),
    ("fanout_temperature_en.png", "thermal_fanout", "sweep"),
    ("fanout_tree_en.png", "thermal_fanout", "fanout"),
    ("beam_tree_en.png", "beam_vs_greedy", "beam_tree"),
]


def settle(app, window, timeout_s: float = 900.0) -> None:
    """Wait until no job runs (a tour stop may start a second one after its run)."""
    deadline = time.monotonic() + timeout_s
    quiet_since = None
    while time.monotonic() < deadline:
        app.processEvents()
        busy = window.worker.is_running() or not window.prompt.run_button.isEnabled()
        if busy:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 0.5:
            return
        time.sleep(0.02)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("docs/views"))
    parser.add_argument("--model", help="prepared model name or folder (default: the default model)")
    parser.add_argument("--theme", default="light", choices=("light", "dark"), help="palette")
    parser.add_argument("--only", help="comma-separated views to shoot (e.g. fanout,sweep)")
    args = parser.parse_args()
    from gui.app import make_application
    from gui.main_window import MainWindow
    from models.catalog import resolve

    app = make_application([])
    from gui.shell.theme import app_theme

    app_theme().set_mode(args.theme)  # before the window, as a saved theme is at start
    window = MainWindow(resolve(args.model))
    window.unsaved.ask_before_run = False  # each tour stop replaces the last run: no "Save changes?" here
    window.resize(1280, 800)
    window.show()
    args.out.mkdir(parents=True, exist_ok=True)
    done_stop = None
    shots = [shot for shot in SHOTS if not args.only or shot[2] in args.only.split(",")]
    for name, stop, view in shots:
        if args.theme == "dark":
            name = name.replace(".png", "_dark.png")
        if stop != done_stop:
            window.tour.start(stop)
            settle(app, window)
            done_stop = stop
        window.show_view(view)
        if window.state.selection is None:
            window.state.select(len(window.state.lanes) - 1, 2)
        settle(app, window)
        window.grab().save(str(args.out / name))
        print(f"wrote {args.out / name}")
    window.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
