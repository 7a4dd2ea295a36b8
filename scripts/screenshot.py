"""Render the main window with a finished run to PNG (offscreen), for the README.

    python scripts/screenshot.py --out docs/screenshot.png
    python scripts/screenshot.py --prompt "我虽然很累，但还是决定" --out docs/screenshot-zh.png
    python scripts/screenshot.py --tour delayed_release --charts 950x560 --out docs/inside-attention.png
    python scripts/screenshot.py --lang zh_CN --theme dark --prompt "我虽然很累，但还是决定" \
        --out docs/screenshot-zh-dark.png

Uses the prepared default model (or --model). Not a test: it only draws.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompt", default="Although I was tired, I still decided to")
    parser.add_argument("--chat", action="store_true", help="wrap the prompt in the chat template")
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument("--model", help="prepared model name or folder (default: the default model)")
    parser.add_argument("--seed", type=int, default=1, help="run seed for the sampled lanes (-1: random)")
    parser.add_argument("--select", default="2:6", help="lane:step to select in the inspector")
    parser.add_argument("--size", default="1280x800", help="window size WxH")
    parser.add_argument("--tour", help="run this tour stop (gui.state.tour) instead, with what it does after the run")
    parser.add_argument("--tab", help="then show this chart tab (its title, e.g. Tokens)")
    parser.add_argument("--charts", default="", help="WxH in px to give the charts, as a user drags the splitters "
                                                     "(the inspector and the text get the rest)")
    parser.add_argument("--lang", default="en", choices=("en", "zh_CN"), help="interface language")
    parser.add_argument("--theme", default="light", choices=("light", "dark"), help="palette")
    parser.add_argument("--out", type=Path, default=Path("docs/screenshot.png"))
    return parser.parse_args()


def wait_for_run(app, window, timeout_s: float = 600.0) -> None:
    deadline = time.monotonic() + timeout_s
    while (window.worker.is_running() or not window.prompt.run_button.isEnabled()) and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
    app.processEvents()


def main() -> int:
    args = parse_args()
    from gui.app import make_application
    from gui.i18n import translate
    from gui.main_window import MainWindow
    from models.catalog import resolve

    app = make_application([])
    from gui.i18n import language

    problem = language.install(app, args.lang)
    if problem:
        print(problem, file=sys.stderr)
        return 1
    from gui.shell.theme import app_theme

    app_theme().set_mode(args.theme)  # before the window, as a saved theme is at start
    window = MainWindow(resolve(args.model))
    width, height = (int(v) for v in args.size.split("x"))
    window.resize(width, height)
    window.show()
    groups = (window.step_views, window.charts)  # bottom row: the step's views | the run's charts
    tab = translate("main_window", args.tab) if args.tab else None  # the title as the interface language says it
    group = next((g for g in groups if tab in [g.tabText(i) for i in range(g.count())]), window.charts)
    if args.tour and not args.tab:  # the group holding the view the tour stop shows
        from gui.state.tour import stop

        shown = getattr(window, stop(args.tour).view, None)
        group = next((g for g in groups if shown is not None and g.indexOf(shown) >= 0), window.charts)
    if args.charts:  # the tab's group gets this size
        charts_width, charts_height = (int(v) for v in args.charts.split("x"))
        bottom = window.charts.parentWidget()
        other = max(bottom.width() - charts_width, 0)
        bottom.setSizes([charts_width, other] if group is window.step_views else [other, charts_width])
        right = bottom.parentWidget()  # text above, the bottom row below
        right.setSizes([height - charts_height, charts_height])
    if args.tour:
        window.tour.start(args.tour)
        for _ in range(3):  # the run, then what the stop does after it (an explanation, another run)
            wait_for_run(app, window)
            time.sleep(0.2)
            app.processEvents()
    else:
        window.prompt.editor.setPlainText(args.prompt)
        window.prompt.chat.setChecked(args.chat)
        window.prompt.max_new_tokens.setValue(args.max_new_tokens)
        window.prompt.seed.setValue(args.seed)
        window.commands.run()
        wait_for_run(app, window)
        lane, step = (int(v) for v in args.select.split(":"))
        window.state.select(lane, min(step, len(window.state.traces[lane].steps) - 1))
    notice = window.state.notice
    if notice is not None and notice.level == "error":
        print(f"run failed: {notice.text}", file=sys.stderr)
    if args.tab:
        titles = [group.tabText(i) for i in range(group.count())]
        group.setCurrentIndex(titles.index(tab))
    for _ in range(10):
        app.processEvents()
        time.sleep(0.02)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    window.grab().save(str(args.out), "PNG", 0)  # 0: the smallest file (most compression)
    print(f"wrote {args.out}")
    window.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
