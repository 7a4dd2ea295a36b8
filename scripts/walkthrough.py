"""Walk through the window as a new user would, on the default model, and save what every view shows (run it under
Xvfb with the xcb platform, or offscreen):

    xvfb-run -s "-screen 0 1920x1200x24" .venv/bin/python scripts/walkthrough.py --size 1280x800 --out /tmp/walk
    python scripts/walkthrough.py --lang zh_CN --theme dark --size 1600x1000 --out /tmp/walk

Ten lanes from the Add menu (one of them a 32-member fan-out), a run, a branch, the branch not taken, an
explanation; then each view of both tab groups, one PNG each (`<size>_<lang>_<theme>_<view>.png`). Not a test: it
only drives and draws (the pytest-qt scenarios under tests/gui check what the views show).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROMPTS = {"en": "Although I was tired, I still decided to", "zh_CN": "我虽然很累，但还是决定"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="1280x800")
    parser.add_argument("--lang", default="en", choices=("en", "zh_CN"))
    parser.add_argument("--theme", default="light", choices=("light", "dark"))
    parser.add_argument("--lanes", type=int, default=10)
    parser.add_argument("--fanout", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--out", type=Path, default=Path("/tmp/walkthrough"))
    return parser.parse_args()


def pump(app, seconds: float = 0.2) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)


def settle(app, window, timeout_s: float = 900.0) -> None:
    """Until no job runs (a command may start a second one after the first)."""
    deadline, quiet = time.monotonic() + timeout_s, 0
    while time.monotonic() < deadline and quiet < 15:
        app.processEvents()
        quiet = 0 if window.state.job is not None or window.worker.is_running() else quiet + 1
        time.sleep(0.02)


def main() -> int:
    args = parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb" if os.environ.get("DISPLAY") else "offscreen")
    from gui.app import make_application
    from gui.i18n import language
    from gui.shell.theme import app_theme

    app = make_application([])
    problem = language.install(app, args.lang)
    if problem:
        print(problem, file=sys.stderr)
        return 1
    app_theme().set_mode(args.theme)
    from gui.main_window import MainWindow
    from models.catalog import resolve

    window = MainWindow(resolve(None))
    width, height = (int(v) for v in args.size.split("x"))
    window.resize(width, height)
    window.show()
    window.unsaved.ask_before_run = False
    pump(app, 0.5)
    presets = itertools.cycle(window.lanes.add_button.menu().actions())
    while len(window.state.lanes) < args.lanes:
        next(presets).trigger()
    sampled = next(i for i, lane in enumerate(window.state.lanes) if lane.spec.do_sample)
    window.state.set_fanout(sampled, args.fanout)
    window.prompt.editor.setPlainText(PROMPTS[args.lang])
    window.prompt.max_new_tokens.setValue(args.max_new_tokens)
    window.prompt.seed.setValue(1)
    window.commands.run()
    settle(app, window)
    prefix = f"{args.size}_{args.lang}_{args.theme}"
    args.out.mkdir(parents=True, exist_ok=True)
    shots: list[Path] = []

    def shot(name: str) -> None:
        pump(app, 0.3)
        path = args.out / f"{prefix}_{name}.png"
        window.grab().save(str(path), "PNG", 0)
        shots.append(path)

    shot("run")
    if window.state.notice is not None:
        print(f"after the run: {window.state.notice.level}: {window.state.notice.text}")
    print("lanes:", [(lane.name, len(lane.trace.steps)) for lane in window.state.lanes])
    greedy = window.state.lanes[0].trace
    window.text.request_branch(0, 4, greedy.steps[4].top[1].id)  # the runner-up at step 4
    settle(app, window)
    window.state.select(0, 6)
    shot("branch")
    window.commands.explain_lane(0)
    settle(app, window)
    window.state.select(0, min(8, len(greedy.steps) - 1))
    for group in (window.step_views, window.charts):
        for index in range(group.count()):
            group.setCurrentIndex(index)
            kind = "step" if group is window.step_views else "chart"
            shot(f"{kind}{index}_{group.widget(index).objectName() or index}")
    notice = window.state.notice
    print(f"notice at the end: {notice.level}: {notice.text}" if notice else "no notice at the end")
    print("\n".join(str(path) for path in shots))
    window.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
