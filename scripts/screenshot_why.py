"""Render the window's Why tab (offscreen) after a greedy run and a "why" of one of its steps, for docs/views/ and
for looking at it in English and Chinese, light and dark:

    python scripts/screenshot_why.py --out /tmp/why --lang zh_CN --theme dark
    python scripts/screenshot_why.py --prompt "Although he tried to open the door," --step 0   # the tour's stop

Not a test: it only draws (the numbers are the tests' business)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.screenshot_views import settle  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("docs/views"))
    parser.add_argument("--model", help="prepared model name or folder (default: the default model)")
    parser.add_argument("--prompt", default="Although he tried to open the door,")
    parser.add_argument("--step", type=int, default=0)
    parser.add_argument("--tokens", type=int, default=6)
    parser.add_argument("--lang", default="en", choices=("en", "zh_CN"))
    parser.add_argument("--theme", default="light", choices=("light", "dark"))
    args = parser.parse_args()
    from decoding.chain.spec import LaneSpec
    from gui.app import make_application
    from gui.i18n import language
    from gui.main_window import MainWindow
    from gui.shell.theme import app_theme
    from models.catalog import resolve

    app = make_application([])
    problem = language.install(app, args.lang)
    if problem:
        print(problem, file=sys.stderr)
    app_theme().set_mode(args.theme)
    window = MainWindow(resolve(args.model))
    window.unsaved.ask_before_run = False
    window.resize(1280, 900)
    window.show()
    window.state.set_specs([LaneSpec("greedy")])
    window.state.update_request(text=args.prompt, chat=False, system=None, max_new_tokens=args.tokens)
    window.controller.run()
    settle(app, window)
    window.controller.why(0, args.step)
    settle(app, window)
    window.show_view("why")
    settle(app, window)
    args.out.mkdir(parents=True, exist_ok=True)
    name = f"why_{args.lang}_{args.theme}.png"
    window.grab().save(str(args.out / name))
    window.why.grab().save(str(args.out / f"why_tab_{args.lang}_{args.theme}.png"))
    from gui.views.why_view import WhyView

    alone = WhyView(window.state)  # as the image export draws it: at its export size, over the same state
    alone.resize(1000, 1100)
    alone.show()
    settle(app, window)
    alone.grab().save(str(args.out / f"why_view_{args.lang}_{args.theme}.png"))
    alone.close()
    print(f"wrote {args.out / name}")
    window.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
